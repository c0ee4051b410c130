package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/internal/testkit/powerloss"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	want := map[uint64][]byte{}
	for i := range 100 {
		r := rec(t, 0, i, i*10)
		lsn := mustAppend(t, j, r)
		if lsn != uint64(i+1) {
			t.Fatalf("append %d got LSN %d, want %d", i, lsn, i+1)
		}
		want[lsn] = r
	}
	if j.LastLSN() != 100 || j.FirstLSN() != 1 {
		t.Fatalf("first/last = %d/%d, want 1/100", j.FirstLSN(), j.LastLSN())
	}
	check := func(j *Journal) {
		got := readAll(t, j)
		if len(got) != len(want) {
			t.Fatalf("read %d records, want %d", len(got), len(want))
		}
		for lsn, r := range want {
			if !bytes.Equal(got[lsn], r) {
				t.Fatalf("LSN %d differs", lsn)
			}
		}
	}
	check(j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(context.Background(), rec(t, 0, 0, 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	if j.Recovery() != nil {
		t.Fatalf("clean reopen cut a tail: %+v", j.Recovery())
	}
	check(j)
	if lsn := mustAppend(t, j, rec(t, 0, 100, 0)); lsn != 101 {
		t.Fatalf("after reopen got LSN %d, want 101", lsn)
	}
}

func TestAppendRefusesInvalidRecord(t *testing.T) {
	j := mustOpen(t, t.TempDir(), smallOpts())
	defer j.Close()
	if _, err := j.Append(context.Background(), []byte("not a record")); err == nil || !strings.Contains(err.Error(), "invalid record") {
		t.Fatalf("got %v, want an invalid-record error", err)
	}
}

// TestConcurrentAppendersShareFsyncs: 64 appenders get distinct, contiguous
// LSNs, and fsyncs (counted by the fsync wrapper itself) make more than one
// record durable on average. A journal that fsyncs per Append fails this.
func TestConcurrentAppendersShareFsyncs(t *testing.T) {
	opts := smallOpts()
	opts.SegmentBytes = 1 << 20
	c := counting(&opts)
	j := mustOpen(t, t.TempDir(), opts)
	const writers, each = 64, 20
	var mu sync.Mutex
	var lsns []uint64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				lsn, err := j.Append(context.Background(), rec(t, w, i, 100))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				lsns = append(lsns, lsn)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(lsns, func(a, b int) bool { return lsns[a] < lsns[b] })
	for i, lsn := range lsns {
		if lsn != uint64(i+1) {
			t.Fatalf("LSNs not distinct and contiguous: position %d holds %d", i, lsn)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.perSync {
		total += n
	}
	if total != writers*each {
		t.Fatalf("fsyncs covered %d records, want %d", total, writers*each)
	}
	if len(c.perSync) >= total {
		t.Fatalf("%d fsyncs for %d records: appends were not grouped", len(c.perSync), total)
	}
	t.Logf("%d records in %d fsyncs (%.1f per fsync)", total, len(c.perSync), float64(total)/float64(len(c.perSync)))
}

// TestNewGenerationDirectoriesSyncedBeforeAck: whenever a record lands in a
// new generation, its directory, and the journal directory after the
// generation's directory appeared in it, were fsynced before Append
// returned — with new segment files, and with recycled ones (renamed from
// the journal directory into the generation's).
func TestNewGenerationDirectoriesSyncedBeforeAck(t *testing.T) {
	for _, recycle := range []bool{false, true} {
		t.Run(fmt.Sprintf("recycled=%v", recycle), func(t *testing.T) {
			dir := t.TempDir()
			var mu sync.Mutex
			synced := map[string]int{}   // directory → fsync count
			entered := map[string]bool{} // generation directories whose entry was fsynced
			opts := smallOpts()
			if recycle {
				opts = recycleOpts()
			}
			opts.hooks.syncDir = func(d string) error {
				des, _ := os.ReadDir(dir)
				err := fsutil.SyncDir(d)
				mu.Lock()
				defer mu.Unlock()
				synced[d]++
				if d == dir {
					for _, de := range des {
						entered[filepath.Join(dir, de.Name())] = true
					}
				}
				return err
			}
			j := mustOpen(t, dir, opts)
			defer j.Close()
			var seen []string
			inodes := map[uint64]bool{}
			for i := range 200 {
				lsn := mustAppend(t, j, rec(t, 0, i, 2000))
				j.mu.Lock()
				var g generation
				for _, gen := range j.gens {
					if gen.base < lsn {
						g = gen
					}
				}
				j.mu.Unlock()
				mu.Lock()
				if synced[g.dir] == 0 || !entered[g.dir] {
					t.Fatalf("LSN %d acknowledged in %s before that directory and its entry were fsynced", lsn, g.dir)
				}
				if len(seen) == 0 || seen[len(seen)-1] != g.dir {
					seen = append(seen, g.dir)
					if st, err := os.Stat(g.segment()); err == nil {
						inodes[st.Sys().(*syscall.Stat_t).Ino] = true
					}
				}
				mu.Unlock()
				if recycle && i%10 == 9 {
					if err := j.Release(j.LastLSN()); err != nil {
						t.Fatal(err)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 3 {
				t.Fatalf("only %d generations used; the test needs rotations", len(seen))
			}
			if recycle && len(inodes) >= len(seen) {
				t.Fatalf("%d generations in %d distinct files: none was recycled", len(seen), len(inodes))
			}
		})
	}
}

func TestRotationReleaseAndSpace(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	j := mustOpen(t, dir, opts)
	var last uint64
	for i := range 300 {
		last = mustAppend(t, j, rec(t, 0, i, 1000))
	}
	gens, err := scanGenerations(dir, fsutil.SyncDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(gens) < 4 {
		t.Fatalf("%d generations after 300 KiB with 64 KiB segments", len(gens))
	}
	before := j.UsedBytes()
	if err := j.Release(last / 2); err != nil {
		t.Fatal(err)
	}
	first := j.FirstLSN()
	if first <= 1 || first > last/2+1 {
		t.Fatalf("after Release(%d) first LSN is %d", last/2, first)
	}
	waitReleased(t, j)
	if j.UsedBytes() >= before {
		t.Fatalf("Release freed nothing: %d → %d bytes", before, j.UsedBytes())
	}
	got := readAll(t, j)
	if uint64(len(got)) != last-first+1 {
		t.Fatalf("read %d records from %d to %d", len(got), first, last)
	}
	// Releasing everything keeps the active generation and the LSN sequence.
	if err := j.Release(last); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = mustOpen(t, dir, opts)
	defer j.Close()
	if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != last+1 {
		t.Fatalf("after releasing everything and reopening got LSN %d, want %d", lsn, last+1)
	}
	var onDisk int64
	gens, _ = scanGenerations(dir, fsutil.SyncDir)
	for _, g := range gens {
		st, _ := os.Stat(g.segment())
		onDisk += st.Size()
	}
	if j.UsedBytes() != onDisk {
		t.Fatalf("UsedBytes %d, files hold %d", j.UsedBytes(), onDisk)
	}
}

func TestFullJournalMakesAppendWait(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 10, MaxBytes: 128 << 10, MaxGroupBytes: 1 << 20}
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	var last uint64
	ctx := context.Background()
	for {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		lsn, err := j.Append(short, rec(t, 0, 0, 4000))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = lsn
		if last > 1000 {
			t.Fatal("journal never became full")
		}
	}
	if j.UsedBytes() > opts.MaxBytes {
		t.Fatalf("journal holds %d bytes, max is %d", j.UsedBytes(), opts.MaxBytes)
	}
	done := make(chan uint64)
	go func() {
		lsn, err := j.Append(ctx, rec(t, 0, 1, 4000))
		if err != nil {
			t.Error(err)
		}
		done <- lsn
	}()
	if err := j.Release(last); err != nil {
		t.Fatal(err)
	}
	if lsn := <-done; lsn != last+1 {
		t.Fatalf("waiting append got LSN %d, want %d", lsn, last+1)
	}
}

// TestUnreserveWakesWaitingAppends: space an admitted append gives back
// unwritten (its context ended while it waited for a queue slot, or the
// journal closed) lets a waiting append in at once, as released space
// does; nothing else may ever free space in an idle journal.
func TestUnreserveWakesWaitingAppends(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 10, MaxBytes: 128 << 10, MaxGroupBytes: 1 << 20}
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	ctx := context.Background()
	// Reserve everything left, as admitted appends not yet written do.
	held := opts.entryRoom()
	if err := j.admit(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := j.admit(ctx, opts.MaxBytes-j.UsedBytes()); err != nil {
		t.Fatal(err)
	}
	// A generous bound: failing it means the append was never woken.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- j.admit(wctx, 1000) }()
	for j.Waiting() == "" {
		time.Sleep(time.Millisecond)
	}
	j.unreserve(held)
	if err := <-done; err != nil {
		t.Fatalf("the waiting append was not let in after space was given back: %v", err)
	}
}

// failingRename installs a rename hook on opts that fails with EIO while
// failing is set (only renames to a name starting with only, when set),
// and counts the failures.
type failingRename struct {
	only     string
	mu       sync.Mutex
	failing  bool
	failures int
}

func (f *failingRename) install(opts *Options) {
	opts.hooks.rename = func(oldpath, newpath string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failing && strings.HasPrefix(filepath.Base(newpath), f.only) {
			f.failures++
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
		}
		return os.Rename(oldpath, newpath)
	}
}

func (f *failingRename) set(failing bool) {
	f.mu.Lock()
	f.failing = failing
	f.mu.Unlock()
}

func (f *failingRename) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// appendWaitingForSpace starts an append into the full journal j and
// returns once it waits for space; the channel gets its outcome (an error
// unless it got LSN want). A generous bound ends the wait: failing it means
// the space never came back.
func appendWaitingForSpace(t *testing.T, j *Journal, want uint64) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		lsn, err := j.Append(ctx, rec(t, 0, 1, 4000))
		if err == nil && lsn != want {
			err = fmt.Errorf("got LSN %d, want %d", lsn, want)
		}
		done <- err
	}()
	for j.Waiting() == "" {
		if ctx.Err() != nil { // the append ended without waiting
			t.Fatalf("the append did not wait for space: %v", <-done)
		}
		time.Sleep(time.Millisecond)
	}
	return done
}

// TestFailedReleaseIsRetried: a release whose rename fails keeps the
// generations (still readable, still counted); once renames work again
// their space is freed and a waiting append gets in, without a restart —
// through a later Release, and also with none: a full journal makes
// nothing new durable, so the flusher moves nothing and never calls
// Release again, and the releaser must retry by itself.
func TestFailedReleaseIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name         string
		releaseAgain bool
	}{
		{"by a later Release", true},
		{"by the releaser alone", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 64 << 10, MaxBytes: 128 << 10, MaxGroupBytes: 1 << 20}
			var fr failingRename
			fr.install(&opts)
			j := mustOpen(t, dir, opts)
			defer j.Close()
			last := fillJournal(t, j)
			done := appendWaitingForSpace(t, j, last+1)
			fr.set(true)
			if err := j.Release(last); !errors.Is(err, syscall.EIO) {
				t.Fatalf("release with a failing rename: %v, want EIO", err)
			}
			// Nothing was lost from the journal's view: every record still reads.
			if first := j.FirstLSN(); first != 1 {
				t.Fatalf("after a failed release the first LSN is %d, want 1", first)
			}
			if got := readAll(t, j); uint64(len(got)) != last {
				t.Fatalf("after a failed release %d records read, want %d", len(got), last)
			}
			fr.set(false)
			if tc.releaseAgain {
				if err := j.Release(last); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				t.Fatalf("the waiting append: %v", err)
			}
			waitReleased(t, j)
			usedMatchesDisk(t, j, dir)
		})
	}
}

// TestFailedSpareRenameIsRetried: the releaser's rename of a released
// segment into a spare fails; the releaser retries it by itself, and the
// generation is gone and its bytes accounted for, without another Release
// or a restart.
func TestFailedSpareRenameIsRetried(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	opts.SpareSegments = 2
	fr := failingRename{only: sparePrefix}
	fr.install(&opts)
	fr.set(true)
	j := mustOpen(t, dir, opts)
	defer j.Close()
	for i := range 200 {
		mustAppend(t, j, rec(t, 0, i, 1000))
	}
	// Release's own rename works; the releaser's, into a spare, fails.
	j.mu.Lock()
	released, upTo := j.gens[0], j.gens[1].base
	j.mu.Unlock()
	if err := j.Release(upTo); err != nil {
		t.Fatal(err)
	}
	for fr.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	fr.set(false)
	waitReleased(t, j)
	if _, err := os.Stat(released.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("released generation %s still on disk (%v)", released.dir, err)
	}
	usedMatchesDisk(t, j, dir)
}

// TestFailingReleaseHoldsUpNoOther: a released generation that cannot be
// freed (its rename into a spare, or the fsync of its directory, always
// fails) stays, counted, and is retried; the generations released after
// it are still kept as spares or deleted, with their space freed.
func TestFailingReleaseHoldsUpNoOther(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spares int // SpareSegments
	}{
		{"rename into a spare fails", 10},
		{"directory fsync fails", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := smallOpts()
			opts.SpareSegments = tc.spares
			var (
				mu       sync.Mutex
				stuck    string // the generation directory that fails
				failures int
			)
			fail := func(path string) bool {
				mu.Lock()
				defer mu.Unlock()
				if stuck == "" || path != stuck {
					return false
				}
				failures++
				return true
			}
			if tc.spares > 0 {
				opts.hooks.rename = func(oldpath, newpath string) error {
					if strings.HasPrefix(filepath.Base(newpath), sparePrefix) && fail(filepath.Dir(oldpath)) {
						return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
					}
					return os.Rename(oldpath, newpath)
				}
			} else {
				opts.hooks.syncDir = func(d string) error {
					if fail(d) {
						return &os.PathError{Op: "fsync", Path: d, Err: syscall.EIO}
					}
					return fsutil.SyncDir(d)
				}
			}
			j := mustOpen(t, dir, opts)
			defer j.Close()
			for i := 0; len(j.gensSnapshot()) < 4; i++ {
				mustAppend(t, j, rec(t, 0, i, 1000))
			}
			gens := j.gensSnapshot()
			mu.Lock()
			stuck = gens[0].dir
			mu.Unlock()
			if err := j.Release(gens[3].base); err != nil {
				t.Fatal(err)
			}
			// A generous bound: failing it means the others were held up.
			deadline := time.Now().Add(30 * time.Second)
			for _, g := range gens[1:3] {
				for {
					if _, err := os.Stat(g.dir); errors.Is(err, os.ErrNotExist) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("generation %s, released after one that cannot be, is still there", g.dir)
					}
					time.Sleep(time.Millisecond)
				}
			}
			for {
				mu.Lock()
				n := failures
				mu.Unlock()
				if n >= 2 {
					break // retried, and failing again
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := os.Stat(gens[0].releasing()); err != nil {
				t.Fatalf("the generation that cannot be released: %v", err)
			}
			want := []string(nil)
			if tc.spares > 0 {
				want = []string{sparePath(dir, gens[1].base), sparePath(dir, gens[2].base)}
			}
			var got []string
			spares, _ := listSpares(dir)
			for _, sp := range spares {
				got = append(got, sp.path)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("spares %v, want %v", got, want)
			}
			// Only the stuck generation's retries run now, which change
			// nothing on disk.
			usedMatchesDisk(t, j, dir)
		})
	}
}

// TestReleaseOfAMissingSegmentFinishes: a released generation whose
// segment is already gone (Release takes a missing file as renamed) is
// finished, directory removed and space freed, not retried for ever as a
// spare that does not exist.
func TestReleaseOfAMissingSegmentFinishes(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	opts.SpareSegments = 2
	logs := &syncbuf.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	j := mustOpen(t, dir, opts)
	defer j.Close()
	for i := 0; len(j.gensSnapshot()) < 3; i++ {
		mustAppend(t, j, rec(t, 0, i, 1000))
	}
	gens := j.gensSnapshot()
	if err := os.Remove(gens[0].segment()); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(gens[1].base); err != nil {
		t.Fatal(err)
	}
	waitReleased(t, j)
	if _, err := os.Stat(gens[0].dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("released generation %s still there: %v", gens[0].dir, err)
	}
	if spares, _ := listSpares(dir); len(spares) != 0 {
		t.Fatalf("spares %+v of a segment that was gone", spares)
	}
	usedMatchesDisk(t, j, dir)
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("warned:\n%s", logs)
	}
}

// fillJournal appends until the journal is full and returns the last LSN.
func fillJournal(t *testing.T, j *Journal) uint64 {
	t.Helper()
	var last uint64
	for {
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		lsn, err := j.Append(short, rec(t, 0, 0, 4000))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return last
		}
		if err != nil {
			t.Fatal(err)
		}
		if last = lsn; last > 1000 {
			t.Fatal("journal never became full")
		}
	}
}

// journalBytesOnDisk is the size of every file under dir.
func journalBytesOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTooLargeRecordRefused(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 10, MaxBytes: 128 << 10, MaxGroupBytes: 1 << 20}
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	if _, err := j.Append(context.Background(), rec(t, 0, 0, 100<<10)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	// Options.MaxRecordBytes is exactly the edge.
	pad := int(opts.MaxRecordBytes()) - len(rec(t, 0, 0, 0))
	if r := rec(t, 0, 1, pad); int64(len(r)) != opts.MaxRecordBytes() {
		t.Fatalf("test record of %d bytes, want %d", len(r), opts.MaxRecordBytes())
	} else if _, err := j.Append(context.Background(), r); err != nil {
		t.Fatalf("a record of MaxRecordBytes: %v", err)
	}
	if _, err := j.Append(context.Background(), rec(t, 0, 2, pad+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a record of MaxRecordBytes+1: got %v, want ErrTooLarge", err)
	}
}

func TestLSNsNeverRepeat(t *testing.T) {
	t.Run("fresh journal starts after the ledger", func(t *testing.T) {
		opts := smallOpts()
		opts.StartAfter = 1000
		j := mustOpen(t, t.TempDir(), opts)
		defer j.Close()
		if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != 1001 {
			t.Fatalf("got LSN %d, want 1001", lsn)
		}
	})
	t.Run("journal behind the ledger jumps ahead", func(t *testing.T) {
		dir := t.TempDir()
		j := mustOpen(t, dir, smallOpts())
		for i := range 5 {
			mustAppend(t, j, rec(t, 0, i, 0))
		}
		j.Close()
		opts := smallOpts()
		opts.StartAfter = 10
		j = mustOpen(t, dir, opts)
		if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != 11 {
			t.Fatalf("got LSN %d, want 11", lsn)
		}
		j.Close()
		// The jump is persisted: a reopen with a lower floor continues at 12.
		// The records before it are in the ledger: the jump released them,
		// so no generation ends before its successor's base.
		j = mustOpen(t, dir, smallOpts())
		defer j.Close()
		if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != 12 {
			t.Fatalf("got LSN %d, want 12", lsn)
		}
		if got := readAll(t, j); len(got) != 2 || got[11] == nil || got[12] == nil {
			t.Fatalf("read %d records, want 2 (11, 12)", len(got))
		}
		if segs, err := Segments(dir); err != nil || len(segs) != 1 || segs[0].Damage != nil {
			t.Fatalf("after the jump: %+v, %v; want one generation, undamaged", segs, err)
		}
	})
	t.Run("journal ahead of the ledger continues", func(t *testing.T) {
		dir := t.TempDir()
		j := mustOpen(t, dir, smallOpts())
		for i := range 20 {
			mustAppend(t, j, rec(t, 0, i, 0))
		}
		j.Close()
		opts := smallOpts()
		opts.StartAfter = 10
		j = mustOpen(t, dir, opts)
		defer j.Close()
		if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != 21 {
			t.Fatalf("got LSN %d, want 21", lsn)
		}
	})
}

func TestFsyncFailurePoisons(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	for i := range 10 {
		mustAppend(t, j, rec(t, 0, i, 0))
	}
	c.mu.Lock()
	c.failSync = syscall.EIO
	c.mu.Unlock()
	if _, err := j.Append(context.Background(), rec(t, 0, 10, 0)); !errors.Is(err, ErrPoisoned) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append during failing fsync: %v, want ErrPoisoned wrapping EIO", err)
	}
	// The failure is sticky even once the disk "recovers": an fsync that
	// failed may have dropped the dirty pages.
	c.mu.Lock()
	c.failSync = nil
	c.mu.Unlock()
	for i := range 5 {
		if lsn, err := j.Append(context.Background(), rec(t, 0, 11+i, 0)); !errors.Is(err, ErrPoisoned) {
			t.Fatalf("append after poisoning returned LSN %d, err %v; want ErrPoisoned", lsn, err)
		}
	}
	if err := j.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close: %v, want the sticky EIO", err)
	}
	// A fresh open resumes; the acknowledged records are intact.
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	got := readAll(t, j)
	for lsn := uint64(1); lsn <= 10; lsn++ {
		if !bytes.Equal(got[lsn], rec(t, 0, int(lsn-1), 0)) {
			t.Fatalf("acknowledged LSN %d lost or changed after poisoning", lsn)
		}
	}
	if lsn := mustAppend(t, j, rec(t, 0, 99, 0)); lsn <= 10 {
		t.Fatalf("reopened journal reused LSN %d", lsn)
	}
}

// TestReopenCutsWhatNoFsyncCovered: records written whose fsync failed
// read back intact from the page cache, yet may never reach the disk (a
// failed fsync may mark dirty pages clean). Reopen keeps nothing after
// the failed instance's last durable LSN: they are neither read nor
// counted, and their LSNs are taken by new records.
func TestReopenCutsWhatNoFsyncCovered(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	for i := range 10 {
		mustAppend(t, j, rec(t, 0, i, 0))
	}
	// Three records written together, in one group whose fsync fails.
	c.mu.Lock()
	c.failSync = syscall.EIO
	hold := make(chan struct{})
	c.holdWrite = hold
	c.mu.Unlock()
	var pending []*Pending
	for i := range 3 {
		p, err := j.Submit(context.Background(), rec(t, 1, i, 0))
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, p)
	}
	c.mu.Lock()
	c.holdWrite = nil
	c.mu.Unlock()
	close(hold)
	for _, p := range pending {
		if _, err := p.Wait(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("append whose fsync failed: %v, want EIO", err)
		}
	}
	if li := c.lastIndex(); li < 11 {
		t.Fatalf("the failed group was not written (last index %d): the test proves nothing", li)
	}
	if err := j.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close: %v, want the sticky EIO", err)
	}
	c.mu.Lock()
	c.failSync = nil
	c.mu.Unlock()
	j2, err := j.Reopen(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := j2.LastLSN(); got != 10 {
		j2.Close()
		t.Fatalf("reopened journal's last LSN is %d, want 10 (the last one fsynced)", got)
	}
	got := readAll(t, j2)
	if len(got) != 10 {
		j2.Close()
		t.Fatalf("reopened journal reads %d records, want 10", len(got))
	}
	if rep := j2.Recovery(); rep == nil || rep.FirstLSN != 11 {
		j2.Close()
		t.Fatalf("repair %+v, want a cut from LSN 11", rep)
	}
	if lsn := mustAppend(t, j2, rec(t, 2, 0, 0)); lsn != 11 {
		j2.Close()
		t.Fatalf("next append got LSN %d, want 11", lsn)
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	// The cut held: a plain open reads the new LSN 11, and nothing after.
	j3 := mustOpen(t, dir, smallOpts())
	defer j3.Close()
	got = readAll(t, j3)
	if len(got) != 11 || !bytes.Equal(got[11], rec(t, 2, 0, 0)) {
		t.Fatalf("after the reopen: %d records, LSN 11 new: %v", len(got), bytes.Equal(got[11], rec(t, 2, 0, 0)))
	}
}

// TestReopenNeedsAClosedJournal: Reopen of an open instance is refused,
// and changes nothing.
func TestReopenNeedsAClosedJournal(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	defer j.Close()
	mustAppend(t, j, rec(t, 0, 0, 0))
	if j2, err := j.Reopen(smallOpts()); err == nil {
		j2.Close()
		t.Fatal("reopened a journal that is still open")
	}
	if lsn := mustAppend(t, j, rec(t, 0, 1, 0)); lsn != 2 {
		t.Fatalf("got LSN %d, want 2", lsn)
	}
}

// TestReopenWaitsForTheClosedInstance: Reopen lists and repairs the
// directory only once every goroutine of the closed instance has exited:
// its releaser, held inside a release, must not rename or cut files under
// the new instance.
func TestReopenWaitsForTheClosedInstance(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	var (
		mu      sync.Mutex
		hold    string // a generation directory whose first fsync is held
		entered = make(chan struct{})
		release = make(chan struct{})
	)
	opts.hooks.syncDir = func(d string) error {
		mu.Lock()
		held := d == hold
		if held {
			hold = ""
		}
		mu.Unlock()
		if held {
			close(entered)
			<-release
		}
		return fsutil.SyncDir(d)
	}
	j := mustOpen(t, dir, opts)
	for i := 0; len(j.gensSnapshot()) < 2; i++ {
		mustAppend(t, j, rec(t, 0, i, 1000))
	}
	gens := j.gensSnapshot()
	mu.Lock()
	hold = gens[0].dir
	mu.Unlock()
	if err := j.Release(gens[1].base); err != nil {
		t.Fatal(err)
	}
	<-entered // the releaser is inside the release
	closed := make(chan error, 1)
	go func() { closed <- j.Close() }()
	for {
		j.mu.Lock()
		c := j.closed
		j.mu.Unlock()
		if c {
			break
		}
		time.Sleep(time.Millisecond)
	}
	type reopened struct {
		j   *Journal
		err error
	}
	done := make(chan reopened, 1)
	go func() {
		j2, err := j.Reopen(opts)
		done <- reopened{j2, err}
	}()
	select {
	case r := <-done:
		close(release)
		if r.err == nil {
			r.j.Close()
		}
		<-closed
		t.Fatalf("Reopen returned (%v) while the closed instance's releaser was still running", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.j.Close()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gens[0].dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted release was not finished: %v", err)
	}
	if got := len(readAll(t, r.j)); got == 0 {
		t.Fatal("the reopened journal reads nothing")
	}
}

func TestWriteFailurePoisons(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	mustAppend(t, j, rec(t, 0, 0, 0))
	c.mu.Lock()
	c.failWrite = syscall.ENOSPC
	c.mu.Unlock()
	if _, err := j.Append(context.Background(), rec(t, 0, 1, 0)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	c.mu.Lock()
	c.failWrite = nil
	c.mu.Unlock()
	if _, err := j.Append(context.Background(), rec(t, 0, 2, 0)); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("got %v, want ErrPoisoned", err)
	}
	j.Close()
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	if lsn := mustAppend(t, j, rec(t, 0, 3, 0)); lsn != 2 {
		t.Fatalf("reopened journal appends at %d, want 2", lsn)
	}
}

func TestCloseCommitsQueuedAppends(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	hold := make(chan struct{})
	c.mu.Lock()
	c.hold = hold
	c.mu.Unlock()
	var wg sync.WaitGroup
	results := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := j.Append(context.Background(), rec(t, 0, i, 0))
			results <- err
		}()
	}
	// Wait until the committer is inside an fsync (its group written) and
	// the rest are queued.
	for {
		c.mu.Lock()
		written := c.pending
		c.mu.Unlock()
		if written > 0 && written+len(j.queue) == 10 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error)
	go func() { closed <- j.Close() }()
	c.mu.Lock()
	c.hold = nil
	c.mu.Unlock()
	close(hold)
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	close(results)
	for err := range results {
		if err != nil {
			t.Fatalf("queued append failed on Close: %v", err)
		}
	}
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	if n := len(readAll(t, j)); n != 10 {
		t.Fatalf("%d records after Close, want 10", n)
	}
}

func TestGroupWaitGathersMore(t *testing.T) {
	opts := smallOpts()
	opts.MaxGroupWait = 200 * time.Millisecond
	c := counting(&opts)
	j := mustOpen(t, t.TempDir(), opts)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustAppend(t, j, rec(t, 0, i, 0))
		}()
	}
	wg.Wait()
	j.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.perSync) >= 8 {
		t.Fatalf("with a group wait, 8 concurrent appends took %d fsyncs", len(c.perSync))
	}
}

func TestGenerationNamesAreTheHighWaterMark(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	opts.StartAfter = 41
	j := mustOpen(t, dir, opts)
	j.Close()
	if _, err := os.Stat(filepath.Join(dir, genName(41))); err != nil {
		t.Fatalf("empty journal did not persist its start: %v", err)
	}
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	if lsn := mustAppend(t, j, rec(t, 0, 0, 0)); lsn != 42 {
		t.Fatalf("got LSN %d, want 42", lsn)
	}
}

// openFDsUnder counts this process's open descriptors on files under dir.
func openFDsUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) {
			n++
		}
	}
	return n
}

// TestPoisonedJournalClosesItsFiles: on a dead disk tidwall's Close fails
// its own fsync and returns without closing the file; the journal must not
// leak the descriptor (the device could never be unmounted).
func TestPoisonedJournalClosesItsFiles(t *testing.T) {
	disk := powerloss.New(t, 64<<20)
	dir := filepath.Join(disk.Dir, "journal")
	j := mustOpen(t, dir, smallOpts())
	mustAppend(t, j, rec(t, 0, 0, 0))
	if openFDsUnder(t, dir) == 0 {
		t.Fatal("no open segment file found: the test cannot see descriptors")
	}
	if err := disk.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(context.Background(), rec(t, 0, 1, 0)); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append on a dead disk: %v, want ErrPoisoned", err)
	}
	j.Close()
	if n := openFDsUnder(t, dir); n != 0 {
		t.Fatalf("%d descriptors still open under %s after a poisoned Close", n, dir)
	}
}

// TestInterruptedReleaseIsFinished: a crash part-way through a release
// leaves the generation without its segment file — renamed aside whole,
// renamed and partly cut down, or already removed — and the next Open
// finishes the release instead of reading it as a generation.
func TestInterruptedReleaseIsFinished(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, g generation)
	}{
		{"renamed", func(t *testing.T, g generation) {
			rename(t, g.segment(), filepath.Join(g.dir, releasingFile))
		}},
		{"renamed and partly cut", func(t *testing.T, g generation) {
			doomed := filepath.Join(g.dir, releasingFile)
			rename(t, g.segment(), doomed)
			if err := os.Truncate(doomed, g.size/3); err != nil {
				t.Fatal(err)
			}
		}},
		{"segment removed", func(t *testing.T, g generation) {
			if err := os.Remove(g.segment()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j := mustOpen(t, dir, smallOpts())
			for i := range 100 {
				mustAppend(t, j, rec(t, 0, i, 2000))
			}
			j.Close()
			gens, _ := scanGenerations(dir, fsutil.SyncDir)
			tc.crash(t, gens[0])
			opts := smallOpts()
			var synced []string // directories synced, with whether a segment was still in them
			opts.hooks.syncDir = func(d string) error {
				_, err := os.Stat(filepath.Join(d, releasingFile))
				synced = append(synced, fmt.Sprintf("%s %v", d, err == nil))
				return fsutil.SyncDir(d)
			}
			j = mustOpen(t, dir, opts)
			defer j.Close()
			if _, err := os.Stat(gens[0].dir); !os.IsNotExist(err) {
				t.Fatalf("leftover %s not removed: %v", gens[0].dir, err)
			}
			// The rename aside is made durable before the file is cut, and
			// the removal after.
			cut := tc.name != "segment removed"
			if want := []string{fmt.Sprintf("%s %v", gens[0].dir, cut), dir + " false"}; len(synced) < 2 || synced[0] != want[0] || synced[1] != want[1] {
				t.Fatalf("directory syncs %q, want first %q", synced, want)
			}
			if first := j.FirstLSN(); first != gens[1].base+1 {
				t.Fatalf("first LSN %d, want %d", first, gens[1].base+1)
			}
			if n := len(readAll(t, j)); n != int(100-gens[1].base) {
				t.Fatalf("read %d records, want %d", n, 100-gens[1].base)
			}
		})
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestFullIsLoggedOnceUnderSteadyBackpressure: the releaser frees space a
// step at a time and each step lets a waiting append in, so "full" flips
// back and forth; the log says once that appends wait and once, when a
// whole segment is free again, that they no longer do.
func TestFullIsLoggedOnceUnderSteadyBackpressure(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 10, MaxBytes: 256 << 10, MaxGroupBytes: 1 << 20}
	var logs syncbuf.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	r := rec(t, 0, 0, 1000)
	size := entrySize(len(r))
	j.mu.Lock()
	base := j.space.used
	j.space.used = opts.MaxBytes // as if full of records the flusher has not moved yet
	j.mu.Unlock()
	const rounds = 4
	for i := range rounds {
		a := appendAsync(j, r)
		for j.Waiting() == "" {
			time.Sleep(time.Millisecond)
		}
		j.freed(size) // one release step: room for exactly this append
		if res := <-a; res.err != nil {
			t.Fatalf("round %d: %v", i, res.err)
		}
	}
	j.freed(opts.MaxBytes - base - rounds*size) // the release ends
	if w := j.Waiting(); w != "" {
		t.Fatalf("Waiting() = %q with nothing waiting", w)
	}
	out := logs.String()
	if full, again := strings.Count(out, "journal full"), strings.Count(out, "journal has space again"); full != 1 || again != 1 {
		t.Fatalf("logged %d × full and %d × space again, want once each:\n%s", full, again, out)
	}
}

// TestReleaseOfABigGeneration: a released segment of several release
// steps leaves its name when Release returns, and the releaser then deletes
// it, directory and all, and frees its space.
func TestReleaseOfABigGeneration(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	opts.SegmentBytes = 3*releaseStep + releaseStep/2
	opts.MaxBytes = 4 * opts.SegmentBytes
	opts.MaxGroupBytes = releaseStep
	j := mustOpen(t, dir, opts)
	defer j.Close()
	var last uint64
	for i := 0; len(j.gensSnapshot()) < 2; i++ {
		last = mustAppend(t, j, rec(t, 0, i, 256<<10))
	}
	old := j.gensSnapshot()[0]
	if old.size <= 3*releaseStep {
		t.Fatalf("generation of %d bytes: the test wants several steps", old.size)
	}
	if err := j.Release(last); err != nil {
		t.Fatal(err)
	}
	// Gone from its name at once; cut down and deleted by the releaser.
	if _, err := os.Stat(old.segment()); !os.IsNotExist(err) {
		t.Fatalf("released segment %s still under its name: %v", old.segment(), err)
	}
	waitReleased(t, j)
	if _, err := os.Stat(old.dir); !os.IsNotExist(err) {
		t.Fatalf("released generation %s still there: %v", old.dir, err)
	}
	if got := j.UsedBytes(); got >= old.size {
		t.Fatalf("used bytes %d after releasing %d", got, old.size)
	}
}

// TestReaderNeverSkipsReleasedRecords: a Reader whose next generation was
// released under it reports that, instead of skipping records.
func TestReaderNeverSkipsReleasedRecords(t *testing.T) {
	j := mustOpen(t, t.TempDir(), smallOpts())
	defer j.Close()
	var last uint64
	for i := range 100 {
		last = mustAppend(t, j, rec(t, 0, i, 2000))
	}
	r := j.Reader(1)
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if err := j.Release(last); err != nil {
		t.Fatal(err)
	}
	n := 1
	for r.Next() {
		n++
	}
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "released") {
		t.Fatalf("reader read %d records and ended with %v; want a released error", n, r.Err())
	}
}

// gensSnapshot returns a copy of the journal's generation list.
func (j *Journal) gensSnapshot() []generation {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]generation(nil), j.gens...)
}

// releasesPending reports how many released generations the releaser has
// not finished deleting.
func (j *Journal) releasesPending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.rel.work.renamed) + len(j.rel.work.retryGens)
	if j.rel.work.cutting {
		n++
	}
	return n
}

// waitReleased waits until the releaser has deleted everything released.
// usedMatchesDisk fails the test unless the journal's space accounting
// equals the bytes its files hold.
func usedMatchesDisk(t *testing.T, j *Journal, dir string) {
	t.Helper()
	if used, disk := j.UsedBytes(), journalBytesOnDisk(t, dir); used != disk {
		t.Fatalf("UsedBytes %d, files hold %d", used, disk)
	}
}

func waitReleased(t *testing.T, j *Journal) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for j.releasesPending() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the releaser did not finish")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSubmitKeepsOrder: records submitted back to back, without waiting,
// get increasing LSNs in submission order, are all durable once waited
// for, and a second Wait repeats the outcome.
func TestSubmitKeepsOrder(t *testing.T) {
	j := mustOpen(t, t.TempDir(), smallOpts())
	defer j.Close()
	var pending []*Pending
	for i := range 50 {
		r := rec(t, 0, i, 500)
		p, err := j.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		clear(r) // Submit copied it
		pending = append(pending, p)
	}
	for i, p := range pending {
		lsn, err := p.Wait()
		if err != nil || lsn != uint64(i+1) {
			t.Fatalf("record %d: LSN %d, %v", i, lsn, err)
		}
		if again, err := p.Wait(); again != lsn || err != nil {
			t.Fatalf("second Wait: %d, %v", again, err)
		}
	}
	got := readAll(t, j)
	for i := range 50 {
		if want := rec(t, 0, i, 500); !bytes.Equal(got[uint64(i+1)], want) {
			t.Fatalf("record %d differs from what was submitted", i+1)
		}
	}
}

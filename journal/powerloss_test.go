package journal

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/testkit/powerloss"
)

// TestPowerLoss appends from many goroutines on a real ext4, cuts the power
// at a random moment, remounts, reopens, and checks that every LSN whose
// Append returned is there, intact. The negative control runs the same
// with fsyncs skipped and must lose acknowledged records, proving the test
// can fail. The releasing variant also releases generations as fast as
// they close, so the cut lands in generations that overwrite recycled
// segments; there only records after the last Release must survive.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fsync   bool
		release bool
	}{{"fsync", true, false}, {"fsync, releasing into recycled segments", true, true}, {"never fsyncs (must lose data)", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 0))
			// Room for the control's one big generation (below).
			disk := powerloss.New(t, 512<<20)
			dir := filepath.Join(disk.Dir, "journal")
			opts := Options{SegmentBytes: 256 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20}
			if tc.release {
				opts.SpareSegments = 2
			}
			c := counting(&opts)
			c.skipSync = !tc.fsync
			if !tc.fsync {
				opts.hooks.syncDir = func(string) error { return nil }
				// No rotation either: tidwall's Close fsyncs a generation
				// when the journal moves to the next one. Half a second
				// of appends (the longest wait below) writes well under
				// 384 MiB here.
				opts.SegmentBytes, opts.MaxBytes = 384<<20, 768<<20
			}
			j := mustOpen(t, dir, opts)

			var mu sync.Mutex
			var cut atomic.Bool
			acked := map[uint64][]byte{}
			var wg sync.WaitGroup
			for w := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						r := rec(t, w, i, 200+(w*i)%3000)
						lsn, err := j.Append(context.Background(), r)
						if err != nil {
							return // the power is out
						}
						// Only an Append that returned before the power
						// cut began must survive it. The shutdown ioctl
						// takes time (ext4 sleeps 100ms before aborting
						// its journal); an ack during it is an ack after
						// the cut, which no real machine could give.
						if cut.Load() {
							return
						}
						mu.Lock()
						acked[lsn] = r
						mu.Unlock()
					}
				}()
			}
			var releasedUpTo atomic.Uint64
			if tc.release {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !cut.Load() {
						upTo := j.LastLSN()
						if j.Release(upTo) != nil {
							return // the power is out
						}
						releasedUpTo.Store(upTo)
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			cut.Store(true)
			if err := disk.Shutdown(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			j.Close() // fails: the disk is gone
			disk.Remount()

			mu.Lock()
			defer mu.Unlock()
			if len(acked) == 0 {
				t.Fatal("nothing was acknowledged before the power cut")
			}
			j2, err := Open(dir, Options{SegmentBytes: opts.SegmentBytes, MaxBytes: opts.MaxBytes, MaxGroupBytes: opts.MaxGroupBytes, Logger: opts.Logger})
			var lost int
			if err != nil {
				lost = len(acked)
				if tc.fsync {
					t.Fatalf("reopen after power loss: %v", err)
				}
			} else {
				got := readAll(t, j2)
				t.Logf("after power loss: journal holds LSN %d..%d, repair %+v", j2.FirstLSN(), j2.LastLSN(), j2.Recovery())
				j2.Close()
				for lsn, r := range acked {
					if lsn <= releasedUpTo.Load() {
						continue // in the ledger, by Release's contract
					}
					if !bytes.Equal(got[lsn], r) {
						lost++
						if tc.fsync && lost <= 5 {
							t.Errorf("acknowledged LSN %d lost or changed (present: %v)", lsn, got[lsn] != nil)
						}
					}
				}
			}
			t.Logf("%d acknowledged, %d released, %d lost", len(acked), releasedUpTo.Load(), lost)
			if tc.fsync && lost > 0 {
				t.Fatalf("%d of %d acknowledged records lost", lost, len(acked))
			}
			if !tc.fsync && lost == 0 {
				t.Fatalf("a journal that never fsyncs lost nothing: the test cannot tell")
			}
		})
	}
}

// TestRealENOSPC fills a small real file system until the journal's write
// fails with ENOSPC: the journal is poisoned, nothing after is
// acknowledged, and once space is back a fresh open resumes with every
// acknowledged record intact.
func TestRealENOSPC(t *testing.T) {
	disk := powerloss.New(t, 32<<20)
	dir := filepath.Join(disk.Dir, "journal")
	// A filler leaves a few MiB for the journal.
	filler := filepath.Join(disk.Dir, "filler")
	var st unix.Statfs_t
	if err := unix.Statfs(disk.Dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if err := os.WriteFile(filler, make([]byte, free-4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, MaxGroupBytes: 1 << 20}
	j := mustOpen(t, dir, opts)
	acked := map[uint64][]byte{}
	var appendErr error
	for i := 0; i < 100000; i++ {
		r := rec(t, 0, i, 4000)
		lsn, err := j.Append(context.Background(), r)
		if err != nil {
			appendErr = err
			break
		}
		acked[lsn] = r
	}
	if !errors.Is(appendErr, syscall.ENOSPC) || !errors.Is(appendErr, ErrPoisoned) {
		t.Fatalf("append on a full disk: %v, want ErrPoisoned wrapping ENOSPC", appendErr)
	}
	if _, err := j.Append(context.Background(), rec(t, 1, 0, 0)); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append after ENOSPC: %v, want ErrPoisoned", err)
	}
	j.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, dir, opts)
	defer j.Close()
	got := readAll(t, j)
	for lsn, r := range acked {
		if !bytes.Equal(got[lsn], r) {
			t.Fatalf("acknowledged LSN %d lost after ENOSPC", lsn)
		}
	}
	if _, err := j.Append(context.Background(), rec(t, 2, 0, 4000)); err != nil {
		t.Fatalf("append after space came back: %v", err)
	}
	t.Logf("%d records acknowledged before ENOSPC", len(acked))
}

// TestSyncOverlappingShutdownIsNotAcknowledged is the power cut that lands
// while a group's fdatasync runs, at the fault point that lost an
// acknowledged window in the power-cut soak: the fdatasync has begun, the
// file system shuts down (everything not yet committed is dropped), and the
// fdatasync then returns success anyway, which is what ext4 reports to a
// sync whose journal transaction the shutdown aborted (internal/fsutil).
// The group must not be acknowledged: its Append fails, the journal is
// poisoned, and after a remount the journal holds every record
// acknowledged before.
func TestSyncOverlappingShutdownIsNotAcknowledged(t *testing.T) {
	disk := powerloss.New(t, 64<<20)
	dir := filepath.Join(disk.Dir, "journal")
	opts := smallOpts()
	var cutDuringSync atomic.Bool
	opts.hooks.segment.fdatasync = func(f *os.File) error {
		err := unix.Fdatasync(int(f.Fd()))
		if cutDuringSync.Load() {
			if serr := disk.Shutdown(); serr != nil {
				t.Error(serr)
			}
		}
		return err
	}
	j := mustOpen(t, dir, opts)
	acked := map[uint64][]byte{}
	for i := range 20 {
		r := rec(t, 0, i, 100)
		acked[mustAppend(t, j, r)] = r
	}
	cutDuringSync.Store(true)
	if lsn, err := j.Append(context.Background(), rec(t, 0, 20, 100)); err == nil {
		t.Errorf("LSN %d was acknowledged on an fdatasync during which its file system shut down", lsn)
	} else if !errors.Is(err, ErrPoisoned) {
		t.Errorf("append after a shutdown during its sync: %v, want ErrPoisoned", err)
	} else {
		t.Logf("refused as it should be: %v", err)
	}
	j.Close() // fails: the disk is gone
	disk.Remount()

	j2 := mustOpen(t, dir, smallOpts())
	defer j2.Close()
	got := readAll(t, j2)
	for lsn, r := range acked {
		if !bytes.Equal(got[lsn], r) {
			t.Errorf("acknowledged LSN %d lost or changed", lsn)
		}
	}
}

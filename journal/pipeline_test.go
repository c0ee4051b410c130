package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/fsutil"
)

type appendResult struct {
	lsn uint64
	err error
}

func appendAsync(j *Journal, r []byte) <-chan appendResult {
	out := make(chan appendResult, 1)
	go func() {
		lsn, err := j.Append(context.Background(), r)
		out <- appendResult{lsn, err}
	}()
	return out
}

// TestNextGroupIsWrittenDuringFsync: while one group's fsync runs, the
// committer writes the next group; that group is acknowledged only after
// an fsync that started after it was written, and its frames name the
// oldest LSN that was not yet fsynced when they were written.
func TestNextGroupIsWrittenDuringFsync(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	defer j.Close()
	mustAppend(t, j, rec(t, 0, 1, 0)) // LSN 1, fsynced
	c.mu.Lock()
	base := c.syncs
	c.mu.Unlock()

	first := make(chan struct{})
	c.mu.Lock()
	c.hold = first
	c.mu.Unlock()
	a := appendAsync(j, rec(t, 0, 2, 0))
	c.waitSyncs(base + 1) // LSN 2 written, its fsync held
	second := make(chan struct{})
	c.mu.Lock()
	c.hold = second // for the next fsync
	c.mu.Unlock()
	b := appendAsync(j, rec(t, 0, 3, 0))
	c.waitWritten(3) // written while LSN 2's fsync is held: pipelined

	close(first)
	if r := <-a; r.err != nil || r.lsn != 2 {
		t.Fatalf("first append: LSN %d, %v", r.lsn, r.err)
	}
	c.waitSyncs(base + 2) // LSN 3's own fsync, held
	select {
	case r := <-b:
		t.Fatalf("LSN %d acknowledged before the fsync after its write returned (err %v)", r.lsn, r.err)
	default:
	}
	close(second)
	if r := <-b; r.err != nil || r.lsn != 3 {
		t.Fatalf("second append: LSN %d, %v", r.lsn, r.err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, genName(0), segmentFile))
	if err != nil {
		t.Fatal(err)
	}
	s := newScanner("segment", data, 1, 0, false)
	groups := map[uint64]uint64{}
	for s.Next() {
		groups[s.Frame().Pos] = s.Frame().Write
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	// 3 was written while 2 was not yet durable: its group is 2.
	if want := map[uint64]uint64{1: 1, 2: 2, 3: 2}; len(groups) != 3 || groups[1] != want[1] || groups[2] != want[2] || groups[3] != want[3] {
		t.Fatalf("group fields %v, want %v", groups, want)
	}
}

// TestFsyncFailureFailsWhatWasWrittenDuringIt: a record written while a
// failing fsync runs is never acknowledged, though its own write worked.
func TestFsyncFailureFailsWhatWasWrittenDuringIt(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	mustAppend(t, j, rec(t, 0, 1, 0))
	c.mu.Lock()
	base := c.syncs
	hold := make(chan struct{})
	c.hold, c.failSync = hold, syscall.EIO
	c.mu.Unlock()
	a := appendAsync(j, rec(t, 0, 2, 0))
	c.waitSyncs(base + 1)
	b := appendAsync(j, rec(t, 0, 3, 0))
	c.waitWritten(3)
	c.mu.Lock()
	c.hold, c.failSync = nil, nil // the next fsync would work
	c.mu.Unlock()
	close(hold)
	if r := <-a; !errors.Is(r.err, syscall.EIO) {
		t.Fatalf("append whose fsync failed: LSN %d, %v; want EIO", r.lsn, r.err)
	}
	if r := <-b; !errors.Is(r.err, ErrPoisoned) {
		t.Fatalf("append written during the failed fsync: LSN %d, %v; want ErrPoisoned", r.lsn, r.err)
	}
	if err := j.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close: %v, want the sticky EIO", err)
	}
}

// TestRotationWaitsForTheSyncer: a generation is closed only after the
// syncer completed everything written to it, so appends spanning many
// rotations under concurrent load all come back, in order.
func TestRotationWaitsForTheSyncer(t *testing.T) {
	dir := t.TempDir()
	opts := smallOpts() // 64 KiB generations
	j := mustOpen(t, dir, opts)
	results := make([]<-chan appendResult, 0, 400)
	for i := range 400 {
		results = append(results, appendAsync(j, rec(t, 0, i, 900)))
		if i%50 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	seen := map[uint64]bool{}
	for _, r := range results {
		res := <-r
		if res.err != nil || seen[res.lsn] {
			t.Fatalf("append: LSN %d (seen before: %v), %v", res.lsn, seen[res.lsn], res.err)
		}
		seen[res.lsn] = true
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, dir, opts)
	defer j.Close()
	if got := readAll(t, j); len(got) != 400 {
		t.Fatalf("reopened journal holds %d records, want 400", len(got))
	}
	gens, err := scanGenerations(dir, fsutil.SyncDir)
	if err != nil || len(gens) < 4 {
		t.Fatalf("%d generations (err %v): the test did not rotate", len(gens), err)
	}
}

// TestRoundTakesTwoBigRecords: while an fsync runs, the committer writes
// minRound records each bigger than MaxGroupBytes for the next round, and
// no more.
func TestRoundTakesTwoBigRecords(t *testing.T) {
	opts := smallOpts()
	opts.MaxGroupBytes = 8 << 10
	c := counting(&opts)
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	mustAppend(t, j, rec(t, 0, 0, 0))
	c.mu.Lock()
	base := c.syncs
	held := make(chan struct{})
	c.hold = held
	c.mu.Unlock()
	var once sync.Once
	release := func() { once.Do(func() { close(held) }) }
	defer release() // before Close, which waits for the held fsync
	first := appendAsync(j, rec(t, 0, 1, 12<<10))
	c.waitSyncs(base + 1) // its fsync is held
	c.mu.Lock()
	c.hold = nil
	c.mu.Unlock()
	var rest []<-chan appendResult
	for i := range 3 {
		rest = append(rest, appendAsync(j, rec(t, 0, 2+i, 12<<10)))
	}
	// Two of them are written while the fsync is held; the third waits.
	deadline := time.Now().Add(10 * time.Second)
	// LSN 1 and 2 were written before.
	for li := c.lastIndex(); li < 4; li = c.lastIndex() {
		if time.Now().After(deadline) {
			t.Fatalf("%d records written while one fsync ran, want 2", li-2)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a third would be written by now
	if li := c.lastIndex(); li != 4 {
		t.Fatalf("%d records written while one fsync ran, want 2", li-2)
	}
	release()
	for _, a := range append(rest, first) {
		if r := <-a; r.err != nil {
			t.Fatal(r.err)
		}
	}
}

// TestCloseWritesWhatIsQueued: a record queued when Close is called is
// written and acknowledged even while the pipeline has no room left (one
// record bigger than MaxGroupBytes written and waiting for the syncer).
// The committer picks between the queue and Close at random, so the race
// is run several times.
func TestCloseWritesWhatIsQueued(t *testing.T) {
	for i := range 16 {
		opts := smallOpts()
		opts.MaxGroupBytes = 8 << 10
		c := counting(&opts)
		j := mustOpen(t, t.TempDir(), opts)
		mustAppend(t, j, rec(t, 0, 0, 0))
		syncHeld, writeHeld := make(chan struct{}), make(chan struct{})
		c.mu.Lock()
		syncs, writes := c.syncs, c.writes
		c.hold = syncHeld
		c.mu.Unlock()
		a := appendAsync(j, rec(t, i, 1, 0))
		c.waitSyncs(syncs + 1) // a's fsync is held
		c.mu.Lock()
		c.hold, c.holdWrite = nil, writeHeld
		c.mu.Unlock()
		big := appendAsync(j, rec(t, i, 2, 12<<10))
		c.waitWrites(writes + 2) // the big record's write is held
		queued := appendAsync(j, rec(t, i, 3, 0))
		for len(j.queue) == 0 {
			time.Sleep(time.Millisecond)
		}
		closed := make(chan error, 1)
		go func() { closed <- j.Close() }()
		<-j.closing
		c.mu.Lock()
		c.holdWrite = nil
		c.mu.Unlock()
		close(writeHeld)
		close(syncHeld)
		for name, ch := range map[string]<-chan appendResult{"first": a, "big": big, "queued before Close": queued} {
			if r := <-ch; r.err != nil {
				t.Fatalf("round %d: %s record: %v", i, name, r.err)
			}
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	}
}

package dlq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// countingFile counts fdatasync calls, to show group commit at work.
type countingFile struct {
	file
	syncs *atomic.Int64
}

func (f countingFile) Datasync() error {
	f.syncs.Add(1)
	return f.file.Datasync()
}

// TestConcurrentAppends runs several writers at once (under -race in
// make test): every entry is stored once, each writer's in its order.
func TestConcurrentAppends(t *testing.T) {
	const writers, perWriter = 8, 60
	dir := t.TempDir()
	opts, _ := testOpts(t, 4096, 1<<20)
	var syncs atomic.Int64
	opts.hooks.openFile = func(path string, flag int) (file, error) {
		f, err := openOSFile(path, flag)
		return countingFile{f, &syncs}, err
	}
	s := mustOpen(t, dir, opts)
	var wg sync.WaitGroup
	var appends atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("writer-%d", w)
			for i := 1; i <= perWriter; {
				n := min(1+(i+w)%4, perWriter-i+1)
				if err := s.Append(context.Background(), entries(stream, i, i+n-1)); err != nil {
					errs <- err
					return
				}
				appends.Add(1)
				i += n
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustClose(t, s)
	t.Logf("%d Appends, %d fdatasyncs", appends.Load(), syncs.Load())
	_, es, err := scanAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != writers*perWriter {
		t.Fatalf("%d entries, want %d", len(es), writers*perWriter)
	}
	next := map[string]int{}
	for _, e := range es {
		next[e.Stream]++
		if want := entry(e.Stream, next[e.Stream]); !sameEntry(e, want) {
			t.Fatalf("got %+v, want %+v", e, want)
		}
	}
}

// TestScanWhileAppending reads a store that is being written (as ledgerctl
// would from another process): every Scan sees a prefix of what was
// appended, never damage.
func TestScanWhileAppending(t *testing.T) {
	const total = 300
	dir := t.TempDir()
	opts, _ := testOpts(t, 4096, 1<<20)
	s := mustOpen(t, dir, opts)
	done := make(chan error)
	go func() {
		for i := 1; i <= total; i += 3 {
			if err := s.Append(context.Background(), entries("s", i, i+2)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	check := func() int {
		_, es, err := scanAll(t, dir)
		if err != nil {
			t.Fatalf("Scan during appends: %v", err)
		}
		for i, e := range es {
			if !sameEntry(e, entry("s", i+1)) {
				t.Fatalf("entry %d is %+v", i, e)
			}
		}
		return len(es)
	}
	scans := 0
	for running := true; running; scans++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		check()
	}
	mustClose(t, s)
	if n := check(); n != total {
		t.Fatalf("%d entries after the appends, want %d", n, total)
	}
	t.Logf("%d scans while appending", scans)
}

// TestLargeSlice: a slice larger than a file is stored in parts, all of it.
func TestLargeSlice(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOpts(t, 1024, 1<<20)
	s := mustOpen(t, dir, opts)
	mustAppend(t, s, entries("s", 1, 50)...)
	mustClose(t, s)
	expectEntries(t, dir, entries("s", 1, 50))
	if n := len(dlqFiles(t, dir)); n < 5 {
		t.Fatalf("%d files", n)
	}
}

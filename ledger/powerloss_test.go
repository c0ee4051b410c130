package ledger

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/powerloss"
	"github.com/logpond/logpond/record"
)

// sameEvents reports whether got holds the events and receive time of
// the version 1 record want.
func sameEvents(t testing.TB, got record.Record, want []byte) bool {
	w, err := record.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	return got.Received().Equal(w.Received()) && slices.EqualFunc(slices.Collect(got.Events()), slices.Collect(w.Events()), bytes.Equal)
}

// TestPowerLoss writes and syncs records on a real ext4 (O_DIRECT), cuts
// the power at a random moment, remounts and reopens: every record whose
// Sync returned before the cut is there, intact. The negative control
// skips fdatasync and directory fsyncs and must lose synced records.
func TestPowerLoss(t *testing.T) {
	for _, level := range []record.Compression{{}, record.Zstd(record.LevelFastest)} {
		name := "fdatasync"
		if level.Enabled() {
			name += ", compressed"
		}
		t.Run(name, func(t *testing.T) {
			want, got, err := powerLossRun(t, true, level)
			if err != nil {
				t.Fatalf("reopen after power loss: %v", err)
			}
			if got < want {
				t.Fatalf("lost synced records: %d of %d survive", got, want)
			}
		})
	}
	// The control must show that the test can fail. The kernel sometimes
	// writes a non-syncing ledger's metadata out anyway before the cut, so
	// it gets three tries to lose something.
	t.Run("never syncs (must lose data)", func(t *testing.T) {
		for range 3 {
			want, got, err := powerLossRun(t, false, record.Compression{})
			if err != nil || got < want {
				return
			}
		}
		t.Fatal("a ledger that never syncs lost nothing in three power cuts: the test cannot tell")
	})
}

// powerLossRun writes and syncs until a random power cut, then reopens and
// returns the last LSN synced before the cut and how many records from 1
// are intact after it. level is the ledger's compression.
func powerLossRun(t *testing.T, sync bool, level record.Compression) (want, got uint64, openErr error) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	disk := powerloss.New(t, 256<<20)
	dir := filepath.Join(disk.Dir, fmt.Sprintf("ledger-%d", seed))
	opts := Options{SegmentBytes: 256 << 10, DirectIO: true, Covered: func(uint64) bool { return true }, Compression: level}
	if !sync {
		opts.hooks.fdatasync = func(*os.File) error { return nil }
		opts.hooks.syncDir = func(string) error { return nil }
	}
	l := mustOpen(t, dir, opts)
	var cut atomic.Bool
	var synced atomic.Uint64 // last LSN whose Sync returned before the cut
	var wg gosync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wrng := rand.New(rand.NewPCG(seed, 2))
		for lsn := uint64(1); ; {
			n := 1 + wrng.IntN(8)
			for range n {
				if l.Append(lsn, rec(t, lsn, int(lsn%3000))) != nil {
					return
				}
				lsn++
			}
			if l.Sync() != nil || cut.Load() {
				return
			}
			synced.Store(lsn - 1)
		}
	}()
	time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
	cut.Store(true)
	if err := disk.Shutdown(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	l.Close()
	disk.Remount()
	want = synced.Load()
	if want == 0 {
		t.Fatal("nothing was synced before the power cut")
	}
	l2, err := Open(dir, Options{SegmentBytes: opts.SegmentBytes, DirectIO: true, Covered: opts.Covered})
	if err != nil {
		return want, 0, err
	}
	r := l2.Reader(1)
	for r.Next() && r.LSN() == got+1 && sameEvents(t, r.Decoded(), rec(t, r.LSN(), int(r.LSN()%3000))) {
		got++
	}
	r.Close()
	l2.Close()
	t.Logf("synced through LSN %d before the cut; %d intact after", want, got)
	return want, got, nil
}

// TestSyncOverlappingShutdownFails is the power cut that lands while the
// ledger's fdatasync runs and that the fdatasync does not report (ext4
// returns success to a sync whose journal transaction the shutdown
// aborted; internal/fsutil): the Sync must fail, LastLSN must not cover
// the records it wrote, and the flusher must therefore not release them
// from the journal. After a remount every record synced before is there.
func TestSyncOverlappingShutdownFails(t *testing.T) {
	disk := powerloss.New(t, 64<<20)
	dir := filepath.Join(disk.Dir, "ledger")
	opts := testOpts(t, true)
	var cutDuringSync atomic.Bool
	opts.hooks.fdatasync = func(f *os.File) error {
		err := fdatasync(f)
		if cutDuringSync.Load() {
			if serr := disk.Shutdown(); serr != nil {
				t.Error(serr)
			}
		}
		return err
	}
	l := mustOpen(t, dir, opts)
	fill(t, l, 1, 20, 100, true)
	if err := l.Append(21, rec(t, 21, 100)); err != nil {
		t.Fatal(err)
	}
	cutDuringSync.Store(true)
	if err := l.Sync(); err == nil {
		t.Errorf("Sync succeeded although its file system shut down during the fdatasync; LastLSN %d", l.LastLSN())
	} else {
		t.Logf("refused as it should be: %v", err)
	}
	if last := l.LastLSN(); last != 20 {
		t.Errorf("LastLSN %d after the failed Sync, want 20", last)
	}
	l.Close() // fails: the disk is gone
	disk.Remount()

	l2 := mustOpen(t, dir, testOpts(t, true))
	defer l2.Close()
	if got := readAll(t, l2, 100); len(got) < 20 || got[19] != 20 {
		t.Errorf("after remount the ledger holds %v, want at least LSNs 1–20", got)
	}
}

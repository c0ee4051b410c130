package ledger

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/powerloss"
)

// TestPowerLoss writes and syncs records on a real ext4 (O_DIRECT), cuts
// the power at a random moment, remounts and reopens: every record whose
// Sync returned before the cut is there, intact. The negative control
// skips fdatasync and directory fsyncs and must lose synced records.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		sync bool
	}{{"fdatasync", true}, {"never syncs (must lose data)", false}} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			disk := powerloss.New(t, 256<<20)
			dir := filepath.Join(disk.Dir, "ledger")
			opts := Options{SegmentBytes: 256 << 10, DirectIO: true, Covered: func(uint64) bool { return true }}
			if !tc.sync {
				opts.hooks.fdatasync = func(*os.File) error { return nil }
				opts.hooks.syncDir = func(string) error { return nil }
			}
			l := mustOpen(t, dir, opts)
			var cut atomic.Bool
			var synced atomic.Uint64 // last LSN whose Sync returned before the cut
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				wrng := rand.New(rand.NewPCG(seed, 2))
				for lsn := uint64(1); ; {
					n := 1 + wrng.IntN(8)
					for range n {
						if l.Append(context.Background(), lsn, rec(t, lsn, int(lsn%3000))) != nil {
							return
						}
						lsn++
					}
					if l.Sync() != nil {
						return
					}
					if cut.Load() {
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

			want := synced.Load()
			if want == 0 {
				t.Fatal("nothing was synced before the power cut")
			}
			l2, err := Open(dir, Options{SegmentBytes: opts.SegmentBytes, DirectIO: true, Covered: opts.Covered})
			var got uint64
			if err == nil {
				r := l2.Reader(1)
				for r.Next() && r.LSN() == got+1 && bytes.Equal(r.Record(), rec(t, r.LSN(), int(r.LSN()%3000))) {
					got++
				}
				r.Close()
				l2.Close()
			} else if tc.sync {
				t.Fatalf("reopen after power loss: %v", err)
			}
			t.Logf("synced through LSN %d before the cut; %d intact after", want, got)
			if tc.sync && got < want {
				t.Fatalf("lost synced records: %d of %d survive", got, want)
			}
			if !tc.sync && got >= want {
				t.Fatal("a ledger that never syncs lost nothing: the test cannot tell")
			}
		})
	}
}

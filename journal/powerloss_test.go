package journal

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/powerloss"
)

// TestPowerLoss appends from many goroutines on a real ext4, cuts the power
// at a random moment, remounts, reopens, and checks that every LSN whose
// Append returned is there, intact. The negative control runs the same
// with fsyncs skipped and must lose acknowledged records, proving the test
// can fail.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fsync bool
	}{{"fsync", true}, {"never fsyncs (must lose data)", false}} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 0))
			disk := powerloss.New(t, 256<<20)
			dir := filepath.Join(disk.Dir, "journal")
			opts := Options{SegmentBytes: 256 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20}
			c := counting(&opts)
			c.skipSync = !tc.fsync
			if !tc.fsync {
				opts.hooks.syncDir = func(string) error { return nil }
			}
			j := mustOpen(t, dir, opts)

			var mu sync.Mutex
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
						mu.Lock()
						acked[lsn] = r
						mu.Unlock()
					}
				}()
			}
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
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
				j2.Close()
				for lsn, r := range acked {
					if !bytes.Equal(got[lsn], r) {
						lost++
						if tc.fsync && lost <= 5 {
							t.Errorf("acknowledged LSN %d lost or changed", lsn)
						}
					}
				}
			}
			t.Logf("%d acknowledged, %d lost", len(acked), lost)
			if tc.fsync && lost > 0 {
				t.Fatalf("%d of %d acknowledged records lost", lost, len(acked))
			}
			if !tc.fsync && lost == 0 {
				t.Fatalf("a journal that never fsyncs lost nothing: the test cannot tell")
			}
		})
	}
}

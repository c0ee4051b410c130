package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/powerloss"
)

// TestPowerLossBothDevices puts the journal and the ledger on two
// loop-mounted ext4 file systems, cuts the power of both at a random moment
// while records are appended and flushed, remounts, restarts: every record
// acknowledged before the cut is in the ledger after recovery.
func TestPowerLossBothDevices(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 4))
	jdisk := powerloss.New(t, 256<<20)
	ldisk := powerloss.New(t, 256<<20)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(jdisk.Dir, "journal")
	cfg.Ledger.Dir = filepath.Join(ldisk.Dir, "ledger")

	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx) }()
	var cut atomic.Bool
	var mu sync.Mutex
	acked := map[uint64]string{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				rec := crashRecord(w, seq)
				lsn, err := s.journal.Append(context.Background(), rec)
				if err != nil || cut.Load() {
					return
				}
				mu.Lock()
				acked[lsn] = string(rec)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
	cut.Store(true)
	// Both devices lose power together, as one machine would.
	var sw sync.WaitGroup
	for _, d := range []*powerloss.Disk{jdisk, ldisk} {
		sw.Add(1)
		go func() {
			defer sw.Done()
			if err := d.Shutdown(); err != nil {
				t.Error(err)
			}
		}()
	}
	sw.Wait()
	wg.Wait()
	cancel()
	<-runDone // fails: the disks are gone
	s.Close()
	jdisk.Remount()
	ldisk.Remount()

	r := start(t, cfg)
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	lost := 0
	for lsn, want := range acked {
		if string(got[lsn]) != want {
			lost++
		}
	}
	t.Logf("%d acknowledged before the cut, %d in the ledger after recovery, %d lost", len(acked), len(got), lost)
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged before the cut")
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost", lost)
	}
}

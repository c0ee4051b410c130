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

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/powerloss"
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

	acked := cutUnderLoad(t, cfg, 16, rng, jdisk, ldisk)

	r := start(t, cfg)
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	lost := 0
	for lsn, want := range acked {
		if string(got[lsn]) != string(want) {
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

// TestPowerLossEndToEnd is the same cut with the Elasticsearch output
// running (its cursor and dead-letter writes are on the ledger's device,
// and the test Elasticsearch rejects items and requests now and then):
// after remount and restart every record acknowledged before the cut
// reaches Elasticsearch, and none twice.
func TestPowerLossEndToEnd(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	es := startES(t, estest.Options{Seed: int64(seed)})
	es.SetFaults(estest.Faults{ItemReject429: 0.05, Request503: 0.02})
	jdisk := powerloss.New(t, 256<<20)
	ldisk := powerloss.New(t, 256<<20)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(jdisk.Dir, "journal")
	cfg.Ledger.Dir = filepath.Join(ldisk.Dir, "ledger")
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)

	records := cutUnderLoad(t, cfg, 8, rng, jdisk, ldisk)
	storedBefore := es.Count() // the output stopped with the cut
	acked := map[string]bool{}
	for _, rec := range records {
		acked[payloadKey(rec)] = true
	}

	r := start(t, cfg)
	deadline := time.Now().Add(120 * time.Second)
	for {
		copies := map[string]int{}
		for _, d := range es.Docs() {
			copies[gjson.GetBytes(d.Source, "writer").String()+"/"+gjson.GetBytes(d.Source, "seq").String()]++
		}
		missing := 0
		for p := range acked {
			if copies[p] == 0 {
				missing++
			}
		}
		if missing == 0 {
			for p, n := range copies {
				if n > 1 {
					t.Errorf("record %s stored %d times", p, n)
				}
			}
			t.Logf("%d acknowledged before the cut, %d documents before it, %d after recovery", len(acked), storedBefore, es.Count())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged records never reached Elasticsearch", missing, len(acked))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.shutdown(t)
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged before the cut")
	}
}

// cutUnderLoad runs a server on cfg with writers appending records, cuts
// the power of both disks together at a random moment (as one machine
// would lose it), closes the server, remounts the disks and returns the
// records acknowledged before the cut, by LSN.
func cutUnderLoad(t *testing.T, cfg *conf.Config, writers int, rng *rand.Rand, jdisk, ldisk *powerloss.Disk) map[uint64][]byte {
	t.Helper()
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx) }()
	var cut atomic.Bool
	var mu sync.Mutex
	acked := map[uint64][]byte{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for seq := 0; ; seq++ {
				rec := crashRecord(w, seq)
				lsn, err := s.journal().Append(context.Background(), rec)
				if err != nil || cut.Load() {
					return
				}
				mu.Lock()
				acked[lsn] = rec
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
	cut.Store(true)
	if err := powerloss.ShutdownAll(jdisk, ldisk); err != nil {
		t.Error(err)
	}
	wg.Wait()
	cancel()
	<-runDone // fails: the disks are gone
	s.Close()
	jdisk.Remount()
	ldisk.Remount()
	return acked
}

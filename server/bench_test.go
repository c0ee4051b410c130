package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
)

// BenchmarkRestartWithBacklog measures a restart with 1 GiB of records in
// the journal that never reached the ledger (the worst case after a crash
// with a stalled ledger): open-s is the time until the journal accepts
// appends again (target ≤ 5 s), replay-s the time until the flusher has
// moved the whole backlog into the ledger.
func BenchmarkRestartWithBacklog(b *testing.B) {
	const backlog = 1 << 30
	for range b.N {
		b.StopTimer()
		root := b.TempDir()
		cfg := conf.Default()
		cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
		cfg.Journal.MaxBytes = 2 << 30
		cfg.Input.Beats.Listen = "127.0.0.1:0"
		cfg.Output.Elasticsearch.Enabled = false // these tests look at the stores only
		cfg.Admin.Listen = ""
		s, err := Open(&cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		big := testRecordText(`{"pad":"` + string(bytesOf('x', 64<<10)) + `"}`)
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range backlog / len(big) / 32 {
					if _, err := s.journal().Append(context.Background(), big); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		s.Close() // no Run: the backlog stays in the journal
		// Cold start, as after a reboot: nothing of the journal cached.
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
			b.Logf("page cache not dropped (needs root): %v", err)
		}
		b.StartTimer()

		t0 := time.Now()
		s, err = Open(&cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		open := time.Since(t0)
		want := s.journal().LastLSN()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		for s.ledger().LastLSN() < want {
			time.Sleep(5 * time.Millisecond)
		}
		replay := time.Since(t0)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.ReportMetric(open.Seconds(), "open-s")
		b.ReportMetric(replay.Seconds(), "replay-s")
		b.ReportMetric(float64(backlog)/1e6/replay.Seconds(), "replay-MB/s")
	}
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

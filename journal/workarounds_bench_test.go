package journal

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkWorkarounds measures what each workaround of tidwall.go, and
// segment recycling, earns: the same load with all of them ("all") and
// with one left out, in one run (use -count to alternate them), on the
// file system of the test's temp directory (use the journal's real device:
// the discards recycling avoids need a file system mounted with discard).
// The load is 16 appenders of 64 KiB records, or 4 of 1 MiB records (a
// Beats batch of 1024 1 KiB events), while a flusher stand-in releases
// every closed generation as soon as it is durable, so that the journal
// rotates, releases and (with spares) recycles all the time.
// Metrics: records/s, B/op (allocations on the ack path) and heap-MiB
// (live heap after the run, before Close: what tidwall's in-memory copy of
// the segment keeps). docs/design.md (§4) has the figures.
func BenchmarkWorkarounds(b *testing.B) {
	variants := []struct {
		name string
		set  func(*Options)
	}{
		{"all", func(*Options) {}},
		{"no-recycling", func(o *Options) { o.SpareSegments = 0 }},
		{"no-presize", func(o *Options) { o.hooks.segment.noPresize = true }},
		{"tidwall-sync", func(o *Options) { o.hooks.segment.tidwallSync = true }},
		{"no-forget", func(o *Options) { o.hooks.segment.noForget = true }},
	}
	for _, load := range []struct{ appenders, size int }{{16, 64 << 10}, {4, 1 << 20}} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("record=%dKiB/%s", load.size>>10, v.name), func(b *testing.B) {
				workaroundsRun(b, v.set, load.appenders, load.size)
			})
		}
	}
}

// workaroundsRun is one BenchmarkWorkarounds run: appenders goroutines
// append b.N records of size bytes to a journal with set's options.
func workaroundsRun(b *testing.B, set func(*Options), appenders, size int) {
	opts := Options{SegmentBytes: 16 << 20, MaxBytes: 512 << 20, MaxGroupBytes: 2 << 20, SpareSegments: 2}
	set(&opts)
	j, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the flusher stand-in
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := j.Release(j.LastLSN()); err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	r := rec(b, 0, 0, size)
	ctx := context.Background()
	// What the previous run left (dirty pages, garbage) is not this one's.
	unix.Sync()
	runtime.GC()
	b.SetBytes(int64(len(r)))
	b.ReportAllocs()
	b.ResetTimer()
	elapsed := drive(b, appenders, b.N, r, func(r []byte) error { _, err := j.Append(ctx, r); return err })
	b.StopTimer()
	close(stop)
	wg.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}

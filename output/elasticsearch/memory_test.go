package elasticsearch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestLargeEventBurstLeavesNoBuffersBehind drains, with the default
// output settings, ordinary events, then a burst of events of the largest
// size the input accepts (max_event_bytes), then ordinary events again,
// and checks what the drain holds each time it is idle against its share
// of the memory formula (conf.Memory: the output's part, and the ledger's
// buffers, which hold its reader's): the chunk, request and read buffers
// grown for the burst must not stay, whether the burst was the last thing
// to drain or ordinary events followed it. Bytes, not time.
func TestLargeEventBurstLeavesNoBuffersBehind(t *testing.T) {
	cfg := conf.Default()
	es := cfg.Output.Elasticsearch
	m := cfg.Memory()
	share := m.Output + m.Ledger
	maxRecord := 2 * int(cfg.Journal.MaxGroupBytes) // server.MaxRecordBytes with the defaults

	sink, err := estest.StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	dir := t.TempDir()
	l, err := ledger.Open(dir+"/ledger", ledger.Options{SegmentBytes: int64(cfg.Ledger.SegmentBytes), MaxBytes: 4 << 30, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := dlq.Open(dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	var lsn uint64
	var events int64
	store := func(evs ...[]byte) {
		t.Helper()
		rec, err := record.Encode(nil, time.Now(), evs)
		if err != nil {
			t.Fatal(err)
		}
		lsn++
		if err := l.Append(lsn, rec); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		events += int64(len(evs))
	}
	head := `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"message":"`
	ordinary := func(records int) {
		const perRecord = 100 // smaller than flush_bytes, as most Beats batches
		evs := make([][]byte, perRecord)
		for range records {
			for j := range evs {
				evs[j] = fmt.Appendf(nil, `%s%07d %s"}`, head, events+int64(j), strings.Repeat("x", 900))
			}
			store(evs...)
		}
	}
	burst := func(n int) {
		big := []byte(head + strings.Repeat("x", int(cfg.Input.Beats.MaxEventBytes)-len(head)-2) + `"}`)
		for range n {
			store(big)
		}
	}
	ordinary(100)

	before := heapInUse()
	out, err := New(l, Options{
		Name: "elasticsearch", Key: "output.elasticsearch",
		Hosts: []string{sink.URL()}, Index: mustCompile(t, es.Index), FallbackIndex: es.FallbackIndex, DerivedIDs: true,
		Workers: es.Workers, FlushBytes: int(es.FlushBytes), FlushInterval: 20 * time.Millisecond, MaxRequestBytes: int(es.MaxRequestBytes),
		MaxRecordBytes: maxRecord, Timeout: time.Minute, RetryInitial: time.Millisecond, RetryMax: 20 * time.Millisecond,
		Cursor: "elasticsearch", DeadLetters: d, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- out.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	idle := func(what string) {
		t.Helper()
		waitFor(t, "every event", func() bool { return sink.Items() >= events })
		waitFor(t, "the cursor", func() bool { c, _ := l.Cursor("elasticsearch"); return c == lsn })
		held := heapInUse() - before
		runtime.KeepAlive(out)
		t.Logf("%s: the drain holds %.1f MiB; its share of the formula is %.1f MiB (output %d MiB, ledger buffers %d MiB)",
			what, float64(held)/(1<<20), float64(share)/(1<<20), m.Output>>20, m.Ledger>>20)
		if held > share {
			t.Errorf("%s: the drain holds %d MiB, more than its %d MiB share of the memory formula", what, held>>20, share>>20)
		}
	}
	idle("ordinary events")
	const n = 10
	burst(n)
	idle(fmt.Sprintf("after a burst of %d events of %d MiB", n, cfg.Input.Beats.MaxEventBytes>>20))
	ordinary(100)
	idle("ordinary events after the burst")
}

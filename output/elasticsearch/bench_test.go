package elasticsearch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/estest"
	"github.com/logpond/logpond/record"
)

// BenchmarkDrain drains a backlog of 1 KiB Filebeat-like events from a
// ledger into a sink that accepts everything: events/s and MB/s of the
// output alone (issue target: ≥ 1.5 × the input's durable ingest rate).
//
//	go test -run '^$' -bench Drain -benchtime 1x -count 3 ./output/elasticsearch
func BenchmarkDrain(b *testing.B) {
	const events, perRecord = 500_000, 500
	dir := b.TempDir()
	l, err := ledger.Open(dir+"/ledger", ledger.Options{SegmentBytes: 256 << 20, MaxBytes: 4 << 30, DirectIO: true, Retention: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := make([][]byte, perRecord)
	var rec []byte
	var bytesIn int64
	lsn := uint64(0)
	for i := 0; i < events; i += perRecord {
		for j := range batch {
			ev := fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"host":{"name":"vm"},"message":"%07d `, i+j)
			ev = append(ev, strings.Repeat("x", 1024-len(ev)-2)...)
			batch[j] = append(ev, `"}`...)
			bytesIn += int64(len(batch[j]))
		}
		rec, _ = record.Encode(rec[:0], time.Now(), batch)
		lsn++
		if err := l.Append(lsn, rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	s, err := estest.StartSink()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := range b.N {
		d, err := dlq.Open(fmt.Sprintf("%s/dlq%d", dir, i), dlq.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Reset()
		out, err := New(l, Options{
			Hosts: []string{s.URL()}, Index: mustCompile(b, "%{[@metadata][beat]}-%{[@metadata][version]}"), FallbackIndex: "x",
			DerivedIDs: true, Workers: benchWorkers, FlushBytes: 5 << 20, FlushInterval: 50 * time.Millisecond, MaxRequestBytes: 100 << 20,
			Timeout: time.Minute, RetryInitial: time.Millisecond, RetryMax: time.Second,
			Cursor: fmt.Sprintf("bench%d", i), DeadLetters: d, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- out.Run(ctx) }()
		for s.Items() < events {
			time.Sleep(time.Millisecond)
		}
		el := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		d.Close()
		b.ReportMetric(float64(events)/el.Seconds(), "events/s")
		b.ReportMetric(float64(bytesIn)/el.Seconds()/1e6, "MB/s")
	}
}

// benchWorkers is output.elasticsearch.workers in BenchmarkDrain: the
// default. (On this 2-core machine 2 workers drained ~360k events/s, 4
// ~430k, 8 no more than 4.)
var benchWorkers = conf.Default().Output.Elasticsearch.Workers

// BenchmarkDrainPushback drains one backlog of 512 B events into an estest
// server three times: accepting everything, refusing 10% of items (429) and
// 2% of requests (503) at random, and overloaded (a token bucket accepting
// a third of the clean drain rate, 429 beyond). It reports each profile's
// time as a ratio (random/clean, overload/ideal n/C) and the rejected items
// per delivered event, the figures the controller is judged by. The
// report's drain benchmark (tools/benchreport -parts drain) measures the
// same through the whole server.
//
//	go test -run '^$' -bench DrainPushback -benchtime 1x ./output/elasticsearch
func BenchmarkDrainPushback(b *testing.B) {
	const events, perRecord = 300_000, 1000
	dir := b.TempDir()
	l, err := ledger.Open(dir+"/ledger", ledger.Options{SegmentBytes: 256 << 20, MaxBytes: 4 << 30, DirectIO: true, Retention: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := make([][]byte, perRecord)
	var rec []byte
	lsn := uint64(0)
	for i := 0; i < events; i += perRecord {
		for j := range batch {
			ev := fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","message":"%07d `, i+j)
			ev = append(ev, strings.Repeat("x", 512-len(ev)-2)...)
			batch[j] = append(ev, `"}`...)
		}
		rec, _ = record.Encode(rec[:0], time.Now(), batch)
		lsn++
		if err := l.Append(lsn, rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	s, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := 0
	drain := func(f estest.Faults) (time.Duration, estest.Stats) {
		run++
		s.Reset()
		s.SetFaults(f)
		d, err := dlq.Open(fmt.Sprintf("%s/dlq%d", dir, run), dlq.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		out, err := New(l, Options{
			Hosts: []string{s.URL()}, Index: mustCompile(b, "logs"), FallbackIndex: "x",
			DerivedIDs: true, Workers: benchWorkers, FlushBytes: 5 << 20, FlushInterval: 50 * time.Millisecond,
			MaxRequestBytes: 100 << 20, Timeout: time.Minute, RetryInitial: 2 * time.Second, RetryMax: 64 * time.Second,
			Cursor: fmt.Sprintf("bench%d", run), DeadLetters: d, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- out.Run(ctx) }()
		for s.Count() < events {
			time.Sleep(time.Millisecond)
		}
		el := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return el, s.Stats()
	}
	for range b.N {
		clean, _ := drain(estest.Faults{})
		random, _ := drain(estest.Faults{ItemReject429: 0.10, Request503: 0.02})
		c := float64(events) / clean.Seconds() / 3
		overload, st := drain(estest.Faults{AcceptRate: c})
		ideal := float64(events) / c
		b.ReportMetric(clean.Seconds(), "clean-s")
		b.ReportMetric(random.Seconds()/clean.Seconds(), "random/clean")
		b.ReportMetric(overload.Seconds()/ideal, "overload/ideal")
		b.ReportMetric(float64(st.Rejected429)/float64(events), "overload-429/event")
	}
}

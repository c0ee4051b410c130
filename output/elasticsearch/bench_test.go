package elasticsearch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

// BenchmarkDrain drains a backlog of 1 KiB Filebeat-like events from a
// ledger into a sink that accepts everything: events/s and MB/s of the
// output alone (it should be at least 1.5 × the input's durable ingest
// rate, so a backlog drains while events keep arriving).
//
//	go test -run '^$' -bench Drain -benchtime 1x -count 3 ./output/elasticsearch
func BenchmarkDrain(b *testing.B) {
	const events, perRecord = 500_000, 500
	l, bytesIn := benchBacklog(b, events, perRecord, func(i int) []byte {
		ev := fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"host":{"name":"vm"},"message":"%07d `, i)
		ev = append(ev, strings.Repeat("x", 1024-len(ev)-2)...)
		return append(ev, `"}`...)
	})
	s, err := estest.StartSink()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := range b.N {
		s.Reset()
		el := benchRun(b, l, fmt.Sprintf("bench%d", i), Options{
			Hosts: []string{s.URL()}, Index: mustCompile(b, "%{[@metadata][beat]}-%{[@metadata][version]}"),
			RetryInitial: time.Millisecond, RetryMax: time.Second,
		}, func() bool { return s.Items() >= events })
		b.ReportMetric(float64(events)/el.Seconds(), "events/s")
		b.ReportMetric(float64(bytesIn)/el.Seconds()/1e6, "MB/s")
	}
}

// BenchmarkDrainDataStreams drains three backlogs of 1 KiB events into
// a sink in one run and reports each one's speed as a ratio of the first,
// what per-event routing costs: classic Filebeat events to their index
// (data_stream = false), Elastic Agent events with a whole data_stream
// object and @timestamp to their data stream (data_stream = "auto"), and
// events whose data_stream object lacks its namespace and that have no
// @timestamp, which the output completes (edits to the source line, and
// their inverse kept for dead letters).
//
//	go test -run '^$' -bench DrainDataStreams -benchtime 1x -count 3 ./output/elasticsearch
func BenchmarkDrainDataStreams(b *testing.B) {
	const events, perRecord = 300_000, 500
	pad := func(ev []byte) []byte {
		ev = append(ev, strings.Repeat("x", 1024-len(ev)-2)...)
		return append(ev, `"}`...)
	}
	profiles := []struct {
		name string
		mode DataStreamMode
		ev   func(i int) []byte
	}{
		{"classic-index", DataStreamOff, func(i int) []byte {
			return pad(fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"host":{"name":"vm"},"message":"%07d `, i))
		}},
		{"agent-data-stream", DataStreamAuto, func(i int) []byte {
			return pad(fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"default"},"host":{"name":"vm"},"message":"%07d `, i))
		}},
		{"completed", DataStreamAuto, func(i int) []byte {
			return pad(fmt.Appendf(nil, `{"@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"data_stream":{"type":"logs","dataset":"nginx.access"},"host":{"name":"vm"},"message":"%07d `, i))
		}},
	}
	s, err := estest.StartSink()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ledgers := make([]*ledger.Ledger, len(profiles))
	for i, p := range profiles {
		ledgers[i], _ = benchBacklog(b, events, perRecord, p.ev)
	}
	b.ResetTimer()
	for i := range b.N {
		var base time.Duration
		for j, p := range profiles {
			s.Reset()
			el := benchRun(b, ledgers[j], fmt.Sprintf("bench%d", i), Options{
				Hosts: []string{s.URL()}, Index: mustCompile(b, "%{[@metadata][beat]}-%{[@metadata][version]}"),
				DataStream: p.mode, DataStreamType: "logs", DataStreamDataset: "generic", DataStreamNamespace: "default",
				DataStreamSyncFields: true, RetryInitial: time.Millisecond, RetryMax: time.Second,
			}, func() bool { return s.Items() >= events })
			if j == 0 {
				base = el
				b.ReportMetric(float64(events)/el.Seconds(), "events/s")
				continue
			}
			b.ReportMetric(base.Seconds()/el.Seconds(), p.name+"-speed/classic")
		}
	}
}

// benchBacklog fills a ledger with events events made by ev, perRecord to
// a record, and returns it with the events' bytes.
func benchBacklog(b *testing.B, events, perRecord int, ev func(i int) []byte) (*ledger.Ledger, int64) {
	b.Helper()
	l, err := ledger.Open(b.TempDir()+"/ledger", ledger.Options{SegmentBytes: 256 << 20, MaxBytes: 4 << 30, DirectIO: true, Retention: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	batch := make([][]byte, perRecord)
	var rec []byte
	var bytesIn int64
	lsn := uint64(0)
	for i := 0; i < events; i += perRecord {
		for j := range batch {
			batch[j] = ev(i + j)
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
	return l, bytesIn
}

// benchRun drains l from the start under cursor with opts (the defaults
// of a drain filled in) until done says so, and returns how long it took.
func benchRun(b *testing.B, l *ledger.Ledger, cursor string, opts Options, done func() bool) time.Duration {
	b.Helper()
	d, err := dlq.Open(b.TempDir(), dlq.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	opts.FallbackIndex, opts.DerivedIDs, opts.Workers = "x", true, benchWorkers
	opts.FlushBytes, opts.FlushInterval, opts.MaxRequestBytes, opts.Timeout = int(conf.Default().Output.Elasticsearch.FlushBytes), 50*time.Millisecond, 100<<20, time.Minute
	opts.MaxRecordBytes = 4 << 20 // the default configuration's
	opts.Name, opts.Key = "elasticsearch", "output.elasticsearch"
	opts.Cursor, opts.DeadLetters, opts.Logger = cursor, d, slog.New(slog.DiscardHandler)
	out, err := New(l, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	start := time.Now()
	go func() { stopped <- out.Run(ctx) }()
	for !done() {
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
	return el
}

// benchWorkers is output.elasticsearch.workers in BenchmarkDrain: the
// default. (On this 2-core machine 2 workers drained ~360k events/s, 4
// ~430k, 8 no more than 4.)
var benchWorkers = conf.Default().Output.Elasticsearch.Workers

// BenchmarkDrainPushback drains one backlog of 512 B events into an estest
// server four times: accepting everything, refusing 10% of items (429) and
// 2% of requests (503) at random, overloaded (a token bucket accepting a
// third of the clean drain rate, 429 beyond), and in a storm (every item
// refused for 10 s, then overloaded). It reports each profile's time as a
// ratio (random/clean, overload/ideal n/C, storm/ideal 10 s + n/C) and the
// rejected items per delivered event, the figures the controller is judged
// by. The
// report's drain benchmark (tools/benchreport -parts drain) measures the
// same through the whole server.
//
//	go test -run '^$' -bench DrainPushback -benchtime 1x ./output/elasticsearch
func BenchmarkDrainPushback(b *testing.B) {
	const events, perRecord = 300_000, 1000
	l, _ := benchBacklog(b, events, perRecord, func(i int) []byte {
		ev := fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","message":"%07d `, i)
		ev = append(ev, strings.Repeat("x", 512-len(ev)-2)...)
		return append(ev, `"}`...)
	})
	s, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := 0
	// drain drains the backlog with faults f, then from after on (when
	// positive) with then.
	drain := func(f estest.Faults, after time.Duration, then estest.Faults) (time.Duration, estest.Stats) {
		run++
		s.Reset()
		s.SetFaults(f)
		if after > 0 {
			t := time.AfterFunc(after, func() { s.SetFaults(then) })
			defer t.Stop()
		}
		el := benchRun(b, l, fmt.Sprintf("bench%d", run), Options{
			Hosts: []string{s.URL()}, Index: mustCompile(b, "logs"), RetryInitial: 2 * time.Second, RetryMax: 64 * time.Second,
		}, func() bool { return s.Count() >= events })
		return el, s.Stats()
	}
	for range b.N {
		clean, _ := drain(estest.Faults{}, 0, estest.Faults{})
		random, _ := drain(estest.Faults{ItemReject429: 0.10, Request503: 0.02}, 0, estest.Faults{})
		c := float64(events) / clean.Seconds() / 3
		overload, st := drain(estest.Faults{AcceptRate: c}, 0, estest.Faults{})
		ideal := float64(events) / c
		const refusal = 10 * time.Second
		storm, _ := drain(estest.Faults{ItemReject429: 1}, refusal, estest.Faults{AcceptRate: c})
		b.ReportMetric(clean.Seconds(), "clean-s")
		b.ReportMetric(random.Seconds()/clean.Seconds(), "random/clean")
		b.ReportMetric(overload.Seconds()/ideal, "overload/ideal")
		b.ReportMetric(float64(st.Rejected429)/float64(events), "overload-429/event")
		b.ReportMetric(storm.Seconds()/(refusal.Seconds()+ideal), "storm/ideal")
	}
}

// encodeShapes are the event shapes BenchmarkEncode encodes, 512 B each,
// laid out as the benchmark report's datastreams part lays them out
// (tools/internal/lumberload): @metadata first, a message string last.
// Off is the data_stream setting; the others use "auto", the default.
var encodeShapes = []struct {
	name string
	mode DataStreamMode
	head string // the event up to its message's text; %s is the dataset
}{
	{"classic-off", DataStreamOff, `{"@metadata":{"beat":"beatsbench","version":"1"},"n":%d,"message":"`},
	{"classic", DataStreamAuto, `{"@metadata":{"beat":"beatsbench","version":"1"},"n":%d,"message":"`},
	{"agent", DataStreamAuto, `{"@metadata":{"beat":"beatsbench","version":"1"},"@timestamp":"2026-12-05T06:27:00.000Z","data_stream":{"type":"logs","dataset":"%s","namespace":"default"},"n":%d,"message":"`},
	{"agent-partial", DataStreamAuto, `{"@metadata":{"beat":"beatsbench","version":"1"},"data_stream":{"dataset":"%s"},"n":%d,"message":"`},
}

// encodeEvents makes n events of a shape of encodeShapes, size bytes
// each, cycling through four datasets (so through four data streams).
// Their messages are the benchmark report's (tools/internal/lumberload):
// the same words in the same pseudo-random order, escaped quotes and
// underscores included, which decide what the walk's searches cost.
func encodeEvents(head string, n, size int) [][]byte {
	datasets := []string{"system.syslog", "nginx.access", "nginx.error", "kubernetes.container_logs"}
	evs := make([][]byte, n)
	for i := range evs {
		var ev []byte
		if strings.Contains(head, "%s") {
			ev = fmt.Appendf(nil, head, datasets[i%len(datasets)], i)
		} else {
			ev = fmt.Appendf(nil, head, i)
		}
		x := uint32(i)*2654435761 + 1
		for len(ev) < size-2 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			ev = append(ev, strings.ReplaceAll(loadWords[x%uint32(len(loadWords))], `"`, `\"`)...)
			ev = append(ev, ' ')
		}
		ev = ev[:size-2]
		if ev[len(ev)-1] == '\\' {
			ev[len(ev)-1] = ' '
		}
		evs[i] = append(ev, `"}`...)
	}
	return evs
}

// loadWords are the words of the benchmark report's messages
// (tools/internal/lumberload).
var loadWords = strings.Fields(`GET POST /api/v1/orders /health /login user=alice user=bob status=200
status=404 status=503 latency_ms=12 latency_ms=347 upstream=10.0.3.17:8080 request_id=7f3a9c
"Mozilla/5.0 (X11; Linux x86_64)" connection reset by peer retrying in 2s cache miss
for key session:91a2 took 0.043s INFO WARN ERROR worker-7 worker-12 shard=3 bytes=5120`)

// BenchmarkEncode turns one event into its bulk action and source line
// (Output.add: metadata, routing, index name, document id, the kept
// entry), per event shape: the CPU and allocations routing costs per
// event, apart from reading the ledger and sending.
//
//	go test -run '^$' -bench Encode -benchmem ./output/elasticsearch
func BenchmarkEncode(b *testing.B) {
	for _, s := range encodeShapes {
		b.Run(s.name, func(b *testing.B) {
			opts := routeOptions(s.mode, true)
			opts.DerivedIDs = true
			o := &Output{opts: opts, log: slog.New(slog.DiscardHandler), metaOnlyIndex: true, idPrefix: "bench"}
			evs := encodeEvents(s.head, 1024, 512)
			batch := newBatch(newBufPool(1, 0, 1<<20), 1<<20, len(evs))
			var scratch []byte
			var nc nameCache
			received := time.Date(2026, 12, 5, 6, 27, 0, 0, time.UTC)
			b.SetBytes(512)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % len(evs)
				if k == 0 {
					batch.buf, batch.kept, batch.items = batch.buf[:0], batch.kept[:0], batch.items[:0]
				}
				if dead := o.add(batch, 1, k, received, evs[k], &scratch, &nc); dead != nil {
					b.Fatalf("%s: dead letter: %s", s.name, dead.Reason)
				}
			}
			b.ReportMetric(1, "events/op") // for the benchmark report's allocations per event
		})
	}
}

// BenchmarkEncodeFilebeat is BenchmarkEncode on a 1 KiB Filebeat 9 event
// as Filebeat lays it out (@timestamp, @metadata, then log, message,
// input, ecs, host and agent objects), routed with the default
// data_stream = "auto": what the walk over its top level costs, which
// stops once the rest cannot hold a data_stream or a second @metadata.
func BenchmarkEncodeFilebeat(b *testing.B) {
	ev := []byte(`{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"log":{"offset":1048576,"file":{"path":"/var/log/nginx/access.log","device_id":"65024","inode":"786442"}},"message":"203.0.113.195 - alice [02/Dec/2026:10:00:00 +0000] \"GET /api/v1/orders/4211?expand=items HTTP/1.1\" 200 5120 \"https://shop.example.com/cart\" \"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0\"","input":{"type":"filestream"},"ecs":{"version":"8.0.0"},"host":{"name":"web-7","hostname":"web-7","architecture":"x86_64","os":{"kernel":"6.1.0-18-amd64","codename":"bookworm","type":"linux","platform":"debian","version":"12 (bookworm)","family":"debian","name":"Debian GNU/Linux"},"id":"9f1c2d3e4b5a69788796a5b4c3d2e1f0","containerized":false,"ip":["10.20.30.40","fe80::5054:ff:fe12:3456"],"mac":["52-54-00-12-34-56"]},"agent":{"type":"filebeat","version":"9.3.0","ephemeral_id":"760f60ca-369e-4721-9f7e-b6a6dd214af6","id":"4fd84cab-20a6-4a65-a1ac-08c338a28968","name":"web-7"}}`)
	opts := routeOptions(DataStreamAuto, true)
	opts.DerivedIDs = true
	o := &Output{opts: opts, log: slog.New(slog.DiscardHandler), metaOnlyIndex: true, idPrefix: "bench"}
	batch := newBatch(newBufPool(1, 0, 1<<20), 1<<20, 1024)
	var scratch []byte
	var nc nameCache
	received := time.Date(2026, 12, 5, 6, 27, 0, 0, time.UTC)
	for i := range b.N {
		k := i % 1024
		if k == 0 {
			batch.buf, batch.kept, batch.items = batch.buf[:0], batch.kept[:0], batch.items[:0]
		}
		if dead := o.add(batch, 1, k, received, ev, &scratch, &nc); dead != nil {
			b.Fatal(dead.Reason)
		}
	}
	b.ReportMetric(1, "events/op") // for the benchmark report's allocations per event
}

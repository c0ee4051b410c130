package elasticsearch

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain/draintest"
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
	m := cfg.Memory()
	share := m.Output + m.Ledger

	sink, err := estest.StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	l, d := defaultStores(t, cfg)

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
	opts := defaultOptions(t, cfg, sink.URL(), d)
	opts.FlushInterval, opts.Timeout, opts.RetryInitial, opts.RetryMax = 20*time.Millisecond, time.Minute, time.Millisecond, 20*time.Millisecond
	out := startOutput(t, l, opts)
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

// hungBulk is a cluster that answers everything but _bulk as es does,
// and either takes bulk requests without ever reading their bodies or
// answering them (every request the output sends stays in flight, its
// body in the output's buffers, until the test ends), or, with refuse,
// answers every item 429, holding no request in memory (so that what the
// test measures is the output's, not a test cluster's).
type hungBulk struct {
	refuse  bool
	srv     *http.Server
	ln      net.Listener
	release chan struct{}
	hung    atomic.Int64 // bulk requests waiting
}

func startHungBulk(t *testing.T, es *estest.Server, refuse bool) *hungBulk {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(es.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	h := &hungBulk{refuse: refuse, ln: ln, release: make(chan struct{})}
	h.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/_bulk") {
			proxy.ServeHTTP(w, r)
			return
		}
		if h.refuse {
			// Each item refused with 429, as a cluster whose write
			// queues are full answers: the items go to the retry queue.
			lines := 0
			sc := bufio.NewScanner(r.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				lines++
			}
			resp := []byte(`{"took":1,"errors":true,"items":[`)
			for i := range lines / 2 {
				if i > 0 {
					resp = append(resp, ',')
				}
				resp = append(resp, `{"create":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected execution"}}}`...)
			}
			resp = append(resp, "]}"...)
			w.Header().Set("Content-Type", "application/json")
			w.Write(resp)
			return
		}
		h.hung.Add(1)
		defer h.hung.Add(-1)
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	})}
	go h.srv.Serve(ln)
	t.Cleanup(func() {
		close(h.release)
		h.srv.Close()
	})
	return h
}

func (h *hungBulk) URL() string { return "http://" + h.ln.Addr().String() }

// TestDrainOfLargestRecordsHoldsItsShare drains records of 2 MiB and of
// the largest size the input writes (2 × journal.max_group_bytes), each
// of many 1 KiB events, into a cluster that never answers (every worker's
// request in flight, the chunks read ahead waiting behind them) and into
// one that refuses every item (the retry queue at its bound), with the
// default output settings and every worker busy (fixed concurrency): what
// the drain holds must stay within its share of the memory formula (the
// output's part and the ledger's buffers, which hold its reader's). A
// chunk holds flush_bytes and one record, so records larger than
// flush_bytes are where a formula that counted flush_bytes alone falls
// short. Bytes, not time: the held heap is sampled after a collection.
func TestDrainOfLargestRecordsHoldsItsShare(t *testing.T) {
	cfg := conf.Default()
	maxRecord := 2 * int(cfg.Journal.MaxGroupBytes)
	for _, size := range []int{2 << 20, maxRecord} {
		for _, cluster := range []string{"hung", "refusing"} {
			t.Run(fmt.Sprintf("%dMiB/%s", size>>20, cluster), func(t *testing.T) {
				drainLargeRecords(t, cfg, size, cluster)
			})
		}
	}
}

func drainLargeRecords(t *testing.T, cfg conf.Config, size int, cluster string) {
	es := cfg.Output.Elasticsearch
	m := cfg.Memory()
	share := m.Output + m.Ledger
	l, d := defaultStores(t, cfg)
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hung := startHungBulk(t, srv, cluster == "refusing")

	// Enough records for every buffer on the way: chunks read ahead, one
	// per worker, the retry queue and more left in the ledger.
	const event = 1 << 10
	head := `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"message":"`
	perRecord := size / event
	records := 4 * (int(es.Workers) + 2) * max(1, int(es.FlushBytes)/size+1)
	evs := make([][]byte, perRecord)
	for i := range records {
		for j := range evs {
			prefix := fmt.Sprintf("%s%07d-%05d ", head, i, j)
			evs[j] = []byte(prefix + strings.Repeat("x", event-len(prefix)-2) + `"}`)
		}
		rec, err := record.Encode(nil, time.Now(), evs)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(uint64(i+1), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}

	before := heapInUse()
	opts := defaultOptions(t, cfg, hung.URL(), d)
	opts.FixedConcurrency, opts.Timeout = true, time.Hour
	// Refused items wait long enough for the queue to stay full.
	opts.RetryInitial, opts.RetryMax = time.Second, time.Minute
	out := startOutput(t, l, opts)
	if !hung.refuse {
		waitFor(t, "every worker's request in flight", func() bool { return hung.hung.Load() == int64(es.Workers) })
	} else {
		waitFor(t, "a full retry queue", func() bool {
			g := out.Gauges()
			return g.RetryMaxBytes > 0 && g.RetryBytes >= g.RetryMaxBytes
		})
	}
	// The reader fills the chunks ahead while the workers wait: sample
	// what the drain holds a few times and keep the most.
	var held int64
	for range 5 {
		held = max(held, heapInUse()-before)
		time.Sleep(100 * time.Millisecond)
	}
	runtime.KeepAlive(out)
	t.Logf("records of %d MiB, %s cluster: the drain holds %.1f MiB; its share of the formula is %.1f MiB (output %.1f MiB, ledger buffers %.1f MiB)",
		size>>20, cluster, float64(held)/(1<<20), float64(share)/(1<<20), float64(m.Output)/(1<<20), float64(m.Ledger)/(1<<20))
	if held > share {
		t.Errorf("records of %d MiB, %s cluster: the drain holds %.1f MiB, more than its %.1f MiB share of the memory formula",
			size>>20, cluster, float64(held)/(1<<20), float64(share)/(1<<20))
	}
}

// defaultStores opens a ledger with cfg's segment size and a dead-letter
// store, closed when the test ends.
func defaultStores(t *testing.T, cfg conf.Config) (*ledger.Ledger, *dlq.Store) {
	t.Helper()
	dir := t.TempDir()
	l, err := ledger.Open(dir+"/ledger", ledger.Options{SegmentBytes: int64(cfg.Ledger.SegmentBytes), MaxBytes: 4 << 30, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	d, err := dlq.Open(dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return l, d
}

// defaultOptions are the options the server gives the output of cfg's
// [output.elasticsearch], sending to host.
func defaultOptions(t *testing.T, cfg conf.Config, host string, d *dlq.Store) Options {
	es := cfg.Output.Elasticsearch
	return Options{
		Name: "elasticsearch", Key: "output.elasticsearch",
		Hosts: []string{host}, Index: mustCompile(t, es.Index), FallbackIndex: es.FallbackIndex, DerivedIDs: true,
		Workers: es.Workers, FlushBytes: int(es.FlushBytes), FlushInterval: time.Duration(es.FlushInterval),
		MaxRequestBytes: int(es.MaxRequestBytes), MaxRecordBytes: 2 * int(cfg.Journal.MaxGroupBytes), // server.MaxRecordBytes
		Timeout: time.Duration(es.Timeout), RetryInitial: time.Duration(es.RetryInitialInterval), RetryMax: time.Duration(es.RetryMaxInterval),
		Cursor: "elasticsearch", DeadLetters: d, Logger: slog.New(slog.DiscardHandler),
	}
}

// startOutput runs an output over l with opts until the test ends.
func startOutput(t *testing.T, l *ledger.Ledger, opts Options) *Output {
	t.Helper()
	out, err := New(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	draintest.Start(t, out)
	return out
}

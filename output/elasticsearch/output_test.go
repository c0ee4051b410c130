package elasticsearch

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/output/sprintf"
	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a ledger, a dead-letter store and a test Elasticsearch.
type rig struct {
	t      *testing.T
	dir    string
	ledger *ledger.Ledger
	dlq    *dlq.Store
	es     *estest.Server
	events map[string][]byte // document id → the event as stored
	lsn    uint64
}

func newRig(t *testing.T, esOpts estest.Options) *rig {
	t.Helper()
	return newRigWith(t, esOpts, nil)
}

// newRigWith is newRig with its ledger's options changed by mod.
func newRigWith(t *testing.T, esOpts estest.Options, mod func(*ledger.Options)) *rig {
	t.Helper()
	dir := t.TempDir()
	lopts := ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, DirectIO: true}
	if mod != nil {
		mod(&lopts)
	}
	l, err := ledger.Open(dir+"/ledger", lopts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dlq.Open(dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if esOpts.Seed == 0 {
		esOpts.Seed = time.Now().UnixNano()
	}
	t.Logf("estest seed %d", esOpts.Seed)
	srv, err := estest.Start(esOpts)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, ledger: l, dlq: d, es: srv, events: map[string][]byte{}}
	t.Cleanup(func() {
		srv.Close()
		d.Close()
		l.Close()
	})
	return r
}

// store appends one record of events to the ledger and syncs it,
// returning its LSN.
func (r *rig) store(received time.Time, events ...[]byte) uint64 {
	r.t.Helper()
	rec, err := record.Encode(nil, received, events)
	if err != nil {
		r.t.Fatal(err)
	}
	r.lsn++
	if err := r.ledger.Append(r.lsn, rec); err != nil {
		r.t.Fatal(err)
	}
	if err := r.ledger.Sync(); err != nil {
		r.t.Fatal(err)
	}
	prefix, _ := idPrefix(r.ledger.StreamID())
	for i, ev := range events {
		r.events[string(appendDocID(nil, prefix, r.lsn, i))] = ev
	}
	return r.lsn
}

func (r *rig) options(mod func(*Options)) Options {
	o := Options{
		Name: "elasticsearch", Key: "output.elasticsearch",
		Hosts:         []string{r.es.URL()},
		Index:         mustCompile(r.t, "%{[@metadata][beat]}-%{[@metadata][version]}"),
		FallbackIndex: "logpond-fallback",
		DerivedIDs:    true,
		Workers:       2, FlushBytes: 64 << 10, FlushInterval: 20 * time.Millisecond, MaxRequestBytes: 1 << 20, MaxRecordBytes: 256 << 10,
		Timeout: 5 * time.Second, RetryInitial: time.Millisecond, RetryMax: 20 * time.Millisecond,
		Cursor: "elasticsearch", DeadLetters: r.dlq, Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

// running is an Output running in the background.
type running = draintest.Running[*Output]

func (r *rig) start(opts Options) *running {
	r.t.Helper()
	out, err := New(r.ledger, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return draintest.Start(r.t, out)
}

// waitFor polls cond until it holds (draintest.WaitFor).
var waitFor = draintest.WaitFor

func mustCompile(t testing.TB, s string) *sprintf.Format {
	t.Helper()
	f, err := sprintf.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func filebeatEvent(i int, extra string) []byte {
	return fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"%s},"message":"event %d %s"}`,
		extra, i, strings.Repeat("x", i%50))
}

// withoutMetadata is what the source of a Filebeat event must be.
func withoutMetadata(ev []byte) []byte {
	m := readMeta(ev)
	out, _ := appendSource(nil, ev, m.cut)
	return out
}

func (r *rig) checkAllStoredOnce(t *testing.T) {
	t.Helper()
	docs := r.es.Docs()
	if len(docs) != len(r.events) {
		t.Errorf("%d documents in Elasticsearch, want %d", len(docs), len(r.events))
	}
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.ID] {
			t.Errorf("document id %s twice", d.ID)
		}
		seen[d.ID] = true
		ev, ok := r.events[d.ID]
		if !ok {
			t.Errorf("unexpected document %s in %s: %s", d.ID, d.Index, d.Source)
			continue
		}
		if want := withoutMetadata(ev); !bytes.Equal(d.Source, want) {
			t.Errorf("document %s: source %s, want %s", d.ID, d.Source, want)
		}
	}
}

func TestDrainsEveryEventOnceAndAdvancesTheCursor(t *testing.T) {
	r := newRig(t, estest.Options{})
	n := r.storeEvents(200, 10)
	run := r.start(r.options(nil))
	waitFor(t, "every event", func() bool { return r.es.Count() == n })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	for _, d := range r.es.Docs() {
		if d.Index != "filebeat-9.3.0" {
			t.Fatalf("document in index %q, want filebeat-9.3.0", d.Index)
		}
	}
	// More records after a restart: only they are sent.
	before := r.es.Stats().Items
	r.store(time.Now(), filebeatEvent(n, ""))
	r.start(r.options(nil))
	waitFor(t, "the new event", func() bool { return r.es.Count() == n+1 })
	if got := r.es.Stats().Items - before; got != 1 {
		t.Errorf("restart sent %d items, want only the new one", got)
	}
}

// TestDrainsACompressedLedgerOnce: from a compressed ledger, records of
// every size (some fitting the chunk's room, into which the Reader
// decompresses them, some not, copied as from an uncompressed ledger, one
// larger than a whole chunk) reach Elasticsearch once each, intact.
func TestDrainsACompressedLedgerOnce(t *testing.T) {
	r := newRigWith(t, estest.Options{}, func(o *ledger.Options) { o.Compression = record.S2(record.LevelFastest) })
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := make([]int, 120)
	for i := range sizes {
		sizes[i] = 1 + rng.IntN(150)
	}
	sizes[60] = 700 // more than a chunk (FlushBytes) holds
	n := r.storeRecords(sizes...)
	run := r.start(r.options(nil))
	waitFor(t, "every event", func() bool { return r.es.Count() == n })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if st := r.ledger.Compression(); st.StoredBytes*2 > st.RawBytes {
		t.Fatalf("the ledger stored %d of %d bytes: not compressed", st.StoredBytes, st.RawBytes)
	}
}

// storeEvents stores records records of perRecord Filebeat events each,
// numbered from 0, and returns how many events that is.
func (r *rig) storeEvents(records, perRecord int) int {
	sizes := make([]int, records)
	for i := range sizes {
		sizes[i] = perRecord
	}
	return r.storeRecords(sizes...)
}

// storeRecords stores a record of Filebeat events per size, numbered on
// from 0, and returns how many events that is.
func (r *rig) storeRecords(sizes ...int) int {
	n := 0
	for _, k := range sizes {
		evs := make([][]byte, k)
		for i := range evs {
			evs[i] = filebeatEvent(n, "")
			n++
		}
		r.store(time.Now(), evs...)
	}
	return n
}

// TestIdempotentUnderFaultsAndRestart: exactly once under faults:
// 100k events, 10% of items answered 429, 5% of requests 503, a restart in
// the middle: exactly one document per id, every event present.
func TestIdempotentUnderFaultsAndRestart(t *testing.T) {
	r := newRig(t, estest.Options{})
	r.es.SetFaults(estest.Faults{ItemReject429: 0.10, Request503: 0.05, Drop: 0.01, Latency: time.Millisecond})
	n := r.storeEvents(1000, 100)
	opts := r.options(func(o *Options) { o.FlushInterval = 5 * time.Millisecond })
	first := r.start(opts)
	waitFor(t, "half the events", func() bool { return r.es.Count() >= n/2 })
	first.Stop(t)
	t.Logf("stopped at %d documents, cursor %d", r.es.Count(), first.Out.Stats().CursorLSN)
	second := r.start(opts)
	waitFor(t, "every event", func() bool { return r.es.Count() >= n })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	second.Stop(t)
	r.checkAllStoredOnce(t)
	st := r.es.Stats()
	t.Logf("estest: %+v", st)
	if st.Rejected429 == 0 || st.Failed503Requests == 0 {
		t.Errorf("faults were not injected: %+v", st)
	}
	if s := first.Out.Stats(); s.Retried == 0 || s.FailedRequests == 0 {
		t.Errorf("output did not retry: %+v", s)
	}
}

// TestIdempotentUnderOverload: a cluster that takes only 2000 items/s and
// refuses the rest (429), so the output paces itself, with a restart in
// the middle: exactly one document per id, every event present.
func TestIdempotentUnderOverload(t *testing.T) {
	r := newRig(t, estest.Options{})
	r.es.SetFaults(estest.Faults{AcceptRate: 2000})
	n := r.storeEvents(100, 100)
	opts := r.options(func(o *Options) {
		o.FlushInterval = 5 * time.Millisecond
		o.RetryInitial, o.RetryMax = 100*time.Millisecond, time.Second
	})
	first := r.start(opts)
	paced := false
	waitFor(t, "half the events", func() bool {
		paced = paced || first.Out.Gauges().PaceRate > 0
		return r.es.Count() >= n/2
	})
	first.Stop(t)
	second := r.start(opts)
	waitFor(t, "every event", func() bool {
		paced = paced || second.Out.Gauges().PaceRate > 0
		return r.es.Count() >= n
	})
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	second.Stop(t)
	r.checkAllStoredOnce(t)
	st := r.es.Stats()
	t.Logf("estest: %d created, %d rejected, %d requests", st.Created, st.Rejected429, st.BulkRequests)
	if st.Rejected429 == 0 || !paced {
		t.Errorf("the overload did not show: %d items rejected, paced %v", st.Rejected429, paced)
	}
}

// TestDocumentIDNoneDuplicatesOnReplay is the control for the test above:
// without derived ids, the replay after a restart writes copies. It shows
// the idempotence test can fail.
func TestDocumentIDNoneDuplicatesOnReplay(t *testing.T) {
	r := newRig(t, estest.Options{})
	for i := range 50 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	opts := r.options(func(o *Options) { o.DerivedIDs = false })
	run := r.start(opts)
	waitFor(t, "every event", func() bool { return r.es.Count() == 50 })
	run.Stop(t)
	// Forget the cursor's progress: as after a crash before it was persisted.
	if err := r.ledger.DeleteCursor("elasticsearch"); err != nil {
		t.Fatal(err)
	}
	r.start(opts)
	waitFor(t, "the replay", func() bool { return r.es.Count() == 100 })
}

func TestMetadataIDIsTheDocumentID(t *testing.T) {
	r := newRig(t, estest.Options{})
	ev := filebeatEvent(1, `,"_id":"fingerprint-1"`)
	r.store(time.Now(), ev)
	r.store(time.Now(), ev) // the client resent it
	run := r.start(r.options(nil))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == 2 })
	run.Stop(t)
	if r.es.Count() != 1 {
		t.Fatalf("%d documents, want 1", r.es.Count())
	}
	src, ok := r.es.Doc("filebeat-9.3.0", "fingerprint-1")
	if !ok || !bytes.Equal(src, withoutMetadata(ev)) {
		t.Fatalf("document fingerprint-1: %s, %v", src, ok)
	}
	if st := run.Out.Stats(); st.Conflicts != 1 {
		t.Errorf("%d conflicts, want 1 (the resent copy)", st.Conflicts)
	}
}

func TestIndexAndPipelineNaming(t *testing.T) {
	r := newRig(t, estest.Options{})
	received := time.Date(2027, 1, 1, 0, 30, 0, 0, time.UTC)
	r.store(received,
		[]byte(`{"@timestamp":"2026-12-31T23:59:59.999Z","@metadata":{"beat":"filebeat","version":"9.3.0"},"a":1}`),
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0","pipeline":"from-event"},"a":2}`),
		[]byte(`{"a":3}`),
	)
	opts := r.options(func(o *Options) {
		o.Index = mustCompile(t, "%{[@metadata][beat]}-%{+yyyy.MM.dd}")
		o.Pipeline = mustCompile(t, "default-pipeline")
	})
	run := r.start(opts)
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == 1 })
	run.Stop(t)
	prefix, _ := idPrefix(r.ledger.StreamID())
	want := []struct{ index, pipeline string }{
		{"filebeat-2026.12.31", "default-pipeline"}, // the event's own date, not the receive time
		{"filebeat-2027.01.01", "from-event"},       // no @timestamp: the record's receive time
		{"logpond-fallback", "default-pipeline"},    // no @metadata.beat
	}
	byID := map[string]estest.Doc{}
	for _, d := range r.es.Docs() {
		byID[d.ID] = d
	}
	for i, w := range want {
		d, ok := byID[string(appendDocID(nil, prefix, 1, i))]
		if !ok || d.Index != w.index || d.Pipeline != w.pipeline {
			t.Errorf("event %d: %+v (stored %v), want index %s pipeline %s", i, d, ok, w.index, w.pipeline)
		}
	}
}

// TestPoisonPills: none of these may wedge the drain; each ends up either
// indexed (compacted) or in the dead-letter store with its reason.
func TestPoisonPills(t *testing.T) {
	r := newRig(t, estest.Options{MaxContentLength: 256 << 10})
	// The test server refuses a whole request holding this marker, as
	// Elasticsearch does with a line it cannot parse.
	r.es.SetFaults(estest.Faults{RequestHook: func(body []byte) (int, string, string, bool) {
		if bytes.Contains(body, []byte("POISON-REQUEST")) {
			return 400, "x_content_parse_exception", "cannot parse the request", true
		}
		return 0, "", "", false
	}})
	good := func(i int) []byte { return filebeatEvent(i, "") }
	pretty := []byte("{\n  \"@metadata\": {\"beat\": \"filebeat\", \"version\": \"9.3.0\"},\n  \"message\": \"pretty\"\n}")
	huge := fmt.Appendf(nil, `{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%s"}`, strings.Repeat("h", 2<<20))
	tooBigForServer := fmt.Appendf(nil, `{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%s"}`, strings.Repeat("s", 300<<10))
	invalid := []byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":`)
	invalidMultiLine := []byte("{\"message\":\n")
	poison := []byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"POISON-REQUEST"}`)
	r.store(time.Now(), good(0), pretty, good(1), huge, good(2), tooBigForServer, good(3), invalid, good(4), invalidMultiLine, good(5), poison, good(6))
	obs := newRecorder()
	opts := r.options(func(o *Options) { o.MaxRequestBytes = 1 << 20; o.FlushBytes = 512 << 10; o.Observer = obs })
	run := r.start(opts)
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == 1 })
	run.Stop(t)
	// Every dead letter is observed once, with the status it got (0:
	// never sent), whatever made it dead; the good events as created.
	for status, n := range map[int]int{0: 2, 413: 1, 400: 2} {
		if got := obs.count("dead", status); got != n {
			t.Errorf("observed %d dead events with status %d, want %d (all: %v)", got, status, n, obs.items)
		}
	}
	if got := obs.count("dead", -1); got != 5 || run.Out.Stats().DeadLettered != 5 {
		t.Errorf("observed %d dead events, counted %d; want 5", got, run.Out.Stats().DeadLettered)
	}
	if got := obs.count("done", 201); got != 8 {
		t.Errorf("observed %d events done with status 201, want 8 (all: %v)", got, obs.items)
	}

	prefix, _ := idPrefix(r.ledger.StreamID())
	id := func(pos int) string { return string(appendDocID(nil, prefix, 1, pos)) }
	for _, pos := range []int{0, 2, 4, 6, 8, 10, 12} {
		if _, ok := r.es.Doc("filebeat-9.3.0", id(pos)); !ok {
			t.Errorf("good event at %d not indexed", pos)
		}
	}
	if src, ok := r.es.Doc("filebeat-9.3.0", id(1)); !ok || string(src) != `{"message":"pretty"}` {
		t.Errorf("pretty-printed event: %s, %v; want it compacted and indexed", src, ok)
	}
	want := map[uint32]struct {
		status  int
		errType string
		event   []byte
	}{
		3:  {0, "event_too_large", huge},
		5:  {413, "", tooBigForServer},
		7:  {400, "document_parsing_exception", invalid},
		9:  {0, "invalid_json", invalidMultiLine},
		11: {400, "x_content_parse_exception", poison},
	}
	got := map[uint32]dlq.Entry{}
	if err := dlq.Scan(r.dir+"/dlq", func(_ dlq.Pos, e dlq.Entry) error {
		got[e.Position] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d dead letters, want %d", len(got), len(want))
	}
	for pos, w := range want {
		e, ok := got[pos]
		switch {
		case !ok:
			t.Errorf("event %d not dead-lettered", pos)
		case e.Status != w.status || (w.errType != "" && e.ErrType != w.errType) || !bytes.Equal(e.Event, w.event):
			t.Errorf("event %d: dead letter status %d type %q (%d event bytes), want %d %q (%d bytes)", pos, e.Status, e.ErrType, len(e.Event), w.status, w.errType, len(w.event))
		case e.LSN != 1 || e.DocID != id(int(pos)) || e.Reason == "" || e.Stream != r.ledger.StreamID():
			t.Errorf("event %d: dead letter at LSN %d id %q stream %q reason %q: want its place and a reason", pos, e.LSN, e.DocID, e.Stream, e.Reason)
		}
	}
}

// TestCursorNeverPassesAPendingItem holds one event back with 429s and
// checks that the cursor waits before its record while later records are
// done, then passes it once it is stored.
func TestCursorNeverPassesAPendingItem(t *testing.T) {
	r := newRig(t, estest.Options{})
	var mu sync.Mutex
	blocked := true
	r.es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, source []byte) (int, string, string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if blocked && bytes.Contains(source, []byte(`"event 50 `)) {
			return 429, "es_rejected_execution_exception", "held back by the test", true
		}
		return 0, "", "", false
	}})
	for i := range 100 {
		r.store(time.Now(), filebeatEvent(i, "")) // event i is in record i+1
	}
	run := r.start(r.options(nil))
	waitFor(t, "every other event", func() bool { return r.es.Count() == 99 })
	// The cursor reaches the record before the held one (when the commit
	// loop gets to it, however slow the machine) and stays there: several
	// more commit intervals must not move it past record 51.
	cursor := func() uint64 { c, _ := r.ledger.Cursor("elasticsearch"); return c }
	waitFor(t, "the cursor at record 50", func() bool { return cursor() >= 50 })
	time.Sleep(10 * run.Out.opts.FlushInterval)
	if c := cursor(); c != 50 {
		t.Fatalf("cursor at %d with record 51 pending, want 50", c)
	}
	mu.Lock()
	blocked = false
	mu.Unlock()
	waitFor(t, "the held event", func() bool { return r.es.Count() == 100 })
	waitFor(t, "the cursor", func() bool { return cursor() == 100 })
	// Only the failing item was sent again, never its neighbours.
	if items, retried := r.es.Stats().Items, run.Out.Stats().Retried; items != 100+retried {
		t.Errorf("the test server saw %d items for 100 events and %d item retries", items, retried)
	}
}

// TestClusterBlockIsRetriedNotDeadLettered: items answered 403
// cluster_block_exception (a read-only block, e.g. the flood-stage disk
// watermark) fail for the cluster's state, not the events': they are
// retried until the block lifts and then stored, never dead-lettered.
func TestClusterBlockIsRetriedNotDeadLettered(t *testing.T) {
	r := newRig(t, estest.Options{})
	var blocked atomic.Bool
	blocked.Store(true)
	r.es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, _ []byte) (int, string, string, bool) {
		if blocked.Load() {
			return 403, "cluster_block_exception", "index [filebeat-9.3.0] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];", true
		}
		return 0, "", "", false
	}})
	for i := range 20 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(nil))
	waitFor(t, "items answered 403 a few times", func() bool {
		return r.es.Stats().ItemsByStatus[403] >= 60 || run.Out.Stats().DeadLettered > 0
	})
	if st := run.Out.Stats(); st.DeadLettered != 0 {
		t.Fatalf("%d events dead-lettered for a cluster block; want them retried", st.DeadLettered)
	}
	if c, _ := r.ledger.Cursor("elasticsearch"); c != 0 {
		t.Errorf("cursor at %d while every event is blocked", c)
	}
	blocked.Store(false)
	waitFor(t, "every event stored", func() bool { return run.Out.Stats().Indexed == 20 })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == 20 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if st := run.Out.Stats(); st.DeadLettered != 0 || st.Retried == 0 {
		t.Errorf("after the block: %+v; want retries and no dead letters", st)
	}
	n := 0
	if err := dlq.Scan(r.dir+"/dlq", func(dlq.Pos, dlq.Entry) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d dead letters in the store, want none", n)
	}
}

func TestOutageAndFailover(t *testing.T) {
	r := newRig(t, estest.Options{})
	// A host that refuses connections: a port that was just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for i := range 20 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	if err := r.es.Pause(); err != nil {
		t.Fatal(err)
	}
	var logbuf syncbuf.Buffer
	run := r.start(r.options(func(o *Options) {
		o.Hosts = []string{dead, r.es.URL()}
		o.Logger = slog.New(slog.NewTextHandler(&logbuf, nil))
	}))
	waitFor(t, "failed requests", func() bool { return run.Out.Stats().FailedRequests >= 3 })
	if w := run.Out.Waiting(); !strings.Contains(w, "elasticsearch failing requests") {
		t.Errorf("Waiting() = %q during the outage", w)
	}
	if r.es.Count() != 0 {
		t.Fatal("documents stored while the cluster was down")
	}
	if err := r.es.Resume(); err != nil {
		t.Fatal(err)
	}
	// Wait for the output to have read the answers, not only for the
	// server to have stored the documents.
	waitFor(t, "every event acknowledged", func() bool { s := run.Out.Stats(); return s.Indexed+s.Conflicts == 20 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if st := run.Out.Stats(); st.Outages == 0 {
		t.Errorf("outage not counted: %+v", st)
	}
	// The wait state is logged once on entry and once on exit, however
	// many requests failed in between.
	log := logbuf.String()
	if n := strings.Count(log, "elasticsearch is failing requests"); n != 1 {
		t.Errorf("outage entry logged %d times:\n%s", n, log)
	}
	if n := strings.Count(log, "elasticsearch is answering again"); n != 1 {
		t.Errorf("outage exit logged %d times:\n%s", n, log)
	}
	if w := run.Out.Waiting(); w != "" {
		t.Errorf("Waiting() = %q after the outage", w)
	}
}

func TestGzipRequests(t *testing.T) {
	r := newRig(t, estest.Options{})
	for i := range 100 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(func(o *Options) { o.Gzip = true }))
	waitFor(t, "every event", func() bool { return r.es.Count() == 100 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if r.es.Stats().GzipRequests == 0 {
		t.Error("no request was gzip-encoded")
	}
}

func TestAnswersUnderAnotherActionKey(t *testing.T) {
	r := newRig(t, estest.Options{})
	r.es.SetFaults(estest.Faults{AnswerCreateAsIndex: true, ItemReject429: 0.3})
	for i := range 100 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(nil))
	waitFor(t, "every event", func() bool { return r.es.Count() == 100 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
}

// TestIndexPerEventMetadata: the default template reads only @metadata, so
// the output reuses the name while @metadata repeats; it must still follow
// every change.
func TestIndexPerEventMetadata(t *testing.T) {
	r := newRig(t, estest.Options{})
	evs := [][]byte{
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"i":0}`),
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"i":1}`),
		[]byte(`{"@metadata":{"beat":"metricbeat","version":"9.3.0"},"i":2}`),
		[]byte(`{"@metadata":{"beat":"metricbeat"},"i":3}`),
		[]byte(`{"@metadata":{"beat":"filebeat","version":"8.19.0"},"i":4}`),
		[]byte(`{"i":5}`),
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"i":6}`),
	}
	want := []string{"filebeat-9.3.0", "filebeat-9.3.0", "metricbeat-9.3.0", "logpond-fallback", "filebeat-8.19.0", "logpond-fallback", "filebeat-9.3.0"}
	r.store(time.Now(), evs...)
	run := r.start(r.options(nil))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == 1 })
	run.Stop(t)
	prefix, _ := idPrefix(r.ledger.StreamID())
	for i, w := range want {
		if _, ok := r.es.Doc(w, string(appendDocID(nil, prefix, 1, i))); !ok {
			t.Errorf("event %d not in %s", i, w)
		}
	}
}

// TestCursorFailureLoggedOnce: while the cursor cannot be written, the
// output keeps sending, says so once, and says once when it can again;
// then the cursor catches up.
func TestCursorFailureLoggedOnce(t *testing.T) {
	r := newRig(t, estest.Options{})
	var log syncbuf.Buffer
	r.store(time.Now(), filebeatEvent(0, ""))
	run := r.start(r.options(func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&log, nil)) }))
	cursor := func() uint64 { c, _ := r.ledger.Cursor("elasticsearch"); return c }
	waitFor(t, "the first cursor", func() bool { return cursor() == 1 })

	// A non-empty directory where the cursor's temporary file goes: every
	// write fails until it is removed.
	block := filepath.Join(r.dir, "ledger", "cursors", "elasticsearch.cursor.tmp")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	waitFor(t, "every event sent", func() bool { return r.es.Count() == 6 })
	time.Sleep(10 * r.options(nil).FlushInterval) // several failed attempts
	if c := cursor(); c != 1 {
		t.Fatalf("cursor moved to %d while its file could not be written", c)
	}
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cursor to catch up", func() bool { return cursor() == 6 })
	run.Stop(t)
	out := log.String()
	if n := strings.Count(out, "persisting the cursor failed"); n != 1 {
		t.Errorf("%d failure lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "the cursor is persisted again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, out)
	}
}

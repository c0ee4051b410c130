package elasticsearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/output/sprintf"
)

var routeReceived = time.Date(2026, 12, 5, 0, 0, 0, 123456789, time.UTC)

const (
	rts  = `"@timestamp":"2026-12-05T00:00:00.123Z"`                                 // the receive time, as added
	dsDf = `"data_stream":{"type":"logs","dataset":"generic","namespace":"default"}` // the options, as added
	meta = `"@metadata":{"beat":"filebeat","version":"9.3.0"}`
	ts   = `"@timestamp":"2026-12-02T10:57:41.210Z"`
)

// routeOptions are the data stream options of the routing tests.
func routeOptions(mode DataStreamMode, sync bool) Options {
	return Options{
		Index:         sprintfMust("%{[@metadata][beat]}-%{[@metadata][version]}"),
		FallbackIndex: "logpond-fallback", MaxRequestBytes: 1 << 20,
		DataStream: mode, DataStreamSyncFields: sync,
		DataStreamType: "logs", DataStreamDataset: "generic", DataStreamNamespace: "default",
	}
}

type routeCase struct {
	name   string
	mode   DataStreamMode
	sync   bool
	ev     string
	index  string // where it goes (a dead letter: the name it would have had)
	source string // the source line; "" for a dead letter
	reason string // the dead letter's reason; "" when sent
}

var routeCases = []routeCase{
	{name: "agent logs, whole data_stream", mode: DataStreamAuto, sync: true,
		ev:     `{` + ts + `,` + meta + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"m"}`,
		index:  "logs-nginx.access-prod",
		source: `{` + ts + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"m"}`},
	{name: "agent metrics, whole data_stream, no @metadata", mode: DataStreamAlways, sync: true,
		ev:     `{` + ts + `,"data_stream":{"type":"metrics","dataset":"system.cpu","namespace":"default"},"v":1}`,
		index:  "metrics-system.cpu-default",
		source: `{` + ts + `,"data_stream":{"type":"metrics","dataset":"system.cpu","namespace":"default"},"v":1}`},
	{name: "partial, synced", mode: DataStreamAuto, sync: true,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`,
		index:  "logs-nginx.error-default",
		source: `{` + ts + `,"data_stream":{"type":"logs","namespace":"default","dataset":"nginx.error"}}`},
	{name: "partial, not synced", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`,
		index:  "logs-nginx.error-default",
		source: `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`},
	{name: "auto, none: the index", mode: DataStreamAuto, sync: true,
		ev:     `{` + meta + `,"message":"m"}`,
		index:  "filebeat-9.3.0",
		source: `{"message":"m"}`},
	{name: "auto, string: the index", mode: DataStreamAuto, sync: true,
		ev:     `{` + meta + `,"data_stream":"x"}`,
		index:  "filebeat-9.3.0",
		source: `{"data_stream":"x"}`},
	{name: "off, object: the index", mode: DataStreamOff, sync: true,
		ev:     `{` + meta + `,"data_stream":{"dataset":"x"}}`,
		index:  "filebeat-9.3.0",
		source: `{"data_stream":{"dataset":"x"}}`},
	{name: "always, none, synced", mode: DataStreamAlways, sync: true,
		ev:     `{` + meta + `,"message":"m"}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `,"message":"m"}`},
	{name: "always, none, not synced", mode: DataStreamAlways,
		ev:     `{"message":"m",` + meta + `}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,"message":"m"}`},
	{name: "always, data_stream null, synced", mode: DataStreamAlways, sync: true,
		ev:     `{"data_stream":null,"a":1}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `,"a":1}`},
	{name: "always, string", mode: DataStreamAlways, sync: true,
		ev: `{"data_stream":"logs"}`, index: "logs-generic-default", reason: "data_stream is a string, not an object"},
	{name: "always, array", mode: DataStreamAlways,
		ev: `{"data_stream":[1]}`, index: "logs-generic-default", reason: "data_stream is an array, not an object"},
	{name: "always, not an object", mode: DataStreamAlways,
		ev: `[1,2]`, index: "logs-generic-default", reason: "the event is not a JSON object, which a data stream event must be"},
	{name: "null members and @timestamp, synced", mode: DataStreamAuto, sync: true,
		ev:     `{"@timestamp":null,"data_stream":{"type":null,"dataset":"x","namespace":null}}`,
		index:  "logs-x-default",
		source: `{` + rts + `,"data_stream":{"type":"logs","dataset":"x","namespace":"default"}}`},
	{name: "null members, not synced", mode: DataStreamAuto,
		ev:     `{"@timestamp":null,"data_stream":{"type":null,"dataset":"x","namespace":null}}`,
		index:  "logs-x-default",
		source: `{` + rts + `,"data_stream":{"type":null,"dataset":"x","namespace":null}}`},
	{name: "number member", mode: DataStreamAuto, sync: true,
		ev: `{"data_stream":{"dataset":5}}`, index: "logs-generic-default", reason: "data_stream.dataset is a number, not a string"},
	{name: "boolean member", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":true}}`, index: "logs-generic-default", reason: "data_stream.namespace is a boolean, not a string"},
	{name: "escaped member", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx\u002eaccess"}}`,
		index:  "logs-nginx.access-default",
		source: `{` + ts + `,"data_stream":{"dataset":"nginx\u002eaccess"}}`},
	{name: "namespace may hold '-'", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"namespace":"eu-west"}}`,
		index:  "logs-generic-eu-west",
		source: `{` + ts + `,"data_stream":{"namespace":"eu-west"}}`},
	{name: "invalid type", mode: DataStreamAuto,
		ev: `{"data_stream":{"type":"events"}}`, index: "events-generic-default",
		reason: `data_stream.type "events" must be one of logs, metrics, traces, synthetics`},
	{name: "uppercase dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"Nginx-Access"}}`, index: "logs-Nginx-Access-default",
		reason: `data_stream.dataset "Nginx-Access" must be lowercase`},
	{name: "non-ASCII uppercase namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"äÄ"}}`, index: "logs-generic-äÄ",
		reason: `data_stream.namespace "äÄ" must be lowercase`},
	{name: "non-ASCII lowercase namespace", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"namespace":"ä"}}`,
		index:  "logs-generic-ä",
		source: `{` + ts + `,"data_stream":{"namespace":"ä"}}`},
	{name: "'-' in dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"nginx-access"}}`, index: "logs-nginx-access-default",
		reason: `data_stream.dataset "nginx-access" must not contain "-"`},
	{name: "empty dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":""}}`, index: "logs--default", reason: `data_stream.dataset must not be empty`},
	{name: "long namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"` + strings.Repeat("n", 101) + `"}}`, index: "logs-generic-" + strings.Repeat("n", 101),
		reason: `data_stream.namespace "` + strings.Repeat("n", 101) + `" is longer than 100 bytes`},
	{name: "space in namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"a b"}}`, index: "logs-generic-a b", reason: `data_stream.namespace "a b" must not contain " "`},
	{name: "'*' in dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"a*"}}`, index: "logs-a*-default", reason: `data_stream.dataset "a*" must not contain "*"`},
	{name: "':' in namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"a:b"}}`, index: "logs-generic-a:b", reason: `data_stream.namespace "a:b" must not contain ":"`},
	{name: "@timestamp present: kept", mode: DataStreamAlways,
		ev:     `{"a":1,` + ts + `}`,
		index:  "logs-generic-default",
		source: `{"a":1,` + ts + `}`},
	{name: "empty event", mode: DataStreamAlways, sync: true,
		ev:     `{}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `}`},
	{name: "only @metadata", mode: DataStreamAlways,
		ev:     `{` + meta + `}`,
		index:  "logs-generic-default",
		source: `{` + rts + `}`},
	{name: "whitespace", mode: DataStreamAlways, sync: true,
		ev:     `{ "@metadata" : {} , "a" : 1 , "data_stream" : { } }`,
		index:  "logs-generic-default",
		source: `{` + rts + `,  "a" : 1 , "data_stream" : {"type":"logs","dataset":"generic","namespace":"default" } }`},
	{name: "pretty-printed: compacted", mode: DataStreamAlways, sync: true,
		ev:     "{\n  \"@metadata\": {\"beat\": \"x\"},\n  \"data_stream\": {\"dataset\": \"d\"}\n}",
		index:  "logs-d-default",
		source: `{` + rts + `,"data_stream":{"type":"logs","namespace":"default","dataset":"d"}}`},
}

func sprintfMust(s string) *sprintf.Format { return sprintf.MustCompile(s) }

// routeOne routes ev as add does, in a batch of its own, and returns its
// target, source line and the original restored from the batch (or the
// dead letter's reason).
func routeOne(t *testing.T, opts Options, ev []byte) (index, source, reason string, original []byte) {
	t.Helper()
	o := &Output{opts: opts, log: slog.New(slog.DiscardHandler)}
	var rt routing
	if _, reason := o.route(&rt, ev, routeReceived); reason != "" {
		return string(rt.name), "", reason, nil
	}
	b, it, lines, src := addOne(t, o, ev)
	if b == nil {
		t.Fatal("add dead-lettered it; route said nothing")
	}
	index, _ = actionTarget(lines)
	orig, rcv, err := b.original(it)
	if err != nil {
		t.Fatal(err)
	}
	if !rcv.Equal(routeReceived) {
		t.Errorf("kept receive time %v", rcv)
	}
	return index, string(src), "", orig
}

// addOne adds ev, received at routeReceived, to a batch of its own as
// record 1's first event, and returns the batch, its item, the item's
// lines (action and source) and its source line; a nil batch when add
// dead-lettered the event.
func addOne(t *testing.T, o *Output, ev []byte) (b *batch, it item, lines, source []byte) {
	t.Helper()
	b = newBatch(newBufPool(1, 0, 1<<20), 1024, 1)
	var scratch []byte
	var nc nameCache
	if dead := o.add(b, 1, 0, routeReceived, ev, &scratch, &nc); dead != nil {
		t.Logf("add: dead letter %q", dead.Reason)
		return nil, item{}, nil, nil
	}
	it = b.items[0]
	lines = b.buf[it.start:it.end]
	return b, it, lines, lines[bytes.IndexByte(lines, '\n')+1 : len(lines)-1]
}

func TestRoutingTable(t *testing.T) {
	for _, c := range routeCases {
		t.Run(c.name, func(t *testing.T) {
			if c.source != "" && !json.Valid([]byte(c.source)) {
				t.Fatalf("the case's source is not JSON: %s", c.source)
			}
			index, source, reason, orig := routeOne(t, routeOptions(c.mode, c.sync), []byte(c.ev))
			if index != c.index || source != c.source || reason != c.reason {
				t.Errorf("got index %q, source %s, reason %q\nwant index %q, source %s, reason %q", index, source, reason, c.index, c.source, c.reason)
			}
			if reason == "" && string(orig) != c.ev {
				t.Errorf("original %q, want the event %q", orig, c.ev)
			}
		})
	}
}

func TestRoutingAutoWithoutDataStreams(t *testing.T) {
	o := &Output{opts: routeOptions(DataStreamAuto, true), cluster: &clusterCheck{}}
	o.cluster.noDataStreams.Store(true)
	var rt routing
	ev := []byte(`{` + meta + `,"data_stream":{"dataset":"x"}}`)
	if _, reason := o.route(&rt, ev, routeReceived); reason != "" || rt.dataStream {
		t.Fatalf("auto on a cluster without data streams: data stream %v, reason %q; want the index", rt.dataStream, reason)
	}
}

// storeCases stores the events of cases in one record and returns their
// document ids.
func (r *rig) storeCases(cases []routeCase) []string {
	evs := make([][]byte, len(cases))
	for i, c := range cases {
		evs[i] = []byte(c.ev)
	}
	lsn := r.store(routeReceived, evs...)
	prefix, _ := idPrefix(r.ledger.StreamID())
	ids := make([]string, len(cases))
	for i := range cases {
		ids[i] = string(appendDocID(nil, prefix, lsn, i))
	}
	return ids
}

// docByID returns the index and source of the stored document id.
func (r *rig) docByID(id string) (index string, source []byte, ok bool) {
	for _, d := range r.es.Docs() {
		if d.ID == id {
			return d.Index, d.Source, true
		}
	}
	return "", nil, false
}

// inIndex reports whether a document stored in index went to name: the
// index itself or, for a data stream, one of its backing indices
// (".ds-NAME-…"), where an Elasticsearch that knows data streams stores
// it.
func inIndex(index, name string) bool {
	return index == name || strings.HasPrefix(index, ".ds-"+name+"-")
}

// checkCases checks where each case's event went: stored in its index or
// data stream with its exact source, or dead-lettered (status 0, no
// round trip) with its reason, the name it would have had and the event
// exactly as stored.
func (r *rig) checkCases(t *testing.T, cases []routeCase, ids []string) {
	t.Helper()
	dead := r.deadLetters(t)
	for i, c := range cases {
		if c.reason == "" {
			index, src, ok := r.docByID(ids[i])
			if !ok || !inIndex(index, c.index) || string(src) != c.source {
				t.Errorf("%s: stored in %s: %s, %v; want in %s: %s", c.name, index, src, ok, c.index, c.source)
			}
			if len(dead[ids[i]]) > 0 {
				t.Errorf("%s: dead-lettered: %+v", c.name, dead[ids[i]])
			}
			continue
		}
		if len(dead[ids[i]]) != 1 {
			t.Errorf("%s: %d dead letters, want 1", c.name, len(dead[ids[i]]))
			continue
		}
		e := dead[ids[i]][0]
		if e.Status != 0 || e.ErrType != "invalid_data_stream" || e.Reason != c.reason || e.Index != c.index ||
			string(e.Event) != c.ev || !e.Received.Equal(routeReceived) {
			t.Errorf("%s: dead letter status %d, %s %q, index %q, event %q, received %v; want 0, invalid_data_stream %q, %q, %q",
				c.name, e.Status, e.ErrType, e.Reason, e.Index, e.Event, e.Received, c.reason, c.index, c.ev)
		}
	}
}

// TestRoutingStoresAndDeadLetters runs the routing cases of two
// configurations through an output and Elasticsearch.
func TestRoutingStoresAndDeadLetters(t *testing.T) {
	for _, cfg := range []struct {
		mode DataStreamMode
		sync bool
	}{{DataStreamAuto, true}, {DataStreamAlways, false}, {DataStreamAuto, false}} {
		var cases []routeCase
		for _, c := range routeCases {
			if c.mode == cfg.mode && c.sync == cfg.sync {
				cases = append(cases, c)
			}
		}
		r := newRig(t, estest.Options{})
		ids := r.storeCases(cases)
		run := r.start(r.options(func(o *Options) {
			o.DataStream, o.DataStreamSyncFields = cfg.mode, cfg.sync
			o.DataStreamType, o.DataStreamDataset, o.DataStreamNamespace = "logs", "generic", "default"
		}))
		waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
		run.Stop(t)
		r.checkCases(t, cases, ids)
		var want Stats
		for _, c := range cases {
			switch {
			case c.reason != "":
				want.RoutedDeadLetter++
			case strings.HasPrefix(c.index, "filebeat"):
				want.RoutedIndex++
			default:
				want.RoutedDataStream++
			}
		}
		st := run.Out.Stats()
		if st.RoutedDataStream != want.RoutedDataStream || st.RoutedIndex != want.RoutedIndex ||
			st.RoutedDeadLetter != want.RoutedDeadLetter || st.RoutedFallback != 0 {
			t.Errorf("mode %d sync %v: routed %d/%d/%d/%d (data stream/index/fallback/dead), want %d/%d/0/%d", cfg.mode, cfg.sync,
				st.RoutedDataStream, st.RoutedIndex, st.RoutedFallback, st.RoutedDeadLetter,
				want.RoutedDataStream, want.RoutedIndex, want.RoutedDeadLetter)
		}
	}
}

// TestRoutingAutoOnAClusterWithoutDataStreams: auto mode sends an Agent
// event to the index when the cluster predates data streams.
func TestRoutingAutoOnAClusterWithoutDataStreams(t *testing.T) {
	r := newRig(t, estest.Options{})
	ev := `{` + ts + `,` + meta + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"}}`
	ids := r.storeCases([]routeCase{{ev: ev}})
	out, err := New(r.ledger, r.options(func(o *Options) { o.DataStream = DataStreamAuto }))
	if err != nil {
		t.Fatal(err)
	}
	out.cluster.noDataStreams.Store(true)
	run := draintest.Start(t, out)
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	if _, ok := r.es.Doc("filebeat-9.3.0", ids[0]); !ok {
		t.Errorf("not in the index filebeat-9.3.0: %+v", r.es.Docs())
	}
	if st := out.Stats(); st.RoutedIndex != 1 || st.RoutedDataStream != 0 {
		t.Errorf("routed %+v", st)
	}
}

// TestRoutingRetriesCountOnceAndKeepOriginals: data stream events whose
// source lines were edited, under 429s and with some refused for good:
// each is counted once by its target, and each refused one's dead letter
// holds the event exactly as stored, restored from the edited line after
// its retries.
func TestRoutingRetriesCountOnceAndKeepOriginals(t *testing.T) {
	r := newRig(t, estest.Options{})
	const n = 300
	evs := make([][]byte, n)
	for i := range evs {
		switch i % 3 {
		case 0: // @timestamp and the whole data_stream added
			evs[i] = []byte(`{` + meta + `,"n":` + strings.Repeat("1", 1+i%7) + `}`)
		case 1: // null members replaced, @timestamp added
			evs[i] = []byte(`{"data_stream":{"type":null,"dataset":"app","namespace":null},` + meta + `}`)
		default: // invalid: dead-lettered at routing
			evs[i] = []byte(`{"data_stream":{"dataset":"App"}}`)
		}
	}
	lsn := r.store(routeReceived, evs...)
	prefix, _ := idPrefix(r.ledger.StreamID())
	refused := map[string]bool{}
	want := map[string][]byte{}
	for i := range evs {
		id := string(appendDocID(nil, prefix, lsn, i))
		if i%3 != 2 && i%5 == 0 {
			refused[id] = true
			want[id] = evs[i]
		}
	}
	faults := refuseForGood(refused)
	faults.ItemReject429 = 0.3
	r.es.SetFaults(faults)
	run := r.start(r.options(func(o *Options) {
		o.DataStream, o.DataStreamSyncFields = DataStreamAlways, true
		o.DataStreamType, o.DataStreamDataset, o.DataStreamNamespace = "logs", "generic", "default"
	}))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	st := run.Out.Stats()
	if st.Retried == 0 {
		t.Fatal("no retries: the fault was not injected")
	}
	if st.RoutedDataStream != 200 || st.RoutedDeadLetter != 100 || st.RoutedIndex != 0 {
		t.Errorf("routed %d to data streams, %d dead, %d to the index; want 200, 100, 0", st.RoutedDataStream, st.RoutedDeadLetter, st.RoutedIndex)
	}
	got := r.deadLetters(t)
	for id, ev := range want {
		if len(got[id]) != 1 || !bytes.Equal(got[id][0].Event, ev) || got[id][0].Status != 400 {
			t.Errorf("%s: dead letters %+v, want one holding %s", id, got[id], ev)
		}
	}
	for i := 2; i < n; i += 3 {
		id := string(appendDocID(nil, prefix, lsn, i))
		if len(got[id]) != 1 || !bytes.Equal(got[id][0].Event, evs[i]) {
			t.Errorf("%s: dead letters %+v, want one holding %s", id, got[id], evs[i])
		}
	}
	if r.es.Count() != 200-len(want) {
		t.Errorf("%d documents, want %d", r.es.Count(), 200-len(want))
	}
}

// TestFallbackWarns: events that lack a field of the index template go
// to the fallback index, and the output says so once for the lot, naming
// the field.
func TestFallbackWarns(t *testing.T) {
	r := newRig(t, estest.Options{})
	var logs syncbuf.Buffer
	for i := range 5 {
		r.store(time.Now(), []byte(`{"message":"no metadata `+strings.Repeat("x", i)+`"}`))
	}
	run := r.start(r.options(func(o *Options) {
		o.Index = mustCompile(t, "%{[data_stream][dataset]}-x")
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	if n := r.es.IndexCount("logpond-fallback"); n != 5 {
		t.Errorf("%d events in the fallback index, want 5", n)
	}
	var warns []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "fallback index") {
			warns = append(warns, l)
		}
	}
	// Five events in far less than the minute between warnings: one line.
	if len(warns) != 1 || !strings.Contains(warns[0], "level=WARN") ||
		!strings.Contains(warns[0], "missing_field=[data_stream][dataset]") ||
		!strings.Contains(warns[0], `index=%{[data_stream][dataset]}-x`) ||
		!strings.Contains(warns[0], "fallback_index=logpond-fallback") || !strings.Contains(warns[0], "events=1") {
		t.Errorf("warnings %q", warns)
	}
	if st := run.Out.Stats(); st.RoutedFallback != 5 {
		t.Errorf("%d events routed to the fallback, want 5", st.RoutedFallback)
	}
}

// TestFallbackCountedWithCachedNames: events of one Beats batch share
// their @metadata, and the name found for the first is reused for the
// rest; when it is the fallback index, each is counted as a fallback.
func TestFallbackCountedWithCachedNames(t *testing.T) {
	r := newRig(t, estest.Options{})
	evs := make([][]byte, 10)
	for i := range evs {
		evs[i] = []byte(`{"@metadata":{"beat":"filebeat"},"n":` + strings.Repeat("1", i+1) + `}`)
	}
	r.store(time.Now(), evs...)
	run := r.start(r.options(nil))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	if st := run.Out.Stats(); st.RoutedFallback != 10 || st.RoutedIndex != 0 {
		t.Errorf("routed %d to the fallback, %d to the index; want 10, 0", st.RoutedFallback, st.RoutedIndex)
	}
	if n := r.es.IndexCount("logpond-fallback"); n != 10 {
		t.Errorf("%d in the fallback index, want 10", n)
	}
}

// TestRouteAllocatesNothing: routing an Agent event to its data stream,
// with fields to add, reuses the worker's buffers once they have grown.
func TestRouteAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	o := &Output{opts: routeOptions(DataStreamAuto, true)}
	var rt routing
	ev := []byte(`{` + meta + `,"data_stream":{"type":"logs","dataset":"nginx.access"},"message":"x"}`)
	if n := testing.AllocsPerRun(100, func() { o.route(&rt, ev, routeReceived) }); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
	if !rt.dataStream || string(rt.name) != "logs-nginx.access-default" {
		t.Errorf("routed to %q, data stream %v", rt.name, rt.dataStream)
	}
}

// TestFallbackWarnsOnlyOfSentEvents: an event that lacks the index
// template's field but is dead-lettered (too large, or on several lines
// and not JSON) never goes to the fallback index, and the warning, which
// says events were sent there, does not count it.
func TestFallbackWarnsOnlyOfSentEvents(t *testing.T) {
	r := newRig(t, estest.Options{})
	var logs syncbuf.Buffer
	r.store(time.Now(), []byte(`{"message":"`+strings.Repeat("x", 2<<10)+`"}`), []byte("{\"message\":\n"))
	run := r.start(r.options(func(o *Options) {
		o.Index = mustCompile(t, "%{[data_stream][dataset]}-x")
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.FlushBytes, o.MaxRequestBytes = 1<<10, 1<<10
	}))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	if st := run.Out.Stats(); st.RoutedDeadLetter != 2 || st.RoutedFallback != 0 {
		t.Errorf("routed %d dead, %d to the fallback; want 2, 0", st.RoutedDeadLetter, st.RoutedFallback)
	}
	if strings.Contains(logs.String(), "fallback index") {
		t.Errorf("warned of the fallback index for dead letters:\n%s", logs.String())
	}
}

// TestDuplicateMetadataIsNotHidden: Elasticsearch refuses an event with
// duplicate keys. One with two top-level @metadata members is sent with
// both (cutting one would index the other), in every data stream mode,
// so the cluster refuses it and its dead letter holds it as stored.
func TestDuplicateMetadataIsNotHidden(t *testing.T) {
	cases := []routeCase{
		{name: "always", mode: DataStreamAlways, ev: `{` + meta + `,` + ts + `,"@metadata":{}}`,
			index: "logs-generic-default", source: `{` + meta + `,` + ts + `,"@metadata":{}}`},
		{name: "auto, to the index", mode: DataStreamAuto, sync: true, ev: `{"@metadata":{},"a":1,"@met\u0061data":{}}`,
			index: "logpond-fallback", source: `{"@metadata":{},"a":1,"@met\u0061data":{}}`},
		{name: "off, escaped", mode: DataStreamOff, ev: `{` + meta + `,"a":"\\u","\u0040metadata":{}}`,
			index: "filebeat-9.3.0", source: `{` + meta + `,"a":"\\u","\u0040metadata":{}}`},
		{name: "off, plain", mode: DataStreamOff, ev: `{` + meta + `,"@metadata":{}}`,
			index: "filebeat-9.3.0", source: `{` + meta + `,"@metadata":{}}`},
	}
	for _, c := range cases {
		index, source, reason, _ := routeOne(t, routeOptions(c.mode, c.sync), []byte(c.ev))
		if index != c.index || source != c.source || reason != "" {
			t.Errorf("%s: index %q, source %s, reason %q; want %q, %s", c.name, index, source, reason, c.index, c.source)
		}
		r := newRig(t, estest.Options{})
		ids := r.storeCases([]routeCase{c})
		run := r.start(r.options(func(o *Options) {
			o.DataStream, o.DataStreamSyncFields = c.mode, c.sync
			o.DataStreamType, o.DataStreamDataset, o.DataStreamNamespace = "logs", "generic", "default"
		}))
		waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
		run.Stop(t)
		dead := r.deadLetters(t)[ids[0]]
		if len(dead) != 1 || dead[0].Status != 400 || !strings.Contains(dead[0].Reason, "Duplicate field '@metadata'") ||
			string(dead[0].Event) != c.ev {
			t.Errorf("%s: dead letters %+v, want one refused for the duplicate, holding %s", c.name, dead, c.ev)
		}
	}
}

// TestFallbackWarningCountsEveryEvent: workers falling back at once
// share one warning's rate limit, and every event is counted exactly
// once: in a warning's events, or pending for the next one.
func TestFallbackWarningCountsEveryEvent(t *testing.T) {
	var logs syncbuf.Buffer
	o := &Output{opts: routeOptions(DataStreamOff, false), log: slog.New(slog.NewTextHandler(&logs, nil))}
	const workers, each = 8, 500
	ev := []byte(`{"message":"m"}`)
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				o.fellBack(ev)
			}
		}()
	}
	for range workers {
		<-done
	}
	logged := int64(0)
	lines := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "fallback index") {
			continue
		}
		lines++
		var n int64
		i := strings.Index(l, " events=")
		if i < 0 {
			t.Fatalf("no event count in %q", l)
		}
		fmt.Sscanf(l[i+len(" events="):], "%d", &n)
		logged += n
	}
	if lines == 0 || logged+o.stats.fallbackPending.Load() != workers*each {
		t.Errorf("%d warnings for %d events, %d pending; want at least one, %d in all", lines, logged, o.stats.fallbackPending.Load(), workers*each)
	}
}

// TestRouteRemembersOnlyWhatHolds: the routing state kept between events
// (the data_stream values known to give a valid name, the last receive
// time as text) never lets an event through that would fail alone: a name
// of the same bytes split otherwise is checked again, and another receive
// time is formatted again.
func TestRouteRemembersOnlyWhatHolds(t *testing.T) {
	o := &Output{opts: Options{DataStream: DataStreamAlways, DataStreamType: "logs", DataStreamDataset: "generic",
		DataStreamNamespace: "default", DataStreamSyncFields: true}}
	var rt routing
	t1 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	t2 := t1.Add(1500 * time.Millisecond)
	steps := []struct {
		ev       string
		received time.Time
		reason   string
		ts       string
	}{
		{`{"data_stream":{"type":"logs","dataset":"a","namespace":"b-c"}}`, t1, "", "2026-12-05T01:00:00.000Z"},
		{`{"data_stream":{"type":"logs","dataset":"a-b","namespace":"c"}}`, t1, `must not contain "-"`, ""},
		{`{"data_stream":{"type":"logs","dataset":"a","namespace":"b-c"}}`, t2, "", "2026-12-05T01:00:01.500Z"},
		{`{"data_stream":{"type":"logs","dataset":"a","namespace":"b-c"}}`, t1, "", "2026-12-05T01:00:00.000Z"},
	}
	for i, st := range steps {
		_, reason := o.route(&rt, []byte(st.ev), st.received)
		if st.reason == "" && reason != "" || st.reason != "" && !strings.Contains(reason, st.reason) {
			t.Fatalf("step %d: reason %q, want %q", i, reason, st.reason)
		}
		if st.reason != "" {
			continue
		}
		src, err := appendEditedSource(nil, []byte(st.ev), rt.edits)
		if err != nil || !strings.Contains(string(src), `"@timestamp":"`+st.ts+`"`) {
			t.Fatalf("step %d: %s, %v; want @timestamp %s", i, src, err, st.ts)
		}
	}
}

// TestRouteKnownDataStreamsAsFresh: a worker's routing, which keeps the
// data_stream values it has read, routes every event of a long mixed run
// (more data streams than it keeps, invalid ones, null and absent
// data_stream, objects too large to keep, the same stream spelled
// otherwise) exactly as a routing that has seen nothing before.
func TestRouteKnownDataStreamsAsFresh(t *testing.T) {
	var pool []string
	for i := range dsKnown + 4 {
		pool = append(pool, fmt.Sprintf(`{"type":"logs","dataset":"d%d","namespace":"default"}`, i))
	}
	pool = append(pool,
		`{"dataset":"d1"}`, `{ "dataset" : "d1" }`, `{"dataset":"d\u0031"}`, `{"namespace":null,"dataset":"d1"}`,
		`{"dataset":"D1"}`, `{"dataset":"a-b"}`, `{"type":"events"}`, `{"dataset":5}`, `{}`, `null`, ``,
		`{"dataset":"d1","pad":"`+strings.Repeat("p", dsKnownBytes)+`"}`,
		`{"dataset":"`+strings.Repeat("x", 101)+`"}`)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, mode := range []DataStreamMode{DataStreamAuto, DataStreamAlways} {
		for _, sync := range []bool{false, true} {
			o := &Output{opts: routeOptions(mode, sync)}
			var kept routing
			for i := range 5000 {
				ev := `{` + meta + `,"n":1}`
				if ds := pool[rng.IntN(len(pool))]; ds != "" {
					ev = `{` + meta + `,"data_stream":` + ds + `,"n":1}`
				}
				var fresh routing
				_, wantReason := o.route(&fresh, []byte(ev), routeReceived)
				want, _ := appendEditedSource(nil, []byte(ev), fresh.edits)
				_, reason := o.route(&kept, []byte(ev), routeReceived)
				got, _ := appendEditedSource(nil, []byte(ev), kept.edits)
				if reason != wantReason || string(kept.name) != string(fresh.name) || kept.dataStream != fresh.dataStream || !bytes.Equal(got, want) {
					t.Fatalf("mode %d sync %v, event %d %s: routed to %q (data stream %v, reason %q) as %s; fresh: %q (%v, %q) as %s",
						mode, sync, i, ev, kept.name, kept.dataStream, reason, got, fresh.name, fresh.dataStream, wantReason, want)
				}
			}
		}
	}
}

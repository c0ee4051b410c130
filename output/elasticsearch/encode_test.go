package elasticsearch

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/logpond/logpond/output/sprintf"
)

// TestEncodeShapes: the exact lines (action and source) add writes for
// events of every shape the output meets, in the order given, through
// one worker's state, so that the index name remembered from one event's
// @metadata serves the next where it may, and only there.
func TestEncodeShapes(t *testing.T) {
	const (
		fb    = `"@metadata":{"beat":"filebeat","version":"9.3.0"}`
		agent = `"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"default"}`
	)
	cases := []struct {
		name  string
		mode  DataStreamMode
		ev    string
		lines string // "" for a dead letter
	}{
		{"classic, off", DataStreamOff, `{` + fb + `,"n":1,"message":"m"}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-0"}}` + "\n" + `{"n":1,"message":"m"}`},
		{"classic", DataStreamAuto, `{` + fb + `,"n":1,"message":"m"}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-1"}}` + "\n" + `{"n":1,"message":"m"}`},
		{"classic, its own id and pipeline", DataStreamAuto, `{"@metadata":{"beat":"filebeat","version":"9.3.0","_id":"own","pipeline":"pl"},"n":1}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"own","pipeline":"pl"}}` + "\n" + `{"n":1}`},
		{"classic, other @metadata", DataStreamAuto, `{"n":1,"@metadata":{"beat":"metricbeat","version":"9.3.0"}}`,
			`{"create":{"_index":"metricbeat-9.3.0","_id":"p-1-3"}}` + "\n" + `{"n":1}`},
		{"classic, escaped @metadata key", DataStreamAuto, `{"n":1,"\u0040metadata":{"beat":"metricbeat","version":"9.3.0"}}`,
			`{"create":{"_index":"metricbeat-9.3.0","_id":"p-1-4"}}` + "\n" + `{"n":1}`},
		{"classic, no @metadata", DataStreamAuto, `{"n":1}`,
			`{"create":{"_index":"logpond-fallback","_id":"p-1-5"}}` + "\n" + `{"n":1}`},
		{"classic, two @metadata: sent whole", DataStreamAuto, `{` + fb + `,"n":1,"@metadata":{}}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-6"}}` + "\n" + `{` + fb + `,"n":1,"@metadata":{}}`},
		{"classic, data_stream not an object", DataStreamAuto, `{` + fb + `,"data_stream":"logs"}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-7"}}` + "\n" + `{"data_stream":"logs"}`},
		{"agent", DataStreamAuto, `{` + fb + `,` + ts + `,` + agent + `,"n":1}`,
			`{"create":{"_index":"logs-nginx.access-default","_id":"p-1-8"}}` + "\n" + `{` + ts + `,` + agent + `,"n":1}`},
		{"agent, its own id, @metadata last", DataStreamAuto, `{` + ts + `,` + agent + `,"@metadata":{"_id":"own"}}`,
			`{"create":{"_index":"logs-nginx.access-default","_id":"own"}}` + "\n" + `{` + ts + `,` + agent + `}`},
		{"agent-partial", DataStreamAuto, `{` + fb + `,"data_stream":{"dataset":"nginx.access"},"n":1}`,
			`{"create":{"_index":"logs-nginx.access-default","_id":"p-1-10"}}` + "\n" +
				`{` + rts + `,"data_stream":{"type":"logs","namespace":"default","dataset":"nginx.access"},"n":1}`},
		{"agent-partial, @timestamp null", DataStreamAuto, `{"@timestamp":null,"data_stream":{"dataset":"nginx.error","namespace":null},` + fb + `}`,
			`{"create":{"_index":"logs-nginx.error-default","_id":"p-1-11"}}` + "\n" +
				`{` + rts + `,"data_stream":{"type":"logs","dataset":"nginx.error","namespace":"default"}}`},
		{"agent, invalid dataset", DataStreamAuto, `{` + fb + `,"data_stream":{"dataset":"Nginx"}}`, ""},
		{"always, classic event", DataStreamAlways, `{` + fb + `,"n":1}`,
			`{"create":{"_index":"logs-generic-default","_id":"p-1-13"}}` + "\n" + `{` + rts + `,` + dsDf + `,"n":1}`},
		{"always, not an object", DataStreamAlways, `[1]`, ""},
		{"off, agent event", DataStreamOff, `{` + fb + `,` + agent + `}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-15"}}` + "\n" + `{` + agent + `}`},
		{"classic after all that", DataStreamAuto, `{` + fb + `,"n":2}`,
			`{"create":{"_index":"filebeat-9.3.0","_id":"p-1-16"}}` + "\n" + `{"n":2}`},
	}
	b := newBatch(newBufPool(1, 0, 1<<20), 1<<16, len(cases))
	var scratch []byte
	var nc nameCache
	for pos, c := range cases {
		opts := routeOptions(c.mode, true)
		opts.DerivedIDs = true
		o := &Output{opts: opts, log: slog.New(slog.DiscardHandler), metaOnlyIndex: true, idPrefix: "p"}
		if c.lines == "" {
			// add would dead-letter it, which takes a ledger to name.
			var rt routing
			if _, reason := o.route(&rt, []byte(c.ev), routeReceived); reason == "" {
				t.Errorf("%s: sent, want a dead letter", c.name)
			}
			continue
		}
		before := len(b.items)
		dead := o.add(b, 1, pos, routeReceived, []byte(c.ev), &scratch, &nc)
		switch {
		case dead != nil:
			t.Errorf("%s: dead letter %q", c.name, dead.Reason)
		case len(b.items) != before+1:
			t.Errorf("%s: %d items added", c.name, len(b.items)-before)
		default:
			it := b.items[before]
			if got := string(b.buf[it.start:it.end]); got != c.lines+"\n" {
				t.Errorf("%s:\ngot  %s\nwant %s", c.name, got, c.lines+"\n")
			}
			if orig, _, err := b.original(it); err != nil || string(orig) != c.ev {
				t.Errorf("%s: original %s, %v", c.name, orig, err)
			}
		}
	}
}

// memberReads are what an event's top-level members give the output, read
// with a separate search for each: the reference scanTop's one walk must
// agree with.
type memberReads struct {
	open          bool
	members       int
	metaKey       int
	meta, ts, ds  [2]int
	secondMeta    bool
	id, pipeline  string
	hasID, hasPip bool
}

func readMembersApart(ev []byte) memberReads {
	r := memberReads{metaKey: -1, meta: [2]int{-1, -1}, ts: [2]int{-1, -1}, ds: [2]int{-1, -1}}
	r.open = len(bytes.TrimLeft(ev, " \t\r\n")) > 0 && bytes.TrimLeft(ev, " \t\r\n")[0] == '{'
	if !r.open {
		return r
	}
	sprintf.Members(ev, func(_, _ []byte) bool { r.members++; return true })
	if ks, vs, ve, ok := sprintf.Member(ev, "@metadata"); ok {
		r.metaKey, r.meta = ks, [2]int{vs, ve}
		n := 0
		sprintf.Members(ev, func(key, _ []byte) bool {
			if keyIs(key, "@metadata") {
				n++
			}
			return true
		})
		r.secondMeta = n > 1
		sprintf.Members(ev[vs:ve], func(key, value []byte) bool {
			switch string(key) {
			case `"_id"`:
				r.id, r.hasID = string(stringValue(value)), stringValue(value) != nil
			case `"pipeline"`:
				r.pipeline, r.hasPip = string(stringValue(value)), stringValue(value) != nil
			}
			return true
		})
	}
	if _, vs, ve, ok := sprintf.Member(ev, "@timestamp"); ok {
		r.ts = [2]int{vs, ve}
	}
	if _, vs, ve, ok := sprintf.Member(ev, "data_stream"); ok {
		r.ds = [2]int{vs, ve}
	}
	return r
}

// TestScanTopAgreesWithSeparateReads: the one walk over an event's
// top-level members finds what a separate search for each member finds,
// for generated events (escaped keys, duplicates, @metadata anywhere)
// and every prefix of them, which is malformed input that the walk must
// stop at exactly where each search would; reading @metadata alone, it
// finds the same @metadata; reading for data_stream = "auto", the same
// @metadata and data_stream, the same @timestamp when there is a
// data_stream, and, on valid events, whether members stay after the
// @metadata cut. The last two may stop the walk early.
func TestScanTopAgreesWithSeparateReads(t *testing.T) {
	g := &eventGen{rng: rand.New(rand.NewPCG(7, 8))}
	n := 3000
	if testing.Short() {
		n = 300
	}
	check := func(ev []byte, need scanNeed) {
		t.Helper()
		s, r := scanTop(ev, need), readMembersApart(ev)
		m := s.meta
		ok := (m.raw != nil) == (r.meta[0] >= 0) &&
			string(m.id) == r.id && (m.id != nil) == r.hasID &&
			string(m.pipeline) == r.pipeline && (m.pipeline != nil) == r.hasPip
		switch need {
		case scanAll:
			ok = ok && (s.open >= 0) == r.open && s.tsVal == r.ts && s.dsVal == r.ds
			if r.open {
				ok = ok && s.members == r.members
			}
		case scanAuto:
			ok = ok && (s.open >= 0) == r.open && s.dsVal == r.ds
			if r.ds[0] >= 0 {
				ok = ok && s.tsVal == r.ts
			}
			if r.open && json.Valid(ev) {
				cutting := 0
				if m.cut[1] > 0 {
					cutting = 1
				}
				ok = ok && s.members <= r.members && (s.members-cutting > 0) == (r.members-cutting > 0)
			}
		}
		if r.meta[0] >= 0 {
			ok = ok && offsetIn(ev, m.raw) == r.meta[0] && offsetIn(ev, m.raw)+len(m.raw) == r.meta[1]
			wantCut := [2]int{}
			if !r.secondMeta {
				wantCut = memberSpan(ev, r.metaKey, r.meta[1])
			}
			ok = ok && m.cut == wantCut
		} else {
			ok = ok && m.cut == [2]int{}
		}
		if !ok {
			t.Fatalf("event %q, need %v: scanTop %+v (meta %+v), separate reads %+v", ev, need, s, m, r)
		}
	}
	for range n {
		ev := g.event()
		for i := range len(ev) + 1 {
			for _, need := range []scanNeed{scanAll, scanAuto, scanMeta} {
				check(ev[:i:i], need)
			}
		}
	}
}

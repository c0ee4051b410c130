package elasticsearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The oracle of routing: an independent statement, in decoded JSON, of
// what the source line of a data stream event holds, checked against the
// byte edits route builds, for events of every shape the generator below
// can write (whitespace everywhere, escaped keys, @metadata anywhere,
// pretty-printed, nulls, empty objects, duplicate members).

// dupKeys reports whether some object in the JSON text v holds two
// members whose keys decode to the same string, as Elasticsearch's
// parser (strict duplicate detection) sees them. Objects inside the
// top-level @metadata, which is never sent, do not count.
func dupKeys(v []byte) bool {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	type frame struct {
		obj     bool
		keys    map[string]bool
		key     bool   // the next token of an object is a key
		last    string // the last key
		ignored bool   // inside the top-level @metadata
	}
	var stack []frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].key {
			if s, ok := tok.(string); ok {
				if stack[n-1].keys[s] && !stack[n-1].ignored {
					return true
				}
				stack[n-1].keys[s] = true
				stack[n-1].key = false
				stack[n-1].last = s
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].key = true // after this value
		}
		ignored := false
		if n := len(stack); n > 0 {
			ignored = stack[n-1].ignored || n == 1 && stack[0].obj && stack[0].last == "@metadata"
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, keys: map[string]bool{}, key: true, ignored: ignored})
		case json.Delim('['):
			stack = append(stack, frame{ignored: ignored})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].key = true
			}
		}
	}
}

// dupMetadata reports whether the JSON object v has two top-level
// @metadata members.
func dupMetadata(v []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(v, &top) != nil {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.Token() // '{'
	n := 0
	for d.More() {
		k, _ := d.Token()
		if k == "@metadata" {
			n++
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return false
		}
	}
	return n > 1
}

// decodeJSON decodes v with numbers kept as written.
func decodeJSON(v []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return x, nil
}

// oracleSource returns what the source line of the valid JSON event ev,
// without duplicate keys, decodes to when routed with opts, and whether
// it goes to a data stream; dead is set when it cannot be sent.
func oracleSource(opts Options, ev []byte) (want any, ds, dead bool) {
	x, err := decodeJSON(ev)
	if err != nil {
		panic(err)
	}
	obj, isObj := x.(map[string]any)
	if isObj {
		delete(obj, "@metadata")
	}
	dsv, has := any(nil), false
	if isObj {
		dsv, has = obj["data_stream"]
	}
	dsObj, dsIsObj := dsv.(map[string]any)
	switch {
	case opts.DataStream == DataStreamOff:
		return x, false, false
	case dsIsObj:
	case opts.DataStream == DataStreamAuto:
		return x, false, false
	case has && dsv != nil:
		return nil, false, true
	case !isObj:
		return nil, false, true
	}
	parts := [3]string{opts.DataStreamType, opts.DataStreamDataset, opts.DataStreamNamespace}
	for k, f := range dsFields {
		switch v := dsObj[f].(type) {
		case nil:
		case string:
			parts[k] = v
		default:
			return nil, false, true
		}
	}
	var p [3][]byte
	for k := range parts {
		p[k] = []byte(parts[k])
	}
	if validateDSName(p, []byte(parts[0]+"-"+parts[1]+"-"+parts[2])) != "" {
		return nil, false, true
	}
	if obj["@timestamp"] == nil {
		obj["@timestamp"] = "2026-12-05T00:00:00.123Z"
	}
	if opts.DataStreamSyncFields {
		if dsObj == nil {
			dsObj = map[string]any{}
		}
		for k, f := range dsFields {
			dsObj[f] = parts[k]
		}
		obj["data_stream"] = dsObj
	}
	return obj, true, false
}

// checkRouteOracle routes ev as add does and checks the source line
// against the oracle, that it has duplicate keys exactly when ev has
// (Elasticsearch refuses them: routing must neither add nor hide them),
// and that the batch restores ev.
func checkRouteOracle(t *testing.T, opts Options, ev []byte) {
	t.Helper()
	o := &Output{opts: opts, log: slog.New(slog.DiscardHandler)}
	valid := json.Valid(ev)
	dups := valid && dupKeys(ev)
	// What add dead-letters (its dead letters need a ledger to name).
	var rt routing
	_, reason := o.route(&rt, ev, routeReceived)
	if reason == "" {
		if _, err := appendEditedSource(nil, ev, rt.edits); err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		if valid && !dups {
			if _, _, wantDead := oracleSource(opts, ev); !wantDead {
				t.Fatalf("mode %d sync %v: %s dead-lettered: %s", opts.DataStream, opts.DataStreamSyncFields, ev, reason)
			}
		}
		return
	}
	b, it, lines, source := addOne(t, o, ev)
	if b == nil {
		t.Fatal("dead-lettered by add, not by route")
	}
	if bytes.ContainsAny(source, "\r\n") {
		t.Fatalf("source %q spans lines", source)
	}
	orig, _, err := b.original(it)
	if err != nil || !bytes.Equal(orig, ev) {
		t.Fatalf("original %q, %v; want %q", orig, err, ev)
	}
	// `ledgerctl dlq redrive` sends a dead letter's event as the output
	// sent it: to a data stream as with sync fields, elsewhere without
	// @metadata.
	if index, _ := actionTarget(lines); rt.dataStream && opts.DataStreamSyncFields || !rt.dataStream && !strings.HasPrefix(index, "logs-") {
		re, err := RedriveSource(ev, index, routeReceived)
		if err != nil || !bytes.Equal(re, source) {
			t.Fatalf("mode %d sync %v: %q into %s redriven as %q, %v; sent as %q", opts.DataStream, opts.DataStreamSyncFields, ev, index, re, err, source)
		}
	}
	if !valid {
		return
	}
	if !json.Valid(source) {
		t.Fatalf("mode %d sync %v: event %s gave source %s, not JSON", opts.DataStream, opts.DataStreamSyncFields, ev, source)
	}
	if dupKeys(source) != dups {
		t.Fatalf("mode %d sync %v: event %s (duplicate keys: %v) gave source %s", opts.DataStream, opts.DataStreamSyncFields, ev, dups, source)
	}
	if dups {
		return
	}
	want, _, wantDead := oracleSource(opts, ev)
	if wantDead {
		t.Fatalf("mode %d sync %v: %s sent as %s, want a dead letter", opts.DataStream, opts.DataStreamSyncFields, ev, source)
	}
	got, err := decodeJSON(source)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("mode %d sync %v: event %s gave source %s, want %v", opts.DataStream, opts.DataStreamSyncFields, ev, source, want)
	}
}

// eventGen writes random events in the shapes routing must handle.
type eventGen struct {
	rng *rand.Rand
	buf []byte
}

func (g *eventGen) ws() {
	if g.rng.IntN(3) > 0 {
		return
	}
	for range g.rng.IntN(3) + 1 {
		g.buf = append(g.buf, " \t\n\r"[g.rng.IntN(4)])
	}
}

// key writes name as a JSON key, sometimes with escapes.
func (g *eventGen) key(name string) {
	g.buf = append(g.buf, '"')
	for _, r := range name {
		if g.rng.IntN(6) == 0 {
			g.buf = fmt.Appendf(g.buf, `\u%04x`, r)
		} else {
			g.buf = append(g.buf, string(r)...)
		}
	}
	g.buf = append(g.buf, '"')
}

func (g *eventGen) str() {
	vals := []string{`"logs"`, `"metrics"`, `"x"`, `"nginx.access"`, `"prod"`, `"a\u002eb"`, `""`, `"eu-west"`}
	g.buf = append(g.buf, vals[g.rng.IntN(len(vals))]...)
}

func (g *eventGen) scalar() {
	switch g.rng.IntN(5) {
	case 0:
		g.buf = append(g.buf, "null"...)
	case 1:
		g.buf = append(g.buf, "1.5e3"...)
	case 2:
		g.buf = append(g.buf, "true"...)
	default:
		g.str()
	}
}

// members writes an object of members chosen from names.
func (g *eventGen) object(names []string, value func(name string)) {
	g.buf = append(g.buf, '{')
	g.ws()
	n := g.rng.IntN(len(names) + 1)
	for i := range n {
		if i > 0 {
			g.ws()
			g.buf = append(g.buf, ',')
			g.ws()
		}
		name := names[g.rng.IntN(len(names))]
		g.key(name)
		g.ws()
		g.buf = append(g.buf, ':')
		g.ws()
		value(name)
	}
	g.ws()
	g.buf = append(g.buf, '}')
}

func (g *eventGen) event() []byte {
	g.buf = g.buf[:0]
	g.ws()
	switch g.rng.IntN(12) {
	case 0:
		g.buf = append(g.buf, `[{"data_stream":{}}]`...)
	case 1:
		g.scalar()
	default:
		g.object([]string{"@metadata", "@timestamp", "data_stream", "message", "a"}, func(name string) {
			switch {
			case name == "data_stream" && g.rng.IntN(4) > 0:
				g.object([]string{"type", "dataset", "namespace", "x"}, func(string) { g.scalar() })
			case name == "@timestamp" && g.rng.IntN(2) == 0:
				g.buf = append(g.buf, `"2026-12-02T10:57:41.210Z"`...)
			case name == "@metadata" || name == "a":
				g.object([]string{"beat", "_id", "data_stream", "@timestamp"}, func(string) { g.scalar() })
			default:
				g.scalar()
			}
		})
	}
	g.ws()
	return append([]byte(nil), g.buf...)
}

// TestRouteOracle: generated events, in every mode, give the source line
// the oracle states, keep their duplicate keys as they are, and are
// restored from the batch byte for byte.
func TestRouteOracle(t *testing.T) {
	g := &eventGen{rng: rand.New(rand.NewPCG(3, 4))}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		ev := g.event()
		for _, mode := range []DataStreamMode{DataStreamOff, DataStreamAuto, DataStreamAlways} {
			for _, sync := range []bool{false, true} {
				checkRouteOracle(t, routeOptions(mode, sync), ev)
			}
		}
	}
}

// FuzzRouteOracle: checkRouteOracle for any event.
func FuzzRouteOracle(f *testing.F) {
	for _, c := range routeCases {
		f.Add([]byte(c.ev), uint8(c.mode), c.sync)
	}
	f.Fuzz(func(t *testing.T, ev []byte, mode uint8, sync bool) {
		if strings.Count(string(ev), "{") > 200 {
			return // the oracle's decoder recurses
		}
		checkRouteOracle(t, routeOptions(DataStreamMode(mode%3), sync), ev)
	})
}

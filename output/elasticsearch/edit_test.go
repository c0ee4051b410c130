package elasticsearch

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestEditRoundTrip: edits applied to an event and undone from the
// inverse records give the event back, for a table of shapes and for
// random edit lists.
func TestEditRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		ev    string
		edits []edit
		want  string
	}{
		{"none", `{"a":1}`, nil, `{"a":1}`},
		{"cut", `{"@metadata":{},"a":1}`, []edit{{at: 1, n: 15}}, `{"a":1}`},
		{"insert and cut at one place", `{"@metadata":{},"a":1}`,
			[]edit{{at: 1, ins: []byte(`"x":2,`)}, {at: 1, n: 15}}, `{"x":2,"a":1}`},
		{"replace null", `{"t":null}`, []edit{{at: 5, n: 4, ins: []byte(`"now"`)}}, `{"t":"now"}`},
		{"insert at the end", `{}`, []edit{{at: 2, ins: []byte(` `)}}, `{} `},
		{"several", `{"a":null,"@metadata":{"b":1},"c":{}}`,
			[]edit{{at: 1, ins: []byte(`"ts":1,`)}, {at: 5, n: 4, ins: []byte(`0`)}, {at: 9, n: 20}, {at: 35, ins: []byte(`"d":2`)}},
			`{"ts":1,"a":0,"c":{"d":2}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := []byte(c.ev)
			if !editsApply(ev, c.edits) {
				t.Fatal("edits do not apply")
			}
			got := appendEdited(nil, ev, c.edits)
			if string(got) != c.want || editedLen(ev, c.edits) != len(got) {
				t.Fatalf("edited %s (length %d), want %s", got, editedLen(ev, c.edits), c.want)
			}
			back, ok := appendUndone(nil, got, appendInverse(nil, ev, c.edits))
			if !ok || !bytes.Equal(back, ev) {
				t.Fatalf("undone %q, %v; want %q", back, ok, ev)
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ev := make([]byte, rng.IntN(40))
		for i := range ev {
			ev[i] = byte('a' + rng.IntN(26))
		}
		var edits []edit
		pos := 0
		for pos < len(ev) && rng.IntN(4) > 0 {
			at := pos + rng.IntN(len(ev)-pos+1)
			n := rng.IntN(len(ev) - at + 1)
			edits = append(edits, edit{at: at, n: n, ins: bytes.Repeat([]byte{'#'}, rng.IntN(5))})
			pos = at + n
		}
		got := appendEdited(nil, ev, edits)
		back, ok := appendUndone(nil, got, appendInverse(nil, ev, edits))
		if !ok || !bytes.Equal(back, ev) {
			t.Fatalf("%q with %v: edited %q, undone %q, %v", ev, edits, got, back, ok)
		}
	}
	// A corrupt inverse is refused, not a panic.
	if _, ok := appendUndone(nil, []byte(`{}`), []byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); ok {
		t.Error("an inverse past the end was undone")
	}
}

// FuzzRouteEdits: whatever the event, routing it and building its source
// line never panics; a valid JSON event gives a valid JSON source line,
// and the batch restores the event exactly from it.
func FuzzRouteEdits(f *testing.F) {
	for _, c := range routeCases {
		f.Add([]byte(c.ev), uint8(c.mode), c.sync)
	}
	f.Fuzz(func(t *testing.T, ev []byte, mode uint8, sync bool) {
		opts := routeOptions(DataStreamMode(mode%3), sync)
		o := &Output{opts: opts, log: slog.New(slog.DiscardHandler)}
		var rt routing
		if _, reason := o.route(&rt, ev, routeReceived); reason != "" {
			if rt.dataStream {
				t.Fatal("a dead letter routed to a data stream")
			}
			if strings.Contains(reason, "not valid JSON") && json.Valid(ev) {
				t.Fatalf("valid event %s: %s", ev, reason)
			}
			return
		}
		if _, err := appendEditedSource(nil, ev, rt.edits); err != nil {
			// Not JSON and on several lines: add dead-letters it.
			if json.Valid(ev) {
				t.Fatalf("valid event %s: %v", ev, err)
			}
			return
		}
		b, it, _, source := addOne(t, o, ev)
		if b == nil {
			t.Fatal("dead-lettered")
		}
		if json.Valid(ev) && !json.Valid(source) {
			t.Fatalf("event %s gave source %s, not JSON", ev, source)
		}
		orig, _, err := b.original(it)
		if err != nil || !bytes.Equal(orig, ev) {
			t.Fatalf("original %q, %v; want %q", orig, err, ev)
		}
	})
}

// TestSortEdits: sortEdits orders edits as a stable sort by position does,
// an insertion before a replacement at one position.
func TestSortEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		edits := make([]editSpan, rng.IntN(9))
		for i := range edits {
			// from tells equal edits apart, so that stability shows.
			edits[i] = editSpan{at: rng.IntN(4), n: rng.IntN(3), from: i}
		}
		want := slices.Clone(edits)
		slices.SortStableFunc(want, func(a, b editSpan) int {
			if a.at != b.at {
				return a.at - b.at
			}
			return min(a.n, 1) - min(b.n, 1)
		})
		got := slices.Clone(edits)
		sortEdits(got)
		if !slices.Equal(got, want) {
			t.Fatalf("sortEdits(%v) = %v, want %v", edits, got, want)
		}
	}
}

package elasticsearch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// dateOrNone reports whether the event has no top-level @timestamp, or a
// null one, or a date.
func dateOrNone(ev []byte) bool {
	x, err := decodeJSON(ev)
	if err != nil {
		return false
	}
	m, _ := x.(map[string]any)
	switch v := m["@timestamp"].(type) {
	case nil:
		return true
	case string:
		return strings.HasPrefix(v, "2026-")
	}
	return false
}

// TestRoutingSplitsKeepOriginalsAndCounts: data stream events of every
// shape the generator writes (edited source lines: @metadata cut anywhere,
// @timestamp and data_stream members added, nulls replaced, compacted),
// in batches cut at a small FlushBytes, in requests refused whole (413)
// until split small enough, with items refused for load (429) and some
// refused for good (400), and pretty-printed events too large for any
// request the cluster takes (413 alone). Each event is counted once by where it went,
// each stored one holds the source line routing gave it, and each refused
// one's dead letter holds the event exactly as stored.
func TestRoutingSplitsKeepOriginalsAndCounts(t *testing.T) {
	g := &eventGen{rng: rand.New(rand.NewPCG(5, 6))}
	opts0 := routeOptions(DataStreamAlways, true)
	var evs [][]byte
	for len(evs) < 400 {
		ev := g.event()
		if !json.Valid(ev) || dupKeys(ev) || dupMetadata(ev) || readMeta(ev).id != nil || !dateOrNone(ev) {
			continue // ids of its own could collide; the test cluster refuses a @timestamp that is not a date
		}
		if len(evs)%7 == 0 && bytes.HasSuffix(bytes.TrimSpace(ev), []byte("}")) && bytes.Count(ev, []byte("{")) > 0 {
			// Larger events, so that batches are cut at FlushBytes.
			ev = append([]byte(`{"pad":"`+strings.Repeat("p", 600)+`",`), bytes.TrimLeft(bytes.TrimSpace(ev), " \t\r\n")[1:]...)
			if !json.Valid(ev) {
				ev = []byte(`{"pad":"` + strings.Repeat("p", 600) + `"}`)
			}
		}
		if len(evs)%50 == 25 {
			// Too large for any request the cluster takes (413 below):
			// isolated by splitting, then dead-lettered.
			ev = []byte("{\n\"big\": \"" + strings.Repeat("b", 5000) + "\",\n\"@metadata\": {\"beat\": \"x\"}, \"data_stream\": {\"type\": null}\n}")
		}
		evs = append(evs, ev)
	}
	r := newRig(t, estest.Options{})
	lsn := r.store(routeReceived, evs...)
	prefix, _ := idPrefix(r.ledger.StreamID())
	var want Stats
	refused := map[string]bool{}
	dead := map[string][]byte{}
	sources := map[string]string{}
	for i, ev := range evs {
		id := string(appendDocID(nil, prefix, lsn, i))
		_, source, reason, _ := routeOne(t, opts0, ev)
		switch {
		case reason != "":
			want.RoutedDeadLetter++
			dead[id] = ev
		default:
			want.RoutedDataStream++
			if i%9 == 4 || len(ev) > 3000 {
				refused[id] = true
				dead[id] = ev
			} else {
				sources[id] = source
			}
		}
	}
	faults := refuseForGood(refused)
	faults.ItemReject429 = 0.2
	faults.RequestHook = func(body []byte) (int, string, string, bool) {
		if len(body) > 3000 {
			return 413, "", "", true
		}
		return 0, "", "", false
	}
	r.es.SetFaults(faults)
	run := r.start(r.options(func(o *Options) {
		o.DataStream, o.DataStreamSyncFields = DataStreamAlways, true
		o.DataStreamType, o.DataStreamDataset, o.DataStreamNamespace = "logs", "generic", "default"
		o.FlushBytes = 4096
	}))
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	st := run.Out.Stats()
	if st.Refused == 0 || st.Retried == 0 {
		t.Errorf("refused %d requests, retried %d items: the faults were not injected", st.Refused, st.Retried)
	}
	if st.RoutedDataStream != want.RoutedDataStream || st.RoutedDeadLetter != want.RoutedDeadLetter ||
		st.RoutedIndex != 0 || st.RoutedFallback != 0 {
		t.Errorf("routed %d/%d/%d/%d (data stream/index/fallback/dead), want %d/0/0/%d",
			st.RoutedDataStream, st.RoutedIndex, st.RoutedFallback, st.RoutedDeadLetter, want.RoutedDataStream, want.RoutedDeadLetter)
	}
	got := r.deadLetters(t)
	for id, ev := range dead {
		if len(got[id]) != 1 || !bytes.Equal(got[id][0].Event, ev) {
			t.Errorf("%s: dead letters %+v, want one holding %q", id, got[id], ev)
		}
	}
	if len(got) != len(dead) {
		t.Errorf("%d dead letters, want %d", len(got), len(dead))
	}
	for id, src := range sources {
		_, s, ok := r.docByID(id)
		if !ok || string(s) != src {
			t.Errorf("%s: stored %s, %v; want %s", id, s, ok, src)
		}
	}
}

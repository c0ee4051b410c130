package elasticsearch

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
)

// waitRunning is waitFor that fails at once when run stopped on its own.
func waitRunning(t *testing.T, run *running, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, func() bool {
		if err, ok := run.Returned(); ok {
			t.Fatalf("waiting for %s: Run returned: %v", what, err)
		}
		return cond()
	})
}

// refuseForGood answers the items whose document ids are in ids 400, as
// a cluster does for a mapping conflict; the rest are stored.
func refuseForGood(ids map[string]bool) estest.Faults {
	return estest.Faults{ItemHook: func(_, _, id string, _ []byte) (int, string, string, bool) {
		if ids[id] {
			return 400, "document_parsing_exception", "[1:42] failed to parse field [message] of type [long]", true
		}
		return 0, "", "", false
	}}
}

// deadLetters returns the dead-letter store's entries by document id.
func (r *rig) deadLetters(t *testing.T) map[string][]dlq.Entry {
	t.Helper()
	got := map[string][]dlq.Entry{}
	if err := dlq.Scan(r.dir+"/dlq", func(_ dlq.Pos, e dlq.Entry) error {
		got[e.DocID] = append(got[e.DocID], e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkDeadLetters checks that the store holds a dead letter for each
// event of want (document id → event as stored) and nothing else, each
// with the event exactly as stored and its record's receive time (a
// restart may write an event's dead letter twice: at least once).
func (r *rig) checkDeadLetters(t *testing.T, want map[string][]byte, received map[uint64]time.Time) {
	t.Helper()
	got := r.deadLetters(t)
	for id, ev := range want {
		if len(got[id]) == 0 {
			t.Errorf("event %s: no dead letter", id)
		}
		for _, e := range got[id] {
			if !bytes.Equal(e.Event, ev) {
				t.Errorf("event %s: dead letter holds %q, want the event as stored %q", id, e.Event, ev)
			}
			if w := received[e.LSN]; !e.Received.Equal(w) {
				t.Errorf("event %s: dead letter received %v, want its record's %v", id, e.Received, w)
			}
			if e.Stream != r.ledger.StreamID() || e.Reason == "" || e.Status == 0 {
				t.Errorf("event %s: dead letter %+v lacks its stream, status or reason", id, e)
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("unexpected dead letter for %s", id)
		}
	}
}

// TestDeadLettersPassQuarantinedDamage: a damaged record in a sealed
// segment, and a cluster that refuses some events for good (mapping
// conflicts) before and after it, in sealed segments and in the open one.
// The drain quarantines the damage and dead-letters each refused event,
// exactly as stored, without stopping; stopped part-way and started
// again, it goes on past both. Every other event is stored once.
func TestDeadLettersPassQuarantinedDamage(t *testing.T) {
	r := newRig(t, estest.Options{})
	const records, damaged = 600, 300
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	received := map[uint64]time.Time{}
	prefix, _ := idPrefix(r.ledger.StreamID())
	refused := map[string][]byte{}
	n := 0
	for i := range records {
		evs := make([][]byte, 5)
		for j := range evs {
			evs[j] = filebeatEvent(n, strings.Repeat("y", 300))
			n++
		}
		at := base.Add(time.Duration(i) * time.Second)
		lsn := r.store(at, evs...)
		received[lsn] = at
		if lsn%50 == 10 { // 0.4% of the events: LSN 10, 60, …, 310 (after the damage, same segment), …, 560
			refused[string(appendDocID(nil, prefix, lsn, 2))] = evs[2]
		}
	}
	ids := map[string]bool{}
	for id := range refused {
		ids[id] = true
		delete(r.events, id)
	}
	r.es.SetFaults(refuseForGood(ids))

	seg, _, _, l := r.damageRecord(t, damaged)
	segs, _ := ledger.Segments(r.dir+"/ledger", ledger.InspectOptions{})
	if segs[len(segs)-1].Path == seg || segs[len(segs)-1].FirstLSN > records-40 {
		t.Fatalf("LSN %d must be in a sealed segment and the last refused events in the open one: %+v", damaged, segs)
	}
	for i := range 5 {
		delete(r.events, string(appendDocID(nil, prefix, damaged, i)))
	}

	opts := r.options(func(o *Options) { o.FlushBytes = 16 << 10 })
	cursor := func() uint64 { c, _ := l.Cursor("elasticsearch"); return c }
	first := r.start(opts)
	waitRunning(t, first, "a third of the events", func() bool { return r.es.Count() >= n/3 })
	first.Stop(t)
	if c := cursor(); c >= damaged-10 {
		t.Logf("the first run got to LSN %d before it was stopped: the restart starts after the damage", c)
	}
	second := r.start(opts)
	waitRunning(t, second, "the cursor", func() bool { return cursor() == r.lsn })
	second.Stop(t)

	r.checkAllStoredOnce(t)
	r.checkDeadLetters(t, refused, received)
	st, st2 := first.Out.Stats(), second.Out.Stats()
	if st.DamagedRecords+st2.DamagedRecords < 1 {
		t.Errorf("the damaged record was not counted: %+v / %+v", st, st2)
	}
	if st.DeadLettered+st2.DeadLettered < int64(len(refused)) {
		t.Errorf("%d + %d events dead-lettered, want at least %d", st.DeadLettered, st2.DeadLettered, len(refused))
	}
}

// TestDeadLetterReadsNothingFromTheLedger: building a dead letter reads
// nothing from the ledger, neither the record again nor the open segment
// from its start (it has no index to seek with). Here the segment files
// are gone by the time Elasticsearch refuses the event for good; the dead
// letter still holds it exactly as stored, and the drain goes on.
func TestDeadLetterReadsNothingFromTheLedger(t *testing.T) {
	r := newRig(t, estest.Options{})
	base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	received := map[uint64]time.Time{}
	prefix, _ := idPrefix(r.ledger.StreamID())
	n := 0
	var last [][]byte
	for i := range 200 {
		last = make([][]byte, 5)
		for j := range last {
			last[j] = filebeatEvent(n, strings.Repeat("z", 200))
			n++
		}
		at := base.Add(time.Duration(i) * time.Second)
		received[r.store(at, last...)] = at
	}
	refused := string(appendDocID(nil, prefix, r.lsn, 3))
	delete(r.events, refused)
	reached, removed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.es.SetFaults(estest.Faults{ItemHook: func(_, _, id string, _ []byte) (int, string, string, bool) {
		if id != refused {
			return 0, "", "", false
		}
		once.Do(func() { close(reached) })
		select {
		case <-removed:
		case <-time.After(time.Minute): // only a guard against a hang
		}
		return 400, "document_parsing_exception", "failed to parse field [message]", true
	}})
	segs, err := filepath.Glob(r.dir + "/ledger/*.seg")
	if err != nil || len(segs) != 1 {
		t.Fatalf("want one (open) segment, found %v (%v)", segs, err)
	}

	run := r.start(r.options(func(o *Options) { o.Timeout = 2 * time.Minute }))
	waitRunning(t, run, "the refused event's request", func() bool {
		select {
		case <-reached:
			return true
		default:
			return false
		}
	})
	// The drain has read every record (the refused event is in the last).
	for _, s := range segs {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	close(removed)
	waitRunning(t, run, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	r.checkDeadLetters(t, map[string][]byte{refused: last[3]}, received)
}

// TestDeadLetterHoldsTheEventAsStored: events refused for good hold, in
// their dead letters, the bytes the ledger holds, whatever the request
// did to them (@metadata removed wherever it was, a pretty-printed event
// compacted) and whichever way they were refused: an item answered 400, an
// item answered 429 and then 400 (through the retry queue), a request
// refused as a whole (split down to the event); in requests of one event
// (every event after the first moves to a request of its own) and of many.
func TestDeadLetterHoldsTheEventAsStored(t *testing.T) {
	events := [][]byte{
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"metadata first"}`),
		[]byte(`{"message":"metadata last" , "@metadata" : {"beat":"filebeat","version":"9.3.0"} }`),
		[]byte(`{"a":1,"@metadata":{"beat":"filebeat","version":"9.3.0","_id":"own-id"},"message":"metadata between, own id"}`),
		[]byte(`{"message":"no metadata, escapes: \" \\ \u00e9 \n"}`),
		[]byte("{\n  \"@metadata\": {\"beat\": \"filebeat\", \"version\": \"9.3.0\"},\n  \"message\": \"pretty\"\r\n}"),
		[]byte("{\n  \"message\": \"pretty, no metadata\"\n}"),
		[]byte(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"POISON-REQUEST"}`),
		[]byte(`{"@metadata":{},"message":"empty metadata"}`),
	}
	const retriedFirst = "then 400"
	for _, flush := range []int{256, 64 << 10} {
		t.Run(fmt.Sprint("flush_bytes=", flush), func(t *testing.T) {
			r := newRig(t, estest.Options{})
			base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			received := map[uint64]time.Time{}
			want := map[string][]byte{}
			prefix, _ := idPrefix(r.ledger.StreamID())
			refused := map[string]bool{}
			for i := range 3 {
				evs := make([][]byte, 0, 2*len(events))
				for j, ev := range events {
					evs = append(evs, filebeatEvent(i*100+j, ""))
					ev = bytes.Replace(ev, []byte(`"message":`), fmt.Appendf(nil, `"n":%d,"message":`, i), 1)
					ev = bytes.Replace(ev, []byte(`"own-id"`), fmt.Appendf(nil, `"own-id-%d"`, i), 1)
					if j%2 == 1 && i == 1 {
						ev = bytes.Replace(ev, []byte(`"message":`), []byte(`"x":"`+retriedFirst+`","message":`), 1)
					}
					evs = append(evs, ev)
				}
				at := base.Add(time.Duration(i) * time.Minute)
				lsn := r.store(at, evs...)
				received[lsn] = at
				for pos := 1; pos < len(evs); pos += 2 {
					id := string(appendDocID(nil, prefix, lsn, pos))
					if own := fmt.Sprintf("own-id-%d", i); bytes.Contains(evs[pos], []byte(own)) {
						id = own
					}
					delete(r.events, string(appendDocID(nil, prefix, lsn, pos)))
					if !refused[id] {
						want[id], refused[id] = evs[pos], true
					}
				}
			}
			var mu sync.Mutex
			tried := map[string]int{}
			r.es.SetFaults(estest.Faults{
				ItemHook: func(_, _, id string, source []byte) (int, string, string, bool) {
					if !refused[id] {
						return 0, "", "", false
					}
					mu.Lock()
					tried[id]++
					first := tried[id] == 1
					mu.Unlock()
					if first && bytes.Contains(source, []byte(retriedFirst)) {
						return 429, "es_rejected_execution_exception", "rejected by the test", true
					}
					return 400, "document_parsing_exception", "refused by the test", true
				},
				RequestHook: func(body []byte) (int, string, string, bool) {
					if bytes.Contains(body, []byte("POISON-REQUEST")) {
						return 400, "x_content_parse_exception", "cannot parse the request", true
					}
					return 0, "", "", false
				},
			})
			run := r.start(r.options(func(o *Options) { o.FlushBytes = flush }))
			waitRunning(t, run, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
			run.Stop(t)
			r.checkAllStoredOnce(t)
			r.checkDeadLetters(t, want, received)
			if st := run.Out.Stats(); st.Retried == 0 {
				t.Errorf("no item was retried before it was refused for good: %+v", st)
			}
		})
	}
}

// TestOwnDeadLettersAreLogged: an event the output cannot send at all (a
// data_stream whose dataset makes no valid name) is dead-lettered and
// logged at WARN, as an event the cluster refuses is: the operator sees
// both the same way.
func TestOwnDeadLettersAreLogged(t *testing.T) {
	r := newRig(t, estest.Options{})
	r.store(time.Now(), []byte(`{"@timestamp":"2026-12-05T10:00:00Z","data_stream":{"type":"logs","dataset":"bad dataset","namespace":"default"},"message":"x"}`))
	for i := range 3 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	log := &syncbuf.Buffer{}
	run := r.start(r.options(func(o *Options) {
		o.DataStream = DataStreamAuto
		o.Logger = slog.New(slog.NewTextHandler(log, nil))
	}))
	waitRunning(t, run, "the dead letter", func() bool { return run.Out.Stats().DeadLettered == 1 })
	waitFor(t, "the other events", func() bool { return r.es.Count() == 3 })
	run.Stop(t)
	text := log.String()
	if !strings.Contains(text, `level=WARN msg="event dead-lettered: logpond cannot send it"`) || !strings.Contains(text, "type=invalid_data_stream") {
		t.Errorf("the dead letter the output made is not logged:\n%s", text)
	}
}

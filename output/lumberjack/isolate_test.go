package lumberjack

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	inlj "github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/output/dlq"
)

// startRefuser is a receiver with a default logpond's limits that
// refuses every window holding an event that contains poison (with poison
// "", every window) and ACKs every other whole.
func startRefuser(t *testing.T, poison string) *ljServer {
	return startLJServerRefusing(t, inlj.DefaultLimits(), func(_, n int) (int, bool) { return n, false },
		func(ev []byte) bool { return bytes.Contains(ev, []byte(poison)) })
}

func (s *ljServer) addr() string { return s.ln.Addr().String() }

// openDLQ opens a dead-letter store for the output under test.
func (r *rig) openDLQ() *dlq.Store {
	d, err := dlq.Open(r.dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { d.Close() })
	return d
}

// deadLetters reads the entries of the rig's dead-letter store.
func (r *rig) deadLetters() []dlq.Entry {
	r.t.Helper()
	var out []dlq.Entry
	if err := dlq.Scan(r.dir+"/dlq", func(_ dlq.Pos, e dlq.Entry) error {
		out = append(out, e)
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestRefusedEventsAreIsolated: two events in a backlog are ones the
// receiver refuses (every window holding one is closed unacknowledged).
// The output halves the windows that hold them until each is alone,
// dead-letters those two, with what names them, and forwards every other
// event: nothing after a refused event waits for it.
func TestRefusedEventsAreIsolated(t *testing.T) {
	r := newRig(t)
	poisoned := map[[2]int]bool{{3, 42}: true, {7, 0}: true} // (record, position)
	for rec := 1; rec <= 10; rec++ {
		var evs [][]byte
		for pos := range 100 {
			msg := fmt.Sprintf("event %d/%d", rec, pos)
			if poisoned[[2]int{rec, pos}] {
				msg += " POISON"
			}
			evs = append(evs, fmt.Appendf(nil, `{"message":%q,"@metadata":{"beat":"filebeat","version":"8.15.0"}}`, msg))
		}
		r.store(evs...)
	}
	srv := startRefuser(t, "POISON")
	d := r.openDLQ()
	run := r.start(r.options([]string{srv.addr()}, func(o *Options) {
		o.BulkMaxSize = 128
		o.BackoffInit, o.BackoffMax = time.Millisecond, 5*time.Millisecond
		o.DeadLetters = d
	}))
	waitFor(t, "the cursor past every event", func() bool { return run.Out.Stats().CursorLSN == r.lsn })
	st := run.Out.Stats()
	t.Logf("stats: windows %d, refused %d, isolated %d, dead-lettered %d, delivered %d", st.Batches, st.ClosedUnacked, st.Isolated, st.DeadLettered, st.Delivered)
	if st.DeadLettered != 2 || st.Delivered != 998 {
		t.Errorf("dead-lettered %d and delivered %d events, want 2 and 998", st.DeadLettered, st.Delivered)
	}
	if w := run.Out.Waiting(); w != "" {
		t.Errorf("Waiting after the drain: %q", w)
	}
	srv.mu.Lock()
	for id := range r.want {
		if lsn := lsnOf(t, id); !srv.acked[id] && !strings.Contains(string(r.want[id]), "POISON") {
			t.Errorf("event %s (record %d) was never ACKed", id, lsn)
		}
	}
	srv.mu.Unlock()
	entries := r.deadLetters()
	if len(entries) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(entries), entries)
	}
	for _, e := range entries {
		if !poisoned[[2]int{int(e.LSN), int(e.Position)}] || !bytes.Contains(e.Event, []byte("POISON")) {
			t.Errorf("dead letter of LSN %d position %d: %s", e.LSN, e.Position, e.Event)
		}
		if e.DocID != r.id(e.LSN, int(e.Position)) || e.ErrType != "window_refused" || e.Index != srv.addr() ||
			!strings.Contains(e.Reason, "refuses this event") || e.Received.IsZero() {
			t.Errorf("dead letter %+v: want the event's id %s, window_refused, the host, a reason and the receive time", e, r.id(e.LSN, int(e.Position)))
		}
	}
}

// TestReceiverRefusingEverythingDeadLettersNothing: a receiver that
// closes every window unacknowledged (a broken proxy in front, a receiver
// shutting down) shows no event to be the cause: nothing is
// dead-lettered, the cursor stays, and Waiting names the refusal.
func TestReceiverRefusingEverythingDeadLettersNothing(t *testing.T) {
	r := newRig(t)
	r.storeMany(300, 100)
	srv := startRefuser(t, "")
	d := r.openDLQ()
	run := r.start(r.options([]string{srv.addr()}, func(o *Options) {
		o.BulkMaxSize = 64
		o.BackoffInit, o.BackoffMax = time.Millisecond, 2*time.Millisecond
		o.DeadLetters = d
	}))
	waitFor(t, "many refusals", func() bool { return run.Out.Stats().ClosedUnacked >= 200 })
	st := run.Out.Stats()
	if st.DeadLettered != 0 || st.Delivered != 0 || st.Isolated == 0 {
		t.Errorf("dead-lettered %d, delivered %d, isolated %d: want none, none, and windows halved", st.DeadLettered, st.Delivered, st.Isolated)
	}
	if w := run.Out.Waiting(); !strings.Contains(w, "acknowledging none of it") {
		t.Errorf("Waiting = %q, want it to name the refusal", w)
	}
	run.Stop(t)
	if n := len(r.deadLetters()); n != 0 || r.cursor() != 0 {
		t.Errorf("%d dead letters, cursor %d: want none, 0", n, r.cursor())
	}
}

// TestLoneRefusedEventWaitsForEvidence: a refused event alone in the
// ledger is sent again, not dead-lettered, while nothing shows that the
// receiver takes other events; once more events arrive and are ACKed, it
// is dead-lettered, and neither it nor the retry queue holds them back
// (one sender: a retried window must not starve new ones).
func TestLoneRefusedEventWaitsForEvidence(t *testing.T) {
	r := newRig(t)
	r.store([]byte(`{"message":"POISON","@metadata":{"beat":"filebeat","version":"8.15.0"}}`))
	srv := startRefuser(t, "POISON")
	d := r.openDLQ()
	run := r.start(r.options([]string{srv.addr()}, func(o *Options) {
		o.BackoffInit, o.BackoffMax = time.Millisecond, 2*time.Millisecond
		o.DeadLetters = d
	}))
	waitFor(t, "refusals", func() bool { return run.Out.Stats().ClosedUnacked >= 10 })
	if st := run.Out.Stats(); st.DeadLettered != 0 || r.cursor() != 0 {
		t.Fatalf("with nothing else to send: dead-lettered %d, cursor %d; want none, 0", st.DeadLettered, r.cursor())
	}
	r.storeMany(50, 50)
	waitFor(t, "the cursor past every event", func() bool { return run.Out.Stats().CursorLSN == r.lsn })
	if st := run.Out.Stats(); st.DeadLettered != 1 || st.Delivered != 50 {
		t.Errorf("dead-lettered %d and delivered %d, want 1 and 50", st.DeadLettered, st.Delivered)
	}
}

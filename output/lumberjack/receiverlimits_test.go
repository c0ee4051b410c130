package lumberjack

import (
	"bytes"
	"strings"
	"testing"
	"time"

	inlj "github.com/logpond/logpond/input/lumberjack"
)

// TestWindowsFitADefaultReceiver: a bulk_max_size above a default
// receiver's max_window (16384) still delivers: windows are capped there,
// so the receiver refuses none of them.
func TestWindowsFitADefaultReceiver(t *testing.T) {
	r := newRig(t)
	r.storeMany(20000, 1000)
	srv := startLJServer(t, inlj.DefaultLimits(), func(c, n int) (int, bool) { return n, false })
	run := r.start(r.options([]string{srv.ln.Addr().String()}, func(o *Options) { o.BulkMaxSize = 20000 }))
	waitFor(t, "the cursor", func() bool { return r.cursor() == r.lsn })
	st := run.Out.Stats()
	srv.mu.Lock()
	errs := append([]string(nil), srv.errs...)
	srv.mu.Unlock()
	t.Logf("delivered %d, batches %d, failed %d, waiting %q; receiver errors: %d, first %q", st.Delivered, st.Batches, st.FailedBatches, run.Out.Waiting(), len(errs), first(errs))
	if st.Delivered != 20000 || len(errs) != 0 {
		t.Errorf("delivered %d of 20000 with %d windows refused (first %q): windows of 20000 events exceed a default receiver's max_window 16384", st.Delivered, len(errs), first(errs))
	}
}

// TestMaxSizeEventDoesNotWedgeForwarding: an event of exactly the
// input's max_event_bytes (16 MiB, accepted by the edge logpond) would
// grow past a receiving logpond's same default limit with the
// @metadata._id the output inserts, and its window would be refused for
// ever. It is forwarded without the id instead (counted), and every event
// after it is forwarded too.
func TestMaxSizeEventDoesNotWedgeForwarding(t *testing.T) {
	r := newRig(t)
	limit := inlj.DefaultLimits().MaxEventBytes
	big := append([]byte(`{"message":"`), bytes.Repeat([]byte("x"), limit-len(`{"message":""}`))...)
	big = append(big, `"}`...)
	if len(big) != limit {
		t.Fatalf("event of %d bytes", len(big))
	}
	r.storeMany(10, 5)
	r.store(big)
	r.storeMany(10, 5)
	srv := startLJServer(t, inlj.DefaultLimits(), func(c, n int) (int, bool) { return n, false })
	run := r.start(r.options([]string{srv.ln.Addr().String()}, func(o *Options) { o.BulkMaxSize = 2048 }))
	waitFor(t, "the cursor", func() bool { return r.cursor() == r.lsn })
	st := run.Out.Stats()
	srv.mu.Lock()
	errs := append([]string(nil), srv.errs...)
	got := len(srv.got)
	srv.mu.Unlock()
	t.Logf("delivered %d of %d, batches %d, failed %d, cursor %d of %d; receiver: %d distinct events, %d errors, first %q; waiting %q",
		st.Delivered, len(r.want), st.Batches, st.FailedBatches, r.cursor(), r.lsn, got, len(errs), first(errs), run.Out.Waiting())
	if len(errs) != 0 || st.EventsWithoutID != 1 || got != len(r.want) {
		t.Errorf("the receiver refused %d windows (first %q), got %d distinct events of %d; %d forwarded without an id, want the big one", len(errs), first(errs), got, len(r.want), st.EventsWithoutID)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestRefusedWindowIsNamed: a receiver that takes a whole window and
// closes the connection without acknowledging any of it (how a
// Lumberjack receiver refuses a window) is said to be doing so in
// Waiting, not blamed on the network alone, and counted; the window is
// sent again and delivered once the receiver takes it.
func TestRefusedWindowIsNamed(t *testing.T) {
	r := newRig(t)
	r.storeMany(10, 5)
	srv := startLJServer(t, inlj.DefaultLimits(), func(c, n int) (int, bool) {
		if c <= 3 {
			return 0, true // refused: closed without an ACK
		}
		return n, false
	})
	run := r.start(r.options([]string{srv.ln.Addr().String()}, func(o *Options) {
		o.BackoffInit, o.BackoffMax = 50*time.Millisecond, 100*time.Millisecond
	}))
	said := ""
	waitFor(t, "the cursor", func() bool {
		if w := run.Out.Waiting(); strings.Contains(w, "closed the connection after the whole window") {
			said = w
		}
		return r.cursor() == r.lsn
	})
	if said == "" {
		t.Error("Waiting never said that the receiver closed the connection on a whole window")
	}
	if st := run.Out.Stats(); st.ClosedUnacked != 3 {
		t.Errorf("%d windows counted as closed unacknowledged, want 3", st.ClosedUnacked)
	}
}

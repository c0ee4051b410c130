package drain

import (
	"context"
	"testing"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// appendSynced appends a one-event record at lsn to l and syncs it, so
// that a Reader waiting at the ledger's tail sees the ledger grow.
func appendSynced(t *testing.T, l *ledger.Ledger, lsn uint64) {
	t.Helper()
	appendEvent(t, l, lsn, []byte(`{"message":"y"}`))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestWaitMore: waitMore: a reader caught up with the ledger, its output holding a
// partial batch, waits for the ledger to grow; the batch goes when its
// linger has passed or, with LedgerFlushInterval set, once the ledger has
// stopped growing for twice that, long before the linger.
func TestWaitMore(t *testing.T) {
	const long = time.Minute // a linger no case may wait out
	for _, tc := range []struct {
		name          string
		ledgerFlush   time.Duration
		linger        time.Duration
		sinceFirst    time.Duration // how long ago the batch got its first event
		grow          bool          // the ledger grows while WaitMore waits
		cancel        bool          // the context ends while WaitMore waits
		wantMore      bool
		wantOK        bool
		atLeast       time.Duration // WaitMore returns no sooner than this
		returnsBefore time.Duration // and before this (far below any linger it must not wait out)
	}{
		{name: "the ledger grows: read again", ledgerFlush: 20 * time.Millisecond, linger: long, grow: true,
			wantMore: true, wantOK: true, returnsBefore: long / 2},
		{name: "the ledger stops growing: send before the linger", ledgerFlush: 20 * time.Millisecond, linger: long,
			wantOK: true, atLeast: 40 * time.Millisecond, returnsBefore: long / 2},
		{name: "no ledger interval: the whole linger", linger: 200 * time.Millisecond,
			wantOK: true, atLeast: 200 * time.Millisecond, returnsBefore: long / 2},
		{name: "the linger ends before the ledger's pause", ledgerFlush: long, linger: 100 * time.Millisecond,
			wantOK: true, atLeast: 100 * time.Millisecond, returnsBefore: long / 2},
		{name: "the linger has passed: send at once", ledgerFlush: 20 * time.Millisecond, linger: time.Second,
			sinceFirst: 2 * time.Second, grow: true, wantOK: true, returnsBefore: long / 2},
		{name: "the context ends: stop", ledgerFlush: long, linger: long, cancel: true,
			returnsBefore: long / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := openLedger(t, 1)
			src := NewSource(SourceOptions{Ledger: l, LedgerFlushInterval: tc.ledgerFlush})
			r := l.Reader(1)
			defer r.Close()
			for r.Next() {
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct{ more, ok bool }
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				more, ok := src.waitMore(ctx, r, start.Add(-tc.sinceFirst), tc.linger)
				done <- result{more, ok}
			}()
			if tc.grow {
				appendSynced(t, l, 2)
			}
			if tc.cancel {
				cancel()
			}
			select {
			case got := <-done:
				if took := time.Since(start); took < tc.atLeast {
					t.Errorf("returned after %s, before %s", took, tc.atLeast)
				}
				if got.more != tc.wantMore || got.ok != tc.wantOK {
					t.Errorf("more, ok = %v, %v; want %v, %v", got.more, got.ok, tc.wantMore, tc.wantOK)
				}
			case <-time.After(tc.returnsBefore):
				t.Fatalf("still waiting after %s", tc.returnsBefore)
			}
		})
	}
}

// TestReadLoopLingers: ReadLoop lets the batch an output holds linger
// before Flush once caught up: a record appended meanwhile reaches Record
// first, and once the ledger stops growing (two LedgerFlushInterval) the
// batch is flushed long before its Linger has passed.
func TestReadLoopLingers(t *testing.T) {
	l, _ := openLedger(t, 1)
	src := NewSource(SourceOptions{Ledger: l, LedgerFlushInterval: 20 * time.Millisecond})
	r := l.Reader(1)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 8) // what ReadLoop called, in order
	var first time.Time
	done := make(chan error, 1)
	go func() {
		done <- src.ReadLoop(ctx, r, NewTracker(0), ReadHooks{
			Record: func(lsn uint64, _ record.Record) bool {
				if first.IsZero() {
					first = time.Now()
				}
				events <- "record"
				return true
			},
			Linger: time.Minute,
			Held:   func() time.Time { return first },
			Flush: func() (more, ok bool) {
				if first.IsZero() {
					return false, true
				}
				first = time.Time{}
				events <- "flush"
				return true, true
			},
		})
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("ReadLoop did nothing for 30s")
			return ""
		}
	}
	if e := next(); e != "record" {
		t.Fatalf("first call %q, want record", e)
	}
	appendSynced(t, l, 2)
	for _, want := range []string{"record", "flush"} {
		if e := next(); e != want {
			t.Fatalf("got %q, want %q: the batch did not linger for the record appended", e, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

package drain

import (
	"context"
	"testing"
	"time"

	"github.com/logpond/logpond/record"
)

// TestWaitMore: a reader caught up with the ledger, its output holding a
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
				more, ok := src.WaitMore(ctx, r, start.Add(-tc.sinceFirst), tc.linger)
				done <- result{more, ok}
			}()
			if tc.grow {
				rec, err := record.Encode(nil, time.Now(), [][]byte{[]byte(`{"message":"y"}`)})
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Append(2, rec); err != nil {
					t.Fatal(err)
				}
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
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

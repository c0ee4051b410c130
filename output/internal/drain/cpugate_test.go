package drain

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCPUGateLeavesAPFree: while the gate applies, no more than
// GOMAXPROCS−1 turns (at least one) hold a slot at once, whichever
// output's gate they come from, and a turn that
// gives its slot lets a waiting one in; while it does not apply, every
// turn goes at once.
func TestCPUGateLeavesAPFree(t *testing.T) {
	var closed atomic.Bool
	closed.Store(true)
	g := NewCPUGate(closed.Load)
	other := NewCPUGate(closed.Load) // another output's gate: the same slots
	slots := max(1, runtime.GOMAXPROCS(0)-1)
	ctx := context.Background()
	turns := make([]*CPUTurn, slots+1)
	for i := range slots {
		turns[i] = g.Turn()
		if i%2 == 1 {
			turns[i] = other.Turn()
		}
		if err := turns[i].Take(ctx); err != nil {
			t.Fatal(err)
		}
		if err := turns[i].Take(ctx); err != nil { // held: no second slot
			t.Fatal(err)
		}
	}
	last := other.Turn()
	turns[slots] = last
	took := make(chan error, 1)
	go func() { took <- last.Take(ctx) }()
	select {
	case err := <-took:
		t.Fatalf("a turn beyond the %d slots went in (err %v)", slots, err)
	case <-time.After(50 * time.Millisecond):
	}
	turns[0].Give()
	turns[0].Give() // giving twice gives once
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	if len(g.slots) != slots {
		t.Fatalf("%d slots held, want %d", len(g.slots), slots)
	}

	// Open: every turn goes at once, holding nothing.
	closed.Store(false)
	var wg sync.WaitGroup
	for range 4 * slots {
		wg.Go(func() {
			tr := g.Turn()
			if err := tr.Take(ctx); err != nil {
				t.Error(err)
			}
			if tr.held {
				t.Error("an open gate's turn holds a slot")
			}
		})
	}
	wg.Wait()
	for _, tr := range turns {
		tr.Give()
	}
	if len(g.slots) != 0 {
		t.Fatalf("%d slots still held", len(g.slots))
	}
}

// TestCPUGateWaitEndsWithContext: a turn waiting for a slot returns when
// its context ends, holding nothing; a nil gate's turns never wait.
func TestCPUGateWaitEndsWithContext(t *testing.T) {
	g := NewCPUGate(func() bool { return true })
	var held []*CPUTurn
	defer func() {
		for _, tr := range held {
			tr.Give()
		}
	}()
	for range cap(g.slots) {
		tr := g.Turn()
		if err := tr.Take(context.Background()); err != nil {
			t.Fatal(err)
		}
		held = append(held, tr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	tr := g.Turn()
	if err := tr.Take(ctx); err == nil || tr.held {
		t.Fatalf("Take on a full gate returned %v, held %v; want the context's error", err, tr.held)
	}
	var none *CPUGate
	if err := none.Turn().Take(context.Background()); err != nil {
		t.Fatal(err)
	}
}

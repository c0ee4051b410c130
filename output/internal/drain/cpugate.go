package drain

import (
	"context"
	"runtime"
)

// CPUGate bounds how many of an output's goroutines do CPU-bound drain
// work (decoding records, encoding requests) at once while the output
// gives way to acknowledgements: at most GOMAXPROCS−1 of them, at least
// one, so that a P is left for the acknowledgement path. Its goroutines
// (a connection's reader, the journal's committer back from its fsync,
// the ACK's writer) each need a P in turn, and Go preempts a running
// goroutine only after 10 ms: a drain whose reader and workers fill
// every P makes each of them wait, however slowly the drain is paced.
// Every output's gate takes its slots from the same process-wide set, so
// that outputs draining side by side still leave that P free. While an
// output does not give way its gate is open, and a drain with no
// acknowledgements to protect uses every P. Safe for concurrent use.
type CPUGate struct {
	slots  chan struct{}
	closed func() bool // whether the gate applies now
}

// cpuSlots are the process's slots, shared by every gate: GOMAXPROCS−1
// at start (at least one).
var cpuSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))

// NewCPUGate returns a gate that applies while closed says so (the
// output gives way), on the process's shared slots.
func NewCPUGate(closed func() bool) *CPUGate {
	return &CPUGate{slots: cpuSlots, closed: closed}
}

// CPUTurn is one goroutine's use of a CPUGate: Take before CPU-bound
// work, Give before anything that waits (a request in flight, a channel,
// the ledger's tail). A goroutine holds at most one slot and gives it
// before it waits for another goroutine, so slots cannot deadlock. Not
// safe for concurrent use: one CPUTurn per goroutine.
type CPUTurn struct {
	g    *CPUGate
	held bool
}

// Turn returns a new CPUTurn on g; a nil gate's turns never wait.
func (g *CPUGate) Turn() *CPUTurn { return &CPUTurn{g: g} }

// Take waits for a slot when the gate applies and none is held; it
// returns ctx's error if ctx ends first. A nil CPUTurn never waits.
func (t *CPUTurn) Take(ctx context.Context) error {
	if t == nil || t.held || t.g == nil || !t.g.closed() {
		return nil
	}
	select {
	case t.g.slots <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Give gives back the slot held, if any.
func (t *CPUTurn) Give() {
	if t != nil && t.held {
		<-t.g.slots
		t.held = false
	}
}

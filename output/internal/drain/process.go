package drain

import (
	"context"
	"fmt"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/processors"
	"github.com/logpond/logpond/record"
)

// Processing runs an output's processor chain on the events its reader
// reads, between the ledger and what the output sends. The ledger keeps
// the events as received, so a changed chain can run again over history;
// an event keeps the id of its ledger position whatever the chain does to
// it, so exactly-once delivery holds.
//
// One Processing serves one output over its lifetime; it is safe for
// concurrent use, each goroutine that processes events holding its own
// Processor.
type Processing struct {
	chain *processors.Chain // nil: events go as stored
}

// NewProcessing runs chain; a nil chain leaves events as stored.
func NewProcessing(chain *processors.Chain) *Processing {
	return &Processing{chain: chain}
}

// Chain is the chain run, nil for none.
func (p *Processing) Chain() *processors.Chain {
	if p == nil {
		return nil
	}
	return p.chain
}

// Processor is one goroutine's side of a Processing. Not safe for
// concurrent use.
type Processor struct {
	p      *Processing
	runner *processors.Runner // nil: no chain
}

// Processor returns a Processor for one goroutine; it works on a nil
// Processing too (no chain).
func (p *Processing) Processor() *Processor {
	pr := &Processor{p: p}
	if p != nil && p.chain != nil {
		pr.runner = p.chain.NewRunner()
	}
	return pr
}

// Verdict says what to do with an event after the chain.
type Verdict uint8

const (
	// Send: send the event returned.
	Send Verdict = iota
	// Dropped: a processor dropped the event. It is already finished in
	// the tracker and counted; the output counts it delivered and sends
	// nothing.
	Dropped
	// Unsendable: the chain could not run on the event (it is not a JSON
	// object); the output keeps it as a dead letter with the reason
	// returned, as it does the events it cannot send.
	Unsendable
)

// Event runs the chain on ev, the event at position pos of record lsn as
// stored, which tr tracks. With Send, out is the event to send: ev itself
// when there is no chain, else a buffer valid until the next call. With
// Unsendable, reason says why. An error is the tracker's, for an event it
// does not track.
func (pr *Processor) Event(tr *Tracker, lsn uint64, ev []byte) (out []byte, v Verdict, reason string, err error) {
	if pr.runner == nil {
		return ev, Send, "", nil
	}
	out, keep, perr := pr.runner.Run(ev)
	switch {
	case perr != nil:
		return nil, Unsendable, perr.Error(), nil
	case !keep:
		// A dropped event is done: nothing will be sent for it, and a
		// restart would drop it again.
		if err := tr.Finish(lsn, 1); err != nil {
			return nil, Dropped, "", fmt.Errorf("processors: %w", err)
		}
		return nil, Dropped, "", nil
	}
	return out, Send, "", nil
}

// KeepUnsendable writes the dead letter of an event the output will not
// send (an Unsendable verdict) to store, synced, logs it, and only then
// finishes it in tr: the cursor never passes an event that is neither
// sent nor kept. With no store (an output configured without one), the
// event cannot be kept: it is an error, and the output stops rather than
// lose it.
func KeepUnsendable(ctx context.Context, store *dlq.Store, log *DeadLetterLog, tr *Tracker, e dlq.Entry) error {
	if store == nil {
		return fmt.Errorf("an event at LSN %d position %d cannot be sent (%s) and the output has no dead-letter store to keep it in", e.LSN, e.Position, e.Reason)
	}
	if e.Failed.IsZero() {
		e.Failed = time.Now()
	}
	if err := store.Append(ctx, []dlq.Entry{e}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("dead-letter store: %w", err)
	}
	log.Written([]dlq.Entry{e})
	return tr.Finish(e.LSN, 1)
}

// DeadLetterSink is where an output keeps the events it cannot send:
// its dead-letter store and log, the ledger's stream id, and the action
// its dead letters name ("produce", "forward").
type DeadLetterSink struct {
	Store  *dlq.Store
	Log    *DeadLetterLog
	Stream string
	Action string
}

// Prepare is Event for an output that takes events one at a time as it
// reads them (Kafka, Lumberjack): an event the chain makes Unsendable is
// kept in sink (KeepUnsendable) before Prepare returns, so the output
// only counts it; a Dropped one is already done. An error is the
// tracker's or the dead-letter store's: the output stops.
func (pr *Processor) Prepare(ctx context.Context, tr *Tracker, lsn uint64, pos int, received time.Time, raw []byte, sink DeadLetterSink) ([]byte, Verdict, error) {
	ev, v, reason, err := pr.Event(tr, lsn, raw)
	if err != nil || v != Unsendable {
		return ev, v, err
	}
	err = KeepUnsendable(ctx, sink.Store, sink.Log, tr, dlq.Entry{
		Stream: sink.Stream, LSN: lsn, Position: uint32(pos), Action: sink.Action,
		ErrType: "unprocessable_event", Reason: reason, Received: received, Event: raw})
	return nil, v, err
}

// Events runs Prepare on each event of record rec (at LSN lsn), for an
// output that takes events one at a time: send gets each event to send,
// with its position in the record, and returns false to stop; notSent
// gets the verdict of each event the chain dropped or that was kept as a
// dead letter, for the output's counts. It returns false when send
// stopped, or with Prepare's error (the output stops).
func (pr *Processor) Events(ctx context.Context, tr *Tracker, lsn uint64, rec record.Record, sink DeadLetterSink, notSent func(Verdict), send func(ev []byte, pos int) bool) (bool, error) {
	pos := 0
	for raw := range rec.Events() {
		ev, verdict, err := pr.Prepare(ctx, tr, lsn, pos, rec.Received(), raw, sink)
		if err != nil {
			return false, err
		}
		if verdict != Send {
			notSent(verdict)
		} else if !send(ev, pos) {
			return false, nil
		}
		pos++
	}
	return true, nil
}

package lumberjack

import (
	"context"
	"fmt"
	"sync/atomic"

	inlj "github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/output/internal/drain"
	"github.com/logpond/logpond/record"
)

// read reads the ledger from LSN from on, registers each record with the
// tracker in LSN order, and sends its events, ids in place, on out in
// batches of up to BulkMaxSize events. Once it has caught up with the
// ledger, it sends the batch it holds without waiting for it to fill:
// the receiver has nothing better to wait for. out is bounded, so the
// reader stops reading while every sender is busy: memory holds at most
// the batches in flight, those queued, and the one being filled.
func (o *Output) read(ctx context.Context, from uint64, tr *drain.Tracker, out chan<- *batch) error {
	r := o.ledger.Reader(from)
	defer r.Close()
	b := &batch{}
	proc := o.src.Processor()
	sink := drain.DeadLetterSink{Store: o.opts.DeadLetters, Log: o.deadLog, Stream: o.ledger.StreamID(), Action: "forward"}
	var readErr error // a failure inside Record, returned once the loop stops
	send := func() bool {
		b.seal()
		select {
		case out <- b:
			b = &batch{}
			return true
		case <-ctx.Done():
			return false
		}
	}
	err := o.src.ReadLoop(ctx, r, tr, drain.ReadHooks{
		Record: func(lsn uint64, rec record.Record) bool {
			ok, err := proc.Events(ctx, tr, lsn, rec, sink, o.stats.notSent, func(ev []byte, pos int) bool {
				// A window must fit a default receiver's max_batch_bytes:
				// the one being filled goes first when this event would
				// take it past.
				if b.len() > 0 && int64(len(b.data)+len(ev)+idRoom) > receiver.MaxBatchBytes && !send() {
					return false
				}
				b.data = o.appendEvent(b.data, ev, lsn, pos)
				b.added(lsn, pos, rec.Received())
				return b.len() < o.windowEvents() || send()
			})
			if err != nil {
				readErr = err
			}
			return ok
		},
		// The receiver has nothing better to wait for: a partial window
		// goes as soon as the reader has caught up, or before a failed
		// read is retried.
		Flush: func() (more, ok bool) {
			if b.len() == 0 {
				return false, true
			}
			return true, send()
		},
	})
	if err == nil {
		err = readErr
	}
	if err != nil {
		return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
	}
	return nil
}

// receiver is what a default logpond accepts (its input.beats limits): the
// output keeps its windows and events within them, so that a central
// logpond with the same defaults never refuses them for good.
var receiver = inlj.DefaultLimits()

// idRoom bounds the bytes an event's id adds ("_id":"…" and a comma, or a
// whole @metadata object), with room to spare.
const idRoom = 128

// windowEvents is the most events in one window: bulk_max_size, but no
// more than a default receiver's max_window.
func (o *Output) windowEvents() int { return min(o.opts.BulkMaxSize, receiver.MaxWindow) }

// appendEvent appends the event at position pos of record lsn as it is
// forwarded: with its id. An event that cannot carry one is forwarded
// unchanged (the receiver handles it as any Beats event), said once in
// the log and counted. So is an event that its id would take past a
// default receiver's max_event_bytes (an event of exactly that size,
// which the input accepted): with the id, every receiver with the same
// limits would refuse its window for ever.
func (o *Output) appendEvent(dst, ev []byte, lsn uint64, pos int) []byte {
	start := len(dst)
	dst, ok := appendWithID(dst, ev, o.idPrefix, lsn, pos)
	switch {
	case ok && len(dst)-start > receiver.MaxEventBytes && len(ev) <= receiver.MaxEventBytes:
		o.withoutID(&o.saidTooLargeForID, "an event that its id would take past a default receiver's max_event_bytes is forwarded without a document id, unchanged, so that the receiver takes it",
			"lsn", lsn, "position", pos, "event_bytes", len(ev), "max_event_bytes", receiver.MaxEventBytes)
		return append(dst[:start], ev...)
	case !ok:
		o.withoutID(&o.saidWithoutID, "an event that is not a JSON object (or whose @metadata is not one) is forwarded without a document id, unchanged",
			"lsn", lsn, "position", pos)
	}
	return dst
}

// withoutID counts an event forwarded without its id and logs the first
// of its kind (said), with what follows from it.
func (o *Output) withoutID(said *atomic.Bool, what string, args ...any) {
	o.stats.withoutID.Add(1)
	if said.CompareAndSwap(false, true) {
		o.log.Warn(what+"; the receiver derives its own id, so a resend may store it twice (logged once; see the output's events_without_id count)", args...)
	}
}

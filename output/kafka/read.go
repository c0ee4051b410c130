package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/logpond/logpond/output/internal/drain"
	"github.com/logpond/logpond/record"
)

// batch is the events of one transaction, in ledger order: each event's
// bytes (a copy: the reader's buffers move on) and its place. The copies
// are carved from data, which grows a few times per batch rather than
// once per event; slices taken before it grew stay valid.
type batch struct {
	events [][]byte
	at     []eventAt
	bytes  int
	data   []byte
}

type eventAt struct {
	pos      position
	received time.Time
}

func (b *batch) add(ev []byte, p position, received time.Time) {
	start := len(b.data)
	b.data = append(b.data, ev...)
	b.events = append(b.events, b.data[start:len(b.data):len(b.data)])
	b.at = append(b.at, eventAt{pos: p, received: received})
	b.bytes += len(ev)
}

func (b *batch) len() int { return len(b.events) }

// maxBatchBytes bounds a batch's event bytes whatever bulk_max_size says,
// so that a batch of large events holds no more memory than the output's
// share of the memory formula: the batch being sent and the one queued.
const maxBatchBytes = 16 << 20

// read reads the ledger from LSN from on, registers each record with the
// tracker in LSN order, and sends its events on out in batches of up to
// BulkMaxSize events. A partial batch goes once the reader has caught up
// with the ledger and FlushInterval has passed since its first event. out
// is bounded, so the reader stops while the sender is busy.
func (o *Output) read(ctx context.Context, from uint64, tr *drain.Tracker, out chan<- *batch) error {
	r := o.ledger.Reader(from)
	defer r.Close()
	b := &batch{}
	var first time.Time
	proc := o.src.Processor()
	sink := drain.DeadLetterSink{Store: o.opts.DeadLetters, Log: o.deadLog, Stream: o.ledger.StreamID(), Action: "produce"}
	var readErr error // a failure inside Record, returned once the loop stops
	send := func() bool {
		select {
		case out <- b:
			b, first = &batch{}, time.Time{}
			return true
		case <-ctx.Done():
			return false
		}
	}
	err := o.src.ReadLoop(ctx, r, tr, drain.ReadHooks{
		Record: func(lsn uint64, rec record.Record) bool {
			ok, err := proc.Events(ctx, tr, lsn, rec, sink, o.stats.notSent, func(ev []byte, pos int) bool {
				if b.len() == 0 {
					first = time.Now()
				}
				b.add(ev, position{lsn: lsn, pos: pos}, rec.Received())
				return (b.len() < o.opts.BulkMaxSize && b.bytes < maxBatchBytes) || send()
			})
			if err != nil {
				readErr = err
			}
			return ok
		},
		// Caught up with a partial batch: it waits for more events
		// until the flush interval has passed.
		Linger: o.opts.FlushInterval,
		Held:   func() time.Time { return first },
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
		return fmt.Errorf("kafka: output %q: %w", o.opts.Name, err)
	}
	return nil
}

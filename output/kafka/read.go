package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/internal/drain"
)

// batch is the events of one transaction, in ledger order: each event's
// bytes (a copy: the reader's buffers move on) and its place.
type batch struct {
	events [][]byte
	at     []eventAt
	bytes  int
}

type eventAt struct {
	pos      position
	received time.Time
}

func (b *batch) add(ev []byte, p position, received time.Time) {
	b.events = append(b.events, append([]byte(nil), ev...))
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
	// Damage is passed, quarantined and counted, never a halt
	// (docs/design.md, §7).
	r.SkipDamage()
	b := &batch{}
	var first time.Time
	send := func() bool {
		select {
		case out <- b:
			b, first = &batch{}, time.Time{}
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		for r.Next() {
			if passed, err := o.src.Pass(r, tr); err != nil {
				return fmt.Errorf("kafka: output %q: %w", o.opts.Name, err)
			} else if passed {
				continue
			}
			lsn, rec := r.LSN(), r.Decoded()
			if err := tr.Add(lsn, rec.Count(), rec.Received()); err != nil {
				return fmt.Errorf("kafka: output %q: %w", o.opts.Name, err)
			}
			pos := 0
			for ev := range rec.Events() {
				if b.len() == 0 {
					first = time.Now()
				}
				b.add(ev, position{lsn: lsn, pos: pos}, rec.Received())
				pos++
				if (b.len() >= o.opts.BulkMaxSize || b.bytes >= maxBatchBytes) && !send() {
					return nil
				}
			}
		}
		if err := r.Err(); err != nil {
			var re *ledger.ReadError
			if !errors.As(err, &re) {
				return fmt.Errorf("kafka: output %q: reading the ledger: %w", o.opts.Name, err)
			}
			if b.len() > 0 && !send() {
				return nil
			}
			if !o.src.ReadFailed(ctx, r, re) {
				return nil // ctx ended
			}
			continue
		}
		o.src.ReadWorks()
		if b.len() > 0 {
			if wait := o.opts.FlushInterval - time.Since(first); wait > 0 {
				// Caught up with a partial batch: wait for more events
				// until the flush interval has passed.
				wctx, cancel := context.WithTimeout(ctx, wait)
				err := r.Wait(wctx)
				cancel()
				if ctx.Err() != nil {
					return nil
				}
				if err == nil {
					continue
				}
			}
			if !send() {
				return nil
			}
			continue
		}
		if err := r.Wait(ctx); err != nil {
			return nil // ctx ended
		}
	}
}

package lumberjack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/internal/drain"
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
	// Damage is passed, quarantined and counted, never a halt
	// (docs/design.md, §7).
	r.SkipDamage()
	b := &batch{}
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
	for {
		for r.Next() {
			if d := r.Damage(); d != nil {
				if err := o.quarantine(d, tr); err != nil {
					return err
				}
				continue
			}
			if sk := r.Skipped(); sk != nil {
				// Deleted by max_lag retention before this output read
				// them: logged and counted, then done.
				o.stats.skips.Pass(o.log, sk)
				now := time.Now()
				for lsn := sk.FirstLSN; lsn <= sk.LastLSN; lsn++ {
					if err := tr.Add(lsn, 0, now); err != nil {
						return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
					}
				}
				continue
			}
			lsn, rec := r.LSN(), r.Decoded()
			if err := tr.Add(lsn, rec.Count(), rec.Received()); err != nil {
				return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
			}
			pos := 0
			for ev := range rec.Events() {
				b.data = o.appendEvent(b.data, ev, lsn, pos)
				b.added(lsn)
				pos++
				if b.len() >= o.opts.BulkMaxSize && !send() {
					return nil
				}
			}
		}
		if err := r.Err(); err != nil {
			var re *ledger.ReadError
			if !errors.As(err, &re) {
				return fmt.Errorf("lumberjack: output %q: reading the ledger: %w", o.opts.Name, err)
			}
			// The device failed the read: the Reader reads the same bytes
			// again at the next Next. What was read goes out meanwhile.
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

// appendEvent appends the event at position pos of record lsn as it is
// forwarded: with its id. An event that cannot carry one is forwarded
// unchanged (the receiver handles it as any Beats event), said once in
// the log and counted.
func (o *Output) appendEvent(dst, ev []byte, lsn uint64, pos int) []byte {
	dst, ok := appendWithID(dst, ev, o.idPrefix, lsn, pos)
	if !ok {
		o.stats.withoutID.Add(1)
		if o.saidWithoutID.CompareAndSwap(false, true) {
			o.log.Warn("an event that is not a JSON object (or whose @metadata is not one) is forwarded without a document id, unchanged; the receiver derives its own, so a resend may store it twice (logged once; see the output's events_without_id count)",
				"lsn", lsn, "position", pos)
		}
	}
	return dst
}

// quarantine keeps a damaged range the reader passed (its bytes and
// description, in the ledger's quarantine directory), says so once as an
// ERROR, and counts its records done: their events cannot be trusted, so
// none is sent, and the cursor may move past them. A range that cannot be
// quarantined (the ledger's device failing) is still logged in full and
// passed: its bytes stay in the segment until retention deletes it.
func (o *Output) quarantine(d *ledger.Damage, tr *drain.Tracker) error {
	path, qerr := o.ledger.Quarantine(*d)
	attrs := []any{"segment", d.Segment, "start_offset", d.Start, "end_offset", d.End,
		"first_lsn", d.FirstLSN, "last_lsn", d.LastLSN, "records_lost", d.Records(), "reason", d.Reason,
		"inspect", fmt.Sprintf("ledgerctl -ledger %s verify", o.ledger.Dir())}
	if qerr != nil {
		attrs = append(attrs, "quarantine_err", qerr)
	} else {
		attrs = append(attrs, "quarantined", path)
	}
	msg := "damaged ledger records skipped: their events are lost and not forwarded; every other event is"
	if d.Records() == 0 {
		msg = "damaged bytes in the ledger skipped: no record lost (garbage where padding belonged)"
	}
	o.log.Error(msg, attrs...)
	o.stats.damagedRanges.Add(1)
	o.stats.damagedRecords.Add(int64(d.Records()))
	if d.Records() == 0 {
		return nil
	}
	now := time.Now()
	for lsn := d.FirstLSN; lsn <= d.LastLSN; lsn++ {
		if err := tr.Add(lsn, 0, now); err != nil {
			return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
		}
	}
	return nil
}

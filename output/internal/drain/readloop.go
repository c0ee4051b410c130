package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// ReadHooks are what an output does with the records ReadLoop reads.
type ReadHooks struct {
	// Record takes a record to send, at lsn, already registered with the
	// tracker. It returns false to stop reading (its context ended).
	Record func(lsn uint64, rec record.Record) bool
	// Flush sends what was read and not sent yet: before a read the
	// device failed is retried (what was read goes out meanwhile), and
	// when the reader has caught up with the ledger (after Linger). It
	// returns more when it sent something, so that the loop reads again
	// at once rather than wait for the ledger's next record, and ok
	// false to stop reading.
	Flush func() (more, ok bool)
	// Linger, when more than 0, lets the batch an output holds wait for
	// more records once the reader has caught up, before Flush: up to
	// Linger after its first event, less once the ledger stops growing
	// (Source.waitMore). Held says when that first event came: the zero
	// time when the output holds nothing. 0 flushes at once.
	Linger time.Duration
	Held   func() time.Time
	// BeforeNext, when set, runs before every read of a record: an
	// output that decodes records straight into its own buffers points
	// the Reader at them there (ledger.Reader.DecodeTo).
	BeforeNext func()
	// CPU, when set, is held while ReadLoop reads and decodes records,
	// and given before everything that may wait: Flush, a retried read,
	// the ledger's tail. Record gives it itself before it waits.
	CPU *CPUTurn
}

// ReadLoop reads r for an output, the way every output reads, until ctx
// ends or a hook says stop (it then returns nil), or until a failure
// retrying cannot fix, which it returns:
//   - damaged ranges and ranges max_lag retention deleted are passed
//     (Pass): quarantined, counted, done;
//   - every other record is registered with tr in LSN order, then given
//     to Record;
//   - a read the device fails is retried as ReadFailed says, after Flush,
//     never skipped before UnreadableAfter; a read that works again ends
//     the episode (ReadWorks);
//   - once caught up, a batch held lingers (Linger), then Flush, then
//     r.Wait for the next record.
//
// Damage is passed, never a halt (docs/design.md, §7): r is set to skip
// it.
func (s *Source) ReadLoop(ctx context.Context, r *ledger.Reader, tr *Tracker, h ReadHooks) error {
	r.SkipDamage()
	defer h.CPU.Give()
	next := func() bool {
		if h.BeforeNext != nil {
			h.BeforeNext()
		}
		return r.Next()
	}
	for {
		if h.CPU.Take(ctx) != nil {
			return nil // ctx ended
		}
		for next() {
			if passed, err := s.Pass(r, tr); err != nil {
				return err
			} else if passed {
				continue
			}
			lsn, rec := r.LSN(), r.Decoded()
			if err := tr.Add(lsn, rec.Count(), rec.Received()); err != nil {
				return err
			}
			if !h.Record(lsn, rec) {
				return nil
			}
		}
		// Every way on from here may wait.
		h.CPU.Give()
		if err := r.Err(); err != nil {
			var re *ledger.ReadError
			if !errors.As(err, &re) {
				return fmt.Errorf("reading the ledger: %w", err)
			}
			// The device failed the read: the Reader reads the same
			// bytes again at the next Next.
			if _, ok := h.Flush(); !ok {
				return nil
			}
			h.CPU.Give() // Flush may have taken it back
			if !s.ReadFailed(ctx, r, re) {
				return nil // ctx ended
			}
			continue
		}
		s.ReadWorks()
		if first := h.held(); h.Linger > 0 && !first.IsZero() {
			more, ok := s.waitMore(ctx, r, first, h.Linger)
			if !ok {
				return nil // ctx ended
			}
			if more {
				continue // new records: read them first
			}
		}
		more, ok := h.Flush()
		if !ok {
			return nil
		}
		if more {
			continue
		}
		h.CPU.Give() // Flush may have taken it back
		if err := r.Wait(ctx); err != nil {
			return nil // ctx ended
		}
	}
}

// held is Held's answer, the zero time without Held.
func (h ReadHooks) held() time.Time {
	if h.Held == nil {
		return time.Time{}
	}
	return h.Held()
}

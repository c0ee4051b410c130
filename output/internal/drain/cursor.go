package drain

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/ledger"
)

// Cursor persists an output's named ledger cursor, only ever at the done
// LSN of a Tracker: the ledger's owner deletes what every cursor has
// passed, so a cursor past a pending record would lose it. Safe for
// concurrent use; Commit and Final are called by one run at a time.
type Cursor struct {
	ledger *ledger.Ledger
	name   string
	log    *slog.Logger
	// Sent is the verb of the output's work, for its log lines.
	sent      string
	persisted atomic.Uint64 // the last LSN persisted by this Cursor
}

// NewCursor returns the Cursor named name in l; sent is the verb of what
// the output does with an event ("sent", "forwarded"), for its log lines.
// It starts at the position the ledger holds for name, if any.
func NewCursor(l *ledger.Ledger, name string, log *slog.Logger, sent string) *Cursor {
	if log == nil {
		log = slog.Default()
	}
	c := &Cursor{ledger: l, name: name, log: log, sent: sent}
	if l != nil {
		c.atLeast(l.Cursors()[name])
	}
	return c
}

// Persisted returns the cursor's persisted position: the last LSN this
// Cursor persisted, or, before it persisted anything, the position a run
// started from (what an earlier process persisted). 0 when the output has
// never done a record.
func (c *Cursor) Persisted() uint64 { return c.persisted.Load() }

// atLeast raises the reported position to lsn, a position persisted
// earlier (a run's starting cursor): it never moves back.
func (c *Cursor) atLeast(lsn uint64) {
	for {
		cur := c.persisted.Load()
		if lsn <= cur || c.persisted.CompareAndSwap(cur, lsn) {
			return
		}
	}
}

// Commit persists tr's done LSN every interval while it moves past from,
// until ctx ends. The cursor lags what is done by up to one interval: a
// crash then resends those records, which their ids make harmless, while
// each persist costs a small synced write. A failing write (the ledger's
// device full, …) is a wait state, logged once as an ERROR when it starts
// (every names the retry interval to the operator, as "every second") and
// once when it ends: nothing is lost meanwhile, a restart only resends.
func (c *Cursor) Commit(ctx context.Context, tr *Tracker, from uint64, interval time.Duration, every string) {
	// The run starts at the persisted cursor: that is what is reported
	// until it moves, even while the destination is down.
	c.atLeast(from)
	t := time.NewTicker(interval)
	defer t.Stop()
	last := from
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		done := tr.Done()
		if done <= last {
			continue
		}
		if err := c.ledger.SetCursor(c.name, done); err != nil {
			if !failing {
				c.log.Error("persisting the cursor failed; retrying "+every+" (events are still "+c.sent+"; a restart would resend those after the persisted cursor)",
					"persisted_lsn", last, "lsn", done, "err", err)
				failing = true
			} else {
				c.log.Debug("persisting the cursor failed again", "lsn", done, "err", err)
			}
			continue
		}
		if failing {
			c.log.Info("the cursor is persisted again", "lsn", done)
			failing = false
		}
		last = done
		c.persisted.Store(done)
	}
}

// Final persists tr's done LSN once a run's goroutines have stopped, if it
// moved past from (the cursor the run started at). It returns that LSN,
// and when the write failed an error saying at which LSN and what stays
// persisted, which wraps notSaved (the output's sentinel) and only names
// the write's error, so that a caller can tell it from any other failure.
func (c *Cursor) Final(tr *Tracker, from uint64, notSaved error) (uint64, error) {
	done := tr.Done()
	if done <= from {
		return done, nil
	}
	if err := c.ledger.SetCursor(c.name, done); err != nil {
		// %v, not %w: the chain names only notSaved.
		return done, fmt.Errorf("%w (cursor %q at LSN %d; persisted: %d): %v", notSaved, c.name, done, max(from, c.persisted.Load()), err)
	}
	c.persisted.Store(done)
	return done, nil
}

// Package skips tallies, for one output, the ranges of ledger records
// retention deleted before the output sent them: with max_lag set, an
// output more than that far behind while the ledger is full loses what it
// has not sent, so that ingest and the other outputs go on. Each range is
// logged as an ERROR naming its LSNs, and counted; the latest ones are
// kept for an operator's eyes.
package skips

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/logpond/logpond/ledger"
)

// keep is how many of the latest ranges a Tally keeps (every one is
// logged).
const keep = 10

// Tally counts skipped ranges. Its zero value is ready; safe for
// concurrent use.
type Tally struct {
	records, events atomic.Int64

	mu     sync.Mutex  // guards ranges
	ranges [][2]uint64 // the latest ranges, oldest first, at most keep
}

// Pass logs the skipped range sk at ERROR on log and counts it.
func (t *Tally) Pass(log *slog.Logger, sk *ledger.Skip) {
	attrs := []any{"first_lsn", sk.FirstLSN, "last_lsn", sk.LastLSN, "records", sk.LastLSN - sk.FirstLSN + 1}
	if sk.Events >= 0 {
		attrs = append(attrs, "events", sk.Events)
	} else {
		attrs = append(attrs, "events", "unknown (deleted before this start)")
	}
	log.Error("ledger records skipped: retention deleted them before this output sent them (it was more than its max_lag behind while the ledger was full); they are lost for this output only", attrs...)
	t.records.Add(int64(sk.LastLSN - sk.FirstLSN + 1))
	if sk.Events > 0 {
		t.events.Add(sk.Events)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ranges = append(t.ranges, [2]uint64{sk.FirstLSN, sk.LastLSN})
	if len(t.ranges) > keep {
		t.ranges = append(t.ranges[:0], t.ranges[len(t.ranges)-keep:]...)
	}
}

// Records counts the records skipped.
func (t *Tally) Records() int64 { return t.records.Load() }

// Events counts the events of the records skipped, where the ledger knew
// their number.
func (t *Tally) Events() int64 { return t.events.Load() }

// Ranges returns the latest skipped ranges of LSNs (first, last), oldest
// first.
func (t *Tally) Ranges() [][2]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ranges)
}

package lumberjack

import (
	"fmt"
	"sync"
	"time"
)

// tracker counts, for each record read and not yet done, its events not
// yet ACKed, and from that the highest LSN up to which every record is
// done: the only LSN the cursor may move to. Records are added in LSN
// order by the reader; senders finish events in any order (several
// batches are in flight at once). Safe for concurrent use.
type tracker struct {
	mu sync.Mutex // guards the fields below
	// pending[i] is the number of unACKed events of record first+i. Only
	// the front leaves, once it is 0: the cursor never skips a record.
	pending  []int
	received []time.Time // receive time of record first+i
	first    uint64      // LSN of pending[0] (the next record when empty)
	events   int64       // the sum of pending
	// records and added count the records and events added so far.
	records, added int64
}

func newTracker(cursor uint64) *tracker { return &tracker{first: cursor + 1} }

// add registers record lsn with n events. The ledger's LSNs are
// consecutive: a gap would be a bug letting the cursor pass records never
// sent, so it is an error that stops the output.
func (t *tracker) add(lsn uint64, n int, received time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if want := t.first + uint64(len(t.pending)); lsn != want {
		return fmt.Errorf("lumberjack: read record %d, expected %d", lsn, want)
	}
	t.pending = append(t.pending, n)
	t.received = append(t.received, received)
	t.events += int64(n)
	t.records++
	t.added += int64(n)
	t.advance()
	return nil
}

// finish marks n events of record lsn ACKed. Finishing more than is
// pending is a bug that would let the cursor pass unsent events: an error.
func (t *tracker) finish(lsn uint64, n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if lsn < t.first || lsn-t.first >= uint64(len(t.pending)) || t.pending[lsn-t.first] < n {
		return fmt.Errorf("lumberjack: tracker: finish %d events of record %d (first pending %d, %d records)", n, lsn, t.first, len(t.pending))
	}
	t.pending[lsn-t.first] -= n
	t.events -= int64(n)
	t.advance()
	return nil
}

// advance drops the done records at the front; t.mu must be held.
func (t *tracker) advance() {
	k := 0
	for k < len(t.pending) && t.pending[k] == 0 {
		k++
	}
	if k == 0 {
		return
	}
	t.first += uint64(k)
	// Copy down rather than reslice, so the arrays do not creep forward
	// and reallocate for ever.
	n := copy(t.pending, t.pending[k:])
	t.pending = t.pending[:n]
	copy(t.received, t.received[k:])
	t.received = t.received[:n]
}

// done is the highest LSN up to which every record is done.
func (t *tracker) done() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first - 1
}

// trackerState is the tracker's view of the output's lag.
type trackerState struct {
	done, read uint64    // every record ≤ done is done; read is the last added
	events     int64     // events of the records read and not done
	oldest     time.Time // receive time of the oldest record not done
	records    int64     // records added since the tracker was made
	added      int64     // their events
}

func (t *tracker) state() trackerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := trackerState{done: t.first - 1, read: t.first + uint64(len(t.pending)) - 1, events: t.events,
		records: t.records, added: t.added}
	if len(t.received) > 0 {
		st.oldest = t.received[0]
	}
	return st
}

package drain

import (
	"fmt"
	"sync"
	"time"
)

// Tracker knows, for every record an output read and has not yet done,
// how many of its events are still pending, and from that the highest LSN
// up to which every record is done: the only place the output's cursor
// may move to. The reader adds records in LSN order; the output's workers
// finish events in any order. Safe for concurrent use.
type Tracker struct {
	mu sync.Mutex // guards the fields below
	// pending[i] counts the unfinished events of record base+i; a record
	// leaves the front when its count is 0, never from the middle, so the
	// done LSN never passes a pending record.
	pending []int
	// received[i] is the receive time of record base+i (Unix ns; 0 for
	// the zero time).
	received []int64
	base     uint64 // LSN of pending[0] (the next record when empty)
	// events is the sum of pending; addedRecords and addedEvents count
	// the records and events added since the Tracker was made.
	events                    int64
	addedRecords, addedEvents int64
}

// NewTracker returns a Tracker for a drain starting after cursor: every
// record up to cursor counts as done.
func NewTracker(cursor uint64) *Tracker {
	return &Tracker{base: cursor + 1}
}

// Add registers record lsn with n events received at received; a record
// of 0 events is done at once. Records must come in LSN order without
// gaps (the ledger's LSNs are consecutive): a gap would be a bug letting
// the cursor pass records never sent, so it is refused with an error that
// should stop the output.
func (t *Tracker) Add(lsn uint64, n int, received time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if want := t.base + uint64(len(t.pending)); lsn != want {
		return fmt.Errorf("tracker: read record %d, expected %d", lsn, want)
	}
	var ns int64
	if !received.IsZero() {
		ns = received.UnixNano()
	}
	t.pending = append(t.pending, n)
	t.received = append(t.received, ns)
	t.events += int64(n)
	t.addedRecords++
	t.addedEvents += int64(n)
	t.advanceLocked()
	return nil
}

// AddDone registers the records first to last, in LSN order, as done
// with no event: records the output passes without sending anything
// (damaged, or deleted by retention). It stops at the first error Add
// returns.
func (t *Tracker) AddDone(first, last uint64) error {
	now := time.Now()
	for lsn := first; lsn <= last; lsn++ {
		if err := t.Add(lsn, 0, now); err != nil {
			return err
		}
	}
	return nil
}

// Finish marks n events of record lsn done. Finishing what was never
// added, or more events than are pending, is a bug that would let the
// cursor pass pending events: it is refused with an error that should
// stop the output.
func (t *Tracker) Finish(lsn uint64, n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := lsn - t.base
	if lsn < t.base || i >= uint64(len(t.pending)) || t.pending[i] < n {
		return fmt.Errorf("tracker: finish %d events of record %d (first pending %d, %d records)", n, lsn, t.base, len(t.pending))
	}
	t.pending[i] -= n
	t.events -= int64(n)
	t.advanceLocked()
	return nil
}

// advanceLocked drops the done records at the front; t.mu must be held.
func (t *Tracker) advanceLocked() {
	k := 0
	for k < len(t.pending) && t.pending[k] == 0 {
		k++
	}
	if k == 0 {
		return
	}
	t.base += uint64(k)
	// Copy down rather than reslice, so that the arrays do not creep
	// forward and reallocate for ever.
	n := copy(t.pending, t.pending[k:])
	t.pending = t.pending[:n]
	copy(t.received, t.received[k:])
	t.received = t.received[:n]
}

// Done returns the highest LSN up to which every record is done.
func (t *Tracker) Done() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.base - 1
}

// Inflight returns the number of records added and not yet done.
func (t *Tracker) Inflight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// Lag is what a Tracker knows of its output's lag, as an output's Gauges
// report it.
type Lag struct {
	// OldestPending is the receive time of the oldest record added and
	// not yet done (zero when none).
	OldestPending time.Time
	// DoneLSN is the LSN up to which every record is done; ReadLSN the
	// last record added (DoneLSN when none is pending).
	DoneLSN, ReadLSN uint64
	// PendingEvents counts the events of the records added and not yet
	// done.
	PendingEvents int64
	// EventsPerRecord is the mean number of events per record added
	// since the Tracker was made (0 before the first).
	EventsPerRecord float64
}

// Lag returns the Tracker's view of the output's lag, all of it taken at
// one instant.
func (t *Tracker) Lag() Lag {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := Lag{DoneLSN: t.base - 1, ReadLSN: t.base + uint64(len(t.pending)) - 1, PendingEvents: t.events}
	if len(t.received) > 0 && t.received[0] != 0 {
		l.OldestPending = time.Unix(0, t.received[0])
	}
	if t.addedRecords > 0 {
		l.EventsPerRecord = float64(t.addedEvents) / float64(t.addedRecords)
	}
	return l
}

package elasticsearch

import (
	"fmt"
	"sync"
	"time"
)

// tracker knows, for every record read but not yet done, how many of its
// events are still pending, and from that the highest LSN up to which
// every record is done: the only place the cursor may move to
// (docs/design.md, §3, step 4). Records are added in LSN order by the
// reader; workers finish events in any order. Safe for concurrent use.
type tracker struct {
	mu sync.Mutex // guards the fields below
	// pending[i] counts the unfinished events of record base+i; a record
	// leaves the front when its count is 0, and never from the middle.
	pending []int
	// received[i] is the receive time of record base+i (Unix ns).
	received []int64
	base     uint64 // LSN of pending[0] (the next record when empty)
	done     uint64 // every record ≤ done is done
	changed  chan struct{}
	// events is the sum of pending; added counts the records and events
	// added since the tracker was made.
	events                    int64
	addedRecords, addedEvents int64
}

func newTracker(cursor uint64) *tracker {
	return &tracker{base: cursor + 1, done: cursor, changed: make(chan struct{})}
}

// add registers record lsn with n events. Records must come in LSN order
// without gaps: the ledger's LSNs are consecutive.
func (t *tracker) add(lsn uint64, n int, received time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if want := t.base + uint64(len(t.pending)); lsn != want {
		return fmt.Errorf("elasticsearch: read record %d, expected %d", lsn, want)
	}
	t.pending = append(t.pending, n)
	t.received = append(t.received, received.UnixNano())
	t.events += int64(n)
	t.addedRecords++
	t.addedEvents += int64(n)
	t.advanceLocked()
	return nil
}

// finish marks n events of record lsn done. Finishing what was never
// added is a bug that would let the cursor pass pending events: it is
// refused with an error that stops the output.
func (t *tracker) finish(lsn uint64, n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := lsn - t.base
	if lsn < t.base || i >= uint64(len(t.pending)) || t.pending[i] < n {
		return fmt.Errorf("elasticsearch: tracker: finish %d events of record %d (base %d, %d records)", n, lsn, t.base, len(t.pending))
	}
	t.pending[i] -= n
	t.events -= int64(n)
	t.advanceLocked()
	return nil
}

// advanceLocked drops done records from the front; t.mu must be held.
func (t *tracker) advanceLocked() {
	k := 0
	for k < len(t.pending) && t.pending[k] == 0 {
		k++
	}
	if k == 0 {
		return
	}
	t.base += uint64(k)
	t.done = t.base - 1
	// Shift rather than reslice, so the backing array does not creep
	// forward and reallocate for ever.
	n := copy(t.pending, t.pending[k:])
	t.pending = t.pending[:n]
	copy(t.received, t.received[k:])
	t.received = t.received[:n]
	close(t.changed)
	t.changed = make(chan struct{})
}

// Done returns the highest LSN up to which every record is done, and a
// channel closed when it next changes.
func (t *tracker) Done() (uint64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done, t.changed
}

// inflight is the number of records read and not yet done.
func (t *tracker) inflight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// trackerState is what the tracker knows of the output's lag.
type trackerState struct {
	done    uint64 // every record ≤ done is done
	read    uint64 // the last record added (done when none is pending)
	events  int64  // events of the records added and not yet done
	oldest  time.Time
	records int64 // records added since the tracker was made
	added   int64 // their events
}

// state returns the tracker's lag state.
func (t *tracker) state() trackerState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := trackerState{done: t.done, read: t.base + uint64(len(t.pending)) - 1, events: t.events,
		records: t.addedRecords, added: t.addedEvents}
	if len(t.received) > 0 {
		st.oldest = time.Unix(0, t.received[0])
	}
	return st
}

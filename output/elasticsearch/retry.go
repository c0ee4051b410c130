package elasticsearch

import (
	"math/rand/v2"
	"sync"
	"time"
)

// retryQueue holds items Elasticsearch did not take, each with the time
// it may go again, for any worker to put into its next request. An item
// waits there, not in the worker that sent it, so one unlucky item holds
// neither a worker nor the items sent with it.
//
// Memory bound (bytes are the items' action and source lines and their
// kept entries, see original.go): while
// the queue holds limit bytes or more, workers take no new records from
// the ledger and send no request of new records (full reports it); they
// send only retries, which never grow it (a retry takes its items out
// before they can come back). A worker sends a request of new records
// only while the queue is below limit, one at a time, and such a request
// holds about flush_bytes (one event alone may be larger): the queue
// never holds more than limit + workers × max(flush_bytes + one event,
// the largest single event).
//
// Safe for concurrent use.
type retryQueue struct {
	limit int

	mu      sync.Mutex
	groups  []*retryGroup
	bytes   int
	items   int
	changed chan struct{} // closed on push, take and when a group becomes ready
	timer   *time.Timer   // fires when the earliest waiting group becomes ready
	timerAt time.Time
	closed  bool
}

// retryGroup is the items of one response that go again at the same time;
// their action and source lines lie back to back in buf, and their kept
// entries (original.go) in kept.
type retryGroup struct {
	ready time.Time
	own   bool // the wait is the items' own backoff, not the cluster's
	buf   []byte
	kept  []byte
	items []item // start and end index buf, kept indexes kept
}

func newRetryQueue(limit int) *retryQueue {
	return &retryQueue{limit: limit, changed: make(chan struct{})}
}

// push queues items of b (copied out of its buffer) to go again at ready.
// own says the wait is the items' own backoff, which advance and probe
// leave alone, not one the cluster's health or an outage set.
func (q *retryQueue) push(b *batch, items []item, ready time.Time, own bool) {
	if len(items) == 0 {
		return
	}
	n, k := 0, 0
	for _, it := range items {
		e, _ := keptEntry(b.kept, it.kept)
		n += it.end - it.start
		k += len(e)
	}
	g := &retryGroup{ready: ready, own: own, buf: make([]byte, 0, n), kept: make([]byte, 0, k), items: make([]item, len(items))}
	for i, it := range items {
		// A torn entry (a bug) is copied as it is: original refuses it.
		e, _ := keptEntry(b.kept, it.kept)
		start, kept := len(g.buf), len(g.kept)
		g.buf = append(g.buf, b.buf[it.start:it.end]...)
		g.kept = append(g.kept, e...)
		g.items[i] = item{lsn: it.lsn, pos: it.pos, tries: it.tries, start: start, end: len(g.buf), kept: kept}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.groups = append(q.groups, g)
	q.bytes += n + k
	q.items += len(items)
	q.changedLocked(time.Now())
}

// take moves items that are ready, up to about maxBytes of them (at least
// one), into a new batch from pool, in LSN order within each group; nil
// when none is ready.
func (q *retryQueue) take(pool *bufPool, maxBytes int) *batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var b *batch
	kept := q.groups[:0]
	for _, g := range q.groups {
		if g.ready.After(now) || (b != nil && len(b.buf) >= maxBytes) {
			kept = append(kept, g)
			continue
		}
		if b == nil {
			b = newBatch(pool, min(maxBytes, len(g.buf))+maxBytes/8, 0)
		}
		i := 0
		for ; i < len(g.items) && (len(b.buf) == 0 || len(b.buf)+g.items[i].end-g.items[i].start <= maxBytes); i++ {
			it := g.items[i]
			e, _ := keptEntry(g.kept, it.kept)
			start, kept := len(b.buf), len(b.kept)
			b.buf = append(b.buf, g.buf[it.start:it.end]...)
			b.kept = append(b.kept, e...)
			b.items = append(b.items, item{lsn: it.lsn, pos: it.pos, tries: it.tries, start: start, end: len(b.buf), kept: kept})
			q.bytes -= it.end - it.start + len(e)
			q.items--
		}
		if i < len(g.items) {
			g.items = g.items[i:]
			kept = append(kept, g)
		}
	}
	clear(q.groups[len(kept):])
	q.groups = kept
	if b != nil {
		q.changedLocked(now)
	}
	return b
}

// changedLocked wakes the waiters and sets the timer for the earliest
// group still waiting; q.mu must be held.
func (q *retryQueue) changedLocked(now time.Time) {
	close(q.changed)
	q.changed = make(chan struct{})
	if q.closed {
		return
	}
	var next time.Time
	for _, g := range q.groups {
		if g.ready.After(now) && (next.IsZero() || g.ready.Before(next)) {
			next = g.ready
		}
	}
	if next.IsZero() || (q.timer != nil && q.timerAt.Equal(next)) {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.timerAt = next
	var t *time.Timer
	t = time.AfterFunc(next.Sub(now), func() {
		q.mu.Lock() // t is set under q.mu: read it only after
		defer q.mu.Unlock()
		q.fireLocked(t)
	})
	q.timer = t
}

// fireLocked is timer t's callback: a group became ready. A timer
// replaced while it fired (Stop came too late) leaves its successor in
// place. q.mu must be held.
func (q *retryQueue) fireLocked(t *time.Timer) {
	if q.timer == t {
		q.timer = nil
	}
	q.changedLocked(time.Now())
}

// advance brings every group that waits longer than the cluster's current
// health sets (d: its longest wait, from now) forward to a jittered time
// within it: items refused during a storm do not keep the storm's wait once
// the cluster takes work again.
func (q *retryQueue) advance(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	moved := false
	for _, g := range q.groups {
		if !g.own && g.ready.Sub(now) > d {
			g.ready = now.Add(d/2 + rand.N(d/2+1))
			moved = true
		}
	}
	if moved {
		q.changedLocked(now)
	}
}

// probe brings the earliest waiting group forward to at, if it waits
// longer: with nothing in flight, nothing else would tell that the
// cluster takes work again.
func (q *retryQueue) probe(at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var first *retryGroup
	for _, g := range q.groups {
		if !g.own && (first == nil || g.ready.Before(first.ready)) {
			first = g
		}
	}
	if first == nil || !first.ready.After(at) {
		return
	}
	first.ready = at
	q.changedLocked(time.Now())
}

// wait returns a channel closed when the queue next changes (or a group
// becomes ready), whether an item is ready now, and whether the queue is
// full (no new records may be taken).
func (q *retryQueue) wait() (changed <-chan struct{}, ready, full bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	for _, g := range q.groups {
		if !g.ready.After(now) {
			ready = true
			break
		}
	}
	return q.changed, ready, q.bytes >= q.limit
}

// size returns the items and bytes queued.
func (q *retryQueue) size() (items, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.items, q.bytes
}

// close stops the timer; the queue wakes nobody after it.
func (q *retryQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

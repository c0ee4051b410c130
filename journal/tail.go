package journal

import "sync"

// tailCache keeps copies of the most recently committed records, so that
// the flusher can move them to the ledger straight from memory instead of
// reading the journal's files. It is bounded in bytes: the oldest records
// are dropped first, and a flusher that fell behind reads the files
// (Journal.Reader) until it is back within the cache.
type tailCache struct {
	mu    sync.Mutex // guards the fields below
	limit int64
	bytes int64
	first uint64   // LSN of recs[0]
	recs  [][]byte // consecutive LSNs from first
	// filling is signalled (without blocking) each time the cache has
	// taken a quarter of its limit since the last signal, so a reader can
	// come for the records before they are evicted.
	filling chan struct{}
	since   int64 // bytes added since the last signal
}

// add appends records first, first+1, …, evicting old ones to stay within
// the limit. It keeps the slices: they must be copies nobody else changes.
// Called by the committer after the group's fsync.
func (c *tailCache) add(first uint64, recs [][]byte) {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recs) > 0 && c.first+uint64(len(c.recs)) != first {
		c.recs, c.bytes = c.recs[:0], 0 // a jump (new floor): start over
	}
	if len(c.recs) == 0 {
		c.first = first
	}
	for _, r := range recs {
		c.recs = append(c.recs, r)
		c.bytes += int64(len(r))
		c.since += int64(len(r))
	}
	if c.since >= c.limit/4 {
		c.since = 0
		select {
		case c.filling <- struct{}{}:
		default:
		}
	}
	drop := 0
	for c.bytes > c.limit && drop < len(c.recs)-1 {
		c.bytes -= int64(len(c.recs[drop]))
		c.recs[drop] = nil
		drop++
	}
	if drop > 0 {
		c.recs = append(c.recs[:0], c.recs[drop:]...)
		c.first += uint64(drop)
	}
}

// from returns the cached records starting at lsn (read-only: they are
// never modified), or ok=false when lsn is older than the cache holds.
func (c *tailCache) from(lsn uint64, max int) (recs [][]byte, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.first + uint64(len(c.recs))
	if len(c.recs) == 0 || lsn < c.first {
		return nil, len(c.recs) == 0 || lsn >= end
	}
	if lsn >= end {
		return nil, true
	}
	out := c.recs[lsn-c.first:]
	if len(out) > max {
		out = out[:max]
	}
	return append([][]byte(nil), out...), true
}

// TailFilling is signalled each time the in-memory tail has taken a
// quarter of TailBytes since the last signal: a reader that comes for
// Recent records then finds them before they are evicted, however fast
// records arrive. The channel holds one signal; it is never closed.
func (j *Journal) TailFilling() <-chan struct{} { return j.tail.filling }

// Recent returns up to max durable records starting at LSN from, straight
// from memory. ok is false when from is older than the cached tail: read
// it with Reader instead. An empty result with ok means nothing new yet.
// The returned slices must not be modified.
func (j *Journal) Recent(from uint64, max int) ([][]byte, bool) {
	recs, ok := j.tail.from(from, max)
	if ok && len(recs) == 0 && from <= j.durable.Load() {
		return nil, false // durable but not cached (e.g. from before a restart)
	}
	return recs, ok
}

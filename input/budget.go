package input

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// errEOF is a client closing cleanly between batches.
var errEOF = io.EOF

var errNoBudget = errors.New("no in-flight budget within the batch timeout (max_inflight_bytes)")

// budget is the max_inflight_bytes pool shared by every connection: the
// bytes of events read but not yet durable in the journal.
type budget struct {
	mu      sync.Mutex
	free    int64
	total   int64
	waiters int           // acquires waiting for bytes
	freed   chan struct{} // closed and replaced on every release
}

// state returns the bytes held, the total and how many acquires wait.
func (b *budget) state() (held, total int64, waiters int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.free, b.total, b.waiters
}

func newBudget(total int64) *budget {
	return &budget{free: total, total: total, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting at most wait. A request larger than the
// whole budget takes all of it (one huge event must still get through).
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	n = min(n, b.total)
	b.mu.Lock()
	if b.free >= n { // the common case: no timer
		b.free -= n
		b.mu.Unlock()
		return nil
	}
	b.waiters++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.waiters--
		b.mu.Unlock()
	}()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return errNoBudget
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryAcquire takes n bytes (as acquire counts them) if they are free now.
func (b *budget) tryAcquire(n int64) bool {
	n = min(n, b.total)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.free < n {
		return false
	}
	b.free -= n
	return true
}

func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.free = min(b.free+n, b.total)
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

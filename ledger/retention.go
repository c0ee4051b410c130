package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// usedBytesLocked is the ledger's size on disk plus what the writer holds
// in its buffer. l.mu must be held.
func (l *Ledger) usedBytesLocked() int64 {
	var n int64
	for _, s := range l.segs[:max(len(l.segs)-1, 0)] {
		n += s.size
	}
	return n + l.openBytes.Load()
}

// UsedBytes is the ledger's size on disk, including buffered records.
func (l *Ledger) UsedBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usedBytesLocked()
}

// Waiting says why the writer is waiting, or "" when it is not.
func (l *Ledger) Waiting() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// waitForSpace blocks the writer while adding n bytes would take the ledger
// past MaxBytes: outputs must drain and Retain delete segments first. The
// flusher then stops moving records, the journal fills, and inputs stop
// reading (design.md §5): the backlog stays on disk, bounded.
func (l *Ledger) waitForSpace(ctx context.Context, n int64) error {
	if l.opts.MaxBytes <= 0 {
		return nil
	}
	for {
		l.mu.Lock()
		used := l.usedBytesLocked()
		if used+n <= l.opts.MaxBytes {
			if l.waiting != "" {
				l.log.Info("ledger has space again: the flusher resumes", "used_bytes", used, "max_bytes", l.opts.MaxBytes)
				l.waiting = ""
			}
			l.mu.Unlock()
			return nil
		}
		if l.waiting == "" {
			l.waiting = fmt.Sprintf("ledger full: %d of max_bytes %d used; waiting for outputs to drain (cursors %v) so that retention can delete segments", used, l.opts.MaxBytes, l.cursors)
			l.log.Warn("ledger full: the flusher waits", "used_bytes", used, "max_bytes", l.opts.MaxBytes, "cursors", l.cursors)
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("ledger: waiting for space: %w", ctx.Err())
		}
	}
}

// Retain deletes sealed segments that every cursor has passed, once they
// have been drained for at least Options.Retention. With no cursor at all
// nothing is deleted (no output has read anything). The open segment is
// never deleted: its name keeps the LSN high-water mark. A reader that has
// a deleted segment open keeps reading it (the file is unlinked, not
// truncated). It returns the number of segments deleted.
func (l *Ledger) Retain() (int, error) {
	now := l.now()
	l.mu.Lock()
	var drop []segment
	if len(l.cursors) > 0 {
		low := ^uint64(0)
		for _, c := range l.cursors {
			low = min(low, c)
		}
		for len(l.segs)-len(drop) > 1 {
			s, next := l.segs[len(drop)], l.segs[len(drop)+1]
			if next.first-1 > low {
				break // a cursor still needs records in s
			}
			since, ok := l.drainedAt[s.first]
			if !ok {
				since = now
				l.drainedAt[s.first] = now
			}
			if now.Sub(since) < l.opts.Retention {
				break
			}
			drop = append(drop, s)
		}
	}
	l.mu.Unlock()
	var errs []error
	deleted := 0
	for _, s := range drop {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("ledger: retention: %w", err))
			break
		}
		os.Remove(indexPath(s.path)) // a hint; a leftover is harmless
		deleted++
	}
	if deleted > 0 {
		if err := l.syncDir(l.dir); err != nil {
			errs = append(errs, fmt.Errorf("ledger: retention: %w", err))
		}
		l.mu.Lock()
		for _, s := range drop[:deleted] {
			delete(l.drainedAt, s.first)
		}
		l.segs = l.segs[deleted:]
		close(l.freed)
		l.freed = make(chan struct{})
		l.mu.Unlock()
	}
	return deleted, errors.Join(errs...)
}

func (l *Ledger) now() time.Time {
	if l.opts.hooks.now != nil {
		return l.opts.hooks.now()
	}
	return time.Now()
}

package ledger

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// usedBytesLocked is the ledger's size on disk — its segments and the
// files kept aside for inspection — plus what the writer holds in its
// buffer. l.mu must be held.
func (l *Ledger) usedBytesLocked() int64 {
	n := l.aside
	for _, s := range l.segs[:max(len(l.segs)-1, 0)] {
		n += s.size
	}
	return n + l.openBytes.Load()
}

// UsedBytes is the ledger's size on disk, including buffered records and
// the files kept aside for inspection (AsideBytes): what MaxBytes bounds.
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

// makeRoom makes sure n more bytes fit within MaxBytes, deleting drained
// segments ahead of their retention when they do not; it returns ErrFull
// when even that is not enough. Entering and leaving the full state is
// logged once each: the flusher retries at every tick while it lasts.
//
// The ledger full is the end of a chain of backpressure: the flusher stops
// moving records, the journal fills, and inputs stop reading. The backlog
// stays on disk, bounded.
func (l *Ledger) makeRoom(n int64) error {
	if l.opts.MaxBytes <= 0 {
		return nil
	}
	if used, ok := l.fits(n); ok {
		l.leaveFull(used)
		return nil
	}
	// What the operator expects of a full ledger: drained data gives way
	// to new data before ingest stops.
	deleted, err := l.retain(true)
	switch {
	case err != nil && !l.retainFailing:
		// Once until a deletion works again: the flusher retries at every
		// tick.
		l.log.Error("ledger full: deleting drained segments failed; retrying while the ledger is full", "err", err)
		l.retainFailing = true
	case err == nil:
		l.retainFailing = false
	}
	if deleted > 0 {
		l.log.Info("ledger full: deleted drained segments before ledger.retention ended, to make room for new records",
			"segments", deleted, "retention", l.opts.Retention)
	}
	// Files kept aside that an operator deleted make room too.
	if err := l.remeasureAside(); err != nil {
		l.log.Warn("ledger full: cannot measure the files kept aside for inspection; counting their last measure", "err", err)
	}
	used, ok := l.fits(n)
	if !ok && len(l.opts.MaxLag) > 0 {
		// Last, the records of outputs too far behind give way, so that
		// the others and ingest go on.
		if _, err := l.dropLagging(n); err != nil {
			l.log.Error("ledger full: deleting segments held back only by cursors beyond their max_lag failed", "err", err)
		}
		used, ok = l.fits(n)
	}
	if ok {
		l.leaveFull(used)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full.Enter(l.log, slog.LevelWarn, "ledger full: the flusher waits for outputs to drain", "used_bytes", used, "max_bytes", l.opts.MaxBytes, "aside_bytes", l.aside, "cursors", l.cursors) {
		l.waiting = fmt.Sprintf("ledger full: %d of max_bytes %d used; waiting for outputs to drain (cursors %v) so that segments can be deleted", used, l.opts.MaxBytes, l.cursors)
		if l.aside > 0 {
			l.waiting += fmt.Sprintf("; %d of those bytes are damaged data kept aside for inspection in %s and %s (*%s): delete them once inspected",
				l.aside, filepath.Join(l.dir, QuarantineDir), filepath.Join(l.dir, cursorDir), damagedSuffix)
		}
	}
	return fmt.Errorf("%w: %d of max_bytes %d used, %d more needed", ErrFull, used, l.opts.MaxBytes, n)
}

// fits reports whether n more bytes fit within MaxBytes, and the bytes
// used now.
func (l *Ledger) fits(n int64) (used int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	used = l.usedBytesLocked()
	return used, used+n <= l.opts.MaxBytes
}

// leaveFull ends a full episode, if one was going on.
func (l *Ledger) leaveFull(used int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full.Active() && l.full.Leave(l.log, "ledger has space again: the flusher resumes", "used_bytes", used, "max_bytes", l.opts.MaxBytes) {
		l.waiting = ""
	}
}

// Retain deletes sealed segments that every cursor has passed, once they
// have been drained for at least Options.Retention. With no cursor at all
// nothing is deleted (no output has read anything). The open segment is
// never deleted: its name keeps the LSN high-water mark. A reader that has
// a deleted segment open keeps reading it (the file is unlinked, not
// truncated). It returns the number of segments deleted. Safe for
// concurrent use with the writer and other Retain calls.
//
// It also measures the files kept aside for inspection again, when there
// are some (at most every second), so that UsedBytes drops once an
// operator deleted them.
func (l *Ledger) Retain() (int, error) {
	n, err := l.retain(false)
	return n, errors.Join(err, l.remeasureAside())
}

// retain deletes drained sealed segments, oldest first: those drained for
// Retention, or, with force, every drained one.
func (l *Ledger) retain(force bool) (int, error) {
	// One retention at a time: each decides from l.segs, deletes outside
	// l.mu, then cuts what it deleted off l.segs.
	l.retainMu.Lock()
	defer l.retainMu.Unlock()
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
			if !force && now.Sub(since) < l.opts.Retention {
				break
			}
			drop = append(drop, s)
		}
	}
	l.forgetSkippedLocked()
	l.mu.Unlock()
	return l.deleteOldest(drop)
}

// deleteOldest deletes the segments drop, the oldest of l.segs, in order,
// and cuts those it deleted off l.segs. l.retainMu must be held.
func (l *Ledger) deleteOldest(drop []segment) (int, error) {
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
		l.mu.Unlock()
		if l.cache != nil {
			for _, s := range drop[:deleted] {
				l.cache.drop(s.first, 0, -1)
			}
		}
	}
	return deleted, errors.Join(errs...)
}

func (l *Ledger) now() time.Time {
	if l.opts.hooks.now != nil {
		return l.opts.hooks.now()
	}
	return time.Now()
}

// BytesAfter estimates the bytes the ledger holds for the records after
// lsn, the backlog of a reader whose cursor is lsn: whole segments
// exactly, the segment that holds lsn+1 in proportion to its records
// after lsn. 0 when no record after lsn is durable.
func (l *Ledger) BytesAfter(lsn uint64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytesAfterLocked(lsn)
}

// bytesAfterLocked is BytesAfter; l.mu must be held.
func (l *Ledger) bytesAfterLocked(lsn uint64) int64 {
	last := l.durable
	if lsn >= last {
		return 0
	}
	var n int64
	for i, s := range l.segs {
		size, end := s.size, last // end: the segment's last durable LSN
		if i < len(l.segs)-1 {
			end = l.segs[i+1].first - 1
		} else {
			size = l.openBytes.Load()
		}
		switch {
		case end <= lsn || end < s.first:
		case s.first > lsn:
			n += size
		default:
			n += int64(float64(size) * float64(end-lsn) / float64(end-s.first+1))
		}
	}
	return n
}

// maxSkipped bounds the deleted ranges whose event counts the ledger
// remembers: each is a segment deleted under a cursor beyond its max_lag
// that the cursor has not passed yet. Past it the oldest is forgotten (its
// events are then reported unknown), so that a cursor that never moves
// cannot make the map grow without end.
const maxSkipped = 4096

// skipped is a range of records deleted for max_lag before every cursor
// had passed it.
type skipped struct {
	last   uint64
	events int64 // -1: unknown
}

// dropLagging deletes, oldest first, sealed segments that only cursors
// beyond their max_lag still need, until n more bytes fit within MaxBytes
// or the oldest segment is needed by a cursor without max_lag or within
// it. Each deletion is logged at ERROR with the cursors that lose its
// records. It returns the number of segments deleted.
func (l *Ledger) dropLagging(n int64) (int, error) {
	l.retainMu.Lock()
	defer l.retainMu.Unlock()
	total := 0
	for {
		l.mu.Lock()
		if l.usedBytesLocked()+n <= l.opts.MaxBytes || len(l.segs) < 2 {
			l.mu.Unlock()
			return total, nil
		}
		s, last := l.segs[0], l.segs[1].first-1
		var behind []any // the cursors that lose records: name, position, lag, max_lag
		var names []string
		ok := true
		for name, c := range l.cursors {
			if c >= last {
				continue // passed s
			}
			lag, limit := l.bytesAfterLocked(c), l.opts.MaxLag[name]
			if limit <= 0 || lag <= limit {
				ok = false // this cursor may keep s
				break
			}
			names = append(names, name)
			behind = append(behind, slog.Group(name, "cursor", c, "lag_bytes", lag, "max_lag_bytes", limit))
		}
		if ok && len(behind) > 0 {
			// Recorded before the file goes, so that a Reader meeting the
			// gap finds its events.
			l.skipped[s.first] = skipped{last: last, events: s.events}
			l.boundSkippedLocked()
		}
		l.mu.Unlock()
		if !ok || len(behind) == 0 {
			// No cursor holds s back: it is drained, and retain would have
			// deleted it unless it failed; nothing more may go here.
			return total, nil
		}
		deleted, err := l.deleteOldest([]segment{s})
		if deleted == 0 {
			l.mu.Lock()
			delete(l.skipped, s.first)
			l.mu.Unlock()
			return total, err
		}
		total++
		l.log.Error("ledger full: deleted a segment that outputs beyond their max_lag had not read; those outputs skip its records",
			append([]any{"segment", s.path, "first_lsn", s.first, "last_lsn", last, "events", s.events, "cursors", names, "max_bytes", l.opts.MaxBytes}, behind...)...)
		if err != nil {
			return total, err
		}
	}
}

// boundSkippedLocked forgets the oldest remembered ranges beyond
// maxSkipped. l.mu must be held.
func (l *Ledger) boundSkippedLocked() {
	for len(l.skipped) > maxSkipped {
		oldest := ^uint64(0)
		for first := range l.skipped {
			oldest = min(oldest, first)
		}
		delete(l.skipped, oldest)
	}
}

// forgetSkippedLocked forgets the deleted ranges every cursor has passed:
// no output's Reader meets them again. l.mu must be held.
func (l *Ledger) forgetSkippedLocked() {
	if len(l.skipped) == 0 {
		return
	}
	low := ^uint64(0)
	for _, c := range l.cursors {
		low = min(low, c)
	}
	for first, s := range l.skipped {
		if s.last <= low {
			delete(l.skipped, first)
		}
	}
}

// skippedEvents is the number of events of the deleted records
// [first, last] when the ledger knows it: the range is made of whole
// segments it deleted for max_lag, and it counted each one's events. -1
// otherwise.
func (l *Ledger) skippedEvents(first, last uint64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for at := first; at <= last; {
		s, ok := l.skipped[at]
		if !ok || s.events < 0 || s.last > last {
			return -1
		}
		n += s.events
		at = s.last + 1
	}
	return n
}

// DeviceBytesRead is the bytes the ledger's Readers have read from segment
// files: the device's share of their reads, what the shared read cache did
// not serve (Options.ReadCacheBytes). [Reader.BytesRead] is what one Reader
// consumed, cached or not. Safe for concurrent use.
func (l *Ledger) DeviceBytesRead() int64 { return l.deviceRead.Load() }

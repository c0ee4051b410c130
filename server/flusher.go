package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// flushChunk is how many records the flusher takes from the journal's
// in-memory tail at a time.
const flushChunk = 512

// flushSyncBytes bounds the bytes the flusher moves between two ledger
// Syncs while catching up, so the journal can be released steadily.
const flushSyncBytes = 16 << 20

// flusher moves durable records from the journal to the ledger in LSN
// order (design.md §3, step 2 and 3): append to the ledger, Sync it
// (write + fdatasync + directory fsync), and only then release the journal
// up to the ledger's last LSN — bytes the ledger never rewrites. It reads
// the journal's in-memory tail in the normal case and the journal's files
// when it has fallen behind, so acknowledgements never wait on the ledger.
// It runs in one goroutine owned by the Server; only it writes the ledger.
type flusher struct {
	journal  func() *journal.Journal // the journal in use
	reopen   func() error            // opens a fresh journal and makes it the one in use
	l        *ledger.Ledger
	interval time.Duration
	log      *slog.Logger

	// A failed journal (design §3: poisoned by ENOSPC, EIO) is flushed,
	// closed, and replaced by a fresh open of its directory: that is how
	// logpond resumes once space is back. Attempts back off from
	// minReopenWait to maxReopenWait while the journal keeps failing (each
	// attempt re-reads its tail and logs what it repairs).
	failed     bool          // the journal in use failed and is closed
	nextTry    time.Time     // no reopen attempt before
	wait       time.Duration // the current backoff
	episode    bool          // a failure was logged; no recovery since
	reopenedAt time.Time     // when the journal in use was reopened
	resumeAt   uint64        // its LastLSN then
}

// The backoff of reopen attempts: the first is a second after the
// failure, so a device that got space back resumes quickly; a device that
// stays full is tried at most every half minute.
const (
	minReopenWait = time.Second
	maxReopenWait = 30 * time.Second
)

// run flushes every interval until ctx ends, then returns; the caller does
// the final flush once the journal has stopped taking appends.
func (f *flusher) run(ctx context.Context) error {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		f.recover(ctx)
		if f.failed {
			continue // nothing new until a journal is open again
		}
		if err := f.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopping: the final flush takes over
			}
			return err
		}
	}
}

// recover handles a failed journal: the first time, it moves what the
// journal made durable into the ledger and closes it; then it tries a
// fresh open every reopenInterval. Failure and recovery are logged once
// each, however many reopens fail in between.
func (f *flusher) recover(ctx context.Context) {
	j := f.journal()
	// Recovered: the reopened journal took appends and has not failed for
	// a backoff interval (one small group can fit in the space a tail
	// repair freed, and fail again right after).
	if f.episode && !f.failed && j.Err() == nil && j.LastLSN() > f.resumeAt && time.Since(f.reopenedAt) >= minReopenWait {
		f.episode, f.wait = false, 0
		f.log.Info("journal recovered: appends are acknowledged again", "last_lsn", j.LastLSN())
	}
	if !f.failed {
		jerr := j.Err()
		if jerr == nil {
			return
		}
		// Everything acknowledged is durable in it and still readable:
		// move it to the ledger before closing.
		if err := f.flush(ctx); err != nil {
			f.log.Error("flusher: moving a failed journal's records to the ledger", "err", err)
			return // try again next time; the journal stays open for reading
		}
		if !f.episode {
			f.log.Error("journal failed: nothing more is acknowledged; reopening it every second until that succeeds (free space on its device if it is full)",
				"err", jerr)
			f.episode = true
		}
		j.Close() // returns jerr again
		f.failed = true
		f.wait = min(max(2*f.wait, minReopenWait), maxReopenWait)
		f.nextTry = time.Now().Add(f.wait)
	}
	if time.Now().Before(f.nextTry) {
		return
	}
	if err := f.reopen(); err != nil {
		f.wait = min(2*f.wait, maxReopenWait)
		f.nextTry = time.Now().Add(f.wait)
		f.log.Debug("journal reopen failed; will retry", "err", err, "in", f.wait.String())
		return
	}
	f.failed = false
	f.reopenedAt, f.resumeAt = time.Now(), f.journal().LastLSN()
	f.log.Info("journal reopened", "last_lsn", f.resumeAt)
}

// flush moves everything the journal has made durable into the ledger.
func (f *flusher) flush(ctx context.Context) error {
	if f.failed {
		return nil // flushed before it was closed
	}
	j := f.journal()
	next := f.l.LastLSN() + 1
	last := j.LastLSN()
	var pending int64
	sync := func() error {
		if err := f.l.Sync(); err != nil {
			return err
		}
		pending = 0
		// Only records in synced, never-rewritten ledger bytes may leave
		// the journal.
		if err := j.Release(f.l.LastLSN()); err != nil {
			f.log.Warn("flusher: journal release failed; will retry", "err", err)
		}
		return nil
	}
	for next <= last {
		recs, ok := j.Recent(next, flushChunk)
		if !ok {
			// Behind the in-memory tail: read the journal's files.
			var err error
			if next, err = f.fromFiles(ctx, j, next, last, &pending, sync); err != nil {
				return err
			}
			continue
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			if err := f.l.Append(ctx, next, r); err != nil {
				return fmt.Errorf("flusher: ledger append LSN %d: %w", next, err)
			}
			pending += int64(len(r))
			next++
		}
		if pending >= flushSyncBytes {
			if err := sync(); err != nil {
				return err
			}
		}
	}
	if next > f.l.LastLSN()+1 || pending > 0 {
		return sync()
	}
	return nil
}

// fromFiles moves records next..last from the journal's files, syncing the
// ledger every flushSyncBytes, and returns the next LSN to move.
func (f *flusher) fromFiles(ctx context.Context, j *journal.Journal, next, last uint64, pending *int64, sync func() error) (uint64, error) {
	r := j.Reader(next)
	for r.Next() {
		if r.LSN() != next {
			return next, fmt.Errorf("flusher: the journal skips from LSN %d to %d", next, r.LSN())
		}
		if err := f.l.Append(ctx, next, r.Record()); err != nil {
			return next, fmt.Errorf("flusher: ledger append LSN %d: %w", next, err)
		}
		*pending += int64(len(r.Record()))
		next++
		if *pending >= flushSyncBytes {
			if err := sync(); err != nil {
				return next, err
			}
			if _, ok := j.Recent(next, 1); ok {
				return next, nil // caught up with the in-memory tail
			}
		}
		if next > last {
			break
		}
	}
	if err := r.Err(); err != nil {
		return next, fmt.Errorf("flusher: %w", err)
	}
	if next <= last {
		return next, fmt.Errorf("flusher: the journal ended at LSN %d, before its last LSN %d", next-1, last)
	}
	return next, nil
}

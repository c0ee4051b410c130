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
	j        *journal.Journal
	l        *ledger.Ledger
	interval time.Duration
	log      *slog.Logger
}

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
		if err := f.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopping: the final flush takes over
			}
			return err
		}
	}
}

// flush moves everything the journal has made durable into the ledger.
func (f *flusher) flush(ctx context.Context) error {
	next := f.l.LastLSN() + 1
	last := f.j.LastLSN()
	var pending int64
	sync := func() error {
		if err := f.l.Sync(); err != nil {
			return err
		}
		pending = 0
		// Only records in synced, never-rewritten ledger bytes may leave
		// the journal.
		if err := f.j.Release(f.l.LastLSN()); err != nil {
			f.log.Warn("flusher: journal release failed; will retry", "err", err)
		}
		return nil
	}
	for next <= last {
		recs, ok := f.j.Recent(next, flushChunk)
		if !ok {
			// Behind the in-memory tail: read the journal's files.
			var err error
			if next, err = f.fromFiles(ctx, next, last, &pending, sync); err != nil {
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
func (f *flusher) fromFiles(ctx context.Context, next, last uint64, pending *int64, sync func() error) (uint64, error) {
	r := f.j.Reader(next)
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
			if _, ok := f.j.Recent(next, 1); ok {
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

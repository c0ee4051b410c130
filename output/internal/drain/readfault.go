package drain

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/ledger"
)

// The backoff between attempts to read the ledger again after its device
// answered an error: short at first, so that a fault of a few seconds
// costs about as much delay, then at most every few seconds, which costs
// a failing device one read.
const (
	minReadRetry = 100 * time.Millisecond
	maxReadRetry = 5 * time.Second
)

// readFault is the state of an output's reads of the ledger while the
// ledger's device answers errors (docs/design.md, §7): the reader retries
// the same read with backoff, skipping nothing, for as long as it fails.
// It is logged once when it begins and once when it ends.
type readFault struct {
	active atomic.Bool // an episode is going on: read without the lock

	mu      sync.Mutex // guards the fields below
	episode waitlog.Episode
	last    error         // the last attempt's error
	wait    time.Duration // the current backoff
	// stuck is the read that has failed since stuckSince with no read
	// working in between: the segment and offset it begins at, and the
	// LSN the reader had read before it. A failure anywhere else, or after
	// the reader moved on (a read worked), starts the clock again: only
	// the same bytes failing for the whole of UnreadableAfter are passed.
	stuck      stuckRead
	stuckSince time.Time
}

// stuckRead names a failing read of the ledger: where it begins, and how
// far the reader had read before it.
type stuckRead struct {
	segment string
	offset  int64
	lastLSN uint64
}

// ReadFailed handles a failed read of the ledger by r: it counts it, logs
// the episode's start once, and waits the backoff; or, once the same read
// (the same segment and offset, with no read working in between: r has
// read nothing since) has failed for SourceOptions.UnreadableAfter, has r
// pass what the device will not return (ledger.Reader.PassUnreadable,
// which does so only while the device answers reads elsewhere). It
// returns false when ctx ended meanwhile, true when the caller should read
// again.
func (s *Source) ReadFailed(ctx context.Context, r *ledger.Reader, err *ledger.ReadError) bool {
	s.readErrors.Add(1)
	log := s.opts.Log
	lastLSN := r.LSN()
	f := &s.fault
	f.mu.Lock()
	f.last = err
	if at := (stuckRead{segment: err.Segment, offset: err.Offset, lastLSN: lastLSN}); at != f.stuck {
		// A different read, or the reader made progress since the last
		// failure: whatever failed before has been read past.
		f.stuck, f.stuckSince = at, time.Now()
	}
	if after := s.opts.UnreadableAfter; after > 0 && time.Since(f.stuckSince) >= after {
		passed, perr := r.PassUnreadable()
		if perr == nil {
			f.mu.Unlock()
			if passed {
				log.Warn("reading the ledger has failed in one segment for longer than the output waits, while the device answers reads elsewhere: the bytes it will not return are passed as damage (the records touching them are lost, logged next with their LSNs)",
					"segment", err.Segment, "offset", err.Offset, "failing_for", time.Since(f.stuckSince).Round(time.Second).String(), "last_lsn_read", lastLSN)
			}
			return true
		}
		log.Debug("the unreadable bytes are not passed", "err", perr)
	}
	f.wait = min(max(2*f.wait, minReadRetry), maxReadRetry)
	wait := f.wait
	if f.episode.Enter(log, slog.LevelError, "reading the ledger failed: its device answers errors; retrying the same read with backoff (100ms up to 5s) until it works, skipping nothing: "+s.opts.Sending+" waits meanwhile, ingest goes on (check the ledger's device: dmesg, SMART)",
		"err", err, "last_lsn_read", lastLSN) {
		f.active.Store(true)
	} else {
		log.Debug("reading the ledger failed again", "err", err, "retry_in", wait.String())
	}
	f.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ReadWorks ends an episode of failing reads, if one is going on: the
// caller's Reader has read to the end of the ledger without an error.
func (s *Source) ReadWorks() {
	f := &s.fault
	if !f.active.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.episode.Leave(s.opts.Log, "reading the ledger works again: "+s.opts.Sending+" resumes where it stopped", "failing_for", f.episode.Lasted().Round(time.Millisecond).String())
	f.active.Store(false)
	f.wait, f.last, f.stuck = 0, nil, stuckRead{}
}

// Unreadable says why the output cannot read the ledger right now ("" when
// it can): its device has answered errors since a time, and the reads are
// being retried.
func (s *Source) Unreadable() string {
	f := &s.fault
	if !f.active.Load() {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.episode.Active() {
		return ""
	}
	return fmt.Sprintf("reading the ledger has failed since %s, retried with backoff; %s waits, nothing is skipped: %v",
		f.episode.Began().Format(time.RFC3339), s.opts.Sending, f.last)
}

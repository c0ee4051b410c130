package server

import (
	"context"
	"log/slog"
	"time"
)

// The backoff of reopen attempts: the first is a second after the
// failure, so a device that got space back resumes quickly; a device that
// stays full is tried at most every half minute.
const (
	minReopenWait = time.Second
	maxReopenWait = 30 * time.Second
)

// reopener is the state of a store (the journal or the ledger) that can
// fail and be reopened. A write or fsync failure (ENOSPC, EIO) poisons a
// store instance, and only a fresh open of its directory, which re-reads
// and repairs its tail, resumes (docs/design.md, §3). The flusher keeps one
// reopener per store: it closes the failed store, then tries a fresh open
// with backoff from minReopenWait to maxReopenWait while the store keeps
// failing (each attempt re-reads its tail and logs what it repairs).
//
// The failure and the recovery are logged once each per episode, however
// many reopens fail (or succeed and fail again) in between. Only the
// flusher's goroutine uses it.
type reopener struct {
	store        string // "journal" or "ledger": starts every message
	failedMsg    string // what the failure means, after "<store> failed: "
	recoveredMsg string // after "<store> recovered: "
	log          *slog.Logger

	down       bool          // the store failed and is closed
	nextTry    time.Time     // no reopen attempt before
	wait       time.Duration // the current backoff
	episode    bool          // a failure was logged; no recovery since
	reopenedAt time.Time     // when the store in use was reopened
	resumeAt   uint64        // its LastLSN then
	lastErr    string        // the last failed attempt's error, logged at Warn when it changes
}

// failed logs the store's failure, once per episode.
func (r *reopener) failed(err error) {
	if r.episode {
		return
	}
	r.episode = true
	r.log.Error(r.store+" failed: "+r.failedMsg, "err", err)
}

// closed records that the failed store is closed: the next attempt to
// reopen it is a backoff later (doubled when it failed again since the
// last recovery).
func (r *reopener) closed() {
	r.down = true
	r.wait = min(max(2*r.wait, minReopenWait), maxReopenWait)
	r.nextTry = time.Now().Add(r.wait)
}

// due reports whether the store is down and a reopen attempt is due.
func (r *reopener) due() bool { return r.down && !time.Now().Before(r.nextTry) }

// retry records a failed reopen attempt and backs off. The error is
// logged at Warn when it differs from the previous attempt's, else at
// Debug: an operator sees why the store stays down without a line per
// attempt.
func (r *reopener) retry(err error) {
	r.wait = min(2*r.wait, maxReopenWait)
	r.nextTry = time.Now().Add(r.wait)
	level := slog.LevelDebug
	if msg := err.Error(); msg != r.lastErr {
		level, r.lastErr = slog.LevelWarn, msg
	}
	r.log.Log(context.Background(), level, r.store+" reopen failed; will retry", "err", err, "in", r.wait.String())
}

// reopened records a successful reopen; last is the fresh store's LastLSN.
func (r *reopener) reopened(last uint64) {
	r.down, r.lastErr = false, ""
	r.reopenedAt, r.resumeAt = time.Now(), last
	r.log.Info(r.store+" reopened", "last_lsn", last)
}

// check logs the recovery, once: the reopened store is healthy, made
// progress (its LastLSN passed where it resumed) and has not failed for a
// backoff interval (one write can fit in the space a tail repair freed,
// and fail again right after).
func (r *reopener) check(healthy bool, last uint64) {
	if r.episode && !r.down && healthy && last > r.resumeAt && time.Since(r.reopenedAt) >= minReopenWait {
		r.episode, r.wait = false, 0
		r.log.Info(r.store+" recovered: "+r.recoveredMsg, "last_lsn", last)
	}
}

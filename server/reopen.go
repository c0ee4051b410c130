package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/ledger"
	"golang.org/x/sys/unix"
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

	down       bool            // the store failed and is closed
	nextTry    time.Time       // no reopen attempt before
	wait       time.Duration   // the current backoff
	episode    waitlog.Episode // a failure was logged; no recovery since
	reopenedAt time.Time       // when the store in use was reopened
	resumeAt   uint64          // its LastLSN then
	lastErr    string          // the last failed attempt's error, logged at Warn when it changes
}

// failed logs the store's failure, once per episode.
func (r *reopener) failed(err error) {
	r.episode.Enter(r.log, slog.LevelError, r.store+" failed: "+r.failedMsg, "err", err)
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
	if r.episode.Active() && !r.down && healthy && last > r.resumeAt && time.Since(r.reopenedAt) >= minReopenWait &&
		r.episode.Leave(r.log, r.store+" recovered: "+r.recoveredMsg, "last_lsn", last) {
		r.wait = 0
	}
}

// reopenJournal replaces the failed (and closed) journal by a fresh
// instance of its directory, which re-reads and repairs its tail and cuts
// what the failed one wrote but never fsynced (journal.Reopen: after a
// failed write or fsync only a fresh instance resumes). Only the flusher
// calls it, after moving everything the failed journal made durable.
func (st *stores) reopenJournal() error {
	var ledgerLast uint64 // a ledger not open yet: the journal continues after its own last LSN
	if l := st.ledger(); l != nil {
		ledgerLast = l.LastLSN()
	}
	j, err := st.journal().Reopen(st.journalOptions(ledgerLast))
	if err != nil {
		return err
	}
	st.j.Store(j)
	return nil
}

// closeLedger stops what reads the failed ledger in use (the output, which
// also persists its cursor there), then closes it. Only the flusher calls
// it. The order matters: an Output must not read, or persist its cursor
// into, a closed ledger.
func (st *stores) closeLedger() {
	if st.readers != nil {
		if err := st.readers.stop(); err != nil {
			// Typically the cursor could not be persisted on the full
			// device: the next Output resends from the older cursor, and
			// the document ids keep Elasticsearch from storing twice.
			st.log.Warn("elasticsearch output stopped for the failed ledger with an error", "err", err)
		}
	}
	st.ledger().Close() // returns the failure the flusher logged
}

// reopenLedger replaces the failed (and closed) ledger by a fresh open of
// its directory, which cuts what the failed instance never synced (the
// journal still holds it), or opens the ledger that could not be opened
// at start (openLate), and (re)starts its readers over it (the output,
// from its persisted cursor). Only the flusher calls it.
//
// When the journal no longer holds every record after what the reopened
// ledger would keep, it returns an *unheldError and leaves the failed
// ledger as it is: records in neither store, which no retry brings back.
func (st *stores) reopenLedger() error {
	// A device that is still full would take the reopened ledger's first
	// write and fail it again: the output would restart, resend from its
	// cursor and stop again at every attempt. Wait for room first.
	if err := enoughRoom(st.cfg.Ledger.Dir, minLedgerFree); err != nil {
		return err
	}
	late := st.ledger() == nil
	var l *ledger.Ledger
	var err error
	if late {
		l, err = st.openLate()
	} else {
		j := st.journal()
		// The journal in use holds every record from its FirstLSN on; the
		// flusher releases it only up to what the ledger synced.
		l, err = st.ledger().Reopen(func(lsn uint64) bool { return lsn >= j.FirstLSN() })
		var ue *ledger.UnsyncedError
		switch {
		case errors.As(err, &ue):
			return &unheldError{first: ue.FirstLSN, journalFirst: j.FirstLSN(), unsynced: ue}
		case err != nil:
			err = fmt.Errorf("server: %w", err)
		case j.FirstLSN() > l.LastLSN()+1:
			// The check of every start (and of openLate): the journal must
			// hold every record after the ledger's last. Nothing flushes
			// meanwhile, so the journal's FirstLSN stays where it is.
			first := l.LastLSN() + 1
			l.Close()
			return &unheldError{first: first, journalFirst: j.FirstLSN()}
		}
	}
	if err != nil {
		return err
	}
	if st.readers != nil {
		if err := st.readers.start(l); err != nil {
			// The same device fails: close the ledger again and retry
			// both later.
			l.Close()
			if late {
				st.stillPending(err)
			}
			return err
		}
	}
	st.l.Store(l)
	st.pending.Store(nil)
	st.ledgerOpened(l)
	return nil
}

// unheldError is the refusal to reopen the failed ledger: LSNs
// first..journalFirst-1 are acknowledged records in neither store for
// sure. The journal, which starts at journalFirst, no longer holds them,
// and the ledger never synced them: unsynced, the ledger's own refusal,
// says which of them the failed instance had appended (nil when the
// reopened ledger simply ends before the journal starts). The journal
// does not get records back, so no retry changes it: the flusher stops
// reopening the ledger for the run (ledgerRefused).
type unheldError struct {
	first, journalFirst uint64
	unsynced            *ledger.UnsyncedError
}

func (e *unheldError) Error() string {
	msg := fmt.Sprintf("server: the failed ledger cannot be reopened: acknowledged records %s are in neither store for sure: the journal starts at LSN %d, and the ledger's synced records end at LSN %d",
		e.lost(), e.journalFirst, e.first-1)
	if e.unsynced != nil {
		msg += ": " + e.unsynced.Error()
	}
	return msg
}

// lost names the LSNs in neither store.
func (e *unheldError) lost() string {
	return fmt.Sprintf("LSNs %d–%d (%s, events unknown)", e.first, e.journalFirst-1, records(e.journalFirst-e.first))
}

func (e *unheldError) Unwrap() error {
	if e.unsynced == nil {
		return nil
	}
	return e.unsynced
}

// minLedgerFree is the free space a failed ledger's device needs before
// the ledger is reopened: one flush step of the flusher.
const minLedgerFree = flushSyncBytes

// enoughRoom returns an error unless the file system holding dir has at
// least need bytes free for unprivileged writers.
func enoughRoom(dir string, need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("server: free space of %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		// The same words every time: the reopener logs a changed error
		// at Warn, a repeated one at Debug.
		return fmt.Errorf("server: less than %d MiB free on the ledger's device (%s); waiting for space", need>>20, dir)
	}
	return nil
}

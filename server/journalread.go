package server

import (
	"errors"
	"log/slog"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/journal"
)

// The backoff of the flusher's attempts to read the journal's files again
// after their device failed a read: short at first, so that a fault of a
// few seconds costs about as much delay, then at most every few seconds.
const (
	minJournalReadRetry = 100 * time.Millisecond
	maxJournalReadRetry = 5 * time.Second
)

// journalReads is the state of the flusher's reads of the journal's files
// while their device fails them (docs/design.md, §8). A failed read is no
// damage and poisons nothing: the records stay in the journal, which
// keeps acknowledging (its writes and fsyncs are a different matter) until
// it is full, and the flusher reads them again with backoff, for as long
// as it takes. Only the flusher's goroutine uses it.
type journalReads struct {
	log     *slog.Logger
	episode waitlog.Episode
	wait    time.Duration
	nextTry time.Time
	// unreadable, when set, is told why records wait ("" once they
	// move again), for /readyz; failures counts each failed attempt.
	unreadable func(reason string)
	failures   func()
}

// readFailure reports whether err, from moving records, is the journal's
// device failing a read: neither damage (a *journal.CorruptionError) nor
// the ledger's failure, which the flusher handles before.
func readFailure(err error) bool {
	var ce *journal.CorruptionError
	if errors.As(err, &ce) {
		return false
	}
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.ENXIO)
}

// failed records a failed read: it is logged once per episode, counted,
// and the next attempt waits the backoff.
func (r *journalReads) failed(err error) {
	r.wait = min(max(2*r.wait, minJournalReadRetry), maxJournalReadRetry)
	r.nextTry = time.Now().Add(r.wait)
	if r.failures != nil {
		r.failures()
	}
	if r.episode.Enter(r.log, slog.LevelError, "flusher: reading the journal failed: its device answers errors; records stay in the journal, which acknowledges until it is full, and are read again with backoff (100ms up to 5s) until that works (check the journal's device: dmesg, SMART)", "err", err) {
		if r.unreadable != nil {
			r.unreadable("reading the journal has failed since " + time.Now().Format(time.RFC3339) + ", retried with backoff; records wait in the journal, which acknowledges until it is full: " + err.Error())
		}
	} else {
		r.log.Debug("flusher: reading the journal failed again", "err", err, "retry_in", r.wait.String())
	}
}

// due reports whether moving records may be tried now.
func (r *journalReads) due() bool { return !time.Now().Before(r.nextTry) }

// worked ends an episode of failed reads, if one is going on.
func (r *journalReads) worked() {
	if !r.episode.Active() {
		return
	}
	r.episode.Leave(r.log, "flusher: reading the journal works again: records move to the ledger", "failing_for", r.episode.Lasted().Round(time.Millisecond).String())
	r.wait = 0
	if r.unreadable != nil {
		r.unreadable("")
	}
}

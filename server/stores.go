package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// stores supervises the journal and the ledger: it opens them in recovery
// order, replaces a failed one by a fresh open of its directory (reopen.go)
// and closes them. Only the flusher replaces a store (through its
// flusherStores interface); everyone else reads the one in use through
// journal and ledger, which are safe for concurrent use.
type stores struct {
	cfg *conf.Config
	log *slog.Logger
	// observeGroup is told of every journal group commit (metrics, the
	// acknowledgement watch).
	observeGroup func(records int, bytes int64, fsync time.Duration)
	// ledgerOpened is told of every ledger opened or reopened, for what
	// its opening repaired (metrics).
	ledgerOpened func(*ledger.Ledger)
	// readers reads the ledger in use (the output), nil when nothing
	// does: stopped before a failed ledger is closed, restarted over the
	// reopened one. Set before the flusher runs.
	readers ledgerReaders

	// journalStart is the journal's LastLSN when it was opened, before
	// anything was appended to it.
	journalStart uint64
	// pending is why the ledger could not be opened (its device failing:
	// EIO, a full or read-only file system), while it is not: the journal
	// opened without it and the flusher opens it when the device allows
	// (openLate). Nil once the ledger is open.
	pending atomic.Pointer[pendingLedger]
	// openFailures counts the attempts to open the ledger that its device
	// failed, at start and after.
	openFailures atomic.Int64

	// j is the journal in use. The flusher replaces it when the journal
	// failed (poisoned: ENOSPC, EIO) and a fresh open succeeds.
	j atomic.Pointer[journal.Journal]
	// l is the ledger in use. The flusher replaces it when the ledger
	// failed (poisoned: ENOSPC, EIO) and a fresh open succeeds; a failed
	// ledger stays in it, closed, until then.
	l atomic.Pointer[ledger.Ledger]
}

// ledgerReaders is what reads the ledger in use and must not read a closed
// one: the output runner.
type ledgerReaders interface {
	// start starts reading l (the reopened ledger). An error means the
	// ledger's device failed what starting needs (opening the dead-letter
	// store there): the ledger is closed and reopened later.
	start(l *ledger.Ledger) error
	// stop stops reading and persists what it can before the ledger
	// closes.
	stop() error
}

// journal is the journal in use (nil once closed).
func (st *stores) journal() *journal.Journal { return st.j.Load() }

// ledger is the ledger in use (nil once closed).
func (st *stores) ledger() *ledger.Ledger { return st.l.Load() }

// pendingLedger is why the ledger is not open yet, and since when.
type pendingLedger struct {
	err   error
	since time.Time
}

// open opens the ledger, then the journal, in recovery order (see the
// package comment). On error, what it opened stays in use for close.
//
// A ledger whose device fails (deviceFailure: EIO, a full or read-only
// file system) does not keep logpond from starting when the journal
// exists: the journal opens without it, continuing its own LSNs, so that
// acknowledgements go on up to journal.max_bytes, and the flusher opens
// the ledger when its device allows (openLate), checking then what could
// not be checked now. A journal that does not exist yet cannot number
// records without the ledger's last LSN, so then the failure stops the
// start.
func (st *stores) open() error {
	start := time.Now()
	c := st.cfg
	jfirst, jexists, err := journal.FirstLSNOnDisk(c.Journal.Dir)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	lopts := ledgerOptions(c)
	// The journal can replay lsn if it has not released it.
	lopts.Covered = func(lsn uint64) bool { return jexists && jfirst <= lsn }
	lopts.Logger = st.log
	l, err := ledger.Open(c.Ledger.Dir, lopts)
	var ledgerLast uint64
	switch {
	case err == nil:
		st.l.Store(l)
		st.ledgerOpened(l)
		ledgerLast = l.LastLSN()
		if !jexists && ledgerLast > 0 {
			st.log.Warn("journal directory is empty or new while the ledger holds data: LSNs continue after the ledger's last, none is reused",
				"journal.dir", c.Journal.Dir, "ledger_last_lsn", ledgerLast)
		}
	case deviceFailure(err) && jexists:
		st.openFailures.Add(1)
		st.pending.Store(&pendingLedger{err: err, since: time.Now()})
		// ledgerLast stays 0: the journal continues after its own last
		// LSN, and openLate checks that the ledger ends before it.
	case deviceFailure(err):
		return fmt.Errorf("server: the ledger cannot be opened (%w) and the journal directory %s holds no journal yet, so records cannot be numbered after the ledger's last; "+
			"refusing to start until the ledger's device works again", err, c.Journal.Dir)
	default:
		return fmt.Errorf("server: %w", ledgerLossError(err, c.Journal.Dir, c.Ledger.Dir, jfirst, jexists))
	}
	j, err := journal.Open(c.Journal.Dir, st.journalOptions(ledgerLast))
	if err != nil {
		return fmt.Errorf("server: %w", journalLossError(err, c.Journal.Dir, c.Ledger.Dir, ledgerLast))
	}
	st.j.Store(j)
	jFirst, jLast := j.FirstLSN(), j.LastLSN()
	st.journalStart = jLast
	if l == nil {
		// The flusher logs the failure, as for a ledger that fails later.
		st.log.Info("journal opened without the ledger", "journal_first_lsn", jFirst, "journal_last_lsn", jLast)
		return nil
	}
	// The journal must hold everything after the ledger's last LSN. Its
	// first LSN (its last + 1 when it holds no record) beyond ledgerLast+1
	// means records are in neither store: lost ledger writes whose journal
	// copies were already released, or a journal from elsewhere.
	if jFirst > ledgerLast+1 {
		return fmt.Errorf("server: %w", gapError(c.Journal.Dir, c.Ledger.Dir, jFirst, ledgerLast))
	}
	st.log.Info("stores recovered", "took", time.Since(start).Round(time.Millisecond).String(),
		"stream_id", l.StreamID(), "ledger_last_lsn", ledgerLast,
		"journal_first_lsn", jFirst, "journal_last_lsn", jLast, "to_replay", jLast-min(jLast, ledgerLast))
	return nil
}

// openLate opens the ledger that could not be opened at start (pending),
// once the journal has been acknowledging without it, and runs the checks
// open would have run: the journal must start at most one past the
// ledger's last LSN, and the LSNs it gave since it opened must all be past
// the ledger's last. A ledger that still cannot be opened for its device
// returns the error to retry later; any other failure is a fatalError.
// The caller makes the ledger the one in use. Only the flusher calls it
// (through reopenLedger).
func (st *stores) openLate() (*ledger.Ledger, error) {
	c := st.cfg
	j := st.journal()
	lopts := ledgerOptions(c)
	// The flusher has moved nothing yet: the journal holds every record
	// from its FirstLSN on.
	lopts.Covered = func(lsn uint64) bool { return lsn >= j.FirstLSN() }
	lopts.Logger = st.log
	l, err := ledger.Open(c.Ledger.Dir, lopts)
	if err != nil {
		if deviceFailure(err) {
			st.stillPending(err)
			return nil, fmt.Errorf("server: %w", err)
		}
		return nil, fatalError{fmt.Errorf("server: opening the ledger: %w", ledgerLossError(err, c.Journal.Dir, c.Ledger.Dir, j.FirstLSN(), true))}
	}
	last, jFirst := l.LastLSN(), j.FirstLSN()
	switch {
	case jFirst > last+1:
		l.Close()
		return nil, fatalError{fmt.Errorf("server: %w", gapError(c.Journal.Dir, c.Ledger.Dir, jFirst, last))}
	case last > st.journalStart:
		// Only a journal directory from elsewhere can be behind the
		// ledger: the ledger takes only what the journal gave it.
		l.Close()
		return nil, fatalError{fmt.Errorf("server: the ledger ends at LSN %d, after the journal's last LSN %d when it opened: the journal directory %s is not the one that fed this ledger, "+
			"and the records acknowledged since may carry LSNs the ledger holds already; stop logpond and check that -config names this logpond's directories (`ledgerctl -journal %s -ledger %s segments`)",
			last, st.journalStart, c.Journal.Dir, c.Journal.Dir, c.Ledger.Dir)}
	}
	st.log.Info("ledger opened", "stream_id", l.StreamID(), "ledger_last_lsn", last,
		"journal_first_lsn", jFirst, "journal_last_lsn", j.LastLSN(), "to_replay", j.LastLSN()-min(j.LastLSN(), last))
	return l, nil
}

// deferLedger closes the ledger opened at start, because what must open
// with it on its device (the dead-letter store) failed with err: the
// flusher opens them again later, as a ledger that could not be opened
// (openLate, whose checks pass: the journal opened after this ledger).
func (st *stores) deferLedger(err error) {
	if l := st.l.Swap(nil); l != nil {
		l.Close()
	}
	st.openFailures.Add(1)
	st.pending.Store(&pendingLedger{err: err, since: time.Now()})
}

// stillPending records another failed attempt to open the pending ledger.
func (st *stores) stillPending(err error) {
	st.openFailures.Add(1)
	p := *st.pending.Load()
	p.err = err
	st.pending.Store(&p)
}

// fatalError is a failure that no retry fixes: the flusher stops, and
// with it logpond, with its message.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// deviceFailure reports whether err, from opening a store, is its
// device's failure rather than what the store holds: a read or write the
// device answered with an error, or a file system that is full or was
// made read-only (as ext4 does after errors). Trying again may succeed.
func deviceFailure(err error) bool {
	var ce *ledger.CorruptionError
	if errors.As(err, &ce) {
		return false
	}
	var re *ledger.ReadError
	if errors.As(err, &re) {
		return true
	}
	for _, errno := range []error{unix.EIO, unix.ENOSPC, unix.EDQUOT, unix.EROFS, unix.ENXIO} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// ledgerPending says why the ledger is not open, and since when; nil once
// it is.
func (st *stores) ledgerPending() *pendingLedger { return st.pending.Load() }

// journalOptions are the journal's options for a ledger whose last LSN is
// startAfter, with the logger and the group-commit observer.
func (st *stores) journalOptions(startAfter uint64) journal.Options {
	o := journalOptions(st.cfg, startAfter)
	o.Logger = st.log
	o.ObserveGroup = st.observeGroup
	return o
}

// Submit appends rec to the journal in use, so that a reopened journal
// takes appends without restarting the input.
func (st *stores) Submit(ctx context.Context, rec []byte) (input.Durable, error) {
	p, err := st.journal().Submit(ctx, rec)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return p, nil
}

// closeJournalAtStop closes the journal in use once the input has stopped;
// it stays readable for the flusher's final flush. A journal that failed
// (or that the flusher closed already, failed, and could not reopen yet)
// is no error: the failure was logged, and everything it acknowledged is
// durable in it for the final flush or the next start.
func (st *stores) closeJournalAtStop() error {
	j := st.journal()
	err := j.Close()
	if errors.Is(err, journal.ErrClosed) || j.Err() != nil {
		return nil
	}
	return err
}

// closeLedgerAtStop closes the ledger in use after the final flush, and
// forgets both stores: close has nothing left to do. A failed ledger
// (closed by the flusher already, or failing in the final flush) is no
// error: it was logged, and the journal keeps what the ledger lacks for
// the next start.
func (st *stores) closeLedgerAtStop() error {
	l := st.ledger()
	if l == nil {
		st.j.Store(nil)
		return nil // never opened: the journal keeps everything
	}
	err := l.Close()
	if l.Err() != nil {
		err = nil
	}
	st.j.Store(nil)
	st.l.Store(nil)
	return err
}

// close closes the stores still in use (after a failed Open, or when Run
// never ran): the journal, then the ledger.
func (st *stores) close() error {
	var errs []error
	if j := st.j.Swap(nil); j != nil {
		errs = append(errs, j.Close())
	}
	if l := st.l.Swap(nil); l != nil {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// The flusher replaces stores through flusherStores.
var _ flusherStores = (*stores)(nil)

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

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
	// start starts reading l (the reopened ledger).
	start(l *ledger.Ledger)
	// stop stops reading and persists what it can before the ledger
	// closes.
	stop() error
}

// journal is the journal in use (nil once closed).
func (st *stores) journal() *journal.Journal { return st.j.Load() }

// ledger is the ledger in use (nil once closed).
func (st *stores) ledger() *ledger.Ledger { return st.l.Load() }

// open opens the ledger, then the journal, in recovery order (see the
// package comment). On error, what it opened stays in use for close.
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
	if err != nil {
		return fmt.Errorf("server: %w", ledgerLossError(err, c.Journal.Dir, c.Ledger.Dir, jfirst, jexists))
	}
	st.l.Store(l)
	st.ledgerOpened(l)
	ledgerLast := l.LastLSN()
	if !jexists && ledgerLast > 0 {
		st.log.Warn("journal directory is empty or new while the ledger holds data: LSNs continue after the ledger's last, none is reused",
			"journal.dir", c.Journal.Dir, "ledger_last_lsn", ledgerLast)
	}
	j, err := journal.Open(c.Journal.Dir, st.journalOptions(ledgerLast))
	if err != nil {
		return fmt.Errorf("server: %w", journalLossError(err, c.Journal.Dir, c.Ledger.Dir, ledgerLast))
	}
	st.j.Store(j)
	// The journal must hold everything after the ledger's last LSN. Its
	// first LSN (its last + 1 when it holds no record) beyond ledgerLast+1
	// means records are in neither store: lost ledger writes whose journal
	// copies were already released, or a journal from elsewhere.
	jFirst, jLast := j.FirstLSN(), j.LastLSN()
	if jFirst > ledgerLast+1 {
		return fmt.Errorf("server: %w", gapError(c.Journal.Dir, c.Ledger.Dir, jFirst, ledgerLast))
	}
	st.log.Info("stores recovered", "took", time.Since(start).Round(time.Millisecond).String(),
		"stream_id", l.StreamID(), "ledger_last_lsn", ledgerLast,
		"journal_first_lsn", jFirst, "journal_last_lsn", jLast, "to_replay", jLast-min(jLast, ledgerLast))
	return nil
}

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

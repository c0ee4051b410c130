package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
// order (docs/design.md, §3, steps 2 and 3): append to the ledger, Sync it
// (write + fdatasync + directory fsync), and only then release the journal
// up to the ledger's last LSN — bytes the ledger never rewrites. It reads
// the journal's in-memory tail in the normal case and the journal's files
// when it has fallen behind, so acknowledgements never wait on the ledger.
// It runs in one goroutine owned by the Server; only it writes the ledger.
//
// A failed store (poisoned: ENOSPC, EIO) does not stop it: it closes the
// store and reopens it with backoff (reopener), which is how logpond
// resumes by itself once space is back.
//   - A failed journal is first flushed (everything acknowledged is durable
//     in it and still readable), then closed and reopened.
//   - A failed ledger stops the flusher's writes; its readers are stopped
//     and it is closed, then reopened. Meanwhile the journal keeps
//     acknowledging until it reaches its max_bytes (then journal-full
//     backpressure reaches the clients), and it still holds everything the
//     ledger lacks: it is released only after a successful ledger Sync. The
//     reopened ledger cuts what it never synced, and the flusher resumes at
//     its LastLSN+1. Should the journal no longer hold those records
//     (never in logpond's own sequences: see ledgerRefused), the ledger is
//     not reopened for the rest of the run.
//
// Journal damage in records the ledger lacks (bytes that changed on disk
// after they were written) does not stop it either: nothing can move past
// lost records, so it moves what precedes them and stops there for the
// run, loudly (journalDamaged); the next start refuses until the loss is
// accepted.
type flusher struct {
	flusherStores // the journal and the ledger in use
	interval      time.Duration
	log           *slog.Logger
	// fileRecords counts records moved from the journal's files rather
	// than its in-memory tail: each costs a read of its segment.
	fileRecords prometheus.Counter
	// journalDamage counts journal damage the flusher met (at most once
	// per run: records stop moving at the first).
	journalDamage prometheus.Counter
	// damaged, when set, is told why records stopped moving (for /readyz).
	damaged func(reason string)
	// acceptLoss is the command that accepts the loss of damaged journal
	// records, for the message ("" in tests).
	acceptLoss string
	// journalDir is the journal's directory, read again to say exactly
	// what damage lost ("" in tests: the message names the damaged LSN).
	journalDir string
	// damage is the journal damage that stopped the records at its LSN:
	// nothing moves past it until a restart (which refuses to start over
	// it, naming acceptLoss).
	damage *journal.CorruptionError
	// reopenRefusals counts the refusals to reopen the failed ledger (at
	// most one per run: the flusher stops trying at the first).
	reopenRefusals prometheus.Counter
	// ledgerUnheld, when set, is told why the failed ledger stays closed
	// (for /readyz and GET /).
	ledgerUnheld func(reason string)
	// unheld is the refusal that keeps the failed ledger closed for the
	// rest of the run (ledgerRefused); nil until then.
	unheld *unheldError

	jr, lr reopener // the journal's and the ledger's failure state
	// reads is the state of reads of the journal's files failing.
	reads journalReads

	// bat holds the records of batches still open and voids those of
	// failed ones (batches.go); voidBuf is resolve's buffer.
	bat     *batches
	voidBuf []byte
}

// flusherStores is what the flusher sees of the stores (stores): the
// journal and the ledger in use, and the replacement of a failed one.
type flusherStores interface {
	journal() *journal.Journal     // the journal in use
	reopenJournal() error          // opens a fresh journal and makes it the one in use
	ledger() *ledger.Ledger        // the ledger in use; nil while it could not be opened yet
	ledgerPending() *pendingLedger // why the ledger could not be opened yet; nil once it is
	closeLedger()                  // stops the ledger's readers (the output), then closes it
	reopenLedger() error           // opens a fresh ledger, makes it the one in use and restarts its readers
}

// newFlusher returns a flusher with its reopeners' messages.
func newFlusher(f flusher) *flusher {
	f.jr = reopener{store: "journal", log: f.log,
		failedMsg:    "nothing more is acknowledged; reopening it with backoff (1s up to 30s) until that succeeds (free space on its device if it is full)",
		recoveredMsg: "appends are acknowledged again"}
	f.lr = reopener{store: "ledger", log: f.log,
		failedMsg:    "records stay in the journal, which acknowledges until journal.max_bytes; reopening the ledger with backoff (1s up to 30s) until that succeeds (free space on its device if it is full)",
		recoveredMsg: "records move from the journal to the ledger again"}
	if f.bat == nil {
		f.bat = newBatches(0, defaultHoldLimit, f.log)
	}
	f.reads.log = f.log
	return &f
}

// run flushes every interval, and whenever the journal's in-memory tail
// fills (journal.TailFilling), until ctx ends, then returns; the caller does
// the final flush once the journal has stopped taking appends. It returns
// an error only for what no reopen can fix (the journal skipping LSNs, a
// bug); store failures are handled by recoverLedger and recoverJournal.
func (f *flusher) run(ctx context.Context) error {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-f.journal().TailFilling():
			// Records arrive faster than one interval's worth fits in
			// the journal's in-memory tail: move them before they leave
			// it, rather than read them back from its files.
		}
		// The ledger first: moving a failed journal's records needs it.
		if err := f.recoverLedger(); err != nil {
			return err
		}
		f.recoverJournal()
		if f.jr.down || f.lr.down {
			continue // nothing moves until both are open again
		}
		f.retain()
		if !f.reads.due() {
			continue // the journal's device failed a read: backing off
		}
		if err := f.flush(); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil // stopping: the final flush takes over
			case f.ledger().Err() != nil:
				continue // the ledger failed: recoverLedger takes it at the next tick
			case errors.Is(err, ledger.ErrFull):
				continue // synced what it took; tries again at the next tick
			case readFailure(err):
				f.reads.failed(err)
				// What was appended before the failure goes out now,
				// rather than after the device heals.
				if err := f.syncAppended(); err != nil && f.ledger().Err() == nil {
					return err
				}
				continue
			}
			return err
		}
		f.reads.worked()
	}
}

// syncAppended syncs the records appended to the ledger and not synced
// yet, and releases them from the journal.
func (f *flusher) syncAppended() error {
	l := f.ledger()
	if l.AppendedLSN() == l.LastLSN() {
		return nil
	}
	if err := l.Sync(); err != nil {
		return err
	}
	if err := f.journal().Release(l.LastLSN()); err != nil {
		f.log.Warn("flusher: journal release failed; will retry", "err", err)
	}
	return nil
}

// retain lets the ledger delete the segments every persisted cursor has
// passed, whatever output moved them: retention belongs to the ledger's
// owner, not to an output. It runs before the flush, as the room it makes
// is what a full ledger waits for (and what lets a cursor be written when
// the ledger filled its own device).
func (f *flusher) retain() {
	if n, err := f.ledger().Retain(); err != nil {
		f.log.Error("ledger retention failed", "err", err)
	} else if n > 0 {
		f.log.Debug("ledger retention deleted drained segments", "segments", n)
	}
}

// recoverLedger handles a failed ledger: the first time, it stops the
// ledger's readers and closes it; then it tries a fresh open when the
// backoff allows. A ledger that could not be opened at start is down
// from the first tick on (pendingLedger), and opened the same way. It
// returns an error only for what no retry fixes (fatalError).
func (f *flusher) recoverLedger() error {
	l := f.ledger()
	if l == nil && !f.lr.down {
		// Not opened at start.
		f.lr.failed(f.ledgerPending().err)
		f.lr.closed()
	}
	if l != nil {
		f.lr.check(l.Err() == nil, l.LastLSN())
	}
	if !f.lr.down {
		lerr := l.Err()
		if lerr == nil {
			return nil
		}
		f.lr.failed(lerr)
		f.closeLedger()
		f.lr.closed()
	}
	if f.unheld != nil || !f.lr.due() {
		return nil // refused for the run (ledgerRefused), or backing off
	}
	if err := f.reopenLedger(); err != nil {
		var fatal fatalError
		if errors.As(err, &fatal) {
			return err
		}
		var unheld *unheldError
		if errors.As(err, &unheld) {
			f.ledgerRefused(unheld)
			return nil
		}
		f.lr.retry(err)
		return nil
	}
	f.lr.reopened(f.ledger().LastLSN())
	return nil
}

// ledgerRefused handles the refusal to reopen the failed ledger over
// acknowledged records in neither store (unheldError): records it was
// handed after its last successful Sync, which the journal no longer
// holds. logpond's own sequences never lead here: the flusher hands the
// ledger only records the journal fsynced, releases the journal only up
// to the ledger's last synced LSN, and reopens the journal, cutting what
// it never fsynced, only while the ledger holds nothing unsynced; so only
// a journal that lost records otherwise does.
//
// Reopening would have to cut those records, losing them for good and
// leaving LSNs the journal cannot continue after, or keep bytes nothing
// proves are on disk; and the loss of acknowledged records is the
// operator's to accept (ledgerctl accept-loss), never logpond's. No retry
// can help either (the journal does not get records back). So the ledger
// stays closed for the run — the outputs deliver nothing, the journal
// acknowledges until it is full — and that is said once at ERROR, counted,
// and shown by /readyz and GET /. A restart opens the ledger with Open's
// rule, as after a crash: it keeps the records whose bytes still verify,
// and refuses to start over the others, naming the command that accepts
// their loss.
func (f *flusher) ledgerRefused(e *unheldError) {
	f.unheld = e
	if f.reopenRefusals != nil {
		f.reopenRefusals.Inc()
	}
	cmd := "ledgerctl accept-loss"
	if f.acceptLoss != "" {
		cmd = f.acceptLoss
	}
	todo := fmt.Sprintf("copy journal.dir and ledger.dir aside, stop logpond and start it: the start keeps the records whose bytes still verify and refuses to start over the others, naming `%s`, which accepts their loss "+
		"(`%s --dry-run` shows now what the start will find; docs/operations.md, \"Ledger records the journal no longer holds\")", cmd, cmd)
	// /readyz says why before the log does, so that whoever reads the
	// log finds the readiness that goes with it.
	if f.ledgerUnheld != nil {
		f.ledgerUnheld(fmt.Sprintf("the failed ledger cannot be reopened: acknowledged records %s are in neither store for sure (the ledger never synced them, the journal no longer holds them); "+
			"it stays closed until logpond restarts: %s", e.lost(), todo))
	}
	attrs := []any{"lost", e.lost(), "ledger_last_lsn", e.first - 1, "journal_first_lsn", e.journalFirst}
	if e.unsynced != nil {
		attrs = append(attrs, "appended_after_last_sync", fmt.Sprintf("LSNs %d–%d", e.unsynced.FirstLSN, e.unsynced.LastLSN),
			"segment", e.unsynced.Segment, "synced_end", e.unsynced.Offset)
	}
	f.log.Error("flusher: the failed ledger cannot be reopened: acknowledged records are in neither store for sure: the ledger never synced them and the journal no longer holds them. "+
		"Reopening would cut them, losing them for good, or keep bytes no fdatasync covered, so the ledger stays closed for the rest of this run: the outputs deliver nothing, and the journal acknowledges until it is full, then ingest stops; to go on, "+todo,
		attrs...)
}

// recoverJournal handles a failed journal: the first time, it moves what
// the journal made durable into the ledger and closes it; then it tries a
// fresh open when the backoff allows.
func (f *flusher) recoverJournal() {
	j := f.journal()
	f.jr.check(j.Err() == nil, j.LastLSN())
	if !f.jr.down {
		jerr := j.Err()
		if jerr == nil {
			return
		}
		f.jr.failed(jerr)
		if f.lr.down {
			return // the failed journal stays open for reading until the ledger is back
		}
		// Everything acknowledged is durable in it and still readable:
		// move it to the ledger before closing, holding nothing.
		f.bat.emptyFailed(j.LastLSN())
		if err := f.flush(); err != nil {
			if f.ledger().Err() == nil && !errors.Is(err, ledger.ErrFull) {
				f.log.Error("flusher: moving a failed journal's records to the ledger", "err", err)
			}
			return // try again next time; the journal stays open for reading
		}
		j.Close() // returns jerr again
		f.jr.closed()
	}
	if !f.jr.due() {
		return
	}
	if err := f.reopenJournal(); err != nil {
		f.jr.retry(err)
		return
	}
	f.jr.reopened(f.journal().LastLSN())
}

// finish is the final flush, once the journal takes no more appends. A
// failed ledger does not fail the stop: the journal keeps every record
// the ledger lacks, and the next start replays it. A full ledger does not
// fail it either: what the ledger could not take stays in the journal too.
func (f *flusher) finish() error {
	// The input has stopped: a batch still open will never be completed.
	f.bat.endRun(f.journal().LastLSN())
	l := f.ledger()
	if l == nil {
		f.log.Warn("final flush skipped: the ledger could not be opened; the journal keeps every record and the next start moves them")
		return nil
	}
	err := f.flush()
	if f.damage != nil {
		f.log.Warn("final flush stopped at the journal damage logged before: the journal keeps the records after it; the next start refuses to start over the damage until its loss is accepted",
			"damaged_lsn", f.damage.LSN, "ledger_last_lsn", l.LastLSN(), "journal_last_lsn", f.journal().LastLSN())
	}
	if f.unheld != nil {
		f.log.Warn("final flush skipped: the failed ledger could not be reopened over acknowledged records in neither store (logged before); the next start keeps those whose bytes still verify, or refuses to start naming the command that accepts their loss",
			"lost", f.unheld.lost())
		return nil
	}
	if lerr := l.Err(); lerr != nil {
		f.log.Warn("final flush skipped: the ledger failed; the journal keeps the records the ledger lacks and the next start moves them", "err", lerr)
		return nil
	}
	if errors.Is(err, ledger.ErrFull) {
		f.log.Warn("final flush cut short: the ledger is full; the journal keeps the records the ledger lacks and the next start moves them",
			"ledger_last_lsn", l.LastLSN(), "journal_last_lsn", f.journal().LastLSN())
		return nil
	}
	if err != nil && readFailure(err) {
		f.log.Warn("final flush cut short: reading the journal failed; the journal keeps the records the ledger lacks and the next start moves them",
			"err", err, "ledger_last_lsn", l.LastLSN(), "journal_last_lsn", f.journal().LastLSN())
		return f.syncAppended()
	}
	return err
}

// flush moves everything the journal has made durable into the ledger. When
// the ledger is full it syncs what it appended and returns ledger.ErrFull:
// it never waits for space while holding unsynced records, which outputs
// cannot read and so could never pass to free that space; and the wait
// itself belongs to run, whose every tick also handles store failures.
// Journal damage in the records it reads is no error: journalDamaged
// handles it, and no record moves past it for the rest of the run.
func (f *flusher) flush() error {
	if f.jr.down || f.lr.down || f.damage != nil {
		// A closed journal was flushed before; a closed ledger takes
		// nothing; nothing moves past journal damage in this run.
		return nil
	}
	err := f.move()
	var ce *journal.CorruptionError
	if err != nil && errors.As(err, &ce) && f.ledger().Err() == nil {
		return f.journalDamaged(ce)
	}
	return err
}

// journalDamaged handles journal damage met while reading records the
// ledger lacks (a media error after they were written): those records are
// acknowledged and unreadable, and the ledger takes no LSN out of order.
// It syncs what was appended before the damage, so the output delivers
// everything up to it, says so once at ERROR and stops moving records for
// this run; the input keeps acknowledging into the journal until it is
// full. A restart refuses to start over the damage with the command that
// accepts the loss (docs/operations.md).
func (f *flusher) journalDamaged(ce *journal.CorruptionError) error {
	l := f.ledger()
	if err := f.syncAppended(); err != nil {
		return err
	}
	f.damage = ce
	if f.journalDamage != nil {
		f.journalDamage.Inc()
	}
	lost := fmt.Sprintf("LSN %d in %s at offset %d: %v", ce.LSN, ce.File, ce.Offset, ce.Err)
	if f.journalDir != "" {
		if rep, err := journal.FindLoss(f.journalDir, l.LastLSN()); err == nil && len(rep.Lost) > 0 {
			lost = rep.Summary()
		}
	}
	todo := "stop logpond and run `ledgerctl accept-loss` (docs/operations.md), then start it"
	if f.acceptLoss != "" {
		todo = "stop logpond and run `" + f.acceptLoss + "` (docs/operations.md, \"Journal damage past the ledger\"), then start it"
	}
	// /readyz says why before the log does, so that whoever reads the
	// log finds the readiness that goes with it.
	if f.damaged != nil {
		f.damaged(fmt.Sprintf("journal damaged at LSN %d (%s at offset %d): records stop moving to the ledger and ingest stops when the journal is full; %s",
			ce.LSN, ce.File, ce.Offset, todo))
	}
	f.log.Error("flusher: journal records the ledger lacks do not verify on disk: these acknowledged records are lost, and no record after them can move to the ledger until the loss is accepted; "+
		"the output keeps delivering what the ledger holds, and the journal acknowledges until it is full, then ingest stops; to go on, "+todo+": it keeps every other record",
		"lost", lost, "ledger_last_lsn", l.LastLSN(), "journal_last_lsn", f.journal().LastLSN())
	return nil
}

// move moves everything the journal has made durable into the ledger
// (flush).
func (f *flusher) move() error {
	j, l := f.journal(), f.ledger()
	// After the last record appended, not the last synced: a flush that
	// failed between an Append and its Sync leaves records appended but
	// not synced, which the ledger will not take twice. The next Sync
	// makes them durable with the rest.
	next := l.AppendedLSN() + 1
	last := j.LastLSN()
	var pending int64
	sync := func() error {
		if err := l.Sync(); err != nil {
			return err
		}
		pending = 0
		// Only records in synced, never-rewritten ledger bytes may leave
		// the journal.
		if err := j.Release(l.LastLSN()); err != nil {
			f.log.Warn("flusher: journal release failed; will retry", "err", err)
		}
		return nil
	}
	for !f.bat.holds(next) && next <= last {
		recs, ok := j.Recent(next, flushChunk)
		if !ok {
			// Behind the in-memory tail: read the journal's files.
			var err error
			if next, err = f.fromFiles(j, l, next, last, &pending, sync); err != nil {
				return err
			}
			continue
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			r, ok, err := f.resolve(j, next, r)
			if err != nil {
				return err
			}
			if !ok {
				break // held: the loop stops at next
			}
			if err := l.Append(next, r); err != nil {
				return f.appendFailed(next, err, pending, sync)
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
	if next > l.LastLSN()+1 || pending > 0 {
		return sync()
	}
	return nil
}

// appendFailed is what flush returns when the ledger refused LSN lsn: on
// ErrFull it first syncs the records appended and not yet synced.
func (f *flusher) appendFailed(lsn uint64, err error, pending int64, sync func() error) error {
	err = fmt.Errorf("flusher: ledger append LSN %d: %w", lsn, err)
	l := f.ledger()
	if errors.Is(err, ledger.ErrFull) && (pending > 0 || l.AppendedLSN() > l.LastLSN()) {
		if serr := sync(); serr != nil {
			return errors.Join(err, serr)
		}
	}
	return err
}

// fromFiles moves records next..last from the journal's files, syncing the
// ledger every flushSyncBytes, and returns the next LSN to move.
func (f *flusher) fromFiles(j *journal.Journal, l *ledger.Ledger, next, last uint64, pending *int64, sync func() error) (uint64, error) {
	r := j.Reader(next)
	defer r.Close()
	from := next
	defer func() {
		if f.fileRecords != nil {
			f.fileRecords.Add(float64(next - from))
		}
	}()
	for r.Next() {
		if r.LSN() != next {
			return next, fmt.Errorf("flusher: the journal skips from LSN %d to %d", next, r.LSN())
		}
		rec, ok, err := f.resolve(j, next, r.Record())
		if err != nil || !ok {
			return next, err // held: the caller's loop stops at next
		}
		if err := l.Append(next, rec); err != nil {
			return next, f.appendFailed(next, err, *pending, sync)
		}
		*pending += int64(len(rec))
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

package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/record"
)

// verdict is what the flusher does with the journal record it is about to
// append to the ledger.
type verdict int

const (
	// move: append it as it is.
	move verdict = iota
	// void: append its void record instead (record.AppendVoid): its batch
	// failed, and its events must reach no output.
	void
	// hold: not yet; its batch is still open. Nothing after it may be
	// appended either (ledger LSNs are contiguous).
	hold
)

// defaultHoldLimit is the longest hold of a flusher built without a
// configuration (tests): twice the default input.beats.batch_timeout.
const defaultHoldLimit = 2 * time.Minute

// holdLimit is the longest the flusher holds an open batch: a client must
// send a whole batch within batch_timeout of its start, and the input's
// wait for in-flight budget within it adds at most another batch_timeout.
// An open batch older than that is one whose end the flusher cannot see
// (its abort could not be written yet): it moves.
func holdLimit(batchTimeout time.Duration) time.Duration { return 2 * batchTimeout }

// batches resolves client batches that span several journal records
// (record/doc.go, "Batches and flags") for the flusher, which asks it about
// every record in LSN order before appending it to the ledger.
//
// A record of an open batch (one whose last part has not been seen) is
// held until the batch is resolved, looking ahead in the journal: its last
// part arrives (every part moves), or it is proven failed — an abort
// record for its slot, a record of its slot that starts a new batch, or
// the end of the run that wrote it (logpond restarted, or the input
// stopped) — and every part becomes a void record. Voiding needs such
// proof: a batch is never voided for taking long, since its ACK might
// still go out.
//
// Holding must never wedge the pipeline: a client waiting for journal
// space cannot finish its batch while held records keep the journal from
// being released. So a hold ends, and the held parts move as they are
// (at-least-once: a duplicate if the batch then fails, never a loss), when
// the journal waits for space, when the journal failed, or when the batch
// has been open for longer than limit. Only the flusher's goroutine uses
// it.
type batches struct {
	limit time.Duration // longest hold
	log   *slog.Logger
	now   func() time.Time

	done    uint64 // last LSN given a move or void verdict
	scanned uint64 // last LSN observed
	// endOfRun is the last LSN written by a run of the input that has
	// ended: batches still open once it is observed are void (0: none).
	endOfRun uint64
	// moveThrough: records up to it are never held (a failed journal
	// must be emptied into the ledger).
	moveThrough uint64

	open   map[uint16]*openBatch // by slot
	held   map[uint64]*openBatch // LSNs of parts of open batches, not appended yet
	voided map[uint64]struct{}   // LSNs observed, to be appended as void records
	stopAt uint64                // the LSN of the last hold verdict, until holds reports it
	// Counters for metrics and tests.
	voidedRecords, movedOpen int64
}

// openBatch is a batch whose last part has not been observed.
type openBatch struct {
	slot  uint16
	since time.Time // when its first part was observed
	lsns  []uint64  // its parts that are held
	moved bool      // its hold was cut short: its parts move as they come
}

// newBatches returns the resolver for a flusher whose journal was opened
// with lastLSN as its last record: every batch still open after it is void
// (its client never got the ACK). limit is the longest a batch is held.
func newBatches(lastLSN uint64, limit time.Duration, log *slog.Logger) *batches {
	return &batches{limit: limit, log: log, now: time.Now, endOfRun: lastLSN,
		open: map[uint16]*openBatch{}, held: map[uint64]*openBatch{}, voided: map[uint64]struct{}{}}
}

// decide returns what to do with rec, the journal record at lsn, which the
// flusher is about to append; j is the journal to look ahead in. LSNs come
// in order; one at or below an earlier verdict (the ledger refused it as
// full, or was reopened and cut what it never synced) starts the
// resolution over from there. A batch that completed or was proven failed
// gets the same verdict again (those depend only on the records); one
// whose hold had been cut short is held again from there, with a new hold
// limit, and may then be voided if it fails — its client resends it, so
// that loses nothing.
func (b *batches) decide(j *journal.Journal, lsn uint64, rec []byte) (verdict, error) {
	if lsn != b.done+1 {
		b.restart(lsn - 1)
	}
	if lsn > b.scanned {
		if err := b.observe(lsn, rec); err != nil {
			return hold, err
		}
	}
	v := b.verdict(lsn)
	if v == hold {
		// Look for the end of the batch further on in the journal.
		if err := b.scanAhead(j, lsn); err != nil {
			return hold, err
		}
		if v = b.verdict(lsn); v == hold {
			ob := b.held[lsn]
			why := ""
			switch {
			case lsn <= b.moveThrough:
				why = "the journal failed"
			case j.Waiting() != "":
				why = "the journal is full"
			case b.now().Sub(ob.since) > b.limit:
				why = fmt.Sprintf("open for more than %s", b.limit)
			}
			if why == "" {
				b.stopAt = lsn
				return hold, nil
			}
			b.cut(ob, why)
			v = move
		}
	}
	b.done = lsn
	delete(b.held, lsn)
	delete(b.voided, lsn)
	return v, nil
}

// verdict is the verdict for an observed LSN.
func (b *batches) verdict(lsn uint64) verdict {
	if _, ok := b.voided[lsn]; ok {
		return void
	}
	if _, ok := b.held[lsn]; ok {
		return hold
	}
	return move
}

// endRun says that the input has stopped: every batch open once the
// journal's record last has been observed is void.
func (b *batches) endRun(last uint64) {
	b.endOfRun = max(b.endOfRun, last)
	if b.scanned >= b.endOfRun {
		b.voidOpen()
	}
}

// emptyFailed says that the journal failed: its records up to last are
// moved without holding them, so that it can be released (a hold could
// last until its reopen, which may need that space).
func (b *batches) emptyFailed(last uint64) { b.moveThrough = max(b.moveThrough, last) }

// restart forgets every resolution and observes again after lsn.
func (b *batches) restart(lsn uint64) {
	b.done, b.scanned = lsn, lsn
	clear(b.open)
	clear(b.held)
	clear(b.voided)
}

// observe takes note of the record at lsn, the next after scanned.
func (b *batches) observe(lsn uint64, rec []byte) error {
	flags, slot, err := record.Peek(rec)
	if err != nil {
		return fmt.Errorf("flusher: journal record %d: %w", lsn, err)
	}
	ob := b.open[slot]
	switch {
	case flags == record.Abort:
		if ob != nil {
			b.voidBatch(ob, "aborted")
		}
	case flags == record.Void:
		// A journal holds no void records; nothing to resolve.
	default:
		if ob != nil && flags&record.Cont == 0 {
			// A new batch on the slot: the connection that held it
			// ended without writing an abort.
			b.voidBatch(ob, "its slot started a new batch")
			ob = nil
		}
		switch {
		case flags&record.More != 0:
			if ob == nil {
				// A part with cont and no open batch continues one
				// whose first parts were moved before a restart of the
				// flusher: its other parts are held as usual.
				ob = &openBatch{slot: slot, since: b.now()}
				b.open[slot] = ob
			}
			if !ob.moved {
				ob.lsns = append(ob.lsns, lsn)
				b.held[lsn] = ob
			}
		case ob != nil:
			// Its last part: complete, every part moves.
			for _, l := range ob.lsns {
				delete(b.held, l)
			}
			delete(b.open, slot)
		}
	}
	b.scanned = lsn
	if lsn == b.endOfRun {
		b.voidOpen()
	}
	return nil
}

// voidOpen voids every open batch: the run of the input that wrote them
// has ended.
func (b *batches) voidOpen() {
	for _, ob := range b.open {
		b.voidBatch(ob, "the input stopped before its last part")
	}
}

func (b *batches) voidBatch(ob *openBatch, why string) {
	n := 0
	for _, l := range ob.lsns {
		if _, ok := b.held[l]; ok {
			delete(b.held, l)
			b.voided[l] = struct{}{}
			n++
		}
	}
	delete(b.open, ob.slot)
	b.voidedRecords += int64(n)
	if n > 0 {
		b.log.Info("flusher: a failed batch's records reach no output (its client resends the batch)",
			"slot", ob.slot, "first_lsn", ob.lsns[0], "records", n, "why", why)
	}
}

// cut ends the hold of ob: its held parts, and those still to come, move
// as they are.
func (b *batches) cut(ob *openBatch, why string) {
	for _, l := range ob.lsns {
		delete(b.held, l)
	}
	b.movedOpen++
	b.log.Warn("flusher: moving the records of a batch still open; if it fails, its client's resend stores its events again",
		"slot", ob.slot, "first_lsn", ob.lsns[0], "records", len(ob.lsns), "why", why)
	ob.lsns, ob.moved = nil, true
}

// scanAhead observes the journal's durable records after scanned until
// the held record at lsn is resolved or the journal has no more.
func (b *batches) scanAhead(j *journal.Journal, lsn uint64) error {
	last := j.LastLSN()
	for b.scanned < last && b.verdict(lsn) == hold {
		recs, ok := j.Recent(b.scanned+1, flushChunk)
		if !ok {
			return b.scanFiles(j, lsn, last)
		}
		if len(recs) == 0 {
			return nil
		}
		for _, r := range recs {
			if err := b.observe(b.scanned+1, r); err != nil {
				return err
			}
			if b.verdict(lsn) != hold {
				return nil
			}
		}
	}
	return nil
}

// scanFiles is scanAhead from the journal's files.
func (b *batches) scanFiles(j *journal.Journal, lsn, last uint64) error {
	r := j.Reader(b.scanned + 1)
	defer r.Close()
	for b.scanned < last && b.verdict(lsn) == hold && r.Next() {
		if r.LSN() != b.scanned+1 {
			return fmt.Errorf("flusher: the journal skips from LSN %d to %d", b.scanned+1, r.LSN())
		}
		if err := b.observe(r.LSN(), r.Record()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("flusher: looking ahead in the journal: %w", err)
	}
	return nil
}

// holds reports whether the flusher must stop before lsn because the
// last verdict held it. It answers true once per hold, so the flusher's
// next pass asks about lsn again.
func (b *batches) holds(lsn uint64) bool {
	stop := b.stopAt != 0 && b.stopAt == lsn
	b.stopAt = 0
	return stop
}

// resolve applies the batch rules to the journal record rec at lsn: it
// returns what to append to the ledger (rec, or its void record), or
// false when the flusher must stop before it (held).
func (f *flusher) resolve(j *journal.Journal, lsn uint64, rec []byte) ([]byte, bool, error) {
	v, err := f.bat.decide(j, lsn, rec)
	switch {
	case err != nil || v == hold:
		return nil, false, err
	case v == void:
		// The ledger copies what it appends: the buffer is reused.
		f.voidBuf, err = record.AppendVoid(f.voidBuf[:0], rec)
		return f.voidBuf, err == nil, err
	}
	return rec, true, nil
}

package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// cmdCursorSet sets a cursor to a position (the last LSN its output has
// done: the output sends from the next one), forward or back, with
// logpond stopped.
func cmdCursorSet(e *env, args []string) int {
	fs, _ := newFlags(e, "cursors set", "cursors set NAME POSITION (logpond stopped; the output sends from POSITION+1 on)")
	pos, status, ok := parseFlagsArgs(fs, args)
	if !ok {
		return status
	}
	if len(pos) != 2 {
		fs.Usage()
		return exitUsage
	}
	lsn, err := strconv.ParseUint(pos[1], 10, 64)
	if err != nil {
		e.errorf("cursors set: position %q: want an LSN (a number)", pos[1])
		return exitUsage
	}
	return moveCursor(e, pos[0], lsn, false, append([]string{"cursors", "set"}, args...))
}

// cmdCursorRewind moves a cursor back so that its output sends again from
// an LSN or from the first record received at or after a time, with
// logpond stopped.
func cmdCursorRewind(e *env, args []string) int {
	fs, _ := newFlags(e, "cursors rewind", "cursors rewind NAME (--from-lsn LSN | --from-time RFC3339) (logpond stopped)")
	fromLSN := fs.Uint64("from-lsn", 0, "send again from this LSN on")
	fromTime := fs.String("from-time", "", "send again from the first record received at or after this time (RFC 3339)")
	pos, status, ok := parseFlagsArgs(fs, args)
	if !ok {
		return status
	}
	if len(pos) != 1 || (*fromLSN == 0) == (*fromTime == "") {
		fs.Usage()
		return exitUsage
	}
	from := *fromLSN
	if *fromTime != "" {
		t, err := time.Parse(time.RFC3339Nano, *fromTime)
		if err != nil {
			e.errorf("cursors rewind: --from-time %q: want RFC 3339, e.g. 2026-12-03T04:00:00Z", *fromTime)
			return exitUsage
		}
		if from, err = firstReceivedAtOrAfter(e, t); err != nil {
			e.errorf("cursors rewind: %v", err)
			return exitFailed
		}
	}
	return moveCursor(e, pos[0], from-1, true, append([]string{"cursors", "rewind"}, args...))
}

// firstReceivedAtOrAfter is the LSN of the first record (in LSN order)
// received at or after t.
func firstReceivedAtOrAfter(e *env, t time.Time) (uint64, error) {
	r, err := ledger.NewDirReader(e.ledgerDir, 1, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	r.SkipDamage()
	for r.Next() {
		if r.Damage() != nil {
			continue
		}
		h, err := record.Verify(r.Record())
		if err == nil && !h.Received().Before(t) {
			return r.LSN(), nil
		}
	}
	if err := r.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no record in the ledger was received at or after %s", t.Format(time.RFC3339))
}

// moveCursor writes cursor name at position, after checking that logpond
// is stopped (the ledger directory's lock is free: it is held while
// ledgerctl writes), that the cursor exists and that position is within
// the ledger. back refuses a move forward. words are the command and its
// arguments, for the command line that runs it as the ledger's owner when
// ledgerctl runs as another user (checkOwner): it refuses then, before
// it creates the lock file or a cursor file.
func moveCursor(e *env, name string, position uint64, back bool, words []string) int {
	if err := checkOwner(e.commandLine(words...), e.ledgerDir); err != nil {
		e.errorf("cursors: %v", err)
		return exitFailed
	}
	lock, err := dirlock.Acquire(e.ledgerDir)
	var locked *dirlock.LockedError
	if errors.As(err, &locked) {
		e.errorf("cursors: logpond is running on %s (%s): stop it first (systemctl stop logpond); a running output keeps its cursor in memory and would overwrite the file", e.ledgerDir, holder(locked))
		return exitFailed
	}
	if err != nil {
		e.errorf("cursors: %v", permissionOr(e.ledgerDir, err))
		return exitFailed
	}
	defer lock.Release()
	cursors, err := ledger.ReadCursors(e.ledgerDir)
	if err != nil {
		e.errorf("cursors: %v", err)
		return exitFailed
	}
	var old *ledger.CursorInfo
	var names []string
	for i, c := range cursors {
		names = append(names, c.Name)
		if c.Name == name {
			old = &cursors[i]
		}
	}
	if old == nil {
		e.errorf("cursors: no cursor %q in %s (cursors: %v)", name, e.ledgerDir, names)
		return exitFailed
	}
	segs, err := ledger.Segments(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil || len(segs) == 0 {
		e.errorf("cursors: the ledger holds no segment: %v", err)
		return exitFailed
	}
	first, last := segs[0].FirstLSN, segs[len(segs)-1].LastLSN
	switch {
	case position > last:
		e.errorf("cursors: position %d is past the ledger's last LSN %d", position, last)
		return exitFailed
	case position+1 < first:
		e.errorf("cursors: LSN %d is no longer in the ledger: retention deleted the records before LSN %d, the oldest the output can send again from", position+1, first)
		return exitFailed
	case back && old.Err == nil && position > old.LSN:
		e.errorf("cursors: rewind would move %s forward, from %d to %d: use cursors set to skip records", name, old.LSN, position)
		return exitFailed
	}
	if err := ledger.WriteCursorFile(e.ledgerDir, name, position); err != nil {
		e.errorf("cursors: %v", permissionOr(e.ledgerDir, err))
		return exitFailed
	}
	was := "damaged"
	if old.Err == nil {
		was = strconv.FormatUint(old.LSN, 10)
	}
	fmt.Fprintf(e.stdout, "cursor %s: %s → %d\n", name, was, position)
	switch {
	case old.Err == nil && position < old.LSN:
		fmt.Fprintf(e.stdout, "records %d–%d will be sent again when logpond starts; with document_id = \"auto\" (the default) Elasticsearch answers 409 for those it holds, so nothing is duplicated\n", position+1, old.LSN)
	case old.Err == nil && position > old.LSN:
		fmt.Fprintf(e.stdout, "records %d–%d will NOT be sent\n", old.LSN+1, position)
	}
	return exitOK
}

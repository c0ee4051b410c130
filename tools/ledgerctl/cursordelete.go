package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
)

// cursorDeleteTimeout bounds a cursor deletion request to a running
// logpond (a directory fsync on its side).
const cursorDeleteTimeout = 30 * time.Second

// cursorDeleted is what `cursors delete` did.
type cursorDeleted struct {
	Name string `json:"name"`
	// Position is the cursor's last position, and HeldRecords and
	// HeldBytes what it held back from retention (known when ledgerctl
	// deleted it itself, or when logpond says).
	Position    *uint64 `json:"position,omitempty"`
	HeldRecords *uint64 `json:"held_records,omitempty"`
	HeldBytes   *int64  `json:"held_bytes,omitempty"`
	// DeadLetters is the output's dead-letter directory when it exists:
	// deleting a cursor keeps its dead letters.
	DeadLetters string `json:"dead_letters_dir,omitempty"`
	// By is "ledgerctl" when ledgerctl deleted the file with logpond
	// stopped, or "logpond" when the running logpond did, on request.
	By string `json:"by"`
}

// cmdCursorDelete deletes a cursor so that it no longer holds the ledger
// back: the cursor of an output removed from the configuration. With
// logpond stopped ledgerctl deletes the file itself, holding the ledger's
// lock. While logpond runs the running ledger holds its cursors in memory,
// so ledgerctl never touches the file: for a configured output it refuses
// (the running output owns the cursor), for any other it asks logpond on
// its admin listener. The output's dead letters are kept.
func cmdCursorDelete(e *env, args []string) int {
	fs, asJSON := newFlags(e, "cursors delete", "cursors delete NAME [--admin HOST:PORT] [--json]\n"+
		"Deletes the cursor NAME so that it no longer holds the ledger back (an output removed from the\n"+
		"configuration). With logpond stopped ledgerctl deletes it; while logpond runs, it refuses for a\n"+
		"configured output and asks logpond on its admin listener for any other. Its dead letters are kept.")
	admin := fs.String("admin", "", "logpond's admin listener, asked to delete the cursor when logpond runs (default: [admin] listen of -config)")
	names, status, ok := parseFlagsArgs(fs, args)
	if !ok {
		return status
	}
	if len(names) != 1 {
		e.errorf("cursors delete: say which one cursor: ledgerctl cursors delete NAME (ledgerctl cursors lists them)")
		return exitUsage
	}
	name := names[0]
	if err := checkOutputName(name); err != nil {
		e.errorf("cursors delete: %v", err)
		return exitUsage
	}
	if *admin != "" {
		e.admin = *admin
	}
	d, err := deleteCursor(e, name)
	if err != nil {
		e.errorf("cursors delete: %v", err)
		return exitFailed
	}
	if st, err := os.Stat(dlq.Dir(e.ledgerDir, name)); err == nil && st.IsDir() {
		d.DeadLetters = dlq.Dir(e.ledgerDir, name)
	}
	if *asJSON {
		writeJSON(e.stdout, d)
		return exitOK
	}
	held := ""
	if d.HeldRecords != nil && d.HeldBytes != nil {
		held = fmt.Sprintf(" (it held %d records, %s)", *d.HeldRecords, humanBytes(*d.HeldBytes))
	} else if d.HeldBytes != nil {
		held = fmt.Sprintf(" (it held %s)", humanBytes(*d.HeldBytes))
	}
	fmt.Fprintf(e.stdout, "cursor %s deleted by %s: it no longer holds the ledger%s\n", name, d.By, held)
	if d.DeadLetters != "" {
		fmt.Fprintf(e.stdout, "its dead letters remain in %s (ledgerctl dlq list --output %s; dlq purge --output %s deletes them)\n", d.DeadLetters, name, name)
	}
	if o := e.configured(name); o != nil {
		fmt.Fprintf(e.stdout, "output %s is still in %s: when logpond starts it sends again from the oldest record the ledger holds\n", name, e.config)
	}
	return exitOK
}

// deleteCursor deletes the cursor name: itself when logpond is stopped,
// else by asking the running logpond (never for a configured output).
func deleteCursor(e *env, name string) (cursorDeleted, error) {
	configured := e.configured(name) != nil
	if err := checkOwner(e.commandLine("cursors", "delete", name), e.ledgerDir); err != nil {
		var notOwner *notOwnerError
		if !errors.As(err, &notOwner) || configured || e.admin == "" {
			return cursorDeleted{}, err
		}
		// Another user's ledger: ledgerctl writes nothing there (its lock
		// file included), but a running logpond may delete the cursor.
		d, perr := deleteCursorByLogpond(e, name)
		if errors.Is(perr, errNotReached) {
			return d, fmt.Errorf("%v, so ledgerctl would delete the cursor itself, but %w", perr, err)
		}
		return d, perr
	}
	lock, err := dirlock.Acquire(e.ledgerDir)
	var locked *dirlock.LockedError
	if errors.As(err, &locked) {
		if configured {
			return cursorDeleted{}, fmt.Errorf("cursor %s belongs to output %s of %s, which logpond runs on %s (%s): stop logpond first, or remove the output from the configuration and restart: logpond reports it then",
				name, name, e.config, e.ledgerDir, holder(locked))
		}
		if e.admin == "" {
			return cursorDeleted{}, fmt.Errorf("logpond runs on %s (%s) and holds its cursors in memory, and ledgerctl knows no admin listener on which to ask it to delete %s: give -config with logpond's configuration ([admin] listen), or --admin HOST:PORT; or stop logpond first", e.ledgerDir, holder(locked), name)
		}
		return deleteCursorByLogpond(e, name)
	}
	if err != nil {
		return cursorDeleted{}, permissionOr(e.ledgerDir, err)
	}
	defer lock.Release()
	return deleteCursorFile(e, name)
}

// deleteCursorFile removes the cursor's file and fsyncs its directory, so
// that the deletion survives a crash; the caller holds the ledger's lock
// (no logpond holds the cursor in memory to write it back).
func deleteCursorFile(e *env, name string) (cursorDeleted, error) {
	d := cursorDeleted{Name: name, By: "ledgerctl"}
	cursors, err := ledger.ReadCursors(e.ledgerDir)
	if err != nil {
		return d, err
	}
	var c *ledger.CursorInfo
	var names []string
	for i := range cursors {
		names = append(names, cursors[i].Name)
		if cursors[i].Name == name {
			c = &cursors[i]
		}
	}
	if c == nil {
		return d, fmt.Errorf("no cursor %q in %s (cursors: %s)", name, e.ledgerDir, listOrNone(names))
	}
	if c.Err == nil {
		// What it held, for the report; the deletion does not depend on it.
		d.Position = &c.LSN
		if held, err := heldBy(e, c.LSN); err == nil {
			d.HeldRecords, d.HeldBytes = &held.LagRecords, &held.LagBytes
		}
	}
	if err := os.Remove(c.Path); err != nil {
		return d, fmt.Errorf("delete cursor %s: %w", name, permissionOr(c.Path, err))
	}
	if err := fsutil.SyncDir(filepath.Dir(c.Path)); err != nil {
		return d, fmt.Errorf("cursor %s deleted, but the deletion may not survive a crash: %w", name, err)
	}
	return d, nil
}

// heldBy is what a cursor at position holds back: the records after it and
// their bytes.
func heldBy(e *env, position uint64) (cursorRow, error) {
	row := cursorRow{Position: position}
	opts := ledger.InspectOptions{DirectIO: e.directIO}
	segs, err := ledger.Segments(e.ledgerDir, opts)
	if err != nil || len(segs) == 0 {
		return row, err
	}
	if last := segs[len(segs)-1].LastLSN; position < last {
		row.LagRecords = last - position
		err = cursorLag(e, opts, segs, &row, e.now())
	}
	return row, err
}

// deleteCursorByLogpond asks the running logpond, on its admin listener,
// to delete the cursor of an output it does not run. An error that says
// no logpond answered wraps errNotReached.
func deleteCursorByLogpond(e *env, name string) (cursorDeleted, error) {
	d := cursorDeleted{Name: name, By: "logpond"}
	abs, err := filepath.Abs(e.ledgerDir)
	if err != nil {
		return d, err
	}
	// dir guards against a ledgerctl pointed at another ledger than the
	// one this logpond runs.
	q := url.Values{"name": {name}, "dir": {abs}}
	res, body, addr, err := postAdmin(e.admin, "/api/cursors/delete", q, cursorDeleteTimeout)
	if err != nil {
		return d, fmt.Errorf("logpond holds the ledger %s; asking it to delete cursor %s: %w", e.ledgerDir, name, err)
	}
	msg := oneLine(strings.TrimSpace(string(body)), 500)
	switch {
	case res == http.StatusNotFound && strings.HasPrefix(msg, "404 page not found"):
		return d, fmt.Errorf("the logpond on %s cannot delete cursors (it has no /api/cursors/delete): stop it, then run this again", addr)
	case res != http.StatusOK:
		return d, fmt.Errorf("logpond on %s answered %d %s: %s", addr, res, http.StatusText(res), msg)
	}
	// The answer says what the cursor held, when logpond tells.
	var info struct {
		CursorLSN *uint64 `json:"cursor_lsn"`
		HeldBytes *int64  `json:"held_bytes"`
	}
	if json.Unmarshal(body, &info) == nil {
		d.Position, d.HeldBytes = info.CursorLSN, info.HeldBytes
	}
	return d, nil
}

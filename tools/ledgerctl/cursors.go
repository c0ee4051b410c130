package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// cursorRow is one cursor as `cursors` prints it.
type cursorRow struct {
	Name     string `json:"name"`
	File     string `json:"file"`
	Position uint64 `json:"position"` // last LSN its output has fully done
	// LagRecords is the number of ledger records after the position.
	LagRecords uint64 `json:"lag_records"`
	// LagBytes is the bytes of ledger segment data after the position (as
	// on disk, block padding included).
	LagBytes int64 `json:"lag_bytes"`
	// Oldest is the receive time of the oldest record after the position;
	// Age is how long ago that was.
	Oldest *time.Time `json:"oldest_received,omitempty"`
	Age    string     `json:"age,omitempty"`
	AgeS   float64    `json:"age_seconds,omitempty"`
	Error  string     `json:"error,omitempty"` // the cursor file is damaged
	// Configured says whether an output of -config owns the cursor
	// (absent without -config). A cursor no output owns still holds the
	// ledger: retention keeps every record after it (LagRecords,
	// LagBytes) until `cursors delete` releases it.
	Configured *bool `json:"configured,omitempty"`
}

// cmdCursors prints each cursor's position and how far behind the ledger's
// last record it is.
func cmdCursors(e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			args = args[1:]
		case "set":
			return cmdCursorSet(e, args[1:])
		case "rewind":
			return cmdCursorRewind(e, args[1:])
		case "delete":
			return cmdCursorDelete(e, args[1:])
		}
	}
	fs, asJSON := newFlags(e, "cursors", "cursors [list] [--json] | cursors set NAME POSITION | cursors rewind NAME ... | cursors delete NAME")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	opts := ledger.InspectOptions{DirectIO: e.directIO}
	cursors, err := ledger.ReadCursors(e.ledgerDir)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	segs, err := ledger.Segments(e.ledgerDir, opts)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	var last uint64
	if len(segs) > 0 {
		last = segs[len(segs)-1].LastLSN
	}
	now := e.now()
	status := exitOK
	rows := []cursorRow{}
	for _, c := range cursors {
		row := cursorRow{Name: c.Name, File: c.Path, Position: c.LSN}
		if e.config != "" {
			configured := e.configured(c.Name) != nil
			row.Configured = &configured
		}
		if c.Err != nil {
			row.Error = c.Err.Error()
			status = exitFailed
			rows = append(rows, row)
			continue
		}
		if c.LSN < last {
			row.LagRecords = last - c.LSN
			if err := cursorLag(e, opts, segs, &row, now); err != nil {
				e.errorf("cursor %s: %s", c.Name, locate("ledger", err))
				status = exitFailed
			}
		}
		rows = append(rows, row)
	}
	if *asJSON {
		writeJSON(e.stdout, map[string]any{"ledger_dir": e.ledgerDir, "last_lsn": last, "cursors": rows})
		return status
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CURSOR\tPOSITION\tLAG RECORDS\tLAG BYTES\tOLDEST UNDONE RECEIVED\tAGE\t")
	orphans := 0
	for _, r := range rows {
		note := ""
		if r.Configured != nil && !*r.Configured {
			// The lag of a cursor no output drains is what it keeps
			// retention from deleting.
			note = fmt.Sprintf("not configured: holds the ledger (%d records, %s)", r.LagRecords, humanBytes(r.LagBytes))
			orphans++
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tDAMAGED: %s\t%s\n", r.Name, r.Error, note)
			continue
		}
		oldest, age := "-", "-"
		if r.Oldest != nil {
			oldest, age = formatTime(*r.Oldest), r.Age
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Name, r.Position, r.LagRecords, humanBytes(r.LagBytes), oldest, age, note)
	}
	tw.Flush()
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "(no cursors)")
	}
	if orphans > 0 {
		fmt.Fprintf(e.stdout, "%d cursors belong to no output of %s: retention keeps what they have not passed; ledgerctl cursors delete NAME releases one\n", orphans, e.config)
	}
	fmt.Fprintf(e.stdout, "ledger last LSN %d\n", last)
	return status
}

// cursorLag finds the first record after the cursor (seeking with the
// segment index) and fills in its age and the bytes from it to the end of
// the ledger.
func cursorLag(e *env, opts ledger.InspectOptions, segs []ledger.SegmentInfo, row *cursorRow, now time.Time) error {
	r, err := ledger.NewDirReader(e.ledgerDir, row.Position+1, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	if !r.Next() {
		return r.Err() // nil: the records after it were cut or deleted meanwhile
	}
	seg := r.Segment()
	for i, s := range segs {
		if s.Path != seg {
			continue
		}
		row.LagBytes = max(s.Bytes-r.Offset(), 0)
		for _, later := range segs[i+1:] {
			row.LagBytes += later.Bytes
		}
		break
	}
	if h, err := record.Verify(r.Record()); err == nil && !h.Received().IsZero() {
		t := h.Received().UTC()
		age := now.Sub(t)
		row.Oldest, row.Age, row.AgeS = &t, formatAge(age), age.Seconds()
	}
	return nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// segmentRow is one journal generation or ledger segment, as segments
// prints it.
type segmentRow struct {
	Store    string    `json:"store"` // journal or ledger
	File     string    `json:"file"`
	FirstLSN uint64    `json:"first_lsn"`
	LastLSN  uint64    `json:"last_lsn"` // first_lsn-1 when it holds no record
	Records  uint64    `json:"records"`
	Bytes    int64     `json:"bytes"`
	State    string    `json:"state"` // open, or closed (journal) / sealed (ledger)
	Indexed  *bool     `json:"indexed,omitempty"`
	Tail     *tailInfo `json:"tail,omitempty"`
	Damage   *location `json:"damage,omitempty"`
}

// tailInfo is a torn or partial write that ends the newest file of a store.
type tailInfo struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	LSN    uint64 `json:"lsn"` // the first LSN it would have held
	Reason string `json:"reason"`
}

func journalTail(r *journal.Repair) *tailInfo {
	if r == nil {
		return nil
	}
	return &tailInfo{File: r.File, Offset: r.Offset, LSN: r.FirstLSN, Reason: r.Reason}
}

func ledgerTail(r *ledger.Repair) *tailInfo {
	if r == nil {
		return nil
	}
	return &tailInfo{File: r.Segment, Offset: r.Offset, LSN: r.FirstLSN, Reason: r.Reason}
}

func cmdSegments(e *env, args []string) int {
	fs, asJSON := newFlags(e, "segments", "segments [--json]")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	var rows []segmentRow
	status := exitOK
	if e.journalDir != "" {
		gens, err := journal.Segments(e.journalDir)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		for _, g := range gens {
			state := "closed"
			if g.Open {
				state = "open"
			}
			row := segmentRow{Store: "journal", File: g.File, FirstLSN: g.FirstLSN, LastLSN: g.LastLSN,
				Records: uint64(g.Records), Bytes: g.Bytes, State: state, Tail: journalTail(g.Tail)}
			if g.Damage != nil {
				row.Damage = locate("journal", g.Damage)
				status = exitFailed
			}
			rows = append(rows, row)
		}
	}
	if e.ledgerDir != "" {
		segs, err := ledger.Segments(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO})
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		for _, s := range segs {
			state := "sealed"
			var indexed *bool
			if s.Open {
				state = "open"
			} else {
				indexed = &s.Indexed
			}
			rows = append(rows, segmentRow{Store: "ledger", File: s.Path, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN,
				Records: s.Records(), Bytes: s.Bytes, State: state, Indexed: indexed, Tail: ledgerTail(s.Tail)})
		}
	}
	if *asJSON {
		if rows == nil {
			rows = []segmentRow{}
		}
		writeJSON(e.stdout, map[string]any{"journal_dir": e.journalDir, "ledger_dir": e.ledgerDir, "segments": rows})
		return status
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tFILE\tFIRST LSN\tLAST LSN\tRECORDS\tBYTES\tSTATE")
	for _, r := range rows {
		dir := e.journalDir
		if r.Store == "ledger" {
			dir = e.ledgerDir
		}
		first, last := "-", "-"
		if r.Records > 0 {
			first, last = fmt.Sprint(r.FirstLSN), fmt.Sprint(r.LastLSN)
		}
		state := r.State
		switch {
		case r.Damage != nil:
			state += ", DAMAGED: " + r.Damage.String()
		case r.Tail != nil && r.Store == "journal":
			state += fmt.Sprintf(", not synced yet from offset %d (LSN %d on; expected, not damage)", r.Tail.Offset, r.Tail.LSN)
		case r.Tail != nil:
			state += fmt.Sprintf(", not synced yet from offset %d (LSN %d on; stat or verify says whether the journal still holds it)", r.Tail.Offset, r.Tail.LSN)
		case r.Indexed != nil && !*r.Indexed:
			state += " (no index)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Store, relPath(dir, r.File), first, last, r.Records, humanBytes(r.Bytes), state)
	}
	tw.Flush()
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "(no segments)")
	}
	return status
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

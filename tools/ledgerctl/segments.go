package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// segmentRow is one journal generation or ledger segment, as segments
// prints it.
type segmentRow struct {
	Store    string `json:"store"` // journal or ledger
	File     string `json:"file"`
	FirstLSN uint64 `json:"first_lsn"`
	LastLSN  uint64 `json:"last_lsn"` // first_lsn-1 when it holds no record
	Records  uint64 `json:"records"`
	Bytes    int64  `json:"bytes"` // the file's size
	// RecordBytes and RawBytes are its records' stored and uncompressed
	// sizes (frame headers and padding are in Bytes only), Ratio the first
	// over the second: 1 when no record is compressed, omitted for a file
	// without records.
	RecordBytes int64     `json:"record_bytes"`
	RawBytes    int64     `json:"raw_bytes"`
	Ratio       float64   `json:"ratio,omitempty"`
	State       string    `json:"state"` // open, or closed (journal) / sealed (ledger)
	Indexed     *bool     `json:"indexed,omitempty"`
	Tail        *tailInfo `json:"tail,omitempty"`
	Damage      *location `json:"damage,omitempty"`
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

// fileSizes are the records' stored and uncompressed sizes in one file.
type fileSizes struct{ stored, raw int64 }

// measureLedger reads every record of the ledger (headers only:
// record.Verify) and sums their sizes by segment. Damage it passes, or
// that stops it, is returned by segment (the first per segment); the
// segments after a stop are not measured.
func measureLedger(e *env, p *progress) (map[string]fileSizes, map[string]*location, error) {
	r, err := ledger.NewDirReader(e.ledgerDir, 1, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	r.SkipDamage()
	sizes, damage := map[string]fileSizes{}, map[string]*location{}
	p.start("ledger", r.Size())
	defer p.finish()
	for r.Next() {
		if d := r.Damage(); d != nil {
			if damage[d.Segment] == nil {
				damage[d.Segment] = damageLocation(*d)
			}
			continue
		}
		h, err := record.Verify(r.Record())
		if err != nil { // cannot happen: the reader verified it
			return sizes, damage, fmt.Errorf("ledger: segment %s, LSN %d: %w", r.Segment(), r.LSN(), err)
		}
		fs := sizes[r.Segment()]
		fs.stored += int64(h.Stored)
		fs.raw += int64(h.Raw)
		sizes[r.Segment()] = fs
		p.update(r.BytesRead())
	}
	if err := r.Err(); err != nil {
		loc := locate("ledger", err)
		if loc.File == "" || damage[loc.File] != nil {
			return sizes, damage, err
		}
		damage[loc.File] = loc
	}
	return sizes, damage, nil
}

// measureJournal sums the journal's record sizes by generation file, as
// measureLedger does for the ledger. Damage stops it (a journal reader
// does not read past it) and is returned by file.
func measureJournal(e *env) (map[string]fileSizes, map[string]*location, error) {
	r, err := journal.NewDirReader(e.journalDir, 1)
	if err != nil {
		return nil, nil, err
	}
	sizes, damage := map[string]fileSizes{}, map[string]*location{}
	for r.Next() {
		h, err := record.Verify(r.Record())
		if err != nil { // cannot happen: the reader verified it
			return sizes, damage, fmt.Errorf("journal: file %s, LSN %d: %w", r.File(), r.LSN(), err)
		}
		fs := sizes[r.File()]
		fs.stored += int64(h.Stored)
		fs.raw += int64(h.Raw)
		sizes[r.File()] = fs
	}
	if err := r.Err(); err != nil {
		if loc := locate("journal", err); loc.File != "" {
			damage[loc.File] = loc
		} else {
			return sizes, damage, err
		}
	}
	return sizes, damage, nil
}

// cmdSegments lists the journal's generations and the ledger's segments,
// with each file's record sizes, stored and uncompressed, and their ratio.
// Measuring them reads every record (headers only, record.Verify), so it
// takes as long as a scan of the stores; damage that reading finds is
// shown on its file's row.
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
		sizes, damage, err := measureJournal(e)
		if err != nil {
			e.errorf("segments: %v", err)
			status = exitFailed
		}
		for _, g := range gens {
			state := "closed"
			if g.Open {
				state = "open"
			}
			fs := sizes[g.File]
			row := segmentRow{Store: "journal", File: g.File, FirstLSN: g.FirstLSN, LastLSN: g.LastLSN,
				Records: uint64(g.Records), Bytes: g.Bytes, RecordBytes: fs.stored, RawBytes: fs.raw, Ratio: ratio(fs.stored, fs.raw),
				State: state, Tail: journalTail(g.Tail)}
			switch {
			case g.Damage != nil:
				row.Damage = locate("journal", g.Damage)
				status = exitFailed
			case damage[g.File] != nil && g.Tail == nil:
				row.Damage = damage[g.File]
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
		sizes, damage, err := measureLedger(e, newProgress(e))
		if err != nil {
			e.errorf("segments: %v", err)
			status = exitFailed
		}
		for _, s := range segs {
			state := "sealed"
			var indexed *bool
			if s.Open {
				state = "open"
			} else {
				indexed = &s.Indexed
			}
			fs := sizes[s.Path]
			row := segmentRow{Store: "ledger", File: s.Path, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN,
				Records: s.Records(), Bytes: s.Bytes, RecordBytes: fs.stored, RawBytes: fs.raw, Ratio: ratio(fs.stored, fs.raw),
				State: state, Indexed: indexed, Tail: ledgerTail(s.Tail)}
			if d := damage[s.Path]; d != nil {
				row.Damage = d
				status = exitFailed
			}
			rows = append(rows, row)
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
	fmt.Fprintln(tw, "STORE\tFILE\tFIRST LSN\tLAST LSN\tRECORDS\tBYTES\tRAW BYTES\tRATIO\tSTATE")
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
		raw := "-"
		if r.RawBytes > 0 {
			raw = humanBytes(r.RawBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Store, relPath(dir, r.File), first, last, r.Records, humanBytes(r.Bytes),
			raw, formatRatio(r.RecordBytes, r.RawBytes), state)
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

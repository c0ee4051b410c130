package main

import (
	"fmt"
	"path/filepath"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

// storeCheck is one store's part of the verify report.
type storeCheck struct {
	Dir      string `json:"dir"`
	Files    int    `json:"files"`
	Records  uint64 `json:"records"`
	FirstLSN uint64 `json:"first_lsn,omitempty"`
	LastLSN  uint64 `json:"last_lsn,omitempty"`
	Bytes    int64  `json:"bytes"`
	// RecordBytes and RawBytes are the verified records' stored and
	// uncompressed sizes, Ratio the first over the second (1 when none is
	// compressed; omitted when there is no record).
	RecordBytes int64     `json:"record_bytes"`
	RawBytes    int64     `json:"raw_bytes"`
	Ratio       float64   `json:"ratio,omitempty"`
	Tail        *tailInfo `json:"tail,omitempty"`
	// DamagedRecords counts the records lost in damaged ranges, and the
	// compressed records whose block does not decode.
	DamagedRecords uint64 `json:"damaged_records,omitempty"`
	OK             bool   `json:"ok"`
}

// verifiedDLQ is one output's dead-letter store as verify read it.
type verifiedDLQ struct {
	Output  string `json:"output"`
	Dir     string `json:"dir"`
	Entries int    `json:"entries"`
}

type verifyReport struct {
	OK          bool        `json:"ok"`
	Ledger      *storeCheck `json:"ledger,omitempty"`
	Journal     *storeCheck `json:"journal,omitempty"`
	Cursors     *int        `json:"cursors,omitempty"`      // cursor files checked
	DeadLetters *int        `json:"dead_letters,omitempty"` // entries checked, of every output
	// DeadLetterOutputs are the entries checked per output.
	DeadLetterOutputs []verifiedDLQ `json:"dead_letter_outputs,omitempty"`
	Damage            []*location   `json:"damage"`
	Notes             []string      `json:"notes"`
}

// cmdVerify reads every record of the ledger and the journal, checking the
// ledger's frame header CRC, the journal's frame CRC and every record's own
// CRC and layout (record.Verify), LSN order and the contiguity of files;
// then the cursors' checksums and the dead letters. Every compressed
// (version 2) record, of either store, is decompressed too: one whose block does not
// decode to its events is damage, one record lost. Damage is reported with
// file, offset and LSN, and makes the exit status 1. The report gives each
// store's compression ratio (stored over uncompressed record bytes).
//
// Journal damage to records the ledger already holds is still damage, with
// a hint that it loses nothing: at start logpond releases a closed
// generation the ledger holds wholly, unread, and sets the generation
// holding the ledger's last LSN aside. A closed journal generation that
// ends before its last LSN is damage too.
//
// A damaged end of the newest journal generation is a torn write that was
// never acknowledged (or one in progress): a note. A damaged end of the open
// ledger segment is harmless while the journal still holds its first LSN
// (logpond cuts it and replays it from the journal, or it is a write in
// progress): a note; once the journal has released it, those records are
// lost: damage. Damage in the middle of the open ledger segment (a later
// write follows it) is damage either way, read past like a sealed
// segment's: it loses nothing while the journal holds its records (logpond
// replays them) and its records otherwise. The journal's first LSN is read
// before the ledger, so that a write in progress cannot be judged against a
// later, already released journal.
func cmdVerify(e *env, args []string) int {
	fs, asJSON := newFlags(e, "verify", "verify [--json]")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	rep := &verifyReport{Damage: []*location{}, Notes: []string{}}
	p := newProgress(e)

	var jfirst uint64
	jexists := false
	if e.journalDir != "" {
		var err error
		if jfirst, jexists, err = journal.FirstLSNOnDisk(e.journalDir); err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
	}

	// One Decompressor for the run: compressed records of either store
	// are decompressed, to check their events too.
	dec, err := record.NewDecompressor()
	if err != nil {
		e.errorf("verify: %v", err)
		return exitFailed
	}
	defer dec.Close()

	ledgerOK := false
	var ledgerLast uint64
	if e.ledgerDir != "" {
		s := scanLedger(e, p, dec)
		c := &storeCheck{Dir: e.ledgerDir, Files: s.Files, Records: s.Records, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN, Bytes: s.FileBytes,
			RecordBytes: s.RecordBytes, RawBytes: s.RawBytes, Ratio: ratio(s.RecordBytes, s.RawBytes), Tail: s.Tail}
		rep.Ledger = c
		ledgerLast = s.LastLSN
		if s.Records == 0 {
			ledgerLast = lastLedgerLSN(e)
		}
		for _, d := range s.Damaged {
			loc := damageLocation(d)
			if d.Segment == s.OpenSegment && d.Records() > 0 {
				openSegmentHint(loc, d, e.journalDir != "", jexists && jfirst <= d.FirstLSN)
				if *loc.Records == 0 {
					s.DamagedRecords -= d.Records()
				}
			}
			rep.Damage = append(rep.Damage, loc)
		}
		rep.Damage = append(rep.Damage, s.BadBlocks...)
		if s.Err != nil {
			rep.Damage = append(rep.Damage, locate("ledger", s.Err))
		} else {
			ledgerOK = true
		}
		c.DamagedRecords = s.DamagedRecords
		if t := s.Tail; t != nil {
			switch {
			case e.journalDir == "":
				rep.Notes = append(rep.Notes, fmt.Sprintf("ledger: the open segment %s ends in a torn or partial write at offset %d (LSN %d: %s); without the journal (-journal or -config) ledgerctl cannot tell a write in progress or a torn tail the journal replays from lost records",
					t.File, t.Offset, t.LSN, t.Reason))
			case jexists && jfirst <= t.LSN:
				rep.Notes = append(rep.Notes, fmt.Sprintf("ledger: the open segment %s ends in a torn or partial write at offset %d (LSN %d: %s); the journal still holds LSN %d, so it is a write in progress, or a torn tail that logpond cuts and replays from the journal at start",
					t.File, t.Offset, t.LSN, t.Reason, t.LSN))
			default:
				loc := &location{Store: "ledger", File: t.File, Offset: &t.Offset, LSN: t.LSN, Error: t.Reason,
					Hint: fmt.Sprintf("the end of the open segment is damaged and the journal no longer holds LSN %d: those records are lost, and logpond will refuse to start; with logpond stopped, `%s` accepts the loss and keeps every other record (--dry-run first shows what is lost)",
						t.LSN, e.acceptLossCommand())}
				rep.Damage = append(rep.Damage, loc)
				ledgerOK = false
			}
		}
		// A bad block loses its record's events but no LSN: the journal
		// is still judged against the ledger's records (ledgerOK).
		c.OK = ledgerOK && len(s.BadBlocks) == 0
	}

	if e.journalDir != "" {
		s := scanJournal(e, p, dec)
		c := &storeCheck{Dir: e.journalDir, Files: s.Files, Records: s.Records, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN, Bytes: s.FileBytes,
			RecordBytes: s.RecordBytes, RawBytes: s.RawBytes, Ratio: ratio(s.RecordBytes, s.RawBytes), Tail: s.Tail, OK: s.Err == nil}
		rep.Journal = c
		if s.Err != nil {
			loc := locate("journal", s.Err)
			switch {
			case e.ledgerDir == "" || !ledgerOK || loc.LSN == 0:
			case loc.LSN > ledgerLast:
				loc.Hint = fmt.Sprintf("the ledger ends at LSN %d: this acknowledged record is in neither store and is lost, and logpond refuses to start over it (a running logpond stops moving records to the ledger here); with logpond stopped, `%s` accepts the loss and keeps every other record (--dry-run first shows what is lost)",
					ledgerLast, e.acceptLossCommand())
			case s.GenEnd != 0 && s.GenEnd <= ledgerLast:
				loc.Hint = fmt.Sprintf("the ledger already holds every LSN of this closed generation (up to %d, the ledger's last LSN is %d): this loses nothing; logpond releases the generation at start without reading it, and the damage with it",
					s.GenEnd, ledgerLast)
			default:
				loc.Hint = fmt.Sprintf("the ledger already holds LSN %d: this loses nothing unless the damage reaches past the ledger's last LSN %d, which makes logpond refuse to start; otherwise logpond sets the damaged generation aside at start (renamed to damaged-<base>), keeps its records after LSN %d, and logs it at ERROR",
					loc.LSN, ledgerLast, ledgerLast)
			}
			rep.Damage = append(rep.Damage, loc)
		}
		rep.Damage = append(rep.Damage, s.BadBlocks...)
		if len(s.BadBlocks) > 0 {
			c.OK = false
		}
		if t := s.Tail; t != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("journal: the newest generation %s ends in a torn or partial write at offset %d (LSN %d: %s); it was never acknowledged: a write in progress, the unused rest of a recycled segment, or a torn tail that logpond cuts at start",
				t.File, t.Offset, t.LSN, t.Reason))
		}
		// The server's start-up check: the journal must hold everything
		// after the ledger's last LSN.
		if e.ledgerDir != "" && ledgerOK && jexists && jfirst > ledgerLast+1 {
			rep.Damage = append(rep.Damage, &location{Store: "journal", LSN: ledgerLast + 1,
				Error: fmt.Sprintf("the journal starts at LSN %d but the ledger ends at LSN %d: records %d–%d are in neither store", jfirst, ledgerLast, ledgerLast+1, jfirst-1),
				Hint: fmt.Sprintf("logpond will refuse to start; with logpond stopped, `%s` accepts the loss and keeps every other record (--dry-run first shows what is lost)",
					e.acceptLossCommand())})
			c.OK = false
		}
	}

	if e.ledgerDir != "" {
		cursors, err := ledger.ReadCursors(e.ledgerDir)
		if err != nil {
			rep.Damage = append(rep.Damage, &location{Store: "cursor", Error: err.Error()})
		}
		n := len(cursors)
		rep.Cursors = &n
		for _, c := range cursors {
			if c.Err != nil {
				rep.Damage = append(rep.Damage, &location{Store: "cursor", File: c.Path, Error: c.Err.Error()})
			}
		}
		q, err := ledger.ReadQuarantine(e.ledgerDir)
		if err != nil {
			rep.Damage = append(rep.Damage, &location{Store: "quarantine", Error: err.Error()})
		}
		for _, qe := range q {
			rep.Notes = append(rep.Notes, fmt.Sprintf("quarantine: the output skipped %s bytes %d–%d, LSN %s (%d records lost: %s); its bytes are kept in %s",
				qe.Segment, qe.Start, qe.End, lsnRange(qe.FirstLSN, qe.LastLSN), qe.Records, qe.Reason, qe.Path))
		}
		// Files logpond set aside at start: out of the stores, kept for
		// inspection until the operator deletes them.
		for _, pat := range []string{filepath.Join(e.ledgerDir, "cursors", "*.cursor.damaged"), filepath.Join(dlq.Dir(e.ledgerDir, "*"), "*.dlq.damaged")} {
			aside, _ := filepath.Glob(pat) // the patterns are well formed
			for _, f := range aside {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s was damaged and set aside by logpond at start (its ERROR said what was kept); delete it once inspected", f))
			}
		}
		dls, err := scanDLQs(e)
		if err != nil {
			rep.Damage = append(rep.Damage, &location{Store: "dead letters", Error: err.Error()})
		}
		for _, d := range dls {
			n := d.Entries
			if rep.DeadLetters != nil {
				n += *rep.DeadLetters
			}
			rep.DeadLetters = &n
			rep.DeadLetterOutputs = append(rep.DeadLetterOutputs, verifiedDLQ{Output: d.Output, Dir: d.Dir, Entries: d.Entries})
			if d.Err != nil {
				rep.Damage = append(rep.Damage, locate("dead letters", d.Err))
			}
		}
	}
	rep.OK = len(rep.Damage) == 0

	if *asJSON {
		writeJSON(e.stdout, rep)
	} else {
		printCheck(e, "ledger", "segments", rep.Ledger)
		printCheck(e, "journal", "generations", rep.Journal)
		if rep.Cursors != nil {
			fmt.Fprintf(e.stdout, "%-8s %d cursor files read\n", "cursors", *rep.Cursors)
		}
		for _, d := range rep.DeadLetterOutputs {
			fmt.Fprintf(e.stdout, "%-8s %s: %d dead letters read (output %s)\n", "dlq", d.Dir, d.Entries, d.Output)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stdout, "note: %s\n", n)
		}
		for _, d := range rep.Damage {
			fmt.Fprintf(e.stdout, "DAMAGE %s\n", d)
		}
		if rep.OK {
			fmt.Fprintln(e.stdout, "verify: OK")
		} else {
			fmt.Fprintf(e.stdout, "verify: FAILED: %d damaged location(s)\n", len(rep.Damage))
		}
	}
	if !rep.OK {
		return exitFailed
	}
	return exitOK
}

// openSegmentHint says what logpond does at start with a damaged range in
// the middle of the open segment (a later write follows it: synced bytes
// changed), which depends on whether the journal still holds its first
// LSN: withJournal says whether the journal was given, covered whether it
// holds it.
func openSegmentHint(loc *location, d ledger.Damage, withJournal, covered bool) {
	switch {
	case !withJournal:
		loc.Hint = fmt.Sprintf("damage in the middle of the open segment (synced bytes changed: check the device); without the journal (-journal or -config) ledgerctl cannot tell whether records %d–%d are lost: if the journal still holds them, logpond cuts the segment there at start and replays them; if not, it seals the segment as it is and its output skips them",
			d.FirstLSN, d.LastLSN)
	case covered:
		var zero uint64
		loc.Records = &zero
		loc.Hint = fmt.Sprintf("damage in the middle of the open segment (synced bytes changed: check the device); this loses nothing: the journal still holds LSN %d, so at start logpond cuts the segment there and replays the records from the journal (logged at ERROR, counted in logpond_ledger_damage_repaired_total)",
			d.FirstLSN)
	default:
		loc.Hint = fmt.Sprintf("damage in the middle of the open segment (synced bytes changed: check the device), and the journal no longer holds LSN %d: records %d–%d are lost; at start logpond seals the segment as it is and starts a new one, and its output skips the range (quarantined in %s) and delivers every other record",
			d.FirstLSN, d.FirstLSN, d.LastLSN, ledger.QuarantineDir)
	}
}

func printCheck(e *env, store, files string, c *storeCheck) {
	if c == nil {
		return
	}
	fmt.Fprintf(e.stdout, "%-8s %s: %d %s, %s, %d records verified (LSN %s), ratio %s (%s stored, %s uncompressed)\n",
		store, c.Dir, c.Files, files, humanBytes(c.Bytes), c.Records, lsnRange(c.FirstLSN, c.LastLSN),
		formatRatio(c.RecordBytes, c.RawBytes), humanBytes(c.RecordBytes), humanBytes(c.RawBytes))
	if c.DamagedRecords > 0 {
		fmt.Fprintf(e.stdout, "%-8s %d records lost in damaged ranges (listed below)\n", store, c.DamagedRecords)
	}
}

// lastLedgerLSN is the LSN a ledger without records continues after (its
// open segment's name minus one), or 0.
func lastLedgerLSN(e *env) uint64 {
	segs, err := ledger.Segments(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil || len(segs) == 0 {
		return 0
	}
	return segs[len(segs)-1].LastLSN
}

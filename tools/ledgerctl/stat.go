package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// storeStat is one store's totals.
type storeStat struct {
	Dir         string `json:"dir"`
	Files       int    `json:"files"`        // generations or segments
	Records     uint64 `json:"records"`      // records read (and verified)
	Events      uint64 `json:"events"`       // events in them
	RecordBytes int64  `json:"record_bytes"` // their stored size (compressed or not)
	RawBytes    int64  `json:"raw_bytes"`    // their uncompressed size
	// Ratio is RecordBytes over RawBytes: 1 when no record is compressed,
	// omitted when there is no record. CompressedRecords counts the
	// records stored compressed (format version 2).
	Ratio             float64    `json:"ratio,omitempty"`
	CompressedRecords uint64     `json:"compressed_records"`
	FileBytes         int64      `json:"file_bytes"` // size of the segment files
	DiskBytes         int64      `json:"disk_bytes"` // disk space allocated to everything in the directory
	FirstLSN          uint64     `json:"first_lsn,omitempty"`
	LastLSN           uint64     `json:"last_lsn,omitempty"`
	Oldest            *time.Time `json:"oldest_received,omitempty"`    // earliest receive time of a record
	OldestAge         string     `json:"oldest_age,omitempty"`         // its age, as a Go duration
	OldestAgeS        float64    `json:"oldest_age_seconds,omitempty"` // the same in seconds
	StreamID          string     `json:"stream_id,omitempty"`          // the ledger's stream id
	Tail              *tailInfo  `json:"tail,omitempty"`
	// TailState says what Tail is (tailState): "unsynced" (expected: not
	// damage), "unchecked" (the ledger's, without the journal to judge it)
	// or "lost" (the ledger's, and the journal no longer holds it).
	TailState string    `json:"tail_state,omitempty"`
	Damage    *location `json:"damage,omitempty"`
	// Damaged are the damaged ranges passed (the totals go on after each);
	// DamagedRecords the records lost in them.
	Damaged        []*location `json:"damaged,omitempty"`
	DamagedRecords uint64      `json:"damaged_records,omitempty"`
}

type statReport struct {
	Journal *storeStat `json:"journal,omitempty"`
	Ledger  *storeStat `json:"ledger,omitempty"`
	// FirstLSN and LastLSN span both stores.
	FirstLSN uint64 `json:"first_lsn,omitempty"`
	LastLSN  uint64 `json:"last_lsn,omitempty"`
	// Unflushed counts journal records after the ledger's last LSN: acknowledged,
	// waiting for the flusher.
	Unflushed *uint64 `json:"unflushed,omitempty"`
	Cursors   *int    `json:"cursors,omitempty"`
	// DeadLetters are the totals of each output's dead-letter store, by
	// output name.
	DeadLetters []dlqStat `json:"dead_letters,omitempty"`
}

// dlqStat is one output's dead-letter store's totals.
type dlqStat struct {
	Output     string `json:"output"`
	Dir        string `json:"dir"`
	Entries    int    `json:"entries"`
	EventBytes int64  `json:"event_bytes"`
	DiskBytes  int64  `json:"disk_bytes"`
}

// cmdStat reads both stores whole (verifying every record on the way) and
// prints their totals, with the records' stored and uncompressed sizes and
// their ratio. It reads the records' headers only (record.Verify): verify
// decompresses.
func cmdStat(e *env, args []string) int {
	fs, asJSON := newFlags(e, "stat", "stat [--json]")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	rep := statReport{}
	status := exitOK
	p := newProgress(e)
	now := e.now()
	fill := func(dir string, s storeScan, store string) *storeStat {
		st := &storeStat{Dir: dir, Files: s.Files, Records: s.Records, Events: s.Events, RecordBytes: s.RecordBytes,
			RawBytes: s.RawBytes, Ratio: ratio(s.RecordBytes, s.RawBytes), CompressedRecords: s.Compressed,
			FileBytes: s.FileBytes, DiskBytes: diskUse(dir), FirstLSN: s.FirstLSN, LastLSN: s.LastLSN, Tail: s.Tail}
		if !s.Oldest.IsZero() {
			o := s.Oldest.UTC()
			age := now.Sub(o)
			st.Oldest, st.OldestAge, st.OldestAgeS = &o, age.Round(time.Second).String(), age.Seconds()
		}
		if s.Err != nil {
			st.Damage = locate(store, s.Err)
			status = exitFailed
		}
		for _, d := range s.Damaged {
			st.Damaged = append(st.Damaged, damageLocation(d))
			status = exitFailed
		}
		st.DamagedRecords = s.DamagedRecords
		return st
	}
	// The journal's first LSN is read before the ledger, so that a
	// ledger write in progress is not judged against a journal that
	// released its records meanwhile.
	var jfirst uint64
	jexists := false
	if e.journalDir != "" {
		var err error
		if jfirst, jexists, err = journal.FirstLSNOnDisk(e.journalDir); err != nil {
			e.errorf("%v", err)
			status = exitFailed
		}
	}
	if e.ledgerDir != "" {
		rep.Ledger = fill(e.ledgerDir, scanLedger(e, p, nil), "ledger")
		if t := rep.Ledger.Tail; t != nil {
			switch {
			case e.journalDir == "":
				rep.Ledger.TailState = tailUnchecked
			case jexists && jfirst <= t.LSN:
				rep.Ledger.TailState = tailUnsynced
			default:
				rep.Ledger.TailState = tailLost
				status = exitFailed
			}
		}
		id, err := ledger.ReadStreamID(e.ledgerDir)
		switch {
		case err == nil:
			rep.Ledger.StreamID = id
		case !errors.Is(err, os.ErrNotExist):
			e.errorf("%v", err)
			status = exitFailed
		}
		cursors, err := ledger.ReadCursors(e.ledgerDir)
		if err == nil {
			n := len(cursors)
			rep.Cursors = &n
		}
		dls, err := scanDLQs(e)
		if err != nil {
			e.errorf("%v", err)
			status = exitFailed
		}
		for _, d := range dls {
			rep.DeadLetters = append(rep.DeadLetters, dlqStat{Output: d.Output, Dir: d.Dir, Entries: d.Entries, EventBytes: d.Bytes, DiskBytes: diskUse(d.Dir)})
			if d.Err != nil {
				e.errorf("dead letters of output %s: %s", d.Output, locate("dead letters", d.Err))
				status = exitFailed
			}
		}
	}
	if e.journalDir != "" {
		rep.Journal = fill(e.journalDir, scanJournal(e, p, nil), "journal")
		if rep.Journal.Tail != nil {
			// The newest generation's: never acknowledged (journal/doc.go).
			rep.Journal.TailState = tailUnsynced
		}
	}
	for _, s := range []*storeStat{rep.Ledger, rep.Journal} {
		if s == nil || s.Records == 0 {
			continue
		}
		if rep.FirstLSN == 0 || s.FirstLSN < rep.FirstLSN {
			rep.FirstLSN = s.FirstLSN
		}
		rep.LastLSN = max(rep.LastLSN, s.LastLSN)
	}
	if rep.Ledger != nil && rep.Journal != nil {
		var n uint64
		if j := rep.Journal; j.Records > 0 && j.LastLSN > rep.Ledger.LastLSN {
			n = j.LastLSN - max(rep.Ledger.LastLSN, j.FirstLSN-1)
		}
		rep.Unflushed = &n
	}

	if *asJSON {
		writeJSON(e.stdout, rep)
		return status
	}
	w := e.stdout
	for _, s := range []struct {
		name, files string
		st          *storeStat
	}{{"ledger", "segments", rep.Ledger}, {"journal", "generations", rep.Journal}} {
		if s.st == nil {
			continue
		}
		st := s.st
		fmt.Fprintf(w, "%s %s\n", s.name, st.Dir)
		if st.StreamID != "" {
			fmt.Fprintf(w, "  stream id       %s\n", st.StreamID)
		}
		fmt.Fprintf(w, "  %-15s %d\n", s.files, st.Files)
		fmt.Fprintf(w, "  records         %d (LSN %s)\n", st.Records, lsnRange(st.FirstLSN, st.LastLSN))
		if st.DamagedRecords > 0 || len(st.Damaged) > 0 {
			fmt.Fprintf(w, "  damaged records %d lost in %d damaged ranges (not counted above)\n", st.DamagedRecords, len(st.Damaged))
		}
		fmt.Fprintf(w, "  events          %d\n", st.Events)
		fmt.Fprintf(w, "  record bytes    %s (%d)\n", humanBytes(st.RecordBytes), st.RecordBytes)
		fmt.Fprintf(w, "  raw bytes       %s (%d) uncompressed\n", humanBytes(st.RawBytes), st.RawBytes)
		fmt.Fprintf(w, "  ratio           %s (%d of %d records compressed)\n", formatRatio(st.RecordBytes, st.RawBytes), st.CompressedRecords, st.Records)
		fmt.Fprintf(w, "  file bytes      %s (%d)\n", humanBytes(st.FileBytes), st.FileBytes)
		fmt.Fprintf(w, "  disk use        %s\n", humanBytes(st.DiskBytes))
		if st.Oldest != nil {
			fmt.Fprintf(w, "  oldest record   received %s, %s ago\n", formatTime(*st.Oldest), st.OldestAge)
		} else {
			fmt.Fprintf(w, "  oldest record   -\n")
		}
		if st.Tail != nil {
			printTail(e, st, s.name)
		}
		for _, d := range st.Damaged {
			fmt.Fprintf(w, "  DAMAGE          %s\n", d)
		}
		if st.Damage != nil {
			fmt.Fprintf(w, "  DAMAGE          %s (totals stop there; run verify)\n", st.Damage)
		}
	}
	if rep.Cursors != nil {
		fmt.Fprintf(w, "cursors           %d\n", *rep.Cursors)
	}
	for _, d := range rep.DeadLetters {
		fmt.Fprintf(w, "dead letters      %d (%s of events, %s on disk) of output %s in %s\n", d.Entries, humanBytes(d.EventBytes), humanBytes(d.DiskBytes), d.Output, d.Dir)
	}
	fmt.Fprintf(w, "LSN range         %s\n", lsnRange(rep.FirstLSN, rep.LastLSN))
	if rep.Unflushed != nil {
		fmt.Fprintf(w, "unflushed         %d journal records after the ledger's last LSN\n", *rep.Unflushed)
	}
	return status
}

// What the end of a store's newest file is, when it is not a whole record
// (storeStat.TailState).
const (
	// tailUnsynced: bytes not (yet) synced, as every live store has at
	// its end: the journal's newest generation (a write in progress, the
	// stale rest of a recycled file, or after a crash a write that was
	// never acknowledged), or the ledger's open segment while the journal
	// still holds those records.
	tailUnsynced = "unsynced"
	// tailUnchecked: the ledger's, read without the journal, which alone
	// can say whether the records are still there to write again.
	tailUnchecked = "unchecked"
	// tailLost: the ledger's, and the journal no longer holds the records:
	// they are lost, and logpond refuses to start.
	tailLost = "lost"
)

// printTail prints what the end of a store's newest file is: expected, to
// be checked with the journal, or damage.
func printTail(e *env, st *storeStat, store string) {
	t := st.Tail
	w := e.stdout
	// The reader's reason is given where it matters (damage, or not
	// known yet); --json always has it.
	where := fmt.Sprintf("from offset %d of %s (LSN %d on)", t.Offset, relPath(st.Dir, t.File), t.LSN)
	why := fmt.Sprintf("from offset %d of %s (LSN %d on: %s)", t.Offset, relPath(st.Dir, t.File), t.LSN, t.Reason)
	switch {
	case st.TailState == tailLost:
		fmt.Fprintf(w, "  DAMAGE          the open segment ends in a damaged write %s, and the journal no longer holds LSN %d: those records are lost and logpond will refuse to start; `%s` accepts the loss (run verify first; docs/operations.md)\n",
			why, t.LSN, e.acceptLossCommand())
	case store == "journal":
		fmt.Fprintf(w, "  tail            not synced yet %s: expected at the end of the newest generation (a write in progress while logpond runs, or the unused rest of a recycled file; after a crash, a write that was never acknowledged, which logpond cuts at start); not damage\n", where)
	case st.TailState == tailUnsynced:
		fmt.Fprintf(w, "  tail            not synced yet %s: expected at the end of the open segment (a write in progress while logpond runs; after a crash, logpond cuts it at start and writes LSN %d on again from the journal, which holds them); not damage\n", where, t.LSN)
	default:
		fmt.Fprintf(w, "  tail            not synced yet %s: the end of the open segment, a write in progress while logpond runs; after a crash logpond writes LSN %d on again from the journal, if it still holds them: give -journal (or -config) to check\n", why, t.LSN)
	}
}

// diskUse is the disk space allocated to the files under dir (0 when dir
// cannot be read). Files removed while it walks are skipped.
func diskUse(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: skip
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

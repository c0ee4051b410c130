package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// recordLine is one record in `dump --json`.
type recordLine struct {
	LSN      uint64     `json:"lsn"`
	Store    string     `json:"store"` // where it was read: ledger or journal
	Received *time.Time `json:"received"`
	Events   int        `json:"events"`
	Bytes    int        `json:"bytes"`
	// Flags and Slot place the record in its client batch (record/doc.go):
	// flags "-" for a whole batch, else e.g. "more|cont", "abort", "void".
	Flags string `json:"flags"`
	Slot  uint16 `json:"slot"`
}

// eventLine is one event in `dump --events`: Event when the raw bytes are
// valid JSON (compacted to one line), else EventBase64.
type eventLine struct {
	LSN         uint64          `json:"lsn"`
	Position    int             `json:"position"`
	Event       json.RawMessage `json:"event,omitempty"`
	EventBase64 []byte          `json:"event_base64,omitempty"`
}

// cmdDump prints count records from LSN from: those the ledger holds, then
// the journal's after them (records not flushed yet).
func cmdDump(e *env, args []string) int {
	fs, asJSON := newFlags(e, "dump", "dump [--from LSN] [--count N] [--events] [--json]")
	from := fs.Uint64("from", 0, "first LSN to dump (default: the oldest record)")
	count := fs.Int("count", 10, "how many records to dump")
	events := fs.Bool("events", false, "print the records' events as JSON lines instead of the records")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if *count < 0 {
		e.errorf("dump: --count %d: must not be negative", *count)
		return exitUsage
	}
	status := exitOK
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	table := !*events && !*asJSON
	next, n := max(*from, 1), 0 // the next LSN wanted; records emitted
	passed := false             // a damaged range was met before the first record
	// Events take decompressing a compressed record; the other forms
	// need its header only.
	var dec *record.Decompressor
	if *events {
		var err error
		if dec, err = record.NewDecompressor(); err != nil {
			e.errorf("dump: %v", err)
			return exitFailed
		}
		defer dec.Close()
	}
	emit := func(store string, lsn uint64, b []byte) error {
		if n == 0 && !passed && *from > 0 && lsn != *from {
			return &notHeldError{from: *from, first: lsn, store: store}
		}
		h, err := record.Verify(b)
		if err != nil { // cannot happen: the readers verified it
			return fmt.Errorf("LSN %d: %w", lsn, err)
		}
		switch {
		case *events:
			rec, err := dec.Decode(b, decodeLimit)
			if err != nil {
				return &blockError{lsn: lsn, err: err}
			}
			pos := 0
			for ev := range rec.Events() {
				line := eventLine{LSN: lsn, Position: pos}
				if json.Valid(ev) {
					line.Event = ev
				} else {
					line.EventBase64 = ev
				}
				if err := writeJSONLine(e.stdout, line); err != nil {
					return err
				}
				pos++
			}
		case *asJSON:
			line := recordLine{LSN: lsn, Store: store, Events: h.Count, Bytes: h.Stored, Flags: h.Flags.String(), Slot: h.Slot}
			if t := h.Received(); !t.IsZero() {
				t = t.UTC()
				line.Received = &t
			}
			return writeJSONLine(e.stdout, line)
		default:
			if n == 0 {
				fmt.Fprintln(tw, "LSN\tSTORE\tRECEIVED\tEVENTS\tBYTES\tFLAGS\tSLOT")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%d\n", lsn, store, formatTime(h.Received()), h.Count, h.Stored, h.Flags, h.Slot)
		}
		return nil
	}

	if e.ledgerDir != "" && n < *count {
		r, err := ledger.NewDirReader(e.ledgerDir, next, ledger.InspectOptions{DirectIO: e.directIO})
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		r.SkipDamage()
		for n < *count && r.Next() {
			if d := r.Damage(); d != nil {
				// Said where the records would be, so that no LSN is
				// skipped silently.
				if table {
					if n == 0 && !passed {
						fmt.Fprintln(tw, "LSN\tSTORE\tRECEIVED\tEVENTS\tBYTES\tFLAGS\tSLOT")
					}
					fmt.Fprintf(tw, "%s\tledger\tDAMAGED\t-\t%d\t-\t-\n", lsnRange(d.FirstLSN, d.LastLSN), d.End-d.Start)
				}
				e.errorf("dump: ledger damaged: %s", damageLocation(*d))
				passed, status = true, exitFailed
				if d.Records() > 0 {
					next = d.LastLSN + 1
				}
				continue
			}
			err := emit("ledger", r.LSN(), r.Record())
			var be *blockError
			if errors.As(err, &be) {
				// Damage inside one record: said, and passed as a
				// damaged range is (--events prints no table).
				e.errorf("dump: ledger damaged: %s", blockDamage("ledger", r.Segment(), r.Offset(), be.lsn, be.err))
				passed, status, next = true, exitFailed, r.LSN()+1
				continue
			}
			if err != nil {
				r.Close()
				e.errorf("dump: %v", err)
				return exitFailed
			}
			next, n = r.LSN()+1, n+1
		}
		if n < *count && r.Err() != nil {
			more := ""
			if e.journalDir != "" {
				more = " (continuing in the journal)"
			}
			e.errorf("dump: ledger damaged%s: %s", more, locate("ledger", r.Err()))
			status = exitFailed
		}
		r.Close()
	}
	if e.journalDir != "" && n < *count {
		r, err := journal.NewDirReader(e.journalDir, next)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		for n < *count && r.Next() {
			err := emit("journal", r.LSN(), r.Record())
			var be *blockError
			if errors.As(err, &be) {
				e.errorf("dump: journal damaged: %s", blockDamage("journal", r.File(), r.Offset(), be.lsn, be.err))
				passed, status, next = true, exitFailed, r.LSN()+1
				continue
			}
			if err != nil {
				e.errorf("dump: %v", err)
				return exitFailed
			}
			next, n = r.LSN()+1, n+1
		}
		if n < *count && r.Err() != nil {
			e.errorf("dump: journal damaged: %s", locate("journal", r.Err()))
			status = exitFailed
		}
	}
	if table {
		tw.Flush()
	}
	switch {
	case n > 0 || *count == 0 || status != exitOK:
	case *from > 0:
		e.errorf("dump: %s", pastEnd(e, *from))
		return exitFailed
	default:
		e.errorf("dump: the stores hold no record")
	}
	return status
}

// blockError is a compressed record that checks (CRC) but whose events do
// not decode: damage to one record, which dump passes.
type blockError struct {
	lsn uint64
	err error
}

func (e *blockError) Error() string { return fmt.Sprintf("LSN %d: %v", e.lsn, e.err) }
func (e *blockError) Unwrap() error { return e.err }

// notHeldError says that the record --from names is no longer (or not)
// in the stores: the first one at or after it has a later LSN.
type notHeldError struct {
	from, first uint64
	store       string // where first is
}

func (e *notHeldError) Error() string {
	return fmt.Sprintf("--from %d: no record with that LSN: the oldest record at or after it is LSN %d, in the %s (older records were released or deleted by retention)", e.from, e.first, e.store)
}

// pastEnd says why no record was found at or after from: the stores end
// before it (naming their last LSN), or they hold no record at all.
func pastEnd(e *env, from uint64) string {
	var last uint64
	if e.ledgerDir != "" {
		if segs, err := ledger.Segments(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO}); err == nil && len(segs) > 0 {
			last = max(last, segs[len(segs)-1].LastLSN)
		}
	}
	if e.journalDir != "" {
		if gens, err := journal.Segments(e.journalDir); err == nil {
			for _, g := range gens {
				if g.Records > 0 {
					last = max(last, g.LastLSN)
				}
			}
		}
	}
	if last == 0 {
		return fmt.Sprintf("--from %d: the stores hold no record", from)
	}
	return fmt.Sprintf("--from %d is past the last record, LSN %d", from, last)
}

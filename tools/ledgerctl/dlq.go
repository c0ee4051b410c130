package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/logpond/logpond/output/dlq"
)

// dlqLine is one dead letter in `dlq list --json` (without the event) and
// `dlq dump` (with it: Event when it is valid JSON, else EventBase64).
type dlqLine struct {
	File        string          `json:"file"`
	Offset      int64           `json:"offset"`
	Stream      string          `json:"stream"`
	LSN         uint64          `json:"lsn"`
	Position    uint32          `json:"position"`
	Index       string          `json:"index"`
	Action      string          `json:"action"`
	DocID       string          `json:"doc_id"`
	Status      int             `json:"status"`
	ErrType     string          `json:"error_type"`
	Reason      string          `json:"reason"`
	Received    time.Time       `json:"received"`
	Failed      time.Time       `json:"failed"`
	EventBytes  int             `json:"event_bytes"`
	Event       json.RawMessage `json:"event,omitempty"`
	EventBase64 []byte          `json:"event_base64,omitempty"`
}

func newDLQLine(pos dlq.Pos, en dlq.Entry, withEvent bool) dlqLine {
	l := dlqLine{File: pos.File, Offset: pos.Offset, Stream: en.Stream, LSN: en.LSN, Position: en.Position,
		Index: en.Index, Action: en.Action, DocID: en.DocID, Status: en.Status, ErrType: en.ErrType, Reason: en.Reason,
		Received: en.Received, Failed: en.Failed, EventBytes: len(en.Event)}
	if withEvent {
		if json.Valid(en.Event) {
			l.Event = en.Event
		} else {
			l.EventBase64 = en.Event
		}
	}
	return l
}

const dlqUsage = "dlq list [--output NAME] [--json] | dlq dump [--output NAME] | dlq show [--output NAME] ID | dlq redrive [--output NAME] [-es URL] [-purge] [--json] | dlq purge [--output NAME] --through ID|TIME"

// outputFlagHelp documents every dlq subcommand's --output flag.
const outputFlagHelp = "the output whose dead letters (default: the only Elasticsearch output of -config; else the only directory in <ledger>/dlq)"

// cmdDLQ runs the dlq subcommands.
func cmdDLQ(e *env, args []string) int {
	if len(args) == 0 {
		e.errorf("dlq: say what to do: %s", dlqUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintf(e.stderr, "usage: ledgerctl [-config FILE | -ledger DIR] %s\n"+
			"Each output keeps its dead letters in <ledger>/dlq/NAME; --output NAME says whose (default: the only\n"+
			"output of -config, else the only directory in <ledger>/dlq).\n"+
			"(ledgerctl dlq SUBCOMMAND -h for a subcommand's flags)\n", dlqUsage)
		return exitOK
	case "list":
		return dlqList(e, args[1:], false)
	case "dump":
		return dlqList(e, args[1:], true)
	case "show":
		return dlqShow(e, args[1:])
	case "redrive":
		return dlqRedrive(e, args[1:])
	case "purge":
		return dlqPurge(e, args[1:])
	}
	e.errorf("dlq: unknown subcommand %q: %s", args[0], dlqUsage)
	return exitUsage
}

// dlqList prints the dead letters: a table (or, with --json, a document)
// without events, or with dump every entry with its event as JSON lines.
// It reads with dlq.NewReader: no lock, nothing written.
func dlqList(e *env, args []string, dump bool) int {
	name, synopsis := "dlq list", "dlq list [--output NAME] [--json]"
	if dump {
		name, synopsis = "dlq dump", "dlq dump [--output NAME]"
	}
	fs, asJSON := newFlags(e, name, synopsis)
	output := fs.String("output", "", outputFlagHelp)
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if status, ok := e.dlqSelect(name, *output); !ok {
		return status
	}
	if e.dlqNone {
		switch {
		case *asJSON && !dump:
			writeJSON(e.stdout, map[string]any{"output": "", "dir": e.dlqParent(), "entries": []dlqLine{}})
		case !dump:
			fmt.Fprintf(e.stdout, "0 dead letters: %s holds none (no output has stored any)\n", e.dlqParent())
		}
		return exitOK
	}
	dir := e.dlqDir()
	r, err := dlq.NewReader(dir)
	if errors.Is(err, os.ErrNotExist) {
		r, err = nil, nil // no dead letter was ever stored
	}
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	lines := []dlqLine{}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	table := !dump && !*asJSON
	if table {
		fmt.Fprintln(tw, "FILE:OFFSET\tLSN\tPOS\tINDEX\tDOC ID\tSTATUS\tERROR TYPE\tFAILED\tREASON")
	}
	n := 0
	for r != nil && r.Next() {
		pos, en := r.Pos(), r.Entry()
		n++
		switch {
		case dump:
			if err := writeJSONLine(e.stdout, newDLQLine(pos, en, true)); err != nil {
				e.errorf("dlq dump: %v", err)
				return exitFailed
			}
		case *asJSON:
			lines = append(lines, newDLQLine(pos, en, false))
		default:
			fmt.Fprintf(tw, "%s:%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", pos.File, pos.Offset, en.LSN, en.Position,
				en.Index, orDash(en.DocID), en.Status, orDash(en.ErrType), formatTime(en.Failed), oneLine(en.Reason, 100))
		}
	}
	var damage error
	if r != nil {
		damage = r.Err()
		r.Close()
	}
	switch {
	case table:
		tw.Flush()
		fmt.Fprintf(e.stdout, "%d dead letters in %s\n", n, dir)
	case *asJSON && !dump:
		writeJSON(e.stdout, map[string]any{"output": e.dlqOut.name, "dir": dir, "entries": lines})
	}
	if damage != nil {
		e.errorf("%s: damaged after the entries above: %s", name, locate("dead letters", damage))
		return exitFailed
	}
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to at most n bytes on one line, for tables.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// parseDLQID parses a dead letter's id as dlq list prints it, FILE:OFFSET.
func parseDLQID(id string) (dlq.Pos, error) {
	pos, err := dlq.ParsePos(id)
	if err != nil {
		return pos, fmt.Errorf("%q is not a dead letter's id: ids are FILE:OFFSET as dlq list prints them, e.g. 00000000000000000001.dlq:20", id)
	}
	return pos, nil
}

// dlqShow prints one dead letter, with its event, as a JSON document.
func dlqShow(e *env, args []string) int {
	fs, asJSON := newFlags(e, "dlq show", "dlq show [--output NAME] [--json] ID   (ID is FILE:OFFSET, as dlq list prints it)")
	output := fs.String("output", "", outputFlagHelp)
	ids, status, ok := parseFlagsArgs(fs, args)
	if !ok {
		return status
	}
	if len(ids) != 1 {
		e.errorf("dlq show: say which one dead letter: ledgerctl dlq show FILE:OFFSET (dlq list prints the ids)")
		return exitUsage
	}
	want, err := parseDLQID(ids[0])
	if err != nil {
		e.errorf("dlq show: %v", err)
		return exitUsage
	}
	if status, ok := e.dlqSelect("dlq show", *output); !ok {
		return status
	}
	if e.dlqNone {
		e.errorf("dlq show: no dead letter %s:%d: %s holds no dead letters (no output has stored any)", want.File, want.Offset, e.dlqParent())
		return exitFailed
	}
	dir := e.dlqDir()
	r, err := dlq.NewReader(dir)
	if errors.Is(err, os.ErrNotExist) {
		e.errorf("dlq show: no dead letter %s:%d: %s holds no dead letters", want.File, want.Offset, dir)
		return exitFailed
	}
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	defer r.Close()
	for r.Next() {
		pos := r.Pos()
		if pos.File > want.File || (pos.File == want.File && pos.Offset > want.Offset) {
			break
		}
		if pos == want {
			line := newDLQLine(pos, r.Entry(), true)
			if *asJSON {
				writeJSONLine(e.stdout, line)
			} else {
				writeJSON(e.stdout, line)
			}
			return exitOK
		}
	}
	if err := r.Err(); err != nil {
		e.errorf("dlq show: damaged before %s:%d: %s", want.File, want.Offset, locate("dead letters", err))
		return exitFailed
	}
	e.errorf("dlq show: no dead letter %s:%d in %s (purged, or not an id dlq list prints)", want.File, want.Offset, dir)
	return exitFailed
}

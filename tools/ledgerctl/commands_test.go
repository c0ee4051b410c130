package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

func TestUsage(t *testing.T) {
	s := buildStores(t)
	cases := []struct {
		name string
		args []string
		code int
		want string // in stdout or stderr
	}{
		{"help flag", []string{"-h"}, exitOK, "Commands"},
		{"help command", []string{"help"}, exitOK, "dlq redrive"},
		{"no command", []string{"-ledger", s.ledger}, exitUsage, "say which command to run"},
		{"unknown command", []string{"-ledger", s.ledger, "frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"no stores", []string{"segments"}, exitUsage, "say where the stores are"},
		{"cursors without the ledger", []string{"-journal", s.journal, "cursors"}, exitUsage, "cursors needs the ledger"},
		{"dlq without the ledger", []string{"-journal", s.journal, "dlq", "list"}, exitUsage, "dlq needs the ledger"},
		{"dlq without subcommand", []string{"-ledger", s.ledger, "dlq"}, exitUsage, "say what to do"},
		{"dlq unknown subcommand", []string{"-ledger", s.ledger, "dlq", "eat"}, exitUsage, `unknown subcommand "eat"`},
		{"bad global flag", []string{"-bogus", "segments"}, exitUsage, "unknown flag -bogus before the command"},
		{"bad command flag", []string{"-ledger", s.ledger, "segments", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"-ledger", s.ledger, "verify", "now"}, exitUsage, `unexpected argument "now"`},
		{"negative count", []string{"-ledger", s.ledger, "dump", "--count", "-1"}, exitUsage, "must not be negative"},
		{"redrive without Elasticsearch", []string{"-ledger", s.ledger, "dlq", "redrive"}, exitUsage, "-es URL"},
		{"missing directory", []string{"-ledger", filepath.Join(s.ledger, "nope"), "segments"}, exitFailed, "ledger directory " + filepath.Join(s.ledger, "nope")},
		{"missing config", []string{"-config", filepath.Join(s.ledger, "nope.toml"), "segments"}, exitFailed, "nope.toml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := ctl(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("exit %d, want %d, and %q in the output:\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

// TestFlagOrder runs commands with their global and command flags in every
// order: global flags (-config, -journal, -ledger, --json) go before or
// after the command, a command's flags after it. An unknown or incomplete
// flag gets one line naming it and pointing at -h, never the whole usage.
func TestFlagOrder(t *testing.T) {
	s := buildStores(t)
	cfg := writeConfig(t, s)
	ok := []struct {
		name string
		args []string
		json bool // the output is one JSON document (or JSON lines)
	}{
		{"all before", []string{"--json", "-config", cfg, "stat"}, true},
		{"all after", []string{"stat", "--json", "-config", cfg}, true},
		{"config before, json after", []string{"-config", cfg, "stat", "--json"}, true},
		{"json before, config after", []string{"--json", "stat", "-config", cfg}, true},
		{"equals forms", []string{"stat", "--config=" + cfg, "--json=true"}, true},
		{"json=false", []string{"-config", cfg, "--json=false", "stat"}, false},
		{"dirs around the command", []string{"-journal", s.journal, "segments", "-ledger", s.ledger, "--json"}, true},
		{"global flags between command flags", []string{"dump", "--from", "5", "-config", cfg, "--count", "2", "--json"}, true},
		{"json before dump --events", []string{"--json", "dump", "--events", "--count", "1", "-ledger", s.ledger}, true},
		{"dlq subcommand", []string{"dlq", "list", "-ledger", s.ledger, "--json"}, true},
		{"dlq, json first", []string{"--json", "-ledger", s.ledger, "dlq", "list"}, true},
		{"cursors, config last", []string{"cursors", "--json", "--config", cfg}, true},
		{"after --", []string{"-ledger", s.ledger, "--", "segments"}, false},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := ctl(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d:\n%s%s", code, out, errOut)
			}
			first := strings.TrimSpace(out)
			if isJSON := strings.HasPrefix(first, "{"); isJSON != tc.json {
				t.Fatalf("JSON output %v, want %v:\n%s", isJSON, tc.json, out)
			}
			if tc.json {
				line, _, _ := strings.Cut(first, "\n")
				if !json.Valid([]byte(first)) && !json.Valid([]byte(line)) {
					t.Fatalf("not JSON:\n%s", out)
				}
			}
		})
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag first", []string{"--bogus", "-config", cfg, "stat"}, "unknown flag --bogus before the command"},
		{"command flag before the command", []string{"--from", "5", "-config", cfg, "dump"}, "unknown flag --from before the command"},
		{"unknown flag after the command", []string{"-config", cfg, "stat", "--bogus"}, "ledgerctl stat: flag provided but not defined: -bogus; see ledgerctl stat -h"},
		{"unknown flag among global ones", []string{"stat", "--json", "--verbose", "-config", cfg}, "flag provided but not defined: -verbose"},
		{"global flag without value", []string{"stat", "-config"}, "flag -config needs a value"},
		{"bad json value", []string{"--json=maybe", "stat", "-config", cfg}, "--json=maybe"},
		{"command flag without value", []string{"-config", cfg, "dump", "--from"}, "flag needs an argument: -from"},
		{"bad value", []string{"-config", cfg, "dump", "--count", "many"}, `invalid value "many" for flag -count`},
		{"unknown dlq flag", []string{"-config", cfg, "dlq", "list", "--all"}, "ledgerctl dlq list: flag provided but not defined: -all"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := ctl(t, tc.args...)
			if code != exitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want %d and nothing on stdout", code, out, exitUsage)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, " -h") {
				t.Fatalf("stderr %q: want one line with %q and a pointer to -h", errOut, tc.want)
			}
		})
	}

	// -h anywhere: the command's usage when there is a command (it needs
	// no stores for that), else ledgerctl's.
	for _, args := range [][]string{{"-h"}, {"--help"}, {"stat", "-h"}, {"-h", "dump"}, {"dump", "--from", "3", "--help"}, {"dlq", "-h"}, {"dlq", "list", "-h"}} {
		out, errOut, code := ctl(t, args...)
		if code != exitOK || !strings.Contains(out+errOut, "usage: ledgerctl") {
			t.Fatalf("%v: exit %d:\n%s%s", args, code, out, errOut)
		}
	}
	if _, errOut, _ := ctl(t, "dump", "-h"); !strings.Contains(errOut, "-from") {
		t.Fatalf("dump -h does not show dump's flags:\n%s", errOut)
	}
}

// writeConfig writes a logpond configuration naming the stores' directories.
func writeConfig(t *testing.T, s stores) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logpond.toml")
	cfg := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[output.elasticsearch]\nenabled = false\n", s.journal, s.ledger)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSegments(t *testing.T) {
	s := buildStores(t)
	out, _, code := ctl(t, "-config", writeConfig(t, s), "segments")
	if code != exitOK || !strings.Contains(out, "STORE") || !strings.Contains(out, "gen-00000000000000000250/00000000000000000001") ||
		!strings.Contains(out, "00000000000000000001.seg") || !strings.Contains(out, "sealed") || !strings.Contains(out, "open") {
		t.Fatalf("exit %d, table:\n%s", code, out)
	}
	out, _, code = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "segments", "--json")
	var doc struct {
		Segments []segmentRow `json:"segments"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	next := map[string]uint64{"journal": s.journalFirst, "ledger": 1}
	files := map[string]int{}
	for i, r := range doc.Segments {
		if r.FirstLSN != next[r.Store] || r.Records != r.LastLSN-r.FirstLSN+1 || r.Bytes <= 0 || r.Damage != nil || r.Tail != nil {
			t.Fatalf("row %d: %+v, want first LSN %d", i, r, next[r.Store])
		}
		last := i+1 == len(doc.Segments) || doc.Segments[i+1].Store != r.Store
		if (r.State == "open") != last {
			t.Fatalf("row %d: state %s", i, r.State)
		}
		next[r.Store] = r.LastLSN + 1
		files[r.Store]++
	}
	if next["journal"] != s.journalLast+1 || next["ledger"] != s.ledgerLast+1 || files["journal"] < 2 || files["ledger"] < 2 {
		t.Fatalf("segments end at %v, files %v", next, files)
	}

	// Damage in a closed generation is shown where it is, with status 1.
	w := journalOffsets(t, s.journal)[255]
	storetest.Flip(t, w.file, w.off+40)
	out, _, code = ctl(t, "-journal", s.journal, "segments")
	if want := fmt.Sprintf("DAMAGED: journal: file %s, offset %d, LSN 255", w.file, w.off); code != exitFailed || !strings.Contains(out, want) {
		t.Fatalf("exit %d, no %q in:\n%s", code, want, out)
	}
}

func TestStat(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(1, `{"a":1}`), deadLetter(2, `{"b":2}`)})
	now := t0.Add(24 * time.Hour)
	e, out, _ := testEnv(s, now)
	if code := cmdStat(e, []string{"--json"}); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep statReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	l, j := rep.Ledger, rep.Journal
	switch {
	case l.Records != 300 || l.Events != 600 || l.FirstLSN != 1 || l.LastLSN != 300 || l.FileBytes <= l.RecordBytes || l.DiskBytes <= 0:
		t.Fatalf("ledger: %+v", l)
	case len(l.StreamID) != 36:
		t.Fatalf("stream id %q", l.StreamID)
	case !l.Oldest.Equal(received(1)) || l.OldestAgeS != now.Sub(received(1)).Seconds():
		t.Fatalf("ledger oldest %v, age %v", l.Oldest, l.OldestAge)
	case j.Records != 150 || j.Events != 300 || j.FirstLSN != 251 || j.LastLSN != 400 || !j.Oldest.Equal(received(251)):
		t.Fatalf("journal: %+v", j)
	case rep.FirstLSN != 1 || rep.LastLSN != 400 || rep.Unflushed == nil || *rep.Unflushed != 100:
		t.Fatalf("range %d–%d, unflushed %v", rep.FirstLSN, rep.LastLSN, rep.Unflushed)
	case rep.Cursors == nil || *rep.Cursors != 1 || len(rep.DeadLetters) != 1 || rep.DeadLetters[0].Entries != 2 || rep.DeadLetters[0].Output != "elasticsearch":
		t.Fatalf("cursors %v, dead letters %+v", rep.Cursors, rep.DeadLetters)
	}
	// The table says the same.
	txt, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "stat")
	for _, want := range []string{"stream id       " + l.StreamID, "records         300 (LSN 1–300)", "events          600",
		"records         150 (LSN 251–400)", "LSN range         1–400", "unflushed         100", "dead letters      2"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("exit %d, no %q in:\n%s", code, want, txt)
		}
	}
}

func TestDump(t *testing.T) {
	s := buildStores(t)
	// Records across the ledger's end into the journal.
	out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "dump", "--from", "295", "--count", "10", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 10 {
		t.Fatalf("exit %d, %d lines", code, len(lines))
	}
	for i, line := range lines {
		var r recordLine
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		lsn := uint64(295 + i)
		store := "ledger"
		if lsn > s.ledgerLast {
			store = "journal"
		}
		if r.LSN != lsn || r.Store != store || r.Events != 2 || r.Bytes != len(testRecord(t, lsn)) || !r.Received.Equal(received(lsn)) {
			t.Fatalf("line %d: %+v", i, r)
		}
	}
	// The table.
	out, _, code = ctl(t, "-ledger", s.ledger, "dump", "--from", "7", "--count", "2")
	if code != exitOK || !strings.Contains(out, "LSN") || !strings.Contains(out, "7  ") || !strings.Contains(out, "8  ") ||
		!strings.Contains(out, formatTime(received(7))) || strings.Contains(out, "9  ") {
		t.Fatalf("exit %d, table:\n%s", code, out)
	}
	// Events, byte for byte.
	out, _, code = ctl(t, "-journal", s.journal, "dump", "--count", "2", "--events")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 4 {
		t.Fatalf("exit %d, %d lines", code, len(lines))
	}
	for i, line := range lines {
		var ev struct {
			LSN      uint64          `json:"lsn"`
			Position int             `json:"position"`
			Event    json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		lsn, pos := s.journalFirst+uint64(i/2), i%2
		if ev.LSN != lsn || ev.Position != pos || !bytes.Equal(ev.Event, events(lsn)[pos]) {
			t.Fatalf("line %d: %s", i, line)
		}
	}
	// Nothing after the end (TestOutOfRange has more).
	_, errOut, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "dump", "--from", "401")
	if code != exitFailed || !strings.Contains(errOut, "--from 401 is past the last record, LSN 400") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestDumpBatchFlags: dump shows where a record stands in its batch.
func TestDumpBatchFlags(t *testing.T) {
	jdir := filepath.Join(t.TempDir(), "journal")
	j := openJournal(t, jdir)
	var b record.Builder
	b.Reset(t0)
	b.Add([]byte(`{"a":1}`))
	part, _ := b.FinishBatch(record.More, 7)
	for _, rec := range [][]byte{part, record.AppendAbort(nil, 7, t0)} {
		if _, err := j.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	out, _, code := ctl(t, "-journal", jdir, "dump", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 {
		t.Fatalf("exit %d, %d lines", code, len(lines))
	}
	for i, want := range []struct {
		flags string
		slot  uint16
	}{{"more", 7}, {"abort", 7}} {
		var r recordLine
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Flags != want.flags || r.Slot != want.slot {
			t.Fatalf("line %d: %s, want flags %s slot %d", i, lines[i], want.flags, want.slot)
		}
	}
	out, _, code = ctl(t, "-journal", jdir, "dump")
	if code != exitOK || !strings.Contains(out, "FLAGS") || !strings.Contains(out, "abort") {
		t.Fatalf("exit %d, table:\n%s", code, out)
	}
}

// TestDumpOddEvents: an event that is not JSON comes out in base64; a
// pretty-printed one on one line.
func TestDumpOddEvents(t *testing.T) {
	root := t.TempDir()
	jdir := filepath.Join(root, "journal")
	odd := [][]byte{[]byte("not json \x00\xff"), []byte("{\n  \"a\": 1,\n  \"b\": \"x\\ny\"\n}\n")}
	j := openJournal(t, jdir)
	appendEvents(t, j, odd)
	j.Close()
	out, _, code := ctl(t, "-journal", jdir, "dump", "--events")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 {
		t.Fatalf("exit %d, %d lines", code, len(lines))
	}
	if want := `{"lsn":1,"position":0,"event_base64":"` + base64.StdEncoding.EncodeToString(odd[0]) + `"}`; lines[0] != want {
		t.Fatalf("got  %s\nwant %s", lines[0], want)
	}
	if want := `{"lsn":1,"position":1,"event":{"a":1,"b":"x\ny"}}`; lines[1] != want {
		t.Fatalf("got  %s\nwant %s", lines[1], want)
	}
}

func TestCursors(t *testing.T) {
	s := buildStores(t)
	now := t0.Add(time.Hour)
	e, out, _ := testEnv(s, now)
	if code := cmdCursors(e, []string{"--json"}); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var doc struct {
		LastLSN uint64      `json:"last_lsn"`
		Cursors []cursorRow `json:"cursors"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	offs := ledgerOffsets(t, s.ledger)
	var wantBytes int64
	des, _ := os.ReadDir(s.ledger)
	for _, de := range des {
		if info, _ := de.Info(); strings.HasSuffix(de.Name(), ".seg") && filepath.Join(s.ledger, de.Name()) >= offs[101].file {
			wantBytes += info.Size()
		}
	}
	wantBytes -= offs[101].off
	if len(doc.Cursors) != 1 || doc.LastLSN != 300 {
		t.Fatalf("%+v", doc)
	}
	c := doc.Cursors[0]
	if c.Name != "elasticsearch" || c.Position != 100 || c.LagRecords != 200 || c.LagBytes != wantBytes ||
		!c.Oldest.Equal(received(101)) || c.AgeS != now.Sub(received(101)).Seconds() || c.Error != "" {
		t.Fatalf("cursor %+v, want lag bytes %d", c, wantBytes)
	}
	// A damaged cursor file is named, and the exit status is 1.
	os.WriteFile(filepath.Join(s.ledger, "cursors", "broken.cursor"), []byte("nope"), 0o640)
	txt, _, code := ctl(t, "-ledger", s.ledger, "cursors")
	if code != exitFailed || !strings.Contains(txt, "broken") || !strings.Contains(txt, "DAMAGED") ||
		!strings.Contains(txt, "elasticsearch  100       200") {
		t.Fatalf("exit %d:\n%s", code, txt)
	}
}

// TestOutOfRange asks for records and dead letters the stores do not hold:
// past the last LSN, before the oldest one retention kept, an id no dead
// letter has. Each exits 1 with a message saying what the stores hold.
func TestOutOfRange(t *testing.T) {
	s := buildStores(t)
	dlqDir := writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(0, `{"a":0}`), deadLetter(1, `{"a":1}`)})
	var ids []string
	if err := dlq.Scan(dlqDir, func(p dlq.Pos, _ dlq.Entry) error {
		ids = append(ids, fmt.Sprintf("%s:%d", p.File, p.Offset))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dirs := []string{"-journal", s.journal, "-ledger", s.ledger}
	check := func(args []string, code int, want string) {
		t.Helper()
		out, errOut, got := ctl(t, append(dirs, args...)...)
		if got != code || !strings.Contains(out+errOut, want) {
			t.Fatalf("ledgerctl %v: exit %d, want %d and %q:\n%s%s", args, got, code, want, out, errOut)
		}
	}
	check([]string{"dump", "--from", "999"}, exitFailed, "--from 999 is past the last record, LSN 400")
	check([]string{"dump", "--from", "401", "--events"}, exitFailed, "past the last record, LSN 400")
	check([]string{"dump", "--from", "400"}, exitOK, "journal")
	check([]string{"dump", "--from", "1", "--count", "1"}, exitOK, "ledger")
	check([]string{"dlq", "show", ids[1]}, exitOK, `"doc-1"`)
	check([]string{"dlq", "show", "--json", ids[0]}, exitOK, `"a":0`)
	check([]string{"dlq", "show", "00000000000000000001.dlq:21"}, exitFailed, "no dead letter 00000000000000000001.dlq:21")
	check([]string{"dlq", "show", "00000000000000000009.dlq:20"}, exitFailed, "no dead letter 00000000000000000009.dlq:20")
	check([]string{"dlq", "show", "../../etc/passwd:0"}, exitUsage, "is not a dead letter's id")
	check([]string{"dlq", "show"}, exitUsage, "say which one dead letter")

	// Retention deleted the oldest ledger segment: its LSNs are gone.
	segs, err := filepath.Glob(filepath.Join(s.ledger, "*.seg"))
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	for _, suffix := range []string{".seg", ".idx"} {
		if err := os.Remove(strings.TrimSuffix(segs[0], ".seg") + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	next := strings.TrimLeft(strings.TrimSuffix(filepath.Base(segs[1]), ".seg"), "0")
	check([]string{"dump", "--from", "1"}, exitFailed, "the oldest record at or after it is LSN "+next+", in the ledger")
	check([]string{"dump", "--from", next, "--count", "1"}, exitOK, next)
	check([]string{"dump", "--count", "1"}, exitOK, next)

	// Empty stores: --from names a record they do not hold.
	empty := t.TempDir()
	if _, errOut, code := ctl(t, "-ledger", empty, "dump", "--from", "1"); code != exitFailed || !strings.Contains(errOut, "the stores hold no record") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, errOut, code := ctl(t, "-ledger", empty, "dlq", "show", ids[0]); code != exitFailed || !strings.Contains(errOut, "holds no dead letters") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

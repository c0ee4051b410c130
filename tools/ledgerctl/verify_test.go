package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/output/dlq"
)

func TestVerifyClean(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(1, `{"a":1}`)})
	out, errOut, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
	for _, want := range []string{"300 records verified (LSN 1–300)", "150 records verified (LSN 251–400)", "1 cursor files read", "1 dead letters read", "verify: OK"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("exit %d, no %q in:\n%s", code, want, out)
		}
	}
	if errOut != "" {
		t.Fatalf("stderr is not a terminal, yet something was drawn there: %q", errOut)
	}
}

// TestVerifyDamage damages the stores in the ways the recovery rules tell
// apart, and checks the exit status and that the report names the file,
// the offset and the LSN.
func TestVerifyDamage(t *testing.T) {
	type damage struct {
		file string // "" when the damage is not in a file
		off  int64  // -1 when it has no offset
		lsn  uint64 // 0 when it has no LSN
	}
	cases := []struct {
		name string
		// damage breaks the stores and returns where the report must point
		// (lsn 0: no LSN to name).
		damage func(t *testing.T, s stores) damage
		code   int
		want   []string // more text the output must hold
	}{
		{"ledger: flipped byte inside a record of a sealed segment", func(t *testing.T, s stores) damage {
			w := ledgerOffsets(t, s.ledger)[50]
			storetest.Flip(t, w.file, w.off+16+30)
			return damage{w.file, w.off, 50}
		}, exitFailed, []string{"checksum mismatch"}},
		{"ledger: flipped LSN in a frame header of a sealed segment", func(t *testing.T, s stores) damage {
			w := ledgerOffsets(t, s.ledger)[80]
			storetest.Flip(t, w.file, w.off+8)
			return damage{w.file, w.off, 80}
		}, exitFailed, nil},
		{"ledger: sealed segment cut short", func(t *testing.T, s stores) damage {
			w := ledgerOffsets(t, s.ledger)[100]
			os.Truncate(w.file, w.off)
			return damage{w.file, w.off, 100}
		}, exitFailed, []string{"next segment"}},
		{"ledger: open segment torn, the journal still holds it", func(t *testing.T, s stores) damage {
			w := ledgerOffsets(t, s.ledger)[300]
			os.Truncate(w.file, w.off+20)
			return damage{w.file, w.off, 300}
		}, exitOK, []string{"note: ledger", "the journal still holds LSN 300", "verify: OK"}},
		{"ledger: open segment torn, the journal released it", func(t *testing.T, s stores) damage {
			os.RemoveAll(s.journal)
			writeJournal(t, s.journal, 300, 301, 400)
			w := ledgerOffsets(t, s.ledger)[300]
			storetest.Flip(t, w.file, w.off+16+10)
			return damage{w.file, w.off, 300}
		}, exitFailed, []string{"no longer holds LSN 300", "lost"}},
		{"ledger: flipped byte in a record in the middle of the open segment, the journal still holds it", func(t *testing.T, s stores) damage {
			w := openSegmentRecord(t, s, 285)
			storetest.Flip(t, w.file, w.off+16+30)
			return damage{w.file, w.off, 285}
		}, exitFailed, []string{"damage in the middle of the open segment", "this loses nothing: the journal still holds LSN 285", "(0 records lost)"}},
		{"ledger: flipped frame header in the middle of the open segment, the journal released it", func(t *testing.T, s stores) damage {
			os.RemoveAll(s.journal)
			writeJournal(t, s.journal, 300, 301, 400)
			w := openSegmentRecord(t, s, 275)
			storetest.Flip(t, w.file, w.off+8)
			return damage{w.file, w.off, 275}
		}, exitFailed, []string{"the journal no longer holds LSN 275: records 275–275 are lost", "seals the segment as it is", "(1 records lost)"}},
		{"journal: flipped byte in a closed generation", func(t *testing.T, s stores) damage {
			w := journalOffsets(t, s.journal)[260]
			storetest.Flip(t, w.file, w.off+40)
			return damage{w.file, w.off, 260}
		}, exitFailed, []string{"the ledger already holds LSN 260", "sets the damaged generation aside at start", "logs it at ERROR"}},
		{"journal: flipped byte in a closed generation the ledger holds wholly", func(t *testing.T, s stores) damage {
			os.RemoveAll(s.journal)
			writeJournal(t, s.journal, 200, 201, 400)
			offs := journalOffsets(t, s.journal)
			w := offs[210]
			for l := uint64(211); offs[l].file == w.file; l++ {
				if l >= 300 {
					t.Fatalf("the generation of LSN 210 holds LSNs up to %d: the test needs one the ledger holds wholly", l)
				}
			}
			storetest.Flip(t, w.file, w.off+40)
			return damage{w.file, w.off, 210}
		}, exitFailed, []string{"the ledger already holds every LSN of this closed generation", "releases the generation at start without reading it"}},
		{"journal: flipped byte in the newest generation, later groups follow", func(t *testing.T, s stores) damage {
			w := journalOffsets(t, s.journal)[390]
			storetest.Flip(t, w.file, w.off+40)
			return damage{w.file, w.off, 390}
		}, exitFailed, []string{"later write group follows"}},
		// A closed generation cut at an entry boundary: every entry left
		// verifies, but the file ends before the next generation's base.
		{"journal: closed generation cut at an entry boundary", func(t *testing.T, s stores) damage {
			offs := journalOffsets(t, s.journal)
			w, lsn := closedEntryAbove(t, offs, 300)
			os.Truncate(w.file, w.off)
			return damage{w.file, w.off, lsn}
		}, exitFailed, []string{"closed generation ends before its last LSN", "are missing"}},
		{"journal: torn last write", func(t *testing.T, s stores) damage {
			w := journalOffsets(t, s.journal)[400]
			os.Truncate(w.file, w.off+5)
			return damage{w.file, w.off, 400}
		}, exitOK, []string{"note: journal", "never acknowledged", "verify: OK"}},
		{"journal starts after the ledger ends", func(t *testing.T, s stores) damage {
			os.RemoveAll(s.journal)
			writeJournal(t, s.journal, 320, 321, 400)
			return damage{"", -1, 301}
		}, exitFailed, []string{"records 301–320 are in neither store"}},
		{"damaged cursor file", func(t *testing.T, s stores) damage {
			path := filepath.Join(s.ledger, "cursors", "elasticsearch.cursor")
			storetest.Flip(t, path, 3)
			return damage{path, -1, 0}
		}, exitFailed, []string{"checksum mismatch"}},
		{"damaged dead letter", func(t *testing.T, s stores) damage {
			dir := writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(1, `{"a":1}`)})
			writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(2, `{"b":2}`)})
			path := filepath.Join(dir, "00000000000000000001.dlq")
			storetest.Flip(t, path, 20+60)
			return damage{path, 20, 0}
		}, exitFailed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := buildStores(t)
			d := tc.damage(t, s)
			out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
			if code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			want := tc.want
			if tc.code == exitFailed {
				var loc []string
				if d.file != "" {
					loc = append(loc, "file "+d.file)
				}
				// A damaged range of a sealed segment is reported with
				// its byte and LSN ranges.
				rng := strings.Contains(out, fmt.Sprintf("bytes %d–", d.off))
				switch {
				case d.off >= 0 && rng:
					loc = append(loc, fmt.Sprint("bytes ", d.off, "–"))
				case d.off >= 0:
					loc = append(loc, fmt.Sprint("offset ", d.off))
				}
				switch {
				case d.lsn != 0 && rng:
					want = append(want, fmt.Sprint("LSN ", d.lsn, "–"))
				case d.lsn != 0:
					loc = append(loc, fmt.Sprint("LSN ", d.lsn))
				}
				want = append(want, "DAMAGE", strings.Join(loc, ", "), "verify: FAILED")
			} else {
				want = append(want, fmt.Sprintf("%s ends in a torn or partial write at offset %d (LSN %d", d.file, d.off, d.lsn))
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Fatalf("no %q in the report:\n%s", w, out)
				}
			}
			// The JSON report carries the same location.
			out, _, code = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify", "--json")
			var rep verifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != tc.code || rep.OK != (tc.code == exitOK) {
				t.Fatalf("exit %d, %v:\n%s", code, err, out)
			}
			if tc.code == exitFailed {
				got := rep.Damage
				if len(got) != 1 || got[0].File != d.file || (got[0].Offset == nil) != (d.off < 0) ||
					(got[0].Offset != nil && *got[0].Offset != d.off) || got[0].LSN != d.lsn {
					t.Fatalf("damage %+v, want %+v", got, d)
				}
			}
		})
	}
}

// openSegmentRecord returns where the record lsn is, checking that it is
// in the open segment and that a later write follows it.
func openSegmentRecord(t *testing.T, s stores, lsn uint64) where {
	t.Helper()
	offs := ledgerOffsets(t, s.ledger)
	w := offs[lsn]
	if last := offs[s.ledgerLast]; w.file != last.file || last.off-w.off < 4096 {
		t.Fatalf("LSN %d is not in the middle of the open segment", lsn)
	}
	return w
}

// closedEntryAbove returns an entry with LSN above lsn, not the first of
// its generation, in a generation other than the newest (the one holding
// the highest LSN), and its LSN.
func closedEntryAbove(t *testing.T, offs map[uint64]where, lsn uint64) (where, uint64) {
	t.Helper()
	var last uint64
	for l := range offs {
		last = max(last, l)
	}
	for l := lsn + 1; l < last; l++ {
		if w := offs[l]; w.file != offs[last].file && offs[l-1].file == w.file {
			return w, l
		}
	}
	t.Fatalf("no closed generation holds LSNs above %d", lsn)
	return where{}, 0
}

// TestVerifyOneStore: each store can be verified alone (the commands the
// stores' corruption errors suggest); the ledger alone cannot judge a torn
// open segment and says so without failing.
func TestVerifyOneStore(t *testing.T) {
	s := buildStores(t)
	if _, _, code := ctl(t, "-journal", s.journal, "verify"); code != exitOK {
		t.Fatalf("journal alone: exit %d", code)
	}
	w := ledgerOffsets(t, s.ledger)[300]
	os.Truncate(w.file, w.off+20)
	out, _, code := ctl(t, "-ledger", s.ledger, "verify")
	if code != exitOK || !strings.Contains(out, "without the journal") {
		t.Fatalf("ledger alone: exit %d:\n%s", code, out)
	}
}

// TestProgress: the bar is drawn on stderr only when it is a terminal, and
// erased afterwards; stdout is the same either way.
func TestProgress(t *testing.T) {
	s := buildStores(t)
	e, out, errOut := testEnv(s, t0)
	if code := cmdVerify(e, nil); code != exitOK || errOut.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	plain := out.String()
	e, out, errOut = testEnv(s, t0)
	e.progress = true
	if code := cmdVerify(e, nil); code != exitOK || out.String() != plain {
		t.Fatalf("exit %d, stdout changed:\n%s", code, out)
	}
	if !strings.Contains(errOut.String(), "\rverifying ledger ") || !strings.Contains(errOut.String(), "\rverifying journal ") ||
		!strings.HasSuffix(errOut.String(), "\r\033[K") {
		t.Fatalf("stderr %q", errOut)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if isTerminal(errOut) || isTerminal(pw) {
		t.Fatal("a buffer or a pipe is taken for a terminal")
	}
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test with: %v", err)
	}
	defer pty.Close()
	if !isTerminal(pty) {
		t.Fatal("a pseudo-terminal is not taken for a terminal")
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/ledger"
)

// TestVerifyListsEveryDamagedRange: two damaged records in a sealed
// segment and a sealed segment cut short: verify reads on past each, lists
// every range with its offsets and LSNs, verifies every other record, and
// exits 1.
func TestVerifyListsEveryDamagedRange(t *testing.T) {
	s := buildStores(t)
	offs := ledgerOffsets(t, s.ledger)
	storetest.Flip(t, offs[50].file, offs[50].off+16+30)
	storetest.Flip(t, offs[80].file, offs[80].off+8)
	if offs[50].file != offs[80].file || offs[300].file == offs[50].file {
		t.Fatalf("the test wants LSNs 50 and 80 in one sealed segment")
	}
	out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
	if code != exitFailed {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"298 records verified (LSN 1–300)", "2 records lost in damaged ranges",
		fmt.Sprintf("file %s, bytes %d–", offs[50].file, offs[50].off), "LSN 50–50 (1 records lost)",
		fmt.Sprintf("file %s, bytes %d–", offs[80].file, offs[80].off), "LSN 80–80 (1 records lost)",
		"verify: FAILED: 2 damaged location(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the report", want)
		}
	}
	// What the output quarantined is listed too.
	l, err := ledger.Open(s.ledger, ledger.Options{SegmentBytes: 64 << 10, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	r := l.Reader(1)
	r.SkipDamage()
	for r.Next() {
		if d := r.Damage(); d != nil {
			if _, err := l.Quarantine(*d); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.Close()
	l.Close()
	out, _, _ = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
	if strings.Count(out, "note: quarantine: the output skipped") != 2 || !strings.Contains(out, "LSN 80–80 (1 records lost") {
		t.Errorf("quarantine not listed:\n%s", out)
	}
	out, _, _ = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify", "--json")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Damage) != 2 || rep.Damage[0].LSN != 50 || rep.Damage[0].LastLSN != 50 || *rep.Damage[0].Records != 1 ||
		rep.Damage[1].LSN != 80 || *rep.Damage[1].End <= *rep.Damage[1].Offset || rep.Ledger.DamagedRecords != 2 {
		t.Fatalf("JSON damage: %s", out)
	}
}

// TestStatAndDumpAroundDamage: stat counts the records it verified and the
// records lost apart, and dump says where the damaged range is instead of
// jumping from LSN 49 to 51.
func TestStatAndDumpAroundDamage(t *testing.T) {
	s := buildStores(t)
	offs := ledgerOffsets(t, s.ledger)
	storetest.Flip(t, offs[50].file, offs[50].off+16+30)
	out, _, code := ctl(t, "-ledger", s.ledger, "stat")
	if code != exitFailed || !strings.Contains(out, "records         299 (LSN 1–300)") ||
		!strings.Contains(out, "damaged records 1 lost in 1 damaged ranges") || !strings.Contains(out, "LSN 50–50") {
		t.Fatalf("stat: exit %d:\n%s", code, out)
	}
	out, errOut, code := ctl(t, "-ledger", s.ledger, "dump", "--from", "48", "--count", "4")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitFailed || len(lines) != 6 || !strings.HasPrefix(lines[3], "50–50") || !strings.Contains(lines[3], "DAMAGED") ||
		!strings.HasPrefix(lines[4], "51 ") || !strings.HasPrefix(lines[5], "52 ") || !strings.Contains(errOut, "LSN 50–50") {
		t.Fatalf("dump: exit %d:\n%s\n%s", code, out, errOut)
	}
	// Starting inside the damaged range is not "no record with that LSN".
	out, errOut, code = ctl(t, "-ledger", s.ledger, "dump", "--from", "50", "--count", "1")
	if code != exitFailed || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, "51 ") || strings.Contains(errOut, "no record with that LSN") {
		t.Fatalf("dump --from 50: exit %d:\n%s\n%s", code, out, errOut)
	}
}

// TestRefusesDirectoriesThatAreNotStores: the journal given as the ledger,
// the ledger as the journal, or a source tree: refused, never "OK".
func TestRefusesDirectoriesThatAreNotStores(t *testing.T) {
	s := buildStores(t)
	root, _ := filepath.Abs("../..")
	for _, args := range [][]string{
		{"-ledger", s.journal, "verify"},
		{"-journal", s.ledger, "verify"},
		{"-ledger", root, "verify"},
		{"-journal", root, "stat"},
		{"-ledger", root, "dump"},
	} {
		out, errOut, code := ctl(t, args...)
		if code != exitFailed || strings.Contains(out, "OK") || !strings.Contains(errOut, "is not a logpond") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// An empty directory is an empty store.
	if _, _, code := ctl(t, "-ledger", t.TempDir(), "verify"); code != exitOK {
		t.Errorf("empty ledger directory: exit %d", code)
	}
}

// TestPermissionDeniedIsNotDamage: a store ledgerctl may not read is
// named with what to do, not reported as damage.
func TestPermissionDeniedIsNotDamage(t *testing.T) {
	err := permissionOr("/x/00000000000000000001.seg", &fs.PathError{Op: "open", Path: "/x/00000000000000000001.seg", Err: syscall.EACCES})
	if !strings.Contains(err.Error(), "permission denied — run as the user that owns the store") {
		t.Fatalf("message: %v", err)
	}
	if os.Geteuid() == 0 {
		// The message names the owner, in the command to run.
		seg := filepath.Join(t.TempDir(), "00000000000000000001.seg")
		if err := os.WriteFile(seg, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(seg, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		err := permissionOr(seg, &fs.PathError{Op: "open", Path: seg, Err: syscall.EACCES})
		if want := "e.g. " + sudoAs(otherUID) + "ledgerctl …"; !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
		t.Skip("root reads every file: the end-to-end part needs another user")
	}
	s := buildStores(t)
	offs := ledgerOffsets(t, s.ledger)
	os.Chmod(offs[50].file, 0)
	defer os.Chmod(offs[50].file, 0o640)
	out, errOut, code := ctl(t, "-ledger", s.ledger, "verify")
	if code != exitFailed || strings.Contains(out, "DAMAGE") || !strings.Contains(errOut, "permission denied — run as the user that owns the store") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
}

// TestCursorSetAndRewind: with logpond stopped an operator moves a cursor
// back to an LSN or a time (a replay) or forward; while the ledger is
// locked, or outside the ledger, it is refused and the cursor stays.
func TestCursorSetAndRewind(t *testing.T) {
	s := buildStores(t)
	cursorAt := func() uint64 {
		t.Helper()
		cs, err := ledger.ReadCursors(s.ledger)
		if err != nil || len(cs) != 1 || cs[0].Err != nil {
			t.Fatalf("cursors %+v, %v", cs, err)
		}
		return cs[0].LSN
	}
	out, _, code := ctl(t, "-ledger", s.ledger, "cursors", "rewind", "elasticsearch", "--from-lsn", "40")
	if code != exitOK || cursorAt() != 39 || !strings.Contains(out, "records 40–100 will be sent again") {
		t.Fatalf("rewind --from-lsn: exit %d, cursor %d:\n%s", code, cursorAt(), out)
	}
	// LSN n was received n seconds after t0.
	ts := received(25).Add(-500 * time.Millisecond).Format(time.RFC3339Nano)
	if _, _, code := ctl(t, "-ledger", s.ledger, "cursors", "rewind", "elasticsearch", "--from-time", ts); code != exitOK || cursorAt() != 24 {
		t.Fatalf("rewind --from-time: exit %d, cursor %d", code, cursorAt())
	}
	if _, _, code := ctl(t, "-ledger", s.ledger, "cursors", "set", "elasticsearch", "200"); code != exitOK || cursorAt() != 200 {
		t.Fatalf("set: exit %d, cursor %d", code, cursorAt())
	}
	for _, args := range [][]string{
		{"cursors", "set", "elasticsearch", "301"},                                    // past the end
		{"cursors", "rewind", "elasticsearch", "--from-lsn", "250"},                   // forward
		{"cursors", "set", "nosuch", "10"},                                            // no such cursor
		{"cursors", "rewind", "elasticsearch", "--from-time", "2030-01-01T00:00:00Z"}, // nothing received then
	} {
		if _, _, code := ctl(t, append([]string{"-ledger", s.ledger}, args...)...); code != exitFailed || cursorAt() != 200 {
			t.Errorf("%v: exit %d, cursor %d", args, code, cursorAt())
		}
	}
	// A running logpond holds the directory's lock.
	lock, err := dirlock.Acquire(s.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, errOut, code := ctl(t, "-ledger", s.ledger, "cursors", "set", "elasticsearch", "10")
	if code != exitFailed || cursorAt() != 200 || !strings.Contains(errOut, "logpond is running") {
		t.Fatalf("while locked: exit %d, cursor %d: %s", code, cursorAt(), errOut)
	}
}

// TestVerifySealedSegmentRegions damages every kind of region of a sealed
// ledger segment. Each row says what verify must report: the damaged range
// with exactly the LSNs whose bytes were touched (exit 1), read past so that
// every other record is verified, or OK where nothing is lost (padding, a
// sparse index: a hint logpond rebuilds).
func TestVerifySealedSegmentRegions(t *testing.T) {
	type lost struct{ first, last uint64 } // {0, 0}: nothing lost, verify OK
	cases := []struct {
		name string
		// damage breaks the segment and returns the LSNs that must be
		// reported lost.
		damage func(t *testing.T, offs map[uint64]where, next func(uint64) int64) lost
	}{
		{"record body", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, offs[50].file, offs[50].off+16+30)
			return lost{50, 50}
		}},
		{"frame header length", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, offs[60].file, offs[60].off)
			return lost{60, 60}
		}},
		{"frame header CRC", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, offs[60].file, offs[60].off+5)
			return lost{60, 60}
		}},
		{"frame header LSN", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, offs[60].file, offs[60].off+9)
			return lost{60, 60}
		}},
		{"first frame of the segment", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, offs[1].file, offs[1].off+16+3)
			return lost{1, 1}
		}},
		{"last frame of the segment", func(t *testing.T, offs map[uint64]where, next func(uint64) int64) lost {
			storetest.Flip(t, offs[160].file, next(160)-2)
			return lost{160, 160}
		}},
		{"a whole block zeroed", func(t *testing.T, offs map[uint64]where, next func(uint64) int64) lost {
			b, _ := os.ReadFile(offs[100].file)
			a := (offs[100].off/4096 + 1) * 4096
			clear(b[a : a+4096])
			os.WriteFile(offs[100].file, b, 0o640)
			var l lost // the records the block touched
			for lsn := uint64(1); lsn <= 160; lsn++ {
				if offs[lsn].off < a+4096 && next(lsn) > a {
					if l.first == 0 {
						l.first = lsn
					}
					l.last = lsn
				}
			}
			return l
		}},
		{"padding after a write (a hole: nothing lost)", func(t *testing.T, offs map[uint64]where, next func(uint64) int64) lost {
			storetest.Flip(t, offs[70].file, next(70)+2)
			return lost{0, 0}
		}},
		{"sparse index damaged (rebuilt: nothing lost)", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			storetest.Flip(t, strings.TrimSuffix(offs[1].file, ".seg")+".idx", 6)
			return lost{0, 0}
		}},
		{"sparse index missing (rebuilt: nothing lost)", func(t *testing.T, offs map[uint64]where, _ func(uint64) int64) lost {
			os.Remove(strings.TrimSuffix(offs[1].file, ".seg") + ".idx")
			return lost{0, 0}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := buildStores(t)
			offs := ledgerOffsets(t, s.ledger)
			if offs[160].file != offs[1].file || offs[161].file == offs[1].file {
				t.Fatal("the test wants LSNs 1–160 in the first (sealed) segment")
			}
			// next returns the end of the frame of lsn (its record length
			// is in its header).
			next := func(lsn uint64) int64 {
				b, _ := os.ReadFile(offs[lsn].file)
				o := offs[lsn].off
				return o + 16 + int64(uint32(b[o])|uint32(b[o+1])<<8|uint32(b[o+2])<<16|uint32(b[o+3])<<24)
			}
			want := tc.damage(t, offs, next)
			out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify", "--json")
			var rep verifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if want == (lost{}) {
				if code != exitOK || !rep.OK || rep.Ledger.Records != 300 {
					t.Fatalf("exit %d, %d records verified: want OK over all 300", code, rep.Ledger.Records)
				}
				return
			}
			n := want.last - want.first + 1
			if code != exitFailed || len(rep.Damage) != 1 || rep.Damage[0].File != offs[1].file ||
				rep.Damage[0].LSN != want.first || rep.Damage[0].LastLSN != want.last || *rep.Damage[0].Records != n ||
				rep.Ledger.Records != 300-n || rep.Ledger.DamagedRecords != n {
				t.Fatalf("exit %d, want 1 with LSNs %d–%d lost and the other %d records verified:\n%s", code, want.first, want.last, 300-n, out)
			}
		})
	}
}

package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// fixture is a journal of 14 records: LSNs 1–11 each written and fsynced
// on its own, then 12–14 written while 12's fsync was held (one group in
// the sense of recovery: their group field is 12).
type fixture struct {
	dir     string
	segment string
	offsets map[uint64]int64 // LSN → offset of its entry
	ends    map[uint64]int64 // LSN → offset just past its entry
	size    int64
}

const fixtureRecords = 14

func fixtureRecord(t testing.TB, lsn uint64) []byte { return rec(t, 0, int(lsn), int(lsn)*7) }

func buildFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	opts := smallOpts()
	c := counting(&opts)
	j := mustOpen(t, dir, opts)
	for lsn := uint64(1); lsn <= 11; lsn++ {
		mustAppend(t, j, fixtureRecord(t, lsn))
	}
	// Hold the fsync of LSN 12; 13 and 14 are written while it waits, so
	// all three carry group 12: the lowest LSN not yet fsynced.
	hold := make(chan struct{})
	c.mu.Lock()
	c.hold = hold
	c.mu.Unlock()
	var wg sync.WaitGroup
	for lsn := uint64(12); lsn <= 14; lsn++ {
		wg.Add(1)
		go func() { defer wg.Done(); mustAppend(t, j, fixtureRecord(t, lsn)) }()
		c.waitWritten(lsn) // before the next one is appended
	}
	c.mu.Lock()
	c.hold = nil
	c.mu.Unlock()
	close(hold)
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f := fixture{dir: dir, segment: filepath.Join(dir, genName(0), segmentFile), offsets: map[uint64]int64{}, ends: map[uint64]int64{}}
	data, err := os.ReadFile(f.segment)
	if err != nil {
		t.Fatal(err)
	}
	s := newScanner(f.segment, data, 1, 0, false)
	for s.Next() {
		e := s.Frame()
		f.offsets[e.Pos] = e.Off
		f.ends[e.Pos] = s.Offset()
		wantGroup := e.Pos
		if e.Pos >= 12 {
			wantGroup = 12
		}
		if e.Write != wantGroup {
			t.Fatalf("fixture: LSN %d is in group %d, want %d", e.Pos, e.Write, wantGroup)
		}
	}
	if s.Err() != nil || len(f.offsets) != fixtureRecords {
		t.Fatalf("fixture: %d records, err %v", len(f.offsets), s.Err())
	}
	f.size = int64(len(data))
	return f
}

// copyTo copies the fixture's journal into a fresh directory.
func (f fixture) copyTo(t *testing.T) (dir, segment string) {
	dir = t.TempDir()
	segment = filepath.Join(dir, genName(0), segmentFile)
	os.MkdirAll(filepath.Dir(segment), 0o750)
	src, _ := os.Open(f.segment)
	defer src.Close()
	dst, _ := os.Create(segment)
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	return dir, segment
}

func modify(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o640); err != nil {
		t.Fatal(err)
	}
}

// expectKept opens dir and checks that exactly LSNs 1..kept survive, intact,
// and that the next append continues at kept+1.
func expectKept(t *testing.T, dir string, kept uint64) *Journal {
	t.Helper()
	j := mustOpen(t, dir, smallOpts())
	got := readAll(t, j)
	if uint64(len(got)) != kept {
		j.Close()
		t.Fatalf("kept %d records, want %d", len(got), kept)
	}
	for lsn := uint64(1); lsn <= kept; lsn++ {
		if !bytes.Equal(got[lsn], fixtureRecord(t, lsn)) {
			j.Close()
			t.Fatalf("LSN %d missing or changed", lsn)
		}
	}
	if lsn := mustAppend(t, j, rec(t, 9, 9, 0)); lsn != kept+1 {
		j.Close()
		t.Fatalf("next append got LSN %d, want %d", lsn, kept+1)
	}
	return j
}

func TestCorruptionTable(t *testing.T) {
	f := buildFixture(t)
	type result struct {
		kept      uint64 // records that must survive; ignored when refuse
		cutAt     int64  // expected Repair.Offset, -1 for no repair
		refuse    bool   // Open must fail with a located *CorruptionError
		refuseLSN uint64
		// sealed: a generation follows the fixture's (base 14), so the
		// fixture's is closed, with its last LSN 14: refuse means that
		// Open, and reading it (Reader, DirReader, Segments), fail with a
		// located *CorruptionError.
		sealed bool
	}
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		want   result
	}{
		{"intact", func(b []byte) []byte { return b }, result{kept: 14, cutAt: -1}},
		{"zero-filled tail after the last record", func(b []byte) []byte { return append(b, make([]byte, 4096)...) },
			result{kept: 14, cutAt: f.size}},
		// A recycled segment (recycle.go) holds entries of an older
		// generation after the ones written into it: valid frames whose
		// LSNs are below the expected one.
		{"stale entries of an older generation after the last record", func(b []byte) []byte {
			return append(b, b[f.offsets[1]:f.ends[5]]...)
		}, result{kept: 14, cutAt: f.size}},
		{"stale entries after a torn last record", func(b []byte) []byte {
			stale := append([]byte(nil), b[f.offsets[2]:f.ends[6]]...)
			return append(b[:f.offsets[14]+10], stale...)
		}, result{kept: 13, cutAt: f.offsets[14]}},
		{"last group zero-filled in place", func(b []byte) []byte { clear(b[f.offsets[12]:]); return b },
			result{kept: 11, cutAt: f.offsets[12]}},
		{"flipped byte in the last record", func(b []byte) []byte { b[f.offsets[14]+30] ^= 0x40; return b },
			result{kept: 13, cutAt: f.offsets[14]}},
		{"flipped byte mid last group (rest of the group follows)", func(b []byte) []byte { b[f.offsets[13]+30] ^= 0x40; return b },
			result{kept: 12, cutAt: f.offsets[13]}},
		{"flipped byte in the first record of the last group", func(b []byte) []byte { b[f.ends[12]-1] ^= 1; return b },
			result{kept: 11, cutAt: f.offsets[12]}},
		{"flipped byte in the middle", func(b []byte) []byte { b[f.offsets[5]+40] ^= 0x01; return b },
			result{refuse: true, refuseLSN: 5}},
		{"flipped length prefix in the middle", func(b []byte) []byte { b[f.offsets[5]] ^= 0x7f; return b },
			result{refuse: true, refuseLSN: 5}},
		{"flipped LSN field in the middle", func(b []byte) []byte { b[f.offsets[7]+1+offFrameLSN] ^= 0x02; return b },
			result{refuse: true, refuseLSN: 7}},
		{"group before the last one damaged", func(b []byte) []byte { b[f.offsets[11]+50] ^= 0x10; return b },
			result{refuse: true, refuseLSN: 11}},
		{"closed generation intact", func(b []byte) []byte { return b },
			result{kept: 14, cutAt: -1, sealed: true}},
		{"closed generation with stale bytes after its last LSN", func(b []byte) []byte { return append(b, b[f.offsets[1]:f.ends[5]]...) },
			result{kept: 14, cutAt: -1, sealed: true}},
		// The file ends at an entry boundary before the generation's last
		// LSN: every entry verifies, the missing ones are damage.
		{"closed generation cut at an entry boundary", func(b []byte) []byte { return b[:f.ends[11]] },
			result{refuse: true, refuseLSN: 12, sealed: true}},
		{"closed generation without its last entry", func(b []byte) []byte { return b[:f.ends[13]] },
			result{refuse: true, refuseLSN: 14, sealed: true}},
		{"closed generation emptied", func(b []byte) []byte { return b[:0] },
			result{refuse: true, refuseLSN: 1, sealed: true}},
		{"closed generation torn inside its last entry", func(b []byte) []byte { return b[:f.offsets[14]+10] },
			result{refuse: true, refuseLSN: 14, sealed: true}},
		{"closed generation's last group zero-filled", func(b []byte) []byte { clear(b[f.offsets[12]:]); return b },
			result{refuse: true, refuseLSN: 12, sealed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, seg := f.copyTo(t)
			modify(t, seg, tc.damage)
			if tc.want.sealed {
				checkSealed(t, f, dir, seg, tc.want.kept, tc.want.refuse, tc.want.refuseLSN)
				return
			}
			if tc.want.refuse {
				j, err := Open(dir, smallOpts())
				if err == nil {
					j.Close()
					t.Fatal("opened a journal with damage before its last group")
				}
				var ce *CorruptionError
				if !errors.As(err, &ce) {
					t.Fatalf("got %v, want a *CorruptionError", err)
				}
				if ce.File != seg || ce.Offset != f.offsets[tc.want.refuseLSN] || ce.LSN != tc.want.refuseLSN {
					t.Fatalf("error locates %s:%d LSN %d, want %s:%d LSN %d (%v)", ce.File, ce.Offset, ce.LSN, seg, f.offsets[tc.want.refuseLSN], tc.want.refuseLSN, err)
				}
				if b, _ := os.ReadFile(seg); int64(len(b)) != f.size {
					t.Fatal("a refused open changed the file")
				}
				return
			}
			j := expectKept(t, dir, tc.want.kept)
			defer j.Close()
			rep := j.Recovery()
			switch {
			case tc.want.cutAt < 0 && rep != nil:
				t.Fatalf("unexpected repair %+v", rep)
			case tc.want.cutAt >= 0 && (rep == nil || rep.Offset != tc.want.cutAt || rep.File != seg || rep.FirstLSN != tc.want.kept+1):
				t.Fatalf("repair %+v, want a cut of %s at %d from LSN %d", rep, seg, tc.want.cutAt, tc.want.kept+1)
			}
		})
	}
}

// checkSealed closes the fixture's generation in dir by adding the next
// one (base 14) and reads it with Open's Reader, a DirReader and Segments:
// either all 14 records (and then the next append is LSN 15), or, with
// refuse, the records before refuseLSN and a *CorruptionError naming seg,
// the offset where refuseLSN's entry belongs, and refuseLSN; Open then
// refuses with the same error, and the Reader meets it when the damage
// appears after Open.
func checkSealed(t *testing.T, f fixture, dir, seg string, kept uint64, refuse bool, refuseLSN uint64) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(dir, genName(fixtureRecords)), 0o750); err != nil {
		t.Fatal(err)
	}
	wantErr := func(who string, err error) {
		t.Helper()
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: got %v, want a *CorruptionError", who, err)
		}
		if ce.File != seg || ce.Offset != f.offsets[refuseLSN] || ce.LSN != refuseLSN {
			t.Fatalf("%s: error locates %s:%d LSN %d, want %s:%d LSN %d (%v)", who, ce.File, ce.Offset, ce.LSN, seg, f.offsets[refuseLSN], refuseLSN, err)
		}
	}
	if refuse {
		kept = refuseLSN - 1
	}
	// The DirReader and Segments first: Open creates the next
	// generation's segment file.
	dr, err := NewDirReader(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for dr.Next() {
		if n++; dr.LSN() != n || !bytes.Equal(dr.Record(), fixtureRecord(t, n)) {
			t.Fatalf("DirReader: LSN %d missing or changed", n)
		}
	}
	if n != kept {
		t.Fatalf("DirReader read %d records, want %d", n, kept)
	}
	segs, err := Segments(dir)
	if err != nil || len(segs) != 2 {
		t.Fatalf("Segments: %+v, %v", segs, err)
	}
	if refuse {
		wantErr("DirReader", dr.Err())
		wantErr("Segments", segs[0].Damage)
	} else if dr.Err() != nil || dr.Tail() != nil || segs[0].Damage != nil {
		t.Fatalf("DirReader: %v, tail %+v; Segments: %v", dr.Err(), dr.Tail(), segs[0].Damage)
	}
	var damaged []byte
	if refuse {
		// Open verifies a closed generation the ledger does not hold
		// (no Settled here): it refuses. The Reader meets the same
		// damage when it appears while the journal is open.
		if j, err := Open(dir, smallOpts()); err == nil {
			j.Close()
			t.Fatal("Open accepted a damaged closed generation")
		} else {
			wantErr("Open", err)
		}
		damaged, _ = os.ReadFile(seg)
		modify(t, seg, func([]byte) []byte { b, _ := os.ReadFile(f.segment); return b })
	}
	j := mustOpen(t, dir, smallOpts())
	defer j.Close()
	if refuse {
		modify(t, seg, func([]byte) []byte { return damaged })
	}
	r := j.Reader(1)
	n = 0
	for r.Next() {
		if n++; r.LSN() != n || !bytes.Equal(r.Record(), fixtureRecord(t, n)) {
			t.Fatalf("Reader: LSN %d missing or changed", n)
		}
	}
	if n != kept {
		t.Fatalf("Reader read %d records, want %d", n, kept)
	}
	if refuse {
		wantErr("Reader", r.Err())
		return
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if lsn := mustAppend(t, j, rec(t, 9, 9, 0)); lsn != fixtureRecords+1 {
		t.Fatalf("next append got LSN %d, want %d", lsn, fixtureRecords+1)
	}
}

// TestTruncateAtEveryOffset cuts the file at every byte offset across the
// last group and the record before it: exactly the entries wholly before
// the cut survive.
func TestTruncateAtEveryOffset(t *testing.T) {
	f := buildFixture(t)
	for cut := f.offsets[10]; cut < f.size; cut++ {
		var kept uint64
		for lsn := uint64(1); lsn <= fixtureRecords; lsn++ {
			if f.ends[lsn] <= cut {
				kept = lsn
			}
		}
		dir, seg := f.copyTo(t)
		modify(t, seg, func(b []byte) []byte { return b[:cut] })
		j := expectKept(t, dir, kept)
		rep := j.Recovery()
		j.Close()
		torn := cut != f.ends[kept]
		if torn != (rep != nil) || (torn && (rep.Offset != f.ends[kept] || rep.Bytes != cut-f.ends[kept])) {
			t.Fatalf("cut at %d: repair %+v, want torn=%v from %d", cut, rep, torn, f.ends[kept])
		}
	}
}

// TestDamageInSealedGeneration: older generations were fsynced before the
// next began; damage there is refused by Open, and reported, with
// location, when read.
func TestDamageInSealedGeneration(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	for i := range 100 {
		mustAppend(t, j, rec(t, 0, i, 2000))
	}
	j.Close()
	seg := filepath.Join(dir, genName(0), segmentFile)
	// Open verifies the closed generation and refuses; the Reader meets
	// the same damage when it appears while the journal is open.
	modify(t, seg, func(b []byte) []byte { b[100] ^= 0xff; return b })
	var ce *CorruptionError
	if j, err := Open(dir, smallOpts()); !errors.As(err, &ce) || ce.File != seg || ce.Offset != 0 || ce.LSN != 1 {
		if err == nil {
			j.Close()
		}
		t.Fatalf("Open: %v, want a *CorruptionError at %s:0 LSN 1", err, seg)
	}
	modify(t, seg, func(b []byte) []byte { b[100] ^= 0xff; return b })
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	modify(t, seg, func(b []byte) []byte { b[100] ^= 0xff; return b })
	r := j.Reader(1)
	for r.Next() {
	}
	if !errors.As(r.Err(), &ce) || ce.File != seg || ce.Offset != 0 || ce.LSN != 1 {
		t.Fatalf("reader error %v, want a *CorruptionError at %s:0 LSN 1", r.Err(), seg)
	}
	// The reader says how to inspect it.
	if want := "ledgerctl -journal " + dir + " verify"; !bytes.Contains([]byte(r.Err().Error()), []byte(want)) {
		t.Fatalf("error %q does not name %q", r.Err(), want)
	}
	_ = context.Background
}

// TestDamageTheLedgerHolds: with Options.Settled (the ledger's last LSN),
// damage to records at or below it loses nothing: Open sets it aside,
// logs it at ERROR and starts, and every record after Settled stays
// readable. Damage that reaches past Settled is refused, as without it.
func TestDamageTheLedgerHolds(t *testing.T) {
	const total = 500
	src := inspectFixture(t, total)
	segs, err := Segments(src)
	if err != nil || len(segs) < 3 {
		t.Fatalf("fixture: %+v, %v; want at least 3 generations", segs, err)
	}
	closed, newest := segs[1], segs[len(segs)-1]
	offsets := map[uint64]int64{}
	r, _ := NewDirReader(src, 1)
	for r.Next() {
		offsets[r.LSN()] = r.Offset()
	}
	nf, cf, cl := newest.FirstLSN, closed.FirstLSN, closed.LastLSN
	flip := func(lsn uint64, at int64) func(string) {
		return func(p string) { storetest.Flip(t, p, offsets[lsn]+at) }
	}
	cases := []struct {
		name    string
		file    string // the generation damaged
		settled uint64
		damage  func(path string)
		refuse  uint64 // the LSN a refusal names; 0: Open must succeed
		aside   bool   // the damaged generation is set aside, logged at ERROR
		// interrupted: a crash came between the set-aside's two renames:
		// the salvaged generation is in place, the damaged one is still
		// under its own name. The journal must open from that state
		// without setting anything aside again.
		interrupted bool
	}{
		{"newest generation: flipped record the ledger holds, later groups follow", newest.File, nf + 20,
			flip(nf+5, 40), 0, true, false},
		{"newest generation: flipped length prefix the ledger holds", newest.File, nf + 20,
			flip(nf+5, 0), 0, true, false},
		{"newest generation: the ledger's last record damaged", newest.File, nf + 20,
			flip(nf+20, 40), 0, true, false},
		{"newest generation: damage, the ledger holds every record", newest.File, total,
			flip(nf+5, 40), 0, true, false},
		{"newest generation: damage just after the ledger's last LSN", newest.File, nf + 5,
			flip(nf+6, 40), nf + 6, false, false},
		{"newest generation: damage reaching past the ledger's last LSN", newest.File, nf + 5,
			func(p string) { storetest.Flip(t, p, offsets[nf+3]+40); storetest.Flip(t, p, offsets[nf+6]+40) }, nf + 6, false, false},
		{"closed generation holding the ledger's last LSN, damaged below it", closed.File, cf + 10,
			flip(cf+3, 40), 0, true, false},
		{"closed generation holding the ledger's last LSN, damaged above it", closed.File, cf + 10,
			flip(cf+13, 40), cf + 13, false, false}, // the flusher replays it: refused at Open
		{"closed generation holding the ledger's last LSN, cut below it", closed.File, cf + 10,
			func(p string) { os.Truncate(p, offsets[cf+3]) }, cf + 11, false, false},
		{"closed generation wholly below the ledger's last LSN, damaged", closed.File, cl + 3,
			flip(cf+3, 40), 0, false, false},
		{"closed generation wholly below the ledger's last LSN, cut at an entry boundary", closed.File, cl + 3,
			func(p string) { os.Truncate(p, offsets[cf+3]) }, 0, false, false},
		{"closed generation ending at the ledger's last LSN, damaged", closed.File, cl,
			flip(cf+3, 40), 0, false, false},
		{"closed generation ending at the ledger's last LSN, cut at an entry boundary", closed.File, cl,
			func(p string) { os.Truncate(p, offsets[cf+3]) }, 0, false, false},
		{"newest generation: a crash between the set-aside's renames", newest.File, nf + 20,
			flip(nf+5, 40), 0, false, true},
		{"newest generation, the ledger holds every record: a crash between the set-aside's renames", newest.File, total,
			flip(nf+5, 40), 0, false, true},
		{"closed generation holding the ledger's last LSN: a crash between the set-aside's renames", closed.File, cf + 10,
			flip(cf+3, 40), 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, src)
			gen := filepath.Base(filepath.Dir(tc.file))
			path := filepath.Join(dir, gen, segmentFile)
			tc.damage(path)
			// What a crash in the middle of an earlier set-aside leaves.
			interrupted := filepath.Join(dir, salvagePrefix+"00000000000000000001")
			if err := os.Mkdir(interrupted, 0o750); err != nil {
				t.Fatal(err)
			}
			opts := smallOpts()
			opts.StartAfter, opts.Settled = tc.settled, tc.settled
			if tc.interrupted {
				interruptSetAside(t, dir, gen, opts)
			}
			lb := &syncbuf.Buffer{}
			opts.Logger = slog.New(slog.NewTextHandler(lb, nil))
			j, err := Open(dir, opts)
			if tc.refuse != 0 {
				if err == nil {
					j.Close()
					t.Fatal("opened a journal with damage past the ledger's last LSN")
				}
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.File != path || ce.LSN != tc.refuse {
					t.Fatalf("got %v, want a *CorruptionError in %s naming LSN %d", err, path, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if _, err := os.Stat(interrupted); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("an interrupted set-aside was left: %v", err)
			}
			log := lb.String()
			_, statErr := os.Stat(filepath.Join(dir, damagedPrefix+gen[len(genPrefix):]))
			if tc.aside {
				for _, want := range []string{"level=ERROR", "nothing is lost", path, fmt.Sprint("ledger_last_lsn=", tc.settled)} {
					if !strings.Contains(log, want) {
						t.Fatalf("no %q in the log:\n%s", want, log)
					}
				}
				if statErr != nil {
					t.Fatalf("the damaged generation was not set aside: %v", statErr)
				}
			} else if strings.Contains(log, "level=ERROR") || statErr == nil {
				t.Fatalf("set aside, or logged an error, with nothing to set aside:\n%s", log)
			}
			// Every record after the ledger's last LSN is there.
			if got := j.LastLSN(); got != total {
				t.Fatalf("last LSN %d, want %d", got, total)
			}
			jr := j.Reader(tc.settled + 1)
			next := tc.settled + 1
			for jr.Next() {
				if jr.LSN() != next || !bytes.Equal(jr.Record(), inspectRec(t, next)) {
					t.Fatalf("Reader: LSN %d missing or changed (got LSN %d)", next, jr.LSN())
				}
				next++
			}
			var ce *CorruptionError
			switch damagedAbove := tc.settled == cf+10 && !tc.aside && !tc.interrupted; {
			case damagedAbove && errors.As(jr.Err(), &ce) && ce.LSN == cf+13:
				return // the damage the ledger lacks is still reported, located
			case damagedAbove:
				t.Fatalf("Reader: %v, want the damage at LSN %d", jr.Err(), cf+13)
			case jr.Err() != nil || next != total+1:
				t.Fatalf("Reader stopped at LSN %d: %v", next, jr.Err())
			}
			if lsn := mustAppend(t, j, inspectRec(t, total+1)); lsn != total+1 {
				t.Fatalf("next append got LSN %d, want %d", lsn, total+1)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			// What is left is a sound journal: it reads from its first
			// record on without damage, and opens without setting
			// anything aside again.
			lsns, dr := readDir(t, dir, 1)
			if dr.Err() != nil || dr.Tail() != nil || len(lsns) == 0 || lsns[0] > tc.settled+1 || lsns[len(lsns)-1] != total+1 {
				t.Fatalf("after the set-aside: read %d records (%v…), err %v, tail %+v", len(lsns), lsns[:min(len(lsns), 3)], dr.Err(), dr.Tail())
			}
			lb2 := &syncbuf.Buffer{}
			opts.Logger = slog.New(slog.NewTextHandler(lb2, nil))
			j2, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			j2.Close()
			if strings.Contains(lb2.String(), "level=ERROR") {
				t.Fatalf("the next open set something aside again:\n%s", lb2)
			}
		})
	}
}

// interruptSetAside leaves in dir what a crash between the two renames of
// a set-aside of generation gen leaves: it opens the journal (which sets
// gen aside), closes it, and renames the damaged generation back.
func interruptSetAside(t *testing.T, dir, gen string, opts Options) {
	t.Helper()
	lb := &syncbuf.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(lb, nil))
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lb.String(), "level=ERROR") {
		t.Fatalf("nothing was set aside: the test proves nothing:\n%s", lb)
	}
	aside := filepath.Join(dir, damagedPrefix+gen[len(genPrefix):])
	if err := os.Rename(aside, filepath.Join(dir, gen)); err != nil {
		t.Fatal(err)
	}
}

// TestJournalEndingBeforeTheLedgerWithATornTail: a newest generation that
// ends before Settled in a torn tail, or in the stale rest of a recycled
// file, after a crash, is a journal that ends before the ledger: Open cuts
// the tail (logged as a repair, not as damage), continues after the
// ledger's last LSN, and sets nothing aside.
func TestJournalEndingBeforeTheLedgerWithATornTail(t *testing.T) {
	for _, recycled := range []bool{false, true} {
		t.Run(fmt.Sprintf("recycled=%v", recycled), func(t *testing.T) {
			opts := smallOpts()
			if recycled {
				opts = recycleOpts()
			}
			r := newRecycler(t, opts)
			r.untilGenerations(3, 2000)
			r.releaseOldest(2)
			before := len(r.j.gensSnapshot())
			if recycled {
				r.untilGenerations(before+1, 2000) // the newest overwrites a spare
			}
			for range 7 {
				r.append(500)
			}
			gens := r.j.gensSnapshot()
			newest := gens[len(gens)-1]
			crashed := copyTree(t, r.dir)
			last := r.j.LastLSN()
			if err := r.j.Close(); err != nil {
				t.Fatal(err)
			}
			seg := filepath.Join(crashed, filepath.Base(newest.dir), segmentFile)
			written := entriesBytes(t, generation{base: newest.base, dir: filepath.Dir(seg)}, 0)
			if size := stat(t, seg).Size(); recycled && size <= written {
				t.Fatalf("the newest generation's file is %d bytes, %d written: the test needs a stale rest", size, written)
			}
			if !recycled {
				// Half of another entry: a write the crash tore.
				data, err := os.ReadFile(seg)
				if err != nil {
					t.Fatal(err)
				}
				f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.Write(data[written-int64(len(data))/20 : written-int64(len(data))/40])
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			settled := last + 10 // the ledger holds more than the journal
			opts.StartAfter, opts.Settled = settled, settled
			lb := &syncbuf.Buffer{}
			opts.Logger = slog.New(slog.NewTextHandler(lb, nil))
			j, err := Open(crashed, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if strings.Contains(lb.String(), "level=ERROR") {
				t.Fatalf("a tail the ledger outlasts was reported as damage:\n%s", lb)
			}
			if aside, _ := filepath.Glob(filepath.Join(crashed, damagedPrefix+"*")); len(aside) > 0 {
				t.Fatalf("set aside %v", aside)
			}
			if rep := j.Recovery(); rep == nil || rep.File != seg || rep.Offset != written || rep.FirstLSN != last+1 {
				t.Fatalf("repair %+v, want the tail of %s cut at %d (LSN %d)", rep, seg, written, last+1)
			}
			if got := j.LastLSN(); got != settled {
				t.Fatalf("last LSN %d, want the ledger's %d", got, settled)
			}
			if lsn := mustAppend(t, j, rec(t, 0, 0, 10)); lsn != settled+1 {
				t.Fatalf("next append got LSN %d, want %d", lsn, settled+1)
			}
		})
	}
}

package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpenSegmentDamage damages every kind of region of the open segment
// (frame header fields, record body, padding, whole blocks, the tail, a
// sparse index left beside it), with the journal still holding the records
// from the damage on or having released them, then opens the ledger and
// reads it whole with a Reader that passes damage. Each row says what must
// happen: which records survive, which damaged range the Reader reports
// (records lost for good), how Open reports its repair, or that it refuses.
func TestOpenSegmentDamage(t *testing.T) {
	src, seg, ends, starts := ledgerFixture(t)
	name := filepath.Base(seg)
	flip := func(off int64) func(b []byte) []byte { return func(b []byte) []byte { b[off] ^= 0x5a; return b } }
	// A write boundary in the middle with padding after it: records are
	// synced in writes of one or two (ledgerFixture).
	var padAfter uint64
	for lsn := uint64(20); lsn < 35 && padAfter == 0; lsn++ {
		if starts[lsn+1] == alignUp(ends[lsn]) && starts[lsn+1]-ends[lsn] > frameHeader+4 {
			padAfter = lsn
		}
	}
	if padAfter == 0 {
		t.Fatal("fixture: no write boundary with padding between LSNs 20 and 35")
	}
	// The block after the one LSN 20 starts in, zeroed: the records it
	// touches are lost.
	zeroAt := alignDown(starts[20]) + BlockSize
	var zeroFirst, zeroLast uint64
	for lsn := uint64(1); lsn <= 40; lsn++ {
		if starts[lsn] < zeroAt+BlockSize && ends[lsn] > zeroAt {
			if zeroFirst == 0 {
				zeroFirst = lsn
			}
			zeroLast = lsn
		}
	}
	zeroBlock := func(b []byte) []byte { clear(b[zeroAt : zeroAt+BlockSize]); return b }
	const (
		none   = ""
		torn   = "torn"   // Recovery: a torn tail cut, replayed from the journal
		damage = "damage" // Recovery: damage to synced bytes cut, replayed from the journal
	)
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		index  bool // leave a damaged sparse index beside the open segment
		cover  bool // the journal still holds the records from the damage on
		// kept is the last LSN the ledger holds after Open; lost the LSNs
		// of the damaged range a Reader reports (records lost for good);
		// recovery how Open reports what it cut.
		kept     uint64
		lost     [2]uint64
		recovery string
		refuse   uint64 // Open refuses, naming this LSN
		// dir is what a read-only DirReader that passes damage reads
		// before Open, as ledgerctl verify does.
		dir dirWant
	}{
		{"record body in the middle, journal covers", flip(starts[21] + frameHeader + 5), false, true, 20, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{21, 21}, 0}},
		{"frame header length in the middle, journal covers", flip(starts[30] + offFrameLen), false, true, 29, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{30, 30}, 0}},
		{"frame header CRC in the middle, journal covers", flip(starts[30] + offFrameCRC), false, true, 29, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{30, 30}, 0}},
		{"frame header LSN in the middle, journal covers", flip(starts[30] + offFrameLSN), false, true, 29, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{30, 30}, 0}},
		{"first frame of the segment, journal covers", flip(starts[1] + frameHeader + 5), false, true, 0, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{1, 1}, 0}},
		{"a block in the middle zeroed, journal covers", zeroBlock, false, true, zeroFirst - 1, [2]uint64{}, damage, 0, dirWant{40, [2]uint64{zeroFirst, zeroLast}, 0}},
		{"padding in the middle (a hole: nothing lost)", flip(ends[padAfter] + 2), false, false, 40, [2]uint64{}, none, 0, dirWant{40, [2]uint64{}, 0}},
		// Garbage after the last frame, within its block, is what a torn
		// next frame of the same write looks like: reported as a torn
		// tail, though only padding is cut.
		{"padding after the last write (nothing lost)", flip(ends[40] + 1), false, true, 40, [2]uint64{}, torn, 0, dirWant{40, [2]uint64{}, 41}},
		{"zero blocks appended (nothing lost)", func(b []byte) []byte { return append(b, make([]byte, 3*BlockSize)...) }, false, false, 40, [2]uint64{}, none, 0, dirWant{40, [2]uint64{}, 0}},
		{"damaged sparse index beside the open segment (removed: nothing lost)", nil, true, false, 40, [2]uint64{}, none, 0, dirWant{40, [2]uint64{}, 0}},
		{"last record, journal covers (a torn write looks the same)", flip(ends[40] - 3), false, true, 39, [2]uint64{}, torn, 0, dirWant{39, [2]uint64{}, 40}},
		// Zeros are a write that never reached the disk: its records go
		// (the journal replays them), with nothing to report.
		{"last write zero-filled, journal covers", func(b []byte) []byte { clear(b[alignUp(ends[39]):]); return b }, false, true, 39, [2]uint64{}, none, 0, dirWant{39, [2]uint64{}, 0}},
		{"last write zero-filled, journal released it (a clean end: the server's gap check refuses)", func(b []byte) []byte { clear(b[alignUp(ends[39]):]); return b }, false, false, 39, [2]uint64{}, none, 0, dirWant{39, [2]uint64{}, 0}},
		{"last record, journal released it (records lost at the end: nothing after them)", flip(ends[40] - 3), false, false, 0, [2]uint64{}, none, 40, dirWant{39, [2]uint64{}, 40}},
		// Damage to synced bytes in the middle, later records intact, the
		// journal no longer holding the damaged ones: the segment is
		// sealed as it is, a Reader passes the damaged range as in any
		// sealed segment, and writing goes on in a new segment.
		{"record body in the middle, journal released it", flip(starts[21] + frameHeader + 5), false, false, 40, [2]uint64{21, 21}, none, 0, dirWant{40, [2]uint64{21, 21}, 0}},
		{"frame header LSN in the middle, journal released it", flip(starts[11] + offFrameLSN), false, false, 40, [2]uint64{11, 11}, none, 0, dirWant{40, [2]uint64{11, 11}, 0}},
		{"frame header length in the middle, journal released it", flip(starts[30] + offFrameLen), false, false, 40, [2]uint64{30, 30}, none, 0, dirWant{40, [2]uint64{30, 30}, 0}},
		{"first frame of the segment, journal released it", flip(starts[1] + frameHeader + 5), false, false, 40, [2]uint64{1, 1}, none, 0, dirWant{40, [2]uint64{1, 1}, 0}},
		{"a block in the middle zeroed, journal released it", zeroBlock, false, false, 40, [2]uint64{zeroFirst, zeroLast}, none, 0, dirWant{40, [2]uint64{zeroFirst, zeroLast}, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			path := filepath.Join(dir, name)
			if tc.damage != nil {
				b, _ := os.ReadFile(path)
				os.WriteFile(path, tc.damage(b), 0o640)
			}
			if tc.index {
				os.WriteFile(indexPath(path), []byte("LPIX garbage"), 0o640)
			}
			checkDirReader(t, dir, path, tc.dir)

			opts := testOpts(t, true)
			opts.SegmentBytes = 1 << 20
			opts.Covered = released
			if tc.cover {
				opts.Covered = covered
			}
			l, err := Open(dir, opts)
			if tc.refuse != 0 {
				var ce *CorruptionError
				if err == nil {
					l.Close()
				}
				if !errors.As(err, &ce) || ce.Segment != path || ce.LSN != tc.refuse {
					t.Fatalf("got %v, want a *CorruptionError at LSN %d of %s", err, tc.refuse, path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.LastLSN() != tc.kept {
				t.Fatalf("last LSN %d, want %d", l.LastLSN(), tc.kept)
			}
			r := l.Recovery()
			got := none
			switch {
			case r != nil && r.Damage:
				got = damage
			case r != nil:
				got = torn
			}
			if got != tc.recovery {
				t.Fatalf("recovery %+v, want %q", r, tc.recovery)
			}
			if _, err := os.Stat(indexPath(l.segs[len(l.segs)-1].path)); err == nil {
				t.Fatal("the open segment has a sparse index")
			}
			// Writing goes on after what was kept, and a Reader that
			// passes damage reads every record but the lost ones.
			if err := l.Append(tc.kept+1, rec(t, tc.kept+1, fixturePad(tc.kept+1))); err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for lsn := uint64(1); lsn <= tc.kept+1; lsn++ {
				if lsn < tc.lost[0] || lsn > tc.lost[1] {
					want = append(want, lsn)
				}
			}
			rd := l.Reader(1)
			defer rd.Close()
			rd.SkipDamage()
			var read []uint64
			var lost [2]uint64
			for rd.Next() {
				if d := rd.Damage(); d != nil {
					if lost != [2]uint64{} || d.Segment != path {
						t.Fatalf("damage %v: a second range, or not in %s", d, path)
					}
					lost = [2]uint64{d.FirstLSN, d.LastLSN}
					continue
				}
				if string(rd.Record()) != string(rec(t, rd.LSN(), fixturePad(rd.LSN()))) {
					t.Fatalf("LSN %d: wrong content", rd.LSN())
				}
				read = append(read, rd.LSN())
			}
			if rd.Err() != nil {
				t.Fatalf("reader stopped: %v", rd.Err())
			}
			if !slices.Equal(read, want) || lost != tc.lost {
				t.Fatalf("read %s, damaged range %v; want %s, %v", brief(read), lost, brief(want), tc.lost)
			}
		})
	}
}

// dirWant is what a DirReader that passes damage reads: LSNs 1..last but
// the lost ones, the damaged range with the lost LSNs, and the Tail's
// first LSN (0: none).
type dirWant struct {
	last uint64
	lost [2]uint64
	tail uint64
}

// checkDirReader reads the ledger in dir with a DirReader that passes
// damage and checks it reads what w says.
func checkDirReader(t *testing.T, dir, seg string, w dirWant) {
	t.Helper()
	r, err := NewDirReader(dir, 1, InspectOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SkipDamage()
	var read []uint64
	var lost [2]uint64
	for r.Next() {
		if d := r.Damage(); d != nil {
			if lost != [2]uint64{} || d.Segment != seg {
				t.Fatalf("DirReader: damage %v: a second range, or not in %s", d, seg)
			}
			lost = [2]uint64{d.FirstLSN, d.LastLSN}
			continue
		}
		read = append(read, r.LSN())
	}
	var tail uint64
	if r.Tail() != nil {
		tail = r.Tail().FirstLSN
	}
	var want []uint64
	for lsn := uint64(1); lsn <= w.last; lsn++ {
		if lsn < w.lost[0] || lsn > w.lost[1] {
			want = append(want, lsn)
		}
	}
	if r.Err() != nil || !slices.Equal(read, want) || lost != w.lost || tail != w.tail {
		t.Fatalf("DirReader: err %v, read %s, damaged range %v, tail at LSN %d; want %s, %v, tail at %d",
			r.Err(), brief(read), lost, tail, brief(want), w.lost, w.tail)
	}
}

// brief abbreviates a list of LSNs for a failure message.
func brief(lsns []uint64) string {
	if len(lsns) <= 6 {
		return fmt.Sprint(lsns)
	}
	return fmt.Sprintf("%v…%v (%d)", lsns[:3], lsns[len(lsns)-3:], len(lsns))
}

package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSealOpenSegment: the open segment ends in records the journal no
// longer holds (its last record damaged, or its last write gone), so Open
// or the server refuses. SealOpenSegment at the journal's first LSN seals
// it unchanged and starts a new open segment there: Open succeeds, writing
// goes on at that LSN, and a Reader that passes damage reads every record
// but the lost ones, which it reports as one damaged range.
func TestSealOpenSegment(t *testing.T) {
	src, seg, ends, _ := ledgerFixture(t)
	name := filepath.Base(seg)
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		next   uint64 // the journal's first LSN
		// scan is what ScanOpenSegment reports before: last valid LSN
		// and the first damaged LSN (0: none).
		scanLast, scanDamage uint64
		refused              bool // Open refuses before (else the server's gap check does)
		lost                 [2]uint64
	}{
		{"last record damaged", func(b []byte) []byte { b[ends[40]-3] ^= 0x5a; return b }, 46, 39, 40, true, [2]uint64{40, 45}},
		{"last record damaged, the journal starts right after it", func(b []byte) []byte { b[ends[40]-3] ^= 0x5a; return b }, 41, 39, 40, true, [2]uint64{40, 40}},
		{"last write gone (the file ends cleanly)", func(b []byte) []byte { return b[:alignUp(ends[39])] }, 41, 39, 0, false, [2]uint64{40, 40}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			path := filepath.Join(dir, name)
			b, _ := os.ReadFile(path)
			b = tc.damage(b)
			os.WriteFile(path, b, 0o640)
			opts := testOpts(t, true)
			opts.SegmentBytes = 1 << 20
			opts.Covered = func(lsn uint64) bool { return lsn >= tc.next }

			scan, err := ScanOpenSegment(dir, InspectOptions{DirectIO: true})
			if err != nil || scan.Segment != path || scan.LastLSN != tc.scanLast || len(scan.Lost) != 0 ||
				(scan.Damage == nil) != (tc.scanDamage == 0) || (scan.Damage != nil && scan.Damage.LSN != tc.scanDamage) ||
				(scan.End == nil) != (tc.scanDamage == 0) || (scan.End != nil && scan.End.FirstLSN != tc.scanDamage) {
				t.Fatalf("scan %+v, %v; want last LSN %d, damage at %d", scan, err, tc.scanLast, tc.scanDamage)
			}
			l, err := Open(dir, opts)
			var ce *CorruptionError
			if tc.refused {
				if !errors.As(err, &ce) {
					t.Fatalf("Open: %v, want a *CorruptionError", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				l.Close()
			}

			if err := SealOpenSegment(dir, tc.scanLast); err == nil {
				t.Fatal("sealed at an LSN the open segment holds")
			}
			if err := SealOpenSegment(dir, tc.next); err != nil {
				t.Fatal(err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
				t.Fatal("the sealed segment changed")
			}
			if err := SealOpenSegment(dir, tc.next); err == nil {
				t.Fatal("sealed the new, empty open segment at its own first LSN")
			}
			checkDirReader(t, dir, path, dirWant{last: tc.next - 1, lost: tc.lost})

			l = mustOpen(t, dir, opts)
			defer l.Close()
			if l.LastLSN() != tc.next-1 {
				t.Fatalf("last LSN %d, want %d", l.LastLSN(), tc.next-1)
			}
			fill(t, l, tc.next, tc.next+1, fixturePad(tc.next), false)
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
				read = append(read, rd.LSN())
			}
			var want []uint64
			for lsn := uint64(1); lsn <= tc.next+1; lsn++ {
				if lsn < tc.lost[0] || lsn > tc.lost[1] {
					want = append(want, lsn)
				}
			}
			if rd.Err() != nil || !slices.Equal(read, want) || lost != tc.lost {
				t.Fatalf("read %s, damaged range %v, err %v; want %s, %v", brief(read), lost, rd.Err(), brief(want), tc.lost)
			}
		})
	}
}

// TestScanOpenSegmentPassesDamage: damage in the middle of the open
// segment is passed; the scan reports the lost range and the last record
// after it.
func TestScanOpenSegmentPassesDamage(t *testing.T) {
	src, seg, _, starts := ledgerFixture(t)
	dir := copyDir(t, src)
	path := filepath.Join(dir, filepath.Base(seg))
	b, _ := os.ReadFile(path)
	b[starts[21]+frameHeader+5] ^= 0x5a
	os.WriteFile(path, b, 0o640)
	scan, err := ScanOpenSegment(dir, InspectOptions{})
	if err != nil || scan.LastLSN != 40 || scan.Damage == nil || scan.Damage.LSN != 21 ||
		len(scan.Lost) != 1 || scan.Lost[0].FirstLSN != 21 || scan.Lost[0].LastLSN != 21 || scan.End != nil {
		t.Fatalf("scan %+v, %v", scan, err)
	}
	if err := SealOpenSegment(dir, 40); err == nil {
		t.Fatal("sealed at an LSN after the damage that the segment holds")
	}
	empty := t.TempDir()
	if scan, err := ScanOpenSegment(empty, InspectOptions{}); scan != nil || err != nil {
		t.Fatalf("empty ledger: %+v, %v", scan, err)
	}
	if err := SealOpenSegment(empty, 5); err == nil {
		t.Fatal("sealed a ledger with no segment")
	}
}

package ledger

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// sealedFixture writes LSNs 1..200 in writes of 1–3 records (padding
// between writes) into 64 KiB segments, and returns the directory, its
// segments and where each frame of the first (sealed) segment starts and
// ends.
func sealedFixture(t *testing.T) (dir string, segs []segment, starts, ends map[uint64]int64) {
	t.Helper()
	dir = t.TempDir()
	l := mustOpen(t, dir, testOpts(t, true))
	for lsn := uint64(1); lsn <= 200; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, fixturePad(lsn))); err != nil {
			t.Fatal(err)
		}
		if lsn%3 != 1 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 3 {
		t.Fatalf("fixture: %d segments, %v", len(segs), err)
	}
	f, _ := os.Open(segs[0].path)
	defer f.Close()
	sc := newSegScanner(f, segs[0].path, 1, 0)
	starts, ends = map[uint64]int64{}, map[uint64]int64{}
	for sc.nextFrame() {
		starts[sc.lsn] = sc.recOff
		ends[sc.lsn] = sc.recOff + frameSize(len(sc.rec))
	}
	if uint64(len(starts)) != segs[1].first-1 || sc.damage != nil {
		t.Fatalf("fixture: %d frames in the first segment, damage %v", len(starts), sc.damage)
	}
	return dir, segs, starts, ends
}

// TestReaderPassesDamageInSealedSegment damages every kind of region of a
// sealed segment. A Reader with SkipDamage reports damaged ranges whose
// LSNs are exactly the records whose bytes were touched, returns every
// other record intact, and reads on into the later segments.
func TestReaderPassesDamageInSealedSegment(t *testing.T) {
	src, segs, starts, ends := sealedFixture(t)
	last := segs[1].first - 1 // the first segment's last LSN
	flip := func(off ...int64) func(b []byte) ([]byte, [][2]int64) {
		return func(b []byte) ([]byte, [][2]int64) {
			var r [][2]int64
			for _, o := range off {
				b[o] ^= 0x5a
				r = append(r, [2]int64{o, o + 1})
			}
			return b, r
		}
	}
	mid := last / 2
	cases := []struct {
		name   string
		damage func(b []byte) ([]byte, [][2]int64) // the damaged byte ranges
		from   uint64
		index  func(path string)
	}{
		{"record body", flip(starts[mid] + frameHeader + 9), 1, nil},
		{"frame header LSN", flip(starts[mid] + offFrameLSN), 1, nil},
		{"frame header length", flip(starts[mid] + offFrameLen), 1, nil},
		{"frame header CRC", flip(starts[mid] + offFrameCRC), 1, nil},
		{"first frame of the segment", flip(starts[1] + 20), 1, nil},
		{"last frame of the segment", flip(ends[last] - 3), 1, nil},
		{"padding after a write (a hole: nothing lost)", flip(ends[mid+1-(mid+1)%3] + 2), 1, nil},
		{"four bytes across two frames", flip(ends[mid]-2, ends[mid]-1, ends[mid], ends[mid]+1), 1, nil},
		{"two damaged records far apart", flip(starts[5]+30, starts[mid]+frameHeader), 1, nil},
		{"a whole block zeroed", func(b []byte) ([]byte, [][2]int64) {
			a := alignDown(starts[mid]) + BlockSize
			clear(b[a : a+BlockSize])
			return b, [][2]int64{{a, a + BlockSize}}
		}, 1, nil},
		{"segment cut inside a record", func(b []byte) ([]byte, [][2]int64) {
			c := starts[mid] + 40
			return b[:c], [][2]int64{{c, int64(len(b))}}
		}, 1, nil},
		{"segment tail zeroed", func(b []byte) ([]byte, [][2]int64) {
			c := alignUp(starts[mid])
			clear(b[c:])
			return b, [][2]int64{{c, int64(len(b))}}
		}, 1, nil},
		{"damaged sparse index, record after the reader's start", flip(starts[mid] + frameHeader + 9), mid - 5, func(p string) {
			b, _ := os.ReadFile(indexPath(p))
			b[len(b)/2] ^= 1
			os.WriteFile(indexPath(p), b, 0o640)
		}},
		{"missing sparse index, damage before the reader's start", flip(starts[5] + frameHeader + 9), mid, func(p string) {
			os.Remove(indexPath(p))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, s := range segs {
				for _, p := range []string{s.path, indexPath(s.path)} {
					if b, err := os.ReadFile(p); err == nil {
						os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o640)
					}
				}
			}
			b, _ := os.ReadFile(filepath.Join(src, streamFile))
			os.WriteFile(filepath.Join(dir, streamFile), b, 0o640)
			path := filepath.Join(dir, filepath.Base(segs[0].path))
			b, _ = os.ReadFile(path)
			b, ranges := tc.damage(b)
			os.WriteFile(path, b, 0o640)
			if tc.index != nil {
				tc.index(path)
			}
			lost := map[uint64]bool{}
			for lsn := uint64(1); lsn <= last; lsn++ {
				for _, r := range ranges {
					if starts[lsn] < r[1] && ends[lsn] > r[0] && lsn >= tc.from {
						lost[lsn] = true
					}
				}
			}

			l := mustOpen(t, dir, testOpts(t, true))
			defer l.Close()
			r := l.Reader(tc.from)
			defer r.Close()
			r.SkipDamage()
			var got []uint64
			reported := map[uint64]bool{}
			for r.Next() {
				if d := r.Damage(); d != nil {
					if d.Segment != path || d.Start > d.End {
						t.Fatalf("damage %v: wrong segment or range", d)
					}
					for lsn := d.FirstLSN; lsn <= d.LastLSN; lsn++ {
						reported[lsn] = true
					}
					continue
				}
				if r.Record() == nil || string(r.Record()) != string(rec(t, r.LSN(), fixturePad(r.LSN()))) {
					t.Fatalf("LSN %d: wrong content", r.LSN())
				}
				got = append(got, r.LSN())
			}
			if r.Err() != nil {
				t.Fatalf("reader stopped: %v", r.Err())
			}
			var want []uint64
			for lsn := tc.from; lsn <= 200; lsn++ {
				if !lost[lsn] {
					want = append(want, lsn)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read %d records %v…, want %d (lost %v)", len(got), got[:min(5, len(got))], len(want), lost)
			}
			for lsn := range lost {
				if !reported[lsn] {
					t.Errorf("LSN %d lost but not reported", lsn)
				}
			}
			for lsn := range reported {
				if !lost[lsn] {
					t.Errorf("LSN %d reported lost but was not damaged", lsn)
				}
			}
		})
	}
}

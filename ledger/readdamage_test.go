package ledger

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReaderPassesDamageInOpenSegment: synced bytes of the open segment
// that change on disk while a Reader that passes damage is reading it (a
// media error while logpond runs) are passed as a damaged range, as in a
// sealed segment, and the Reader goes on — with the records after the
// damage and with those the writer appends later. It never stops with an
// error. A write in progress after the synced records (written, not yet
// synced) is neither taken for the next valid record nor passed as damage.
func TestReaderPassesDamageInOpenSegment(t *testing.T) {
	// Records larger than the Reader's first read, so that it reads the
	// damaged bytes after they changed.
	const pad = 30000
	cases := []struct {
		name       string
		damaged    uint64 // the record whose body changes (one write per record)
		inProgress bool   // records 41–45 are written, not synced, when the Reader meets the damage
		lost       [2]uint64
	}{
		{name: "middle", damaged: 38, lost: [2]uint64{38, 38}},
		{name: "last synced record", damaged: 40, lost: [2]uint64{40, 40}},
		{name: "last synced record, a write in progress after it", damaged: 40, inProgress: true, lost: [2]uint64{40, 40}},
		{name: "middle, a write in progress after the synced records", damaged: 38, inProgress: true, lost: [2]uint64{38, 38}},
	}
	for _, direct := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(map[bool]string{true: "direct/", false: "buffered/"}[direct]+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				opts := testOpts(t, direct)
				opts.SegmentBytes = 4 << 20
				l := mustOpen(t, dir, opts)
				defer l.Close()
				fill(t, l, 1, 40, pad, true)
				r := l.Reader(1)
				defer r.Close()
				r.SkipDamage()
				var read []uint64
				var lost [][2]uint64
				next := func(upTo uint64) {
					t.Helper()
					for (len(read) == 0 || read[len(read)-1] < upTo) && r.Next() {
						if d := r.Damage(); d != nil {
							if d.Segment != filepath.Join(dir, segmentName(1)) {
								t.Fatalf("damage %v not in the open segment", d)
							}
							lost = append(lost, [2]uint64{d.FirstLSN, d.LastLSN})
							continue
						}
						if string(r.Record()) != string(rec(t, r.LSN(), pad)) {
							t.Fatalf("LSN %d: wrong content", r.LSN())
						}
						read = append(read, r.LSN())
					}
					if r.Err() != nil {
						t.Fatalf("reader stopped: %v", r.Err())
					}
				}
				next(10) // the Reader is inside the open segment
				if tc.inProgress {
					for lsn := uint64(41); lsn <= 45; lsn++ {
						if err := l.Append(lsn, rec(t, lsn, pad)); err != nil {
							t.Fatal(err)
						}
					}
					if err := l.writeBuffered(); err != nil { // written, not synced
						t.Fatal(err)
					}
				}
				seg := filepath.Join(dir, segmentName(1))
				off := frameStart(t, seg, tc.damaged) + frameHeader + 40
				if r.sc.fileOff+int64(r.sc.end) > off {
					t.Fatal("the Reader has read the bytes to damage already: the test cannot tell")
				}
				damageFile(t, seg, off)
				next(40)
				if tc.inProgress {
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				fill(t, l, l.AppendedLSN()+1, 50, pad, false)
				next(50)
				want := lsnsBut(1, 50, [][2]uint64{tc.lost})
				if !slices.Equal(read, want) || !slices.Equal(lost, [][2]uint64{tc.lost}) {
					t.Fatalf("read %s, damaged ranges %v; want %s, [%v]", brief(read), lost, brief(want), tc.lost)
				}
			})
		}
	}
}

// frameStart is the offset of LSN lsn's frame in the segment at path.
func frameStart(t *testing.T, path string, lsn uint64) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), segmentSuffix), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	sc := newSegScanner(f, path, first, 0)
	for sc.nextFrame() {
		if sc.lsn == lsn {
			return sc.recOff
		}
	}
	t.Fatalf("no LSN %d in %s (%v)", lsn, path, sc.damage)
	return 0
}

// damageFile flips a byte at off in the file at path, in place, as a
// media error would change it under a running ledger.
func damageFile(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ledgerFixture writes LSNs 1..40 into one segment, synced in writes of 1–3
// records (so padding separates writes), and returns the segment path and
// where each frame ends.
func ledgerFixture(t *testing.T) (dir, seg string, ends, starts map[uint64]int64) {
	dir = t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 1 << 20, DirectIO: true})
	for lsn := uint64(1); lsn <= 40; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, int(lsn*37%900))); err != nil {
			t.Fatal(err)
		}
		if lsn%3 != 1 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.Sync()
	l.Close()
	seg = filepath.Join(dir, segmentName(1))
	f, _ := os.Open(seg)
	defer f.Close()
	sc := newSegScanner(f, seg, 1, 0)
	ends, starts = map[uint64]int64{}, map[uint64]int64{}
	for sc.nextFrame() {
		starts[sc.lsn] = sc.recOff
		ends[sc.lsn] = sc.recOff + frameSize(len(sc.rec))
	}
	if len(ends) != 40 || sc.damage != nil {
		t.Fatalf("fixture: %d frames, damage %v", len(ends), sc.damage)
	}
	return dir, seg, ends, starts
}

func fixturePad(lsn uint64) int { return int(lsn * 37 % 900) }

func copyDir(t *testing.T, src string) string {
	dst := t.TempDir()
	des, _ := os.ReadDir(src)
	for _, de := range des {
		if de.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, de.Name()), b, 0o640)
	}
	return dst
}

// expectRecords opens dir and checks that exactly LSNs 1..kept survive.
func expectRecords(t *testing.T, dir string, opts Options, kept uint64) *Ledger {
	t.Helper()
	l := mustOpen(t, dir, opts)
	if l.LastLSN() != kept {
		l.Close()
		t.Fatalf("last LSN %d, want %d", l.LastLSN(), kept)
	}
	r := l.Reader(1)
	defer r.Close()
	n := uint64(0)
	for r.Next() {
		n++
		if r.LSN() != n || string(r.Record()) != string(rec(t, n, fixturePad(n))) {
			l.Close()
			t.Fatalf("record %d wrong", n)
		}
	}
	if r.Err() != nil || n != kept {
		l.Close()
		t.Fatalf("read %d records (err %v), want %d", n, r.Err(), kept)
	}
	// The next write goes after the cut and is read back.
	if err := l.Append(kept+1, rec(t, kept+1, fixturePad(kept+1))); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l
}

func covered(uint64) bool { return true }

// released models a journal that has dropped every LSN up to 40 (all of
// them were synced to the ledger): it covers only LSNs after 40.
func released(lsn uint64) bool { return lsn > 40 }

// TestTornTailAtEveryOffset cuts the segment at every offset of its last
// two blocks where what Open must do can change (tornOffsets). With the
// journal covering the cut, exactly the frames wholly before the cut
// survive; when the journal has dropped them (they had been synced), Open
// refuses whenever a record was cut, and names the segment.
func TestTornTailAtEveryOffset(t *testing.T) {
	src, seg, ends, starts := ledgerFixture(t)
	st, _ := os.Stat(seg)
	cuts := tornOffsets(st.Size()-2*BlockSize, st.Size(), starts, ends)
	t.Logf("%d cut offsets of the last %d bytes", len(cuts), 2*BlockSize)
	for _, cut := range cuts {
		var kept uint64
		for lsn := uint64(1); lsn <= 40; lsn++ {
			if ends[lsn] <= cut {
				kept = lsn
			}
		}
		dir := copyDir(t, src)
		path := filepath.Join(dir, filepath.Base(seg))
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		if kept < 40 {
			// Without the journal's cover, a cut that leaves any byte of
			// the next frame is refused; a cut exactly at a frame boundary
			// looks like a write that never happened (the server's
			// journal-gap check catches that case).
			l, err := Open(dir, Options{SegmentBytes: 1 << 20, DirectIO: true, Covered: released})
			var ce *CorruptionError
			switch {
			case err == nil && cut <= starts[kept+1] && l.LastLSN() == kept:
				l.Close()
			case err == nil:
				l.Close()
				t.Fatalf("cut at %d inside frame %d (starts at %d) opened without the journal's cover", cut, kept+1, starts[kept+1])
			case !errors.As(err, &ce) || ce.Segment != path || ce.LSN != kept+1:
				t.Fatalf("cut at %d without journal cover: got %v, want a *CorruptionError for LSN %d in %s", cut, err, kept+1, path)
			}
		}
		l := expectRecords(t, dir, Options{SegmentBytes: 1 << 20, DirectIO: true, Covered: covered}, kept)
		if r := l.Recovery(); r != nil && r.Damage {
			t.Fatalf("cut at %d reported as damage to synced bytes, not as a torn tail: %+v", cut, r)
		}
		l.Close()
	}
}

// tornOffsets are the offsets in [lo, hi) at which a cut can change what
// Open must do with the segment: every byte of each frame's header and the
// byte after it (a cut there tears the length, the checksum or the LSN),
// the last two bytes of each frame and the first bytes after it, a byte in
// the middle of each frame's record, samples of the zero padding a Sync
// writes after a frame up to the next block, and every block boundary
// with the bytes beside it. Between
// two of these a cut leaves the same frames whole and tears the same frame
// at the same part of it, so Open's answer is the same: cutting at every
// offset of the two blocks (8192 opens, minutes under -race) proves no
// more.
func tornOffsets(lo, hi int64, starts, ends map[uint64]int64) []int64 {
	set := map[int64]bool{}
	add := func(off int64) {
		if off >= lo && off < hi {
			set[off] = true
		}
	}
	for lsn, start := range starts {
		end := ends[lsn]
		for off := start; off <= start+frameHeader+1; off++ {
			add(off)
		}
		add(start + (end-start)/2)
		add(end - 2)
		add(end - 1)
		add(end)
		// The zero padding after it, up to the next block: its start, a
		// header's length in, and its middle.
		next := end + BlockSize - 1 - (end+BlockSize-1)%BlockSize
		add(end + 1)
		add(end + frameHeader + 1)
		add(end + (next-end)/2)
	}
	for b := lo - lo%BlockSize; b <= hi; b += BlockSize {
		add(b - 1)
		add(b)
		add(b + 1)
	}
	out := make([]int64, 0, len(set))
	for off := range set {
		out = append(out, off)
	}
	slices.Sort(out)
	return out
}

// TestDamageInSealedSegment: sealed segments are not scanned at Open; a
// reader reports their damage with segment and offset.
func TestDamageInSealedSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOpts(t, true))
	fill(t, l, 1, 200, 700, false)
	l.Close()
	segs, _ := listSegments(dir)
	first := segs[0].path
	b, _ := os.ReadFile(first)
	b[3*BlockSize+100] ^= 0x80
	os.WriteFile(first, b, 0o640)
	l = mustOpen(t, dir, testOpts(t, true))
	defer l.Close()
	r := l.Reader(1)
	defer r.Close()
	for r.Next() {
	}
	var ce *CorruptionError
	if !errors.As(r.Err(), &ce) || ce.Segment != first || ce.Offset > 3*BlockSize+100 || ce.Offset < 2*BlockSize {
		t.Fatalf("reader error %v, want a *CorruptionError in %s near offset %d", r.Err(), first, 3*BlockSize+100)
	}
}

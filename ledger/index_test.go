package ledger

import (
	"os"
	"testing"
)

func TestIndexSeekAndRebuild(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(t, true)
	opts.SegmentBytes = 4 << 20
	l := mustOpen(t, dir, opts)
	const n = 3000 // ~3 KiB each: two sealed segments and an open one
	for lsn := uint64(1); lsn <= n; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, 3000)); err != nil {
			t.Fatal(err)
		}
		if lsn%20 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.Sync()
	segs, _ := listSegments(dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	target := segs[0].first + (segs[1].first-segs[0].first)*3/4 // late in the first segment
	seek := func(l *Ledger) *Reader {
		t.Helper()
		r := l.Reader(target)
		if !r.Next() || r.LSN() != target || string(r.Record()) != string(rec(t, target, 3000)) {
			t.Fatalf("seek to %d: got LSN %d, err %v", target, r.LSN(), r.Err())
		}
		return r
	}
	r := seek(l)
	if r.sc.fileOff == 0 {
		t.Fatal("the reader scanned the segment from its start: the index was not used")
	}
	r.Close()
	entries, err := decodeIndexFile(indexPath(segs[0].path))
	if err != nil || len(entries) < 3 {
		t.Fatalf("index of a sealed segment: %d entries, %v", len(entries), err)
	}
	l.Close()

	for _, damage := range []string{"deleted", "damaged"} {
		if damage == "deleted" {
			os.Remove(indexPath(segs[0].path))
		} else {
			b, _ := os.ReadFile(indexPath(segs[0].path))
			b[10] ^= 0xff
			os.WriteFile(indexPath(segs[0].path), b, 0o640)
		}
		l = mustOpen(t, dir, opts)
		seek(l).Close()
		rebuilt, err := decodeIndexFile(indexPath(segs[0].path))
		if err != nil || len(rebuilt) < 3 {
			t.Fatalf("%s index: rebuilt %d entries (%v)", damage, len(rebuilt), err)
		}
		// Every entry is a real seek point: a frame with that LSN starts there.
		f, _ := os.Open(segs[0].path)
		for _, e := range rebuilt {
			sc := newSegScanner(f, segs[0].path, e.lsn, e.off)
			if !sc.nextFrame() || sc.lsn != e.lsn {
				t.Fatalf("%s index: entry %+v is not a frame start", damage, e)
			}
		}
		f.Close()
		l.Close()
	}
}

func decodeIndexFile(path string) ([]indexEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(b)
}

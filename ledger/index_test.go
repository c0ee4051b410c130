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

// TestReaderSeeksInOpenSegment: a Reader that starts deep in a large open
// segment seeks with the segment's in-memory sparse index, as in a sealed
// one, rather than scanning the segment from its start: reading one record
// costs about the index interval and one read, however large the segment
// — after Syncs, and after an Open that rebuilt the index by its scan.
// (Lag probes read the oldest pending record at every scrape.)
func TestReaderSeeksInOpenSegment(t *testing.T) {
	const pad = 8000
	dir := t.TempDir()
	opts := testOpts(t, true)
	opts.SegmentBytes = 64 << 20
	l := mustOpen(t, dir, opts)
	const last = 2000 // about 16 MiB, in one open segment
	for lsn := uint64(1); lsn <= last; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, pad)); err != nil {
			t.Fatal(err)
		}
		if lsn%16 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.segs); n != 1 {
		t.Fatalf("%d segments, want one open segment", n)
	}
	const bound = indexInterval + readChunk + 2*BlockSize
	check := func(l *Ledger, when string) {
		t.Helper()
		for _, lsn := range []uint64{1, 1000, 1999, last} {
			r := l.Reader(lsn)
			if !r.Next() || r.LSN() != lsn || string(r.Record()) != string(rec(t, lsn, pad)) {
				t.Fatalf("%s: Reader(%d) read LSN %d, err %v", when, lsn, r.LSN(), r.Err())
			}
			t.Logf("%s: reading LSN %d read %d bytes", when, lsn, r.BytesRead())
			if n := r.BytesRead(); n > bound {
				t.Errorf("%s: reading LSN %d of the open segment (%d bytes) read %d bytes, want at most %d",
					when, lsn, l.UsedBytes(), n, bound)
			}
			r.Close()
		}
	}
	check(l, "after Syncs")
	l.Close()
	l = mustOpen(t, dir, opts)
	defer l.Close()
	check(l, "after Open")
}

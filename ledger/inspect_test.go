package ledger

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
)

// inspectFixture is a closed ledger of LSNs 1..200 in several 64 KiB
// segments, with a cursor "es" at 50.
func inspectFixture(t *testing.T) string {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOpts(t, true))
	fill(t, l, 1, 200, 700, false)
	if err := l.SetCursor("es", 50); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readDir(t *testing.T, dir string, from uint64) (lsns []uint64, r *DirReader) {
	t.Helper()
	r, err := NewDirReader(dir, from, InspectOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		if !bytes.Equal(r.Record(), rec(t, r.LSN(), 700)) {
			t.Fatalf("LSN %d has the wrong content", r.LSN())
		}
		lsns = append(lsns, r.LSN())
	}
	return lsns, r
}

func TestInspectSegmentsAndRead(t *testing.T) {
	dir := inspectFixture(t)
	before := storetest.SnapshotDir(t, dir)

	segs, err := Segments(dir, InspectOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	next := uint64(1)
	var bytesTotal int64
	for i, s := range segs {
		if s.FirstLSN != next || s.LastLSN < s.FirstLSN || s.Open != (i == len(segs)-1) || s.Indexed == s.Open || s.Tail != nil {
			t.Fatalf("segment %d: %+v (want first LSN %d)", i, s, next)
		}
		next = s.LastLSN + 1
		bytesTotal += s.Bytes
	}
	if next != 201 {
		t.Fatalf("segments end at LSN %d, want 200", next-1)
	}

	for _, from := range []uint64{0, 1, 77, segs[1].FirstLSN, segs[1].LastLSN, 200, 201} {
		lsns, r := readDir(t, dir, from)
		if r.Err() != nil || r.Tail() != nil {
			t.Fatalf("from %d: err %v, tail %+v", from, r.Err(), r.Tail())
		}
		if want := storetest.Seq(max(from, 1), 200); !slices.Equal(lsns, want) {
			t.Fatalf("from %d: read %v, want %v", from, lsns, want)
		}
		if from <= 1 && r.BytesRead() != bytesTotal {
			t.Fatalf("read %d bytes, segments hold %d", r.BytesRead(), bytesTotal)
		}
	}

	cursors, err := ReadCursors(dir)
	if err != nil || len(cursors) != 1 || cursors[0].Name != "es" || cursors[0].LSN != 50 || cursors[0].Err != nil {
		t.Fatalf("cursors %+v, %v", cursors, err)
	}
	if id, err := ReadStreamID(dir); err != nil || len(id) != 36 {
		t.Fatalf("stream id %q, %v", id, err)
	}
	if after := storetest.SnapshotDir(t, dir); !maps.Equal(before, after) {
		t.Fatalf("inspection changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}

// TestInspectEmptyAndMissing: a missing directory, and a fresh ledger
// without segments, read as empty; nothing is created.
func TestInspectEmptyAndMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if segs, err := Segments(missing, InspectOptions{}); err != nil || len(segs) != 0 {
		t.Fatalf("missing dir: %v, %v", segs, err)
	}
	if lsns, r := readDir(t, missing, 1); len(lsns) != 0 || r.Err() != nil {
		t.Fatalf("missing dir: read %v, %v", lsns, r.Err())
	}
	if cs, err := ReadCursors(missing); err != nil || len(cs) != 0 {
		t.Fatalf("missing dir: cursors %v, %v", cs, err)
	}
	if _, err := ReadStreamID(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: stream id error %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("inspection created the directory")
	}
}

// TestInspectDamageTable: damage in sealed segments is a located
// *CorruptionError; damage at the end of the open segment is its Tail.
func TestInspectDamageTable(t *testing.T) {
	src := inspectFixture(t)
	segs, err := Segments(src, InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sealed, open := segs[1], segs[len(segs)-1]
	// Frame offsets of every LSN.
	starts := map[uint64]int64{}
	r, _ := NewDirReader(src, 1, InspectOptions{})
	for r.Next() {
		starts[r.LSN()] = r.Offset()
	}
	r.Close()
	mid := sealed.FirstLSN + 3
	last := open.LastLSN

	cases := []struct {
		name    string
		file    string
		damage  func(path string)
		read    uint64 // records read before stopping
		errLSN  uint64 // LSN named by the *CorruptionError; 0 for none
		errOff  int64
		tailLSN uint64 // LSN of the Tail; 0 for none
	}{
		{"flipped record byte in a sealed segment", sealed.Path,
			func(p string) { storetest.Flip(t, p, starts[mid]+frameHeader+30) }, mid - 1, mid, starts[mid], 0},
		{"flipped frame header in a sealed segment", sealed.Path,
			func(p string) { storetest.Flip(t, p, starts[mid]+offFrameLSN) }, mid - 1, mid, starts[mid], 0},
		{"sealed segment truncated", sealed.Path,
			func(p string) { os.Truncate(p, starts[mid]) }, mid - 1, mid, starts[mid], 0},
		{"flipped record byte in the open segment's last write", open.Path,
			func(p string) { storetest.Flip(t, p, starts[last]+frameHeader+30) }, last - 1, 0, 0, last},
		{"open segment torn inside its last frame", open.Path,
			func(p string) { os.Truncate(p, starts[last]+20) }, last - 1, 0, 0, last},
		{"zero blocks after the open segment", open.Path,
			func(p string) { storetest.AppendBytes(t, p, make([]byte, 2*BlockSize)) }, 200, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			path := filepath.Join(dir, filepath.Base(tc.file))
			tc.damage(path)
			lsns, r := readDir(t, dir, 1)
			if uint64(len(lsns)) != tc.read {
				t.Fatalf("read %d records, want %d", len(lsns), tc.read)
			}
			var ce *CorruptionError
			switch {
			case tc.errLSN == 0 && r.Err() != nil:
				t.Fatalf("unexpected error %v", r.Err())
			case tc.errLSN != 0 && (!errors.As(r.Err(), &ce) || ce.Segment != path || ce.LSN != tc.errLSN || ce.Offset != tc.errOff):
				t.Fatalf("error %v, want a *CorruptionError in %s at offset %d, LSN %d", r.Err(), path, tc.errOff, tc.errLSN)
			}
			tail := r.Tail()
			switch {
			case tc.tailLSN == 0 && tail != nil:
				t.Fatalf("unexpected tail %+v", tail)
			case tc.tailLSN != 0 && (tail == nil || tail.FirstLSN != tc.tailLSN || tail.Segment != path || tail.Offset != starts[tc.tailLSN]):
				t.Fatalf("tail %+v, want LSN %d at %d of %s", tail, tc.tailLSN, starts[tc.tailLSN], path)
			}
			if tc.tailLSN != 0 {
				segs, err := Segments(dir, InspectOptions{})
				if err != nil || segs[len(segs)-1].Tail == nil || segs[len(segs)-1].LastLSN != tc.tailLSN-1 {
					t.Fatalf("Segments: %+v, %v", segs, err)
				}
			}
		})
	}

	t.Run("missing middle segment", func(t *testing.T) {
		dir := copyDir(t, src)
		os.Remove(filepath.Join(dir, filepath.Base(sealed.Path)))
		_, r := readDir(t, dir, 1)
		var ce *CorruptionError
		if !errors.As(r.Err(), &ce) || ce.Segment != filepath.Join(dir, filepath.Base(segs[0].Path)) || ce.LSN != sealed.FirstLSN {
			t.Fatalf("error %v, want the gap before LSN %d named", r.Err(), sealed.FirstLSN)
		}
	})
	t.Run("damaged cursor", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, cursorDir), 0o750)
		os.WriteFile(filepath.Join(dir, cursorDir, "bad"+cursorSuffix), []byte("short"), 0o640)
		os.WriteFile(filepath.Join(dir, cursorDir, "x"+cursorSuffix+".tmp"), []byte("tmp"), 0o640)
		cs, err := ReadCursors(dir)
		if err != nil || len(cs) != 1 || cs[0].Err == nil || cs[0].Name != "bad" {
			t.Fatalf("cursors %+v, %v", cs, err)
		}
		if _, err := os.Stat(filepath.Join(dir, cursorDir, "x"+cursorSuffix+".tmp")); err != nil {
			t.Fatal("ReadCursors removed a temporary file")
		}
	})
}

// TestInspectLiveLedger reads a ledger while its writer appends and syncs:
// every pass sees a gap-free prefix of the records and never an error,
// whatever the writer is in the middle of.
func TestInspectLiveLedger(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOpts(t, true))
	const total = 600
	done := make(chan error, 1)
	go func() {
		for lsn := uint64(1); lsn <= total; lsn++ {
			if err := l.Append(lsn, rec(t, lsn, 700)); err != nil {
				done <- err
				return
			}
			if lsn%3 == 0 || lsn == total {
				if err := l.Sync(); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	storetest.ReadWhileWriting(t, done, total, func() ([]uint64, error) {
		lsns, r := readDir(t, dir, 1)
		return lsns, r.Err()
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

package journal

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
)

const inspectPad = 300

func inspectRec(t testing.TB, lsn uint64) []byte { return rec(t, 0, int(lsn), inspectPad) }

// inspectFixture is a closed journal of LSNs 1..n, each its own write
// group, in several 64 KiB generations.
func inspectFixture(t *testing.T, n uint64) string {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	for lsn := uint64(1); lsn <= n; lsn++ {
		if got := mustAppend(t, j, inspectRec(t, lsn)); got != lsn {
			t.Fatalf("appended LSN %d, want %d", got, lsn)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readDir(t *testing.T, dir string, from uint64) ([]uint64, *DirReader) {
	t.Helper()
	r, err := NewDirReader(dir, from)
	if err != nil {
		t.Fatal(err)
	}
	var lsns []uint64
	for r.Next() {
		if !bytes.Equal(r.Record(), inspectRec(t, r.LSN())) {
			t.Fatalf("LSN %d has the wrong content", r.LSN())
		}
		lsns = append(lsns, r.LSN())
	}
	return lsns, r
}

func TestInspectSegmentsAndRead(t *testing.T) {
	dir := inspectFixture(t, 500)
	before := storetest.SnapshotDir(t, dir)
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d generations, want several", len(segs))
	}
	next := uint64(1)
	var total int64
	for i, s := range segs {
		if s.FirstLSN != next || s.Base != next-1 || s.Open != (i == len(segs)-1) || s.Damage != nil || s.Tail != nil ||
			s.LastLSN != s.FirstLSN+uint64(s.Records)-1 {
			t.Fatalf("generation %d: %+v (want first LSN %d)", i, s, next)
		}
		next = s.LastLSN + 1
		total += s.Bytes
	}
	if next != 501 {
		t.Fatalf("generations end at %d, want 500", next-1)
	}
	for _, from := range []uint64{0, 1, 99, segs[1].FirstLSN, segs[1].LastLSN, 500, 501} {
		lsns, r := readDir(t, dir, from)
		if r.Err() != nil || r.Tail() != nil {
			t.Fatalf("from %d: err %v, tail %+v", from, r.Err(), r.Tail())
		}
		if want := storetest.Seq(max(from, 1), 500); !slices.Equal(lsns, want) {
			t.Fatalf("from %d: read %v, want %v", from, lsns, want)
		}
		if from <= 1 && r.BytesRead() != total {
			t.Fatalf("read %d bytes, segments hold %d", r.BytesRead(), total)
		}
	}
	if after := storetest.SnapshotDir(t, dir); !maps.Equal(before, after) {
		t.Fatalf("inspection changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}

// TestInspectReleased: released generations are gone from the listing, and
// one whose release a crash interrupted (directory without segment) is left
// as it is, not finished.
func TestInspectReleased(t *testing.T) {
	dir := inspectFixture(t, 900)
	segs, _ := Segments(dir)
	j := mustOpen(t, dir, smallOpts())
	if err := j.Release(segs[1].LastLSN); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// An interrupted release of the next generation.
	os.Remove(segs[2].File)
	after, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].FirstLSN != segs[3].FirstLSN {
		t.Fatalf("first generation after release: %+v, want the one at %d", after[0], segs[3].FirstLSN)
	}
	if _, err := os.Stat(segs[2].Dir); err != nil {
		t.Fatalf("the interrupted release was finished: %v", err)
	}
	lsns, r := readDir(t, dir, 1)
	if r.Err() != nil || !slices.Equal(lsns, storetest.Seq(segs[3].FirstLSN, 900)) {
		t.Fatalf("read %v, %v", lsns, r.Err())
	}
}

func TestInspectEmptyAndMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if segs, err := Segments(missing); err != nil || len(segs) != 0 {
		t.Fatalf("missing dir: %v, %v", segs, err)
	}
	if lsns, r := readDir(t, missing, 1); len(lsns) != 0 || r.Err() != nil {
		t.Fatalf("missing dir: read %v, %v", lsns, r.Err())
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("inspection created the directory")
	}
	// A fresh journal: one generation, no record.
	dir := t.TempDir()
	j := mustOpen(t, dir, Options{SegmentBytes: 64 << 10, MaxBytes: 1 << 20, MaxGroupBytes: 1 << 20, StartAfter: 41})
	j.Close()
	segs, err := Segments(dir)
	if err != nil || len(segs) != 1 || segs[0].Records != 0 || segs[0].FirstLSN != 42 || !segs[0].Open {
		t.Fatalf("fresh journal: %+v, %v", segs, err)
	}
}

// TestInspectDamageTable: damage in a closed generation, or in the newest
// before a later write group, is a located *CorruptionError; a torn last
// group of the newest generation is its Tail.
func TestInspectDamageTable(t *testing.T) {
	src := inspectFixture(t, 500)
	segs, _ := Segments(src)
	closed, newest := segs[1], segs[len(segs)-1]
	offsets := map[uint64]int64{}
	r, _ := NewDirReader(src, 1)
	for r.Next() {
		offsets[r.LSN()] = r.Offset()
	}
	mid, last := closed.FirstLSN+5, newest.LastLSN
	cases := []struct {
		name    string
		file    string
		damage  func(path string)
		read    uint64 // records read before stopping
		errLSN  uint64 // LSN the *CorruptionError names, 0 for none
		tailLSN uint64 // LSN of the Tail, 0 for none
	}{
		{"flipped record byte in a closed generation", closed.File,
			func(p string) { storetest.Flip(t, p, offsets[mid]+40) }, mid - 1, mid, 0},
		{"closed generation truncated inside an entry", closed.File,
			func(p string) { os.Truncate(p, offsets[mid]+10) }, mid - 1, mid, 0},
		{"flipped byte in the newest generation, later groups follow", newest.File,
			func(p string) { storetest.Flip(t, p, offsets[newest.FirstLSN+1]+40) }, newest.FirstLSN, newest.FirstLSN + 1, 0},
		{"flipped byte in the last group", newest.File,
			func(p string) { storetest.Flip(t, p, offsets[last]+40) }, last - 1, 0, last},
		{"newest generation torn inside its last entry", newest.File,
			func(p string) { os.Truncate(p, offsets[last]+7) }, last - 1, 0, last},
		{"zeros after the newest generation", newest.File,
			func(p string) { storetest.AppendBytes(t, p, make([]byte, 4096)) }, last, 0, last + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, src)
			path := filepath.Join(dir, filepath.Base(filepath.Dir(tc.file)), segmentFile)
			tc.damage(path)
			lsns, r := readDir(t, dir, 1)
			if uint64(len(lsns)) != tc.read {
				t.Fatalf("read %d records, want %d", len(lsns), tc.read)
			}
			var ce *CorruptionError
			switch {
			case tc.errLSN == 0 && r.Err() != nil:
				t.Fatalf("unexpected error %v", r.Err())
			case tc.errLSN != 0 && (!errors.As(r.Err(), &ce) || ce.File != path || ce.LSN != tc.errLSN || ce.Offset != offsets[tc.errLSN]):
				t.Fatalf("error %v, want a *CorruptionError in %s at offset %d, LSN %d", r.Err(), path, offsets[tc.errLSN], tc.errLSN)
			}
			tail := r.Tail()
			switch {
			case tc.tailLSN == 0 && tail != nil:
				t.Fatalf("unexpected tail %+v", tail)
			case tc.tailLSN != 0 && (tail == nil || tail.FirstLSN != tc.tailLSN || tail.File != path):
				t.Fatalf("tail %+v, want one at LSN %d in %s", tail, tc.tailLSN, path)
			}
			// Segments reports the same, in the generation's info.
			segs, err := Segments(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range segs {
				if s.File != path {
					continue
				}
				if (tc.errLSN != 0) != (s.Damage != nil) || (tc.tailLSN != 0) != (s.Tail != nil) {
					t.Fatalf("Segments: %+v", s)
				}
			}
		})
	}
}

// copyTree copies a journal directory (generation directories and files).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o750)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o640)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestInspectLiveJournal reads a journal while it is appended to, across
// rotations: every pass sees a gap-free run of records and never an error.
func TestInspectLiveJournal(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	const total = 800
	done := make(chan error, 1)
	go func() {
		for lsn := uint64(1); lsn <= total; lsn++ {
			if _, err := j.Append(t.Context(), inspectRec(t, lsn)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	storetest.ReadWhileWriting(t, done, total, func() ([]uint64, error) {
		lsns, r := readDir(t, dir, 1)
		return lsns, r.Err()
	})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIsGenerationDir: only gen-<20 digits> names a generation.
func TestIsGenerationDir(t *testing.T) {
	for name, want := range map[string]bool{
		genName(0):                     true,
		genName(12345):                 true,
		"gen-123":                      false,
		"gen-0000000000000000000x":     false,
		"damaged-00000000000000000001": false,
		"LOCK":                         false,
	} {
		if got := IsGenerationDir(name); got != want {
			t.Errorf("IsGenerationDir(%q) = %v, want %v", name, got, want)
		}
	}
}

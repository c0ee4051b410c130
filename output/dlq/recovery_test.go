package dlq

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fixture is a closed store of several files, written in writes of one to
// three entries, whose newest file holds at least three writes.
type fixture struct {
	dir    string
	es     []Entry
	pos    []Pos
	starts map[int]bool // indexes in es of the first entry of each write
	files  []string     // base names, oldest first
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dlq")
	opts, _ := testOpts(t, 2048, 1<<20)
	s := mustOpen(t, dir, opts)
	fx := &fixture{dir: dir, starts: map[int]bool{}}
	files, writes := 0, 0 // writes into the newest file
	for i := 1; len(fx.es) < 30 || files < 3 || writes < 3; i++ {
		n := i%3 + 1
		fx.starts[len(fx.es)] = true
		es := entries("s", len(fx.es)+1, len(fx.es)+n)
		mustAppend(t, s, es...)
		fx.es = append(fx.es, es...)
		if len(s.files) != files {
			files, writes = len(s.files), 0
		}
		writes++
	}
	mustClose(t, s)
	fx.pos = expectEntries(t, dir, fx.es)
	fx.files = dlqFiles(t, dir)
	writes = 0
	for i, p := range fx.pos {
		if p.File == fx.files[len(fx.files)-1] && fx.starts[i] {
			writes++
		}
	}
	if len(fx.files) < 3 || writes < 2 {
		t.Fatalf("fixture: %d files, %d writes in the newest", len(fx.files), writes)
	}
	return fx
}

func (fx *fixture) path(name string) string { return filepath.Join(fx.dir, name) }

// entriesIn returns the indexes of the entries in file name.
func (fx *fixture) entriesIn(name string) []int {
	var is []int
	for i, p := range fx.pos {
		if p.File == name {
			is = append(is, i)
		}
	}
	return is
}

func (fx *fixture) end(i int) int64 {
	if i+1 < len(fx.pos) && fx.pos[i+1].File == fx.pos[i].File {
		return fx.pos[i+1].Offset
	}
	st, err := os.Stat(fx.path(fx.pos[i].File))
	if err != nil {
		panic(err)
	}
	return st.Size()
}

func edit(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o640); err != nil {
		t.Fatal(err)
	}
}

func flip(off int64) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= 0x10; return b }
}

// TestTornTailAtEveryOffset cuts the last frame of the newest file at each
// of its offsets (and zeroes it from a sample of them): Scan ends before it without an error, Open
// cuts it and logs where, and new entries follow the earlier ones.
func TestTornTailAtEveryOffset(t *testing.T) {
	src := filepath.Join(t.TempDir(), "dlq")
	opts, _ := testOpts(t, 0, 0)
	s := mustOpen(t, src, opts)
	mustAppend(t, s, entries("s", 1, 4)...)
	mustAppend(t, s, entries("s", 5, 9)...)
	mustAppend(t, s, entry("s", 10))
	mustClose(t, s)
	ps := expectEntries(t, src, entries("s", 1, 10))
	data, err := os.ReadFile(filepath.Join(src, fileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := ps[9].Offset, int64(len(data))
	kept := entries("s", 1, 9)
	dir := filepath.Join(t.TempDir(), "dlq") // reused: creating directories is slow
	os.Mkdir(dir, 0o750)
	for _, zero := range []bool{false, true} {
		for c := a; c < b; c++ {
			if zero && c != b-1 && (c-a)%4 != 0 {
				continue // a sample will do: zeros at every offset behave alike
			}
			torn := append([]byte{}, data[:c]...)
			if zero {
				torn = append(torn, make([]byte, b-c)...)
			}
			if err := os.WriteFile(filepath.Join(dir, fileName(1)), torn, 0o640); err != nil {
				t.Fatal(err)
			}
			expectEntries(t, dir, kept) // read-only: the tear is the end
			opts, sink := testOpts(t, 0, 0)
			s := mustOpen(t, dir, opts)
			r := s.Recovery()
			if clean := c == a && !zero; clean != (r == nil) {
				t.Fatalf("zero %v cut at %d: repair %+v", zero, c, r)
			}
			if r != nil && (r.Offset != a || r.Bytes != int64(len(torn))-a || sink.count("torn tail") != 1) {
				t.Fatalf("zero %v cut at %d: repair %+v, want offset %d", zero, c, r, a)
			}
			if st, _ := os.Stat(filepath.Join(dir, fileName(1))); st.Size() != a {
				t.Fatalf("zero %v cut at %d: file is %d bytes after Open, want %d", zero, c, st.Size(), a)
			}
			if c == a || c == b-1 || c == (a+b)/2 {
				mustAppend(t, s, entry("s", 11))
				mustClose(t, s)
				expectEntries(t, dir, append(kept[:9:9], entry("s", 11)))
				continue
			}
			mustClose(t, s)
			expectEntries(t, dir, kept)
		}
	}
}

// TestTornWriteKeepsLaterPages: a write of several frames can lose an early
// page and keep later ones; those frames belong to the same write, so it is
// still a tear, cut where the damage starts.
func TestTornWriteKeepsLaterPages(t *testing.T) {
	for damaged := 0; damaged < 3; damaged++ {
		dir := filepath.Join(t.TempDir(), "dlq")
		opts, _ := testOpts(t, 0, 0)
		s := mustOpen(t, dir, opts)
		mustAppend(t, s, entries("s", 1, 3)...)
		mustAppend(t, s, entries("s", 4, 6)...)
		mustClose(t, s)
		ps := expectEntries(t, dir, entries("s", 1, 6))
		from, to := ps[3+damaged].Offset, ps[3+damaged].Offset+30
		edit(t, filepath.Join(dir, fileName(1)), func(b []byte) []byte { clear(b[from:to]); return b })
		expectEntries(t, dir, entries("s", 1, 3+damaged))
		s = mustOpen(t, dir, opts)
		if r := s.Recovery(); r == nil || r.Offset != from {
			t.Fatalf("frame %d damaged: repair %+v, want a cut at %d", damaged, r, from)
		}
		mustClose(t, s)
		expectEntries(t, dir, entries("s", 1, 3+damaged))
	}
}

func TestDamage(t *testing.T) {
	type want struct {
		file   string // "" for a repair instead of corruption
		offset int64  // corruption offset, or where the repair cut
		kept   int    // entries Scan delivers
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, fx *fixture) want
	}{
		{"payload byte flipped in the newest file, later writes follow", func(t *testing.T, fx *fixture) want {
			i := fx.entriesIn(fx.files[len(fx.files)-1])[0]
			edit(t, fx.path(fx.pos[i].File), flip(fx.pos[i].Offset+frameHeaderSize+5))
			return want{fx.pos[i].File, fx.pos[i].Offset, i}
		}},
		{"length flipped in the newest file, later writes follow", func(t *testing.T, fx *fixture) want {
			is := fx.entriesIn(fx.files[len(fx.files)-1])
			i := is[1]
			edit(t, fx.path(fx.pos[i].File), flip(fx.pos[i].Offset+offFrameLen+1))
			return want{fx.pos[i].File, fx.pos[i].Offset, i}
		}},
		{"zeroed sector in the newest file, later writes follow", func(t *testing.T, fx *fixture) want {
			i := fx.entriesIn(fx.files[len(fx.files)-1])[0]
			from := fx.pos[i].Offset + 10
			edit(t, fx.path(fx.pos[i].File), func(b []byte) []byte { clear(b[from : from+100]); return b })
			return want{fx.pos[i].File, fx.pos[i].Offset, i}
		}},
		{"newest file header flipped, frames behind it", func(t *testing.T, fx *fixture) want {
			name := fx.files[len(fx.files)-1]
			edit(t, fx.path(name), flip(offHdrSeq))
			return want{name, 0, fx.entriesIn(name)[0]}
		}},
		{"last frame of an older file flipped", func(t *testing.T, fx *fixture) want {
			is := fx.entriesIn(fx.files[0])
			i := is[len(is)-1]
			edit(t, fx.path(fx.files[0]), flip(fx.end(i)-1))
			return want{fx.files[0], fx.pos[i].Offset, i}
		}},
		{"older file cut inside its last frame", func(t *testing.T, fx *fixture) want {
			is := fx.entriesIn(fx.files[1])
			i := is[len(is)-1]
			edit(t, fx.path(fx.files[1]), func(b []byte) []byte { return b[:fx.pos[i].Offset+7] })
			return want{fx.files[1], fx.pos[i].Offset, i}
		}},
		{"older file with a zero tail", func(t *testing.T, fx *fixture) want {
			is := fx.entriesIn(fx.files[0])
			end := fx.end(is[len(is)-1])
			edit(t, fx.path(fx.files[0]), func(b []byte) []byte { return append(b, make([]byte, 512)...) })
			return want{fx.files[0], end, is[len(is)-1] + 1}
		}},
		{"older file followed by a frame of another file", func(t *testing.T, fx *fixture) want {
			is := fx.entriesIn(fx.files[0])
			end := fx.end(is[len(is)-1])
			b, _ := os.ReadFile(fx.path(fx.files[2]))
			i := fx.entriesIn(fx.files[2])[0]
			frame := b[fx.pos[i].Offset:fx.end(i)]
			edit(t, fx.path(fx.files[0]), func(b []byte) []byte { return append(b, frame...) })
			return want{fx.files[0], end, is[len(is)-1] + 1}
		}},
		{"older file header flipped", func(t *testing.T, fx *fixture) want {
			edit(t, fx.path(fx.files[0]), flip(offHdrMagic+1))
			return want{fx.files[0], 0, 0}
		}},
		{"older file renamed out of order", func(t *testing.T, fx *fixture) want {
			os.Rename(fx.path(fx.files[0]), fx.path(fileName(1000)))
			os.Rename(fx.path(fx.files[1]), fx.path(fx.files[0]))
			return want{fx.files[0], 0, 0} // its header names another sequence
		}},
		{"last frame of the newest file flipped: indistinguishable from a tear", func(t *testing.T, fx *fixture) want {
			i := len(fx.es) - 1
			edit(t, fx.path(fx.pos[i].File), flip(fx.pos[i].Offset+frameHeaderSize+1))
			return want{"", fx.pos[i].Offset, i}
		}},
		{"zero tail behind the newest file", func(t *testing.T, fx *fixture) want {
			name := fx.files[len(fx.files)-1]
			st, _ := os.Stat(fx.path(name))
			edit(t, fx.path(name), func(b []byte) []byte { return append(b, make([]byte, 4096)...) })
			return want{"", st.Size(), len(fx.es)}
		}},
		{"newest file created, header torn", func(t *testing.T, fx *fixture) want {
			os.WriteFile(fx.path(fileName(uint64(len(fx.files)+1))), []byte(fileMagic[:3]), 0o640)
			return want{"", 0, len(fx.es)}
		}},
		{"newest file created, all zeros", func(t *testing.T, fx *fixture) want {
			os.WriteFile(fx.path(fileName(uint64(len(fx.files)+1))), make([]byte, 4096), 0o640)
			return want{"", 0, len(fx.es)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			w := tc.damage(t, fx)
			_, got, err := scanAll(t, fx.dir)
			if len(got) != w.kept {
				t.Fatalf("Scan delivered %d entries before stopping, want %d (%v)", len(got), w.kept, err)
			}
			for i := range got {
				if !sameEntry(got[i], fx.es[i]) {
					t.Fatalf("entry %d differs", i)
				}
			}
			opts, _ := testOpts(t, 2048, 1<<20)
			s, oerr := Open(fx.dir, opts)
			if w.file == "" {
				if err != nil || oerr != nil {
					t.Fatalf("Scan: %v; Open: %v; want a repair", err, oerr)
				}
				if r := s.Recovery(); r == nil || r.Offset != w.offset {
					t.Fatalf("repair %+v, want a cut at %d", r, w.offset)
				}
				mustAppend(t, s, entry("s", 100))
				mustClose(t, s)
				expectEntries(t, fx.dir, append(fx.es[:w.kept:w.kept], entry("s", 100)))
				return
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != fx.path(w.file) || ce.Offset != w.offset {
				t.Fatalf("Scan: got %v, want corruption of %s at %d", err, w.file, w.offset)
			}
			// Damage does not stop the store: the damaged file is set
			// aside, the entries before the damage are stored again, and
			// the store takes new entries.
			if oerr != nil {
				t.Fatalf("Open refused damage: %v", oerr)
			}
			var aside *SetAside
			for i, a := range s.SetAsideFiles() {
				if a.File == w.file {
					aside = &s.SetAsideFiles()[i]
				}
			}
			if aside == nil || aside.Offset != w.offset {
				t.Fatalf("set aside %+v, want %s at %d", s.SetAsideFiles(), w.file, w.offset)
			}
			if _, err := os.Stat(fx.path(w.file) + ".damaged"); err != nil {
				t.Fatalf("the damaged file was not kept: %v", err)
			}
			mustAppend(t, s, entry("s", 100))
			mustClose(t, s)
			_, got, err = scanAll(t, fx.dir)
			if err != nil {
				t.Fatalf("scan after Open: %v", err)
			}
			seen := map[int]bool{}
			for _, g := range got[:len(got)-1] {
				k := slices.IndexFunc(fx.es, func(e Entry) bool { return sameEntry(e, g) })
				if k < 0 || seen[k] {
					t.Fatalf("entry %+v unknown or twice", g)
				}
				seen[k] = true
			}
			for i, p := range fx.pos {
				if p.File == w.file && p.Offset < w.offset && !seen[i] {
					t.Fatalf("entry %d, before the damage, was not salvaged", i)
				}
			}
			if !sameEntry(got[len(got)-1], entry("s", 100)) {
				t.Fatal("the new entry is not the last")
			}
		})
	}
}

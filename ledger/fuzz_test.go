package ledger

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/logpond/logpond/record"
)

// FuzzSegmentScan scans arbitrary segment bytes. It must never panic or
// loop; frames it returns carry consecutive LSNs from 1; damage is located
// inside the file; compressed records decode to their header's count or
// fail cleanly. Seeds (real segments, torn and damaged, and one of
// compressed records) live in
// testdata/fuzz/FuzzSegmentScan.
func FuzzSegmentScan(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, BlockSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "seg")
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		sc := newSegScanner(file, path, 1, 0)
		want := uint64(1)
		// A Reader decodes what the scan returns: a compressed record's
		// block must decode or fail cleanly, never exceed its bound.
		r := &Reader{}
		defer r.Close()
		for sc.nextFrame() {
			if sc.lsn != want || sc.recOff < 0 || sc.recOff >= int64(len(data)) {
				t.Fatalf("frame LSN %d at %d, want LSN %d inside %d bytes", sc.lsn, sc.recOff, want, len(data))
			}
			if dec, err := r.decode(sc.rec, sc.hdr); err == nil && dec.Count() != sc.hdr.Count {
				t.Fatalf("LSN %d decodes to %d events, its header says %d", sc.lsn, dec.Count(), sc.hdr.Count)
			}
			want++
		}
		if sc.ioErr != nil {
			t.Fatal(sc.ioErr)
		}
		if d := sc.damage; d != nil && (d.Offset < 0 || d.Offset >= int64(len(data)) || d.LSN != want) {
			t.Fatalf("damage %+v outside the data or at the wrong LSN (want %d)", d, want)
		}
	})
}

// TestWriteSegmentFuzzSeeds regenerates the seeds when LOGPOND_WRITE_SEEDS=1.
func TestWriteSegmentFuzzSeeds(t *testing.T) {
	if os.Getenv("LOGPOND_WRITE_SEEDS") != "1" {
		t.Skip("set LOGPOND_WRITE_SEEDS=1 to regenerate the fuzz seeds")
	}
	_, seg, _, starts := ledgerFixture(t)
	data, _ := os.ReadFile(seg)
	out := filepath.Join("testdata", "fuzz", "FuzzSegmentScan")
	os.MkdirAll(out, 0o755)
	write := func(name string, b []byte) {
		os.WriteFile(filepath.Join(out, name), []byte("go test fuzz v1\n[]byte("+quote(b)+")\n"), 0o644)
	}
	clone := func() []byte { return append([]byte(nil), data...) }
	write("intact", data)
	write("torn", data[:starts[30]+100])
	flipped := clone()
	flipped[starts[21]+frameHeader+5] ^= 1
	write("flipped-record", flipped)
	header := clone()
	header[starts[11]+offFrameLSN] ^= 4
	write("flipped-header", header)
	write("zero-tail", append(clone(), make([]byte, 2*BlockSize)...))

	// A segment of compressed records (record version 2).
	dir := t.TempDir()
	opts := testOpts(t, false)
	opts.Compression = record.Zstd(record.LevelFastest)
	l := mustOpen(t, dir, opts)
	for lsn := uint64(1); lsn <= 8; lsn++ {
		if err := l.Append(lsn, zrec(t, lsn)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	compressed, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	write("compressed", compressed)
}

func quote(b []byte) string { return strconv.Quote(string(b)) }

package dlq

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzScan scans arbitrary bytes as the dead-letter file with sequence 1,
// both as an older file and as the newest. It must never panic, loop or
// allocate beyond the input; frames it returns are contiguous from the
// header, and each payload re-encodes to the very bytes it was read from;
// damage and tears are located inside the data; a read as an older file
// returns a prefix of what a read as the newest file returns. Seeds (real
// files, torn and damaged) live in testdata/fuzz/FuzzScan.
func FuzzScan(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, fileHeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		var older []Entry
		for _, newest := range []bool{false, true} {
			sc := newFileScanner(bytes.NewReader(data), "fuzz", 1, int64(len(data)), newest)
			end := int64(fileHeaderSize)
			var got []Entry
			for sc.next() {
				if sc.frameOff != end || sc.off <= end || sc.off > int64(len(data)) {
					t.Fatalf("frame at %d ending at %d, want one at %d inside %d bytes", sc.frameOff, sc.off, end, len(data))
				}
				e := sc.entry
				if err := checkEntry(&e, maxSegmentBytes); err != nil {
					t.Fatalf("decoded an entry that cannot be stored: %v", err)
				}
				frame := appendFrame(nil, &e)
				if int64(len(frame)) != frameSize(&e) {
					t.Fatalf("frame of %d bytes, frameSize says %d", len(frame), frameSize(&e))
				}
				if !bytes.Equal(frame[frameHeaderSize:], data[sc.frameOff+frameHeaderSize:sc.off]) {
					t.Fatalf("payload at %d does not re-encode to itself", sc.frameOff)
				}
				got = append(got, e)
				end = sc.off
			}
			var ce *CorruptionError
			switch {
			case sc.err != nil && !errors.As(sc.err, &ce):
				t.Fatalf("error without a location: %v", sc.err)
			case ce != nil && (ce.Offset < 0 || ce.Offset > int64(len(data)) || ce.File != "fuzz"):
				t.Fatalf("corruption %+v outside the data", ce)
			case sc.torn != nil && (!newest || sc.torn.Offset < 0 || sc.torn.Offset > int64(len(data))):
				t.Fatalf("tear at %d (newest %v) in %d bytes", sc.torn.Offset, newest, len(data))
			case sc.err == nil && sc.torn == nil && sc.started && end != int64(len(data)):
				t.Fatalf("clean end at %d of %d bytes", end, len(data))
			}
			if !newest {
				older = got
			} else if len(older) > len(got) {
				t.Fatalf("read as an older file: %d entries, as the newest: %d", len(older), len(got))
			}
		}
	})
}

// TestWriteFuzzSeeds regenerates the seeds when LOGPOND_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOGPOND_WRITE_SEEDS") != "1" {
		t.Skip("set LOGPOND_WRITE_SEEDS=1 to regenerate the fuzz seeds")
	}
	dir := t.TempDir()
	opts, _ := testOpts(t, 0, 0)
	s := mustOpen(t, dir, opts)
	// Small entries: the fuzzer minimizes every input it finds
	// interesting, which takes long on large ones.
	es := fuzzSeedEntries()
	mustAppend(t, s, es[:3]...)
	mustAppend(t, s, es[3])
	mustAppend(t, s, es[4:]...)
	mustClose(t, s)
	ps := expectEntries(t, dir, es)
	data, err := os.ReadFile(filepath.Join(dir, fileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("testdata", "fuzz", "FuzzScan")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(out, name), []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(b))+")\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clone := func() []byte { return append([]byte(nil), data...) }
	write("intact", data)
	write("header-only", data[:fileHeaderSize])
	write("torn-last-frame", data[:ps[5].Offset+30])
	write("zero-tail", append(clone(), make([]byte, 300)...))
	flipped := clone()
	flipped[ps[1].Offset+frameHeaderSize+3] ^= 1
	write("flipped-payload-before-later-write", flipped)
	header := clone()
	header[ps[2].Offset+offFrameWrite] ^= 2
	write("flipped-write-offset", header)
	same := clone()
	clear(same[ps[4].Offset : ps[4].Offset+8])
	write("torn-write-later-frame-intact", same)
	zeroHeader := clone()
	clear(zeroHeader[:fileHeaderSize])
	write("zeroed-file-header", zeroHeader)
}

// fuzzSeedEntries are the entries of the intact seed, in three writes:
// 0–2, 3, 4–5.
func fuzzSeedEntries() []Entry {
	small := func(i int) Entry {
		return Entry{Stream: "s", LSN: uint64(i), Action: "create", Status: 400, Reason: "r",
			Received: t0, Failed: t0.Add(time.Second), Event: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	odd := small(4)
	odd.Event, odd.Reason = []byte("{no\xff"), "理由"
	return []Entry{small(1), small(2), small(3), odd, {}, small(5)}
}

// TestFuzzSeeds reads the seeds as golden files: the intact one must keep
// decoding to the same entries (the format never changes), and each damaged
// one must keep its verdict.
func TestFuzzSeeds(t *testing.T) {
	es := fuzzSeedEntries()
	tests := []struct {
		seed    string
		entries int // delivered before the end
		torn    bool
		corrupt bool
	}{
		{"intact", 6, false, false},
		{"header-only", 0, false, false},
		{"torn-last-frame", 5, true, false},
		{"zero-tail", 6, true, false},
		{"flipped-payload-before-later-write", 1, false, true},
		{"flipped-write-offset", 2, false, true},
		{"torn-write-later-frame-intact", 4, true, false},
		{"zeroed-file-header", 0, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.seed, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzScan", tc.seed))
			if err != nil {
				t.Fatal(err)
			}
			quoted, ok := strings.CutPrefix(string(b), "go test fuzz v1\n[]byte(")
			quoted, ok2 := strings.CutSuffix(quoted, ")\n")
			data, err := strconv.Unquote(quoted)
			if !ok || !ok2 || err != nil {
				t.Fatalf("not a corpus file: %v", err)
			}
			sc := newFileScanner(strings.NewReader(data), tc.seed, 1, int64(len(data)), true)
			n := 0
			for sc.next() {
				if !sameEntry(sc.entry, es[n]) {
					t.Fatalf("entry %d is %+v, want %+v", n, sc.entry, es[n])
				}
				n++
			}
			if n != tc.entries || (sc.torn != nil) != tc.torn || (sc.err != nil) != tc.corrupt {
				t.Fatalf("%d entries, tear %+v, error %v", n, sc.torn, sc.err)
			}
		})
	}
}

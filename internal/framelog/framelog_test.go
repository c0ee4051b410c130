package framelog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

// The test format: a 10-byte header (position, write position and payload
// length, u16 each, then a CRC-32 of those and the payload) and the
// payload. Positions count frames from 1, as the journal's LSNs do.
const testHeader = 10

type testFormat struct{}

var (
	errNoFrame = errors.New("not a frame")
	errPos     = errors.New("unexpected position")
	errEnd     = errors.New("ends early")
)

func (testFormat) MinSize() int64 { return testHeader + 1 }

func (testFormat) Frame(src Source, off int64, after uint64) (Frame, error, error) {
	if src.Size()-off < testHeader {
		return Frame{}, errNoFrame, nil
	}
	h, err := src.At(off, testHeader)
	if errors.Is(err, ErrShrank) {
		return Frame{}, err, nil
	} else if err != nil {
		return Frame{}, nil, err
	}
	pos, write, n := binary.LittleEndian.Uint16(h), binary.LittleEndian.Uint16(h[2:]), int64(binary.LittleEndian.Uint16(h[4:]))
	if n == 0 || n > src.Size()-off-testHeader || uint64(pos) <= after {
		return Frame{}, errNoFrame, nil
	}
	b, err := src.At(off, int(testHeader+n))
	if errors.Is(err, ErrShrank) {
		return Frame{}, err, nil
	} else if err != nil {
		return Frame{}, nil, err
	}
	if binary.LittleEndian.Uint32(b[6:]) != testCRC(b) {
		return Frame{}, errNoFrame, nil
	}
	return Frame{Off: off, Size: testHeader + n, Pos: uint64(pos), Write: uint64(write), Payload: b[testHeader:]}, nil, nil
}

func testCRC(frame []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE(frame[:6]), crc32.IEEETable, frame[testHeader:])
}

func (testFormat) Follows(prev, f Frame, want uint64) error {
	if f.Pos != want || f.Write < prev.Write {
		return fmt.Errorf("%w: %d", errPos, f.Pos)
	}
	return nil
}

func (testFormat) Next(f Frame) uint64 { return f.Pos + 1 }

func (testFormat) End(want, last uint64) error {
	return fmt.Errorf("%w: %d–%d missing", errEnd, want, last)
}

// testLog is a file of writes of frames; frames[i] is the offset of the
// frame with position i+1, writes[k] the offset where write k begins.
type testLog struct {
	data           []byte
	frames, writes []int64
}

// newTestLog writes frames in writes of the given sizes (frames each),
// every payload a few bytes.
func newTestLog(sizes ...int) *testLog {
	l := &testLog{}
	pos := uint16(1)
	for _, n := range sizes {
		l.writes = append(l.writes, int64(len(l.data)))
		write := pos
		for range n {
			payload := bytes.Repeat([]byte{byte('a' + pos%26)}, 5+int(pos%7))
			f := make([]byte, testHeader, testHeader+len(payload))
			binary.LittleEndian.PutUint16(f, pos)
			binary.LittleEndian.PutUint16(f[2:], write)
			binary.LittleEndian.PutUint16(f[4:], uint16(len(payload)))
			f = append(f, payload...)
			binary.LittleEndian.PutUint32(f[6:], testCRC(f))
			l.frames = append(l.frames, int64(len(l.data)))
			l.data = append(l.data, f...)
			pos++
		}
	}
	return l
}

// frameAt is the index of the frame holding byte off.
func (l *testLog) frameAt(off int64) int {
	i := 0
	for i+1 < len(l.frames) && l.frames[i+1] <= off {
		i++
	}
	return i
}

type outcome struct {
	frames int    // frames Next returned
	torn   int64  // offset of the tear, -1 for none
	damage int64  // offset of the *CorruptionError, -1 for none
	kind   Kind   // its kind
	pos    uint64 // the position the tear or damage names
}

func scanAll(t *testing.T, src Source, scan Scan) outcome {
	t.Helper()
	s := NewScanner(src, testFormat{}, scan)
	o := outcome{torn: -1, damage: -1}
	for s.Next() {
		o.frames++
		if got := s.Frame().Pos; got != scan.Want+uint64(o.frames)-1 {
			t.Fatalf("frame %d carries position %d", o.frames, got)
		}
	}
	var ce *CorruptionError
	switch {
	case s.Torn() != nil:
		o.torn, o.pos = s.Torn().Offset, s.Torn().Pos
		if s.Torn().Offset != s.Offset() {
			t.Fatalf("tear at %d, scanner at %d", s.Torn().Offset, s.Offset())
		}
	case errors.As(s.Err(), &ce):
		o.damage, o.kind, o.pos = ce.Offset, ce.Kind, ce.Pos
	case s.Err() != nil:
		t.Fatalf("read error: %v", s.Err())
	}
	return o
}

// TestCutEveryOffset cuts the file at every offset: in the file a log
// appends to, that is a torn tail at the last whole frame; in any other,
// damage there.
func TestCutEveryOffset(t *testing.T) {
	l := newTestLog(1, 3, 2, 1)
	for cut := int64(0); cut < int64(len(l.data)); cut++ {
		i := l.frameAt(cut)
		kept := i // the frames before the one cut
		got := scanAll(t, Bytes(l.data[:cut]), Scan{File: "f", Want: 1, Tail: true})
		want := outcome{frames: kept, torn: l.frames[i], damage: -1, pos: uint64(i) + 1}
		if cut == l.frames[i] {
			want.torn, want.pos = -1, 0 // ends cleanly at a frame boundary
		}
		if got != want {
			t.Fatalf("cut at %d, tail: got %+v, want %+v", cut, got, want)
		}
		got = scanAll(t, Bytes(l.data[:cut]), Scan{File: "f", Want: 1})
		if cut != l.frames[i] {
			want = outcome{frames: kept, torn: -1, damage: l.frames[i], kind: Sealed, pos: uint64(i) + 1}
		}
		if got != want {
			t.Fatalf("cut at %d, sealed: got %+v, want %+v", cut, got, want)
		}
	}
}

// TestFlipEveryByte flips each byte in turn: damage when a later write
// follows the frame it lands in, a torn tail in the last write (nothing can
// tell those apart), damage anywhere in a sealed file.
func TestFlipEveryByte(t *testing.T) {
	l := newTestLog(2, 1, 3, 2)
	lastWrite := l.writes[len(l.writes)-1]
	for off := range int64(len(l.data)) {
		data := bytes.Clone(l.data)
		data[off] ^= 0x40
		i := l.frameAt(off)
		got := scanAll(t, Bytes(data), Scan{File: "f", Want: 1, Tail: true})
		want := outcome{frames: i, torn: -1, damage: l.frames[i], kind: LaterWritten, pos: uint64(i) + 1}
		if off >= lastWrite {
			want = outcome{frames: i, torn: l.frames[i], damage: -1, pos: uint64(i) + 1}
		}
		if got != want {
			t.Fatalf("byte %d flipped, tail: got %+v, want %+v", off, got, want)
		}
		got = scanAll(t, Bytes(data), Scan{File: "f", Want: 1})
		want = outcome{frames: i, torn: -1, damage: l.frames[i], kind: Sealed, pos: uint64(i) + 1}
		if got != want {
			t.Fatalf("byte %d flipped, sealed: got %+v, want %+v", off, got, want)
		}
	}
}

// TestTornWriteKeepsLaterPages zeroes the start of the last write but keeps
// its last frame: that frame belongs to the torn write (its Write is not
// later), so the tail is still torn; zeroing an earlier write whose
// successor survives is damage.
func TestTornWriteKeepsLaterPages(t *testing.T) {
	l := newTestLog(2, 3)
	data := bytes.Clone(l.data)
	clear(data[l.writes[1]:l.frames[len(l.frames)-1]])
	got := scanAll(t, Bytes(data), Scan{File: "f", Want: 1, Tail: true})
	if want := (outcome{frames: 2, torn: l.writes[1], damage: -1, pos: 3}); got != want {
		t.Fatalf("torn last write: got %+v, want %+v", got, want)
	}
	data = bytes.Clone(l.data)
	clear(data[l.writes[0]:l.frames[1]])
	got = scanAll(t, Bytes(data), Scan{File: "f", Want: 1, Tail: true})
	if want := (outcome{frames: 0, torn: -1, damage: 0, kind: LaterWritten, pos: 1}); got != want {
		t.Fatalf("zeroed first write: got %+v, want %+v", got, want)
	}
}

// TestLast ends a scan at the file's last position whatever follows, and
// calls a file that ends before it damaged.
func TestLast(t *testing.T) {
	l := newTestLog(2, 2)
	garbage := append(bytes.Clone(l.data[:l.frames[3]]), bytes.Repeat([]byte{0xee}, 40)...)
	if got, want := scanAll(t, Bytes(garbage), Scan{File: "f", Want: 1, Last: 3}), (outcome{frames: 3, torn: -1, damage: -1}); got != want {
		t.Fatalf("stale bytes after the last position: got %+v, want %+v", got, want)
	}
	s := NewScanner(Bytes(l.data[:l.frames[2]]), testFormat{}, Scan{File: "f", Want: 1, Last: 4})
	for s.Next() {
	}
	var ce *CorruptionError
	if !errors.As(s.Err(), &ce) || !errors.Is(ce, errEnd) || ce.Kind != Sealed || ce.Offset != l.frames[2] || ce.Pos != 3 {
		t.Fatalf("file ending before its last position: %v", s.Err())
	}
}

// flaky returns damaged bytes until it is read again, as a reader that
// caught a write half copied into the page cache.
type flaky struct {
	whole, torn []byte
	reread      bool
}

func (f *flaky) Size() int64 { return int64(len(f.whole)) }
func (f *flaky) At(off int64, n int) ([]byte, error) {
	if f.reread {
		return f.whole[off : off+int64(n)], nil
	}
	return f.torn[off : off+int64(n)], nil
}
func (f *flaky) Reread() bool { f.reread = true; return true }

// TestReadAgain reads bytes followed by a later write again once before it
// calls them damage.
func TestReadAgain(t *testing.T) {
	l := newTestLog(2, 2)
	torn := bytes.Clone(l.data)
	clear(torn[l.frames[1]:l.frames[2]])
	if got, want := scanAll(t, &flaky{whole: l.data, torn: torn}, Scan{File: "f", Want: 1, Tail: true}), (outcome{frames: 4, torn: -1, damage: -1}); got != want {
		t.Fatalf("write seen half copied: got %+v, want %+v", got, want)
	}
	if got, want := scanAll(t, &flaky{whole: torn, torn: torn}, Scan{File: "f", Want: 1, Tail: true}), (outcome{frames: 1, torn: -1, damage: l.frames[1], kind: LaterWritten, pos: 2}); got != want {
		t.Fatalf("damage read again: got %+v, want %+v", got, want)
	}
}

// TestFile reads through a File source like through Bytes, and a file that
// shrank while scanned ends its frames like a tear.
func TestFile(t *testing.T) {
	l := newTestLog(3, 2, 4)
	if got, want := scanAll(t, File(bytes.NewReader(l.data), int64(len(l.data))), Scan{File: "f", Want: 1, Tail: true}), (outcome{frames: 9, torn: -1, damage: -1}); got != want {
		t.Fatalf("whole file: got %+v, want %+v", got, want)
	}
	short := l.data[:l.frames[7]]
	if got, want := scanAll(t, File(bytes.NewReader(short), int64(len(l.data))), Scan{File: "f", Want: 1, Tail: true}), (outcome{frames: 7, torn: l.frames[7], damage: -1, pos: 8}); got != want {
		t.Fatalf("shrunk file: got %+v, want %+v", got, want)
	}
}

// TestFind finds a frame by position after damage, past other frames.
func TestFind(t *testing.T) {
	l := newTestLog(2, 2, 2)
	data := bytes.Clone(l.data)
	data[l.frames[1]+3] ^= 1
	for pos := uint64(3); pos <= 6; pos++ {
		f, ok, err := Find(Bytes(data), testFormat{}, l.frames[1]+1, pos)
		if err != nil || !ok || f.Off != l.frames[pos-1] || f.Pos != pos {
			t.Fatalf("find %d: %+v %v %v, want offset %d", pos, f, ok, err, l.frames[pos-1])
		}
	}
	if _, ok, _ := Find(Bytes(data), testFormat{}, l.frames[1]+1, 2); ok {
		t.Fatal("found the damaged frame")
	}
}

// TestResume finds where a scan goes on past damage: the first frame that
// verifies after it, with a position above the damaged one and at most the
// last, if any.
func TestResume(t *testing.T) {
	l := newTestLog(2, 2, 2)
	data := bytes.Clone(l.data)
	data[l.frames[1]+3] ^= 1 // frame 2
	data[l.frames[2]+3] ^= 1 // frame 3
	for _, tc := range []struct {
		after, last uint64
		want        uint64 // 0: none
	}{
		{after: 1, want: 4},
		{after: 1, last: 6, want: 4},
		{after: 4, want: 5},
		{after: 1, last: 3, want: 0},
		{after: 6, want: 0},
	} {
		f, ok, err := Resume(Bytes(data), testFormat{}, l.frames[1]+1, tc.after, tc.last)
		switch {
		case err != nil:
			t.Fatalf("%+v: %v", tc, err)
		case tc.want == 0 && ok:
			t.Errorf("%+v: found %+v", tc, f)
		case tc.want != 0 && (!ok || f.Pos != tc.want || f.Off != l.frames[tc.want-1]):
			t.Errorf("%+v: %+v %v, want position %d at %d", tc, f, ok, tc.want, l.frames[tc.want-1])
		}
	}
}

// TestStartMidFile starts a scan at a frame boundary inside the file, after
// a frame it does not read again, which the first frame must follow.
func TestStartMidFile(t *testing.T) {
	l := newTestLog(2, 2, 2)
	scan := Scan{File: "f", Start: l.frames[3], Want: 4, Tail: true, Prev: Frame{Pos: 3, Write: 3}}
	if got, want := scanAll(t, Bytes(l.data), scan), (outcome{frames: 3, torn: -1, damage: -1}); got != want {
		t.Fatalf("from frame 4: got %+v, want %+v", got, want)
	}
	scan.Prev.Write = 5 // the first frame's write (3) would go back
	if got, want := scanAll(t, Bytes(l.data), scan), (outcome{frames: 0, torn: -1, damage: l.frames[3], kind: LaterWritten, pos: 4}); got != want {
		t.Fatalf("after a later write: got %+v, want %+v", got, want)
	}
}

package lumberjack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zlib"
)

// captures holds real Filebeat traffic (see its README.md): the golden
// input of the reader's and the JSON validator's tests.
var captures = filepath.Join("testdata", "filebeat")

// TestGoldenFilebeatSessions feeds the bytes real Filebeat 7.17.29 and
// 9.3.0 sent and expects exactly the events they carried, byte for byte,
// as one batch of 6.
func TestGoldenFilebeatSessions(t *testing.T) {
	for _, v := range []string{"7.17.29", "9.3.0"} {
		t.Run(v, func(t *testing.T) {
			session, err := os.ReadFile(filepath.Join(captures, "filebeat-"+v+"-session.bin"))
			if err != nil {
				t.Fatalf("real Filebeat capture missing: %v", err)
			}
			want, err := os.ReadFile(filepath.Join(captures, "filebeat-"+v+"-events.ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			wantEvents := bytes.Split(bytes.TrimSuffix(want, []byte("\n")), []byte("\n"))
			r := NewReader(bytes.NewReader(session), DefaultLimits())
			var got [][]byte
			n, seq, err := r.ReadBatch(func(ev []byte) error {
				got = append(got, bytes.Clone(ev))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != 6 || len(got) != len(wantEvents) || seq != 6 {
				t.Fatalf("got %d events (seq %d), want %d", n, seq, len(wantEvents))
			}
			for i := range got {
				if !bytes.Equal(got[i], wantEvents[i]) {
					t.Fatalf("event %d differs from the capture", i+1)
				}
			}
			if _, _, err := r.ReadBatch(func([]byte) error { return nil }); err == nil || err.Error() != "EOF" {
				t.Fatalf("after the session: %v, want EOF", err)
			}
		})
	}
}

// frames builds Lumberjack v2 bytes.
type frames struct{ bytes.Buffer }

func (f *frames) window(n uint32) *frames {
	f.WriteString("2W")
	binary.Write(f, binary.BigEndian, n)
	return f
}

func (f *frames) json(seq uint32, payload string) *frames {
	f.WriteString("2J")
	binary.Write(f, binary.BigEndian, seq)
	binary.Write(f, binary.BigEndian, uint32(len(payload)))
	f.WriteString(payload)
	return f
}

func (f *frames) compressed(inner []byte) *frames {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(inner)
	w.Close()
	f.WriteString("2C")
	binary.Write(f, binary.BigEndian, uint32(z.Len()))
	f.Write(z.Bytes())
	return f
}

func readOne(data []byte, limits Limits) (int, error) {
	_, _, err := NewReader(bytes.NewReader(data), limits).ReadBatch(func([]byte) error { return nil })
	var n int
	return n, err
}

func TestNestedCompressionAndPlainFrames(t *testing.T) {
	inner := (&frames{}).json(2, `{"b":2}`).json(3, `{"c":3}`)
	nested := (&frames{}).compressed(inner.Bytes())
	data := (&frames{}).window(4).json(1, `{"a":1}`).compressed(nested.Bytes()).json(4, `{"d":4}`)
	var got []string
	n, seq, err := NewReader(bytes.NewReader(data.Bytes()), DefaultLimits()).ReadBatch(func(ev []byte) error {
		got = append(got, string(ev))
		return nil
	})
	if err != nil || n != 4 || seq != 4 || strings.Join(got, ",") != `{"a":1},{"b":2},{"c":3},{"d":4}` {
		t.Fatalf("got %v (n %d seq %d err %v)", got, n, seq, err)
	}
}

// TestHostileInputs: every hostile stream is refused with its own reason,
// without allocating what it declares.
func TestHostileInputs(t *testing.T) {
	// A zip bomb that inflates to valid-looking events: 512 events of
	// 128 KiB (64 MiB, against a 16 MiB batch limit below) compress to
	// about 64 KiB.
	bomb := func() []byte {
		ev := `{"pad":"` + strings.Repeat("x", 128<<10) + `"}`
		var inner frames
		for i := range 512 {
			inner.json(uint32(i+1), ev)
		}
		return (&frames{}).window(512).compressed(inner.Bytes()).Bytes()
	}
	deepNest := (&frames{}).json(1, `{}`)
	for range 3 {
		deepNest = (&frames{}).compressed(deepNest.Bytes())
	}
	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"window 2^32-1", []byte("2W\xff\xff\xff\xff"), ReasonWindowTooLarge},
		{"empty window", []byte("2W\x00\x00\x00\x00"), ReasonEmptyWindow},
		{"J length 4 GiB", append((&frames{}).window(1).Bytes(), "2J\x00\x00\x00\x01\xff\xff\xff\xff"...), ReasonEventTooLarge},
		{"zip bomb (inflates to 64 MiB)", bomb(), ReasonBatchTooLarge},
		{"C nested 3 deep", append((&frames{}).window(1).Bytes(), deepNest.Bytes()...), ReasonNesting},
		{"wrong version byte", []byte("1W\x00\x00\x00\x01"), ReasonBadVersion},
		{"unknown frame type", []byte("2X\x00\x00\x00\x01"), ReasonUnknownFrame},
		{"v1 data frame", append((&frames{}).window(1).Bytes(), "2D\x00\x00\x00\x01"...), ReasonUnknownFrame},
		{"truncated window", []byte("2W\x00\x00"), ReasonTruncated},
		{"truncated event", append((&frames{}).window(1).Bytes(), "2J\x00\x00\x00\x01\x00\x00\x00\x10{\"a\""...), ReasonTruncated},
		{"missing events", (&frames{}).window(3).json(1, `{}`).Bytes(), ReasonTruncated},
		{"invalid JSON", (&frames{}).window(1).json(1, `{"a":`).Bytes(), ReasonInvalidJSON},
		{"garbage compression", append((&frames{}).window(1).Bytes(), "2C\x00\x00\x00\x04abcd"...), ReasonCompression},
		{"window inside a batch", (&frames{}).window(2).json(1, `{}`).window(1).Bytes(), ReasonUnknownFrame},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			limits := DefaultLimits()
			limits.MaxBatchBytes = 16 << 20
			_, err := readOne(tc.data, limits)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Reason != tc.reason {
				t.Fatalf("got %v, want a ProtocolError %s", err, tc.reason)
			}
			// Allocations stay far below what the client declared.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Fatalf("reading it allocated %d MiB", grew>>20)
			}
		})
	}
}

func TestLimitsAreEnforced(t *testing.T) {
	l := DefaultLimits()
	l.MaxWindow, l.MaxEventBytes, l.MaxBatchBytes = 2, 10, 15
	if _, err := readOne((&frames{}).window(3).Bytes(), l); !isReason(err, ReasonWindowTooLarge) {
		t.Fatalf("window: %v", err)
	}
	if _, err := readOne((&frames{}).window(1).json(1, `{"a":"12345"}`).Bytes(), l); !isReason(err, ReasonEventTooLarge) {
		t.Fatalf("event: %v", err)
	}
	if _, err := readOne((&frames{}).window(2).json(1, `{"a":123}`).json(2, `{"b":123}`).Bytes(), l); !isReason(err, ReasonBatchTooLarge) {
		t.Fatalf("batch: %v", err)
	}
}

func isReason(err error, reason string) bool {
	var pe *ProtocolError
	return errors.As(err, &pe) && pe.Reason == reason
}

// BenchmarkReadBatch reads one 2048-event window of 1 KiB events (the
// beatsbench shape), plain and zlib-compressed, handing each event to a
// callback that copies it as the input's record builder does. Bytes/s are
// event bytes. tools/benchreport runs it with -benchmem.
func BenchmarkReadBatch(b *testing.B) {
	ev := benchEvent
	var window frames
	window.window(2048)
	var inner frames
	for i := range 2048 {
		inner.json(uint32(i+1), string(ev))
	}
	plain := append(append([]byte(nil), window.Bytes()...), inner.Bytes()...)
	compressed := append(append([]byte(nil), window.Bytes()...), (&frames{}).compressed(inner.Bytes()).Bytes()...)
	for _, c := range []struct {
		name   string
		stream []byte
	}{{"plain", plain}, {"zlib", compressed}} {
		b.Run(c.name, func(b *testing.B) {
			var src bytes.Reader
			r := NewReader(&src, DefaultLimits())
			sink := make([]byte, 0, 2048*len(ev))
			b.SetBytes(int64(2048 * len(ev)))
			for b.Loop() {
				src.Reset(c.stream)
				sink = sink[:0]
				n, _, err := r.ReadBatch(func(e []byte) error {
					sink = append(sink, e...)
					return nil
				})
				if err != nil || n != 2048 {
					b.Fatalf("read %d events: %v", n, err)
				}
			}
			// The benchmark report states allocations per event.
			b.ReportMetric(2048, "events/op")
		})
	}
}

// TestBatchBufferOnlyWhileNeeded: a Reader borrows its large read buffer
// for a batch and gives it back when the batch left nothing unread in it;
// a pipelined next batch already buffered keeps it until that batch is
// read. Events read through it arrive intact, including across the
// connection's small buffer (an event bigger than it).
func TestBatchBufferOnlyWhileNeeded(t *testing.T) {
	big := `{"m":"` + strings.Repeat("x", idleBufferBytes+100) + `"}`
	one := (&frames{}).window(2).json(1, `{"a":1}`).json(2, big)
	two := append(append([]byte(nil), one.Bytes()...), (&frames{}).window(1).json(3, `{"c":3}`).Bytes()...)
	client, server := net.Pipe()
	defer client.Close()
	r := NewReader(server, DefaultLimits())
	defer r.Release()
	go client.Write(two)
	read := func() []string {
		t.Helper()
		var got []string
		if _, _, err := r.ReadBatch(func(ev []byte) error { got = append(got, string(ev)); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(); len(got) != 2 || got[0] != `{"a":1}` || got[1] != big {
		t.Fatalf("first batch: %d events", len(got))
	}
	// net.Pipe delivers the rest as the buffer asks: whether the second
	// batch is already buffered depends on the reads; both cases must hold.
	if r.batch != nil && r.batch.Buffered() == 0 {
		t.Fatal("the batch buffer is kept though nothing is left in it")
	}
	if got := read(); len(got) != 1 || got[0] != `{"c":3}` {
		t.Fatalf("second batch: %v", got)
	}
	if r.batch != nil {
		t.Fatal("a connection waiting for its next batch holds the batch buffer")
	}
	// Two batches in one read: the second stays buffered in between.
	r2 := NewReader(bytes.NewReader(two), DefaultLimits())
	defer r2.Release()
	if _, _, err := r2.ReadBatch(func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if r2.batch == nil {
		t.Fatal("gave back a batch buffer holding the next batch's bytes")
	}
	if n, seq, err := r2.ReadBatch(func([]byte) error { return nil }); err != nil || n != 1 || seq != 3 {
		t.Fatalf("pipelined batch: n %d seq %d err %v", n, seq, err)
	}
	if r2.batch != nil {
		t.Fatal("batch buffer kept after the last batch")
	}
	if _, _, err := r2.ReadBatch(func([]byte) error { return nil }); err != io.EOF {
		t.Fatalf("after the last batch: %v, want io.EOF", err)
	}
}

// failingReader returns its bytes, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestErrorBetweenBatches: an error met while waiting for a batch's first
// byte (an idle connection's read deadline) wraps ErrBetweenBatches, after
// a batch as on a new connection; the same error once a batch has begun,
// even inside its window frame, does not; a clean close between batches
// is io.EOF.
func TestErrorBetweenBatches(t *testing.T) {
	one := (&frames{}).window(1).json(1, `{"a":1}`).Bytes()
	timeout := os.ErrDeadlineExceeded
	for _, tc := range []struct {
		name    string
		data    []byte
		batches int // read whole before the error
		between bool
	}{
		{"nothing sent", nil, 0, true},
		{"after a batch", one, 1, true},
		{"inside the window frame", one[:3], 0, false},
		{"inside the events", one[:len(one)-2], 0, false},
		{"after a batch, inside the next", append(append([]byte(nil), one...), one[:8]...), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(&failingReader{data: tc.data, err: timeout}, DefaultLimits())
			defer r.Release()
			for range tc.batches {
				if _, _, err := r.ReadBatch(func([]byte) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := r.ReadBatch(func([]byte) error { return nil })
			if !errors.Is(err, timeout) {
				t.Fatalf("got %v, want the reader's error", err)
			}
			if got := errors.Is(err, ErrBetweenBatches); got != tc.between {
				t.Errorf("%v: between batches %v, want %v", err, got, tc.between)
			}
		})
	}
	r := NewReader(bytes.NewReader(one), DefaultLimits())
	defer r.Release()
	r.ReadBatch(func([]byte) error { return nil })
	if _, _, err := r.ReadBatch(func([]byte) error { return nil }); err != io.EOF {
		t.Errorf("a clean close between batches: %v, want io.EOF", err)
	}
}

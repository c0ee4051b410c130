package record

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// filebeatish returns n events shaped like Filebeat's: repeated metadata
// around a short, varying message.
func filebeatish(n int) [][]byte {
	events := make([][]byte, n)
	for i := range events {
		events[i] = fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:%02d.%03dZ","message":"GET /api/items/%d HTTP/1.1 200 %d","log":{"file":{"path":"/var/log/nginx/access.log"},"offset":%d},"host":{"name":"web-01","os":{"family":"debian","version":"12"}},"agent":{"type":"filebeat","version":"8.19.0"},"ecs":{"version":"8.0.0"}}`,
			i%60, i%1000, i*7, 100+i%900, i*180)
	}
	return events
}

// allCompressions is every codec at every level that gives it a
// distinct encoder.
var allCompressions = []Compression{
	Zstd(LevelFastest), Zstd(LevelDefault), Zstd(LevelBetter), Zstd(LevelBest),
	S2(LevelFastest), S2(LevelDefault), S2(LevelBetter),
}

// codecs is one Compression of each codec, for the tests that hold for
// every codec but do not depend on the level.
var codecs = []Compression{Zstd(LevelDefault), S2(LevelFastest)}

// eachCodec runs test once per codec, as a subtest named by the codec.
func eachCodec(t *testing.T, test func(*testing.T, Compression)) {
	for _, cm := range codecs {
		t.Run(cm.Codec.String(), func(t *testing.T) { test(t, cm) })
	}
}

func newCodec(t testing.TB, cm Compression) (*Compressor, *Decompressor) {
	t.Helper()
	c, err := NewCompressor(cm)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); d.Close() })
	return c, d
}

// compressed returns a version 2 record of Filebeat-like events, failing
// the test if compression did not produce one.
func compressed(t testing.TB, c *Compressor, n int) (v1, v2 []byte) {
	t.Helper()
	v1, err := Encode(nil, t0, filebeatish(n))
	if err != nil {
		t.Fatal(err)
	}
	v2, err = c.Compress(nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	if v2[offVersion] != VersionCompressed {
		t.Fatalf("%d Filebeat-like events stayed version %d", n, v2[offVersion])
	}
	return v1, v2
}

func TestCompressRoundTrip(t *testing.T) {
	random := make([][]byte, 20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = make([]byte, 512)
		for j := range random[i] {
			random[i][j] = byte(rng.Uint32())
		}
	}
	var b Builder
	b.Reset(t0)
	for _, ev := range filebeatish(100) {
		b.Add(ev)
	}
	part, err := b.FinishBatch(More|Cont, 513)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(events [][]byte) []byte {
		enc, err := Encode(nil, t0, events)
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	cases := []struct {
		name       string
		rec        []byte
		compresses bool // else Compress must return rec unchanged
	}{
		{"no events", encode(nil), false},
		{"abort", AppendAbort(nil, 7, t0), false},
		{"one short event", encode([][]byte{[]byte(`{"a":1}`)}), false},
		{"one event", encode([][]byte{slices.Concat(filebeatish(1)[0], bytes.Repeat([]byte(" "), 200))}), true},
		{"many events", encode(filebeatish(2048)), true},
		{"flags and slot", slices.Clone(part), true},
		{"incompressible", encode(random), false},
		{"empty events", encode(make([][]byte, 300)), true},
	}
	for _, cm := range allCompressions {
		c, d := newCodec(t, cm)
		for _, tc := range cases {
			t.Run(cm.String()+"/"+tc.name, func(t *testing.T) {
				want, err := Decode(tc.rec)
				if err != nil {
					t.Fatal(err)
				}
				out, err := c.Compress([]byte("prefix"), tc.rec)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(out, []byte("prefix")) {
					t.Fatal("Compress did not append to dst")
				}
				out = out[len("prefix"):]
				if !tc.compresses {
					if !bytes.Equal(out, tc.rec) {
						t.Fatal("record changed though compression should not apply")
					}
				} else if out[offVersion] != VersionCompressed || len(out) >= len(tc.rec) {
					t.Fatalf("got version %d of %d bytes from %d, want a smaller version 2", out[offVersion], len(out), len(tc.rec))
				}
				got, err := d.Decode(out, len(tc.rec))
				if err != nil {
					t.Fatal(err)
				}
				if got.Count() != want.Count() || got.Flags() != want.Flags() || got.Slot() != want.Slot() ||
					!got.Received().Equal(want.Received()) || got.Size() != len(out) {
					t.Fatalf("header: got count %d flags %s slot %d at %v size %d, want %d %s %d at %v size %d",
						got.Count(), got.Flags(), got.Slot(), got.Received(), got.Size(),
						want.Count(), want.Flags(), want.Slot(), want.Received(), len(out))
				}
				if !slices.EqualFunc(collect(got), collect(want), bytes.Equal) {
					t.Fatal("events differ after the round trip")
				}
				if size, err := SizeOf(out); err != nil || size != len(out) {
					t.Fatalf("SizeOf = %d, %v; want %d", size, err, len(out))
				}
				if f, slot, err := Peek(out); err != nil || f != want.Flags() || slot != want.Slot() {
					t.Fatalf("Peek = %s, %d, %v; want %s, %d", f, slot, err, want.Flags(), want.Slot())
				}
			})
		}
	}
}

func TestDecodeRefusesCompressed(t *testing.T) {
	c, _ := newCodec(t, Zstd(LevelDefault))
	_, v2 := compressed(t, c, 10)
	_, err := Decode(v2)
	if !errors.Is(err, ErrCompressed) {
		t.Fatalf("Decode(v2) = %v, want ErrCompressed", err)
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		t.Fatalf("an intact compressed record is reported as corrupt: %v", err)
	}
	// Damage is still damage, whatever the version.
	v2[len(v2)/2] ^= 1
	if _, err := Decode(v2); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Decode(damaged v2) = %v, want ErrChecksum", err)
	}
	if _, err := c.Compress(nil, v2); err == nil {
		t.Fatal("Compress accepted a damaged record")
	}
}

func TestVoidOfCompressed(t *testing.T) {
	c, _ := newCodec(t, Zstd(LevelDefault))
	_, v2 := compressed(t, c, 10)
	void, err := AppendVoid(nil, v2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(void)
	if err != nil || r.Flags() != Void || r.Count() != 0 || !r.Received().Equal(t0) {
		t.Fatalf("void of a v2 record: %+v, %v", r, err)
	}
}

func TestCompressRefusesCompressed(t *testing.T) {
	c, _ := newCodec(t, Zstd(LevelDefault))
	_, v2 := compressed(t, c, 10)
	if _, err := c.Compress(nil, v2); !errors.Is(err, ErrCompressed) {
		t.Fatalf("Compress(v2) = %v, want ErrCompressed", err)
	}
}

// TestDecompressorBufferReuse: a version 2 record's events alias the
// Decompressor's buffer until its next Decode, and Clone outlives it.
func TestDecompressorBufferReuse(t *testing.T) {
	c, d := newCodec(t, Zstd(LevelDefault))
	v1a, a := compressed(t, c, 50)
	_, b := compressed(t, c, 60)
	ra, err := d.Decode(a, MaxBlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	_, kept := ra.Clone(nil)
	if _, err := d.Decode(b, MaxBlockBytes); err != nil {
		t.Fatal(err)
	}
	want, _ := Decode(v1a)
	if !slices.EqualFunc(collect(kept), collect(want), bytes.Equal) {
		t.Fatal("a cloned record changed when the Decompressor decoded another")
	}
}

func TestDecompressCorruption(t *testing.T) {
	eachCodec(t, decompressCorruption)
}

func decompressCorruption(t *testing.T, cm Compression) {
	c, _ := newCodec(t, cm)
	v1, v2 := compressed(t, c, 100)
	other := CodecS2
	if cm.Codec == CodecS2 {
		other = CodecZstd
	}
	raw := int(le.Uint32(v2[offRawSize:]))
	if raw != len(v1)-MinSize {
		t.Fatalf("raw size %d, want the %d bytes of the v1 events area", raw, len(v1)-MinSize)
	}
	setRaw := func(n uint32) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint32(b[offRawSize:], n); return reseal(b) }
	}
	cases := []struct {
		name      string
		damage    func([]byte) []byte
		maxEvents int
		want      error
		offset    int // -1: anywhere
	}{
		{"empty buffer", func(b []byte) []byte { return b[:0] }, raw, ErrTruncated, 0},
		{"torn header", func(b []byte) []byte { return b[:HeaderSize-1] }, raw, ErrTruncated, HeaderSize - 1},
		{"torn block", func(b []byte) []byte { return b[:len(b)-5] }, raw, ErrTruncated, -1},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, raw, ErrLength, offLength},
		{"version 0", func(b []byte) []byte { b[offVersion] = 0; return reseal(b) }, raw, ErrVersion, offVersion},
		{"version 3", func(b []byte) []byte { b[offVersion] = 3; return reseal(b) }, raw, ErrVersion, offVersion},
		{"version 1 over a block", func(b []byte) []byte { b[offVersion] = 1; return reseal(b) }, raw, ErrLayout, -1},
		{"undefined flag", func(b []byte) []byte { b[offFlags] = 0x10; return reseal(b) }, raw, ErrFlags, offFlags},
		{"void with events", func(b []byte) []byte { b[offFlags] = uint8(Void); return reseal(b) }, raw, ErrFlags, offFlags},
		{"slot unsealed", func(b []byte) []byte { b[offSlot] ^= 1; return b }, raw, ErrChecksum, -1},
		{"length +1", func(b []byte) []byte { le.PutUint32(b[offLength:], uint32(len(b)+1)); return reseal(b) }, raw, ErrTruncated, -1},
		{"length below minimum", func(b []byte) []byte { le.PutUint32(b[offLength:], MinSizeCompressed-1); return b }, raw, ErrLength, offLength},
		{"count +1", func(b []byte) []byte { le.PutUint32(b[offCount:], 101); return reseal(b) }, raw, ErrLayout, HeaderSizeCompressed},
		{"count -1", func(b []byte) []byte { le.PutUint32(b[offCount:], 99); return reseal(b) }, raw, ErrLayout, HeaderSizeCompressed},
		{"count 0", func(b []byte) []byte { le.PutUint32(b[offCount:], 0); return reseal(b) }, raw, ErrLayout, offCount},
		{"count beyond block", func(b []byte) []byte { le.PutUint32(b[offCount:], uint32(raw)); return reseal(b) }, raw, ErrLayout, offRawSize},
		{"received unsealed", func(b []byte) []byte { b[offReceived] ^= 0x80; return b }, raw, ErrChecksum, -1},
		{"codec 0", func(b []byte) []byte { b[offCodec] = 0; return reseal(b) }, raw, ErrCodec, offCodec},
		{"codec 3", func(b []byte) []byte { b[offCodec] = 3; return reseal(b) }, raw, ErrCodec, offCodec},
		{"the other codec's name", func(b []byte) []byte { b[offCodec] = uint8(other); return reseal(b) }, raw, ErrBlock, HeaderSizeCompressed},
		{"reserved byte", func(b []byte) []byte { b[offReserved+2] = 1; return reseal(b) }, raw, ErrCodec, offReserved + 2},
		{"raw size above caller's limit", func(b []byte) []byte { return b }, raw - 1, ErrTooLarge, offRawSize},
		{"negative limit", func(b []byte) []byte { return b }, -1, ErrTooLarge, offRawSize},
		{"raw size above MaxBlockBytes", setRaw(MaxBlockBytes + 1), 1 << 30, ErrTooLarge, offRawSize},
		{"raw size huge", setRaw(1<<32 - 1), 1 << 40, ErrTooLarge, offRawSize},
		{"raw size +1", setRaw(uint32(raw + 1)), raw + 1, ErrBlock, HeaderSizeCompressed},
		{"raw size -1", setRaw(uint32(raw - 1)), raw, ErrBlock, HeaderSizeCompressed},
		{"block garbled", func(b []byte) []byte {
			for i := HeaderSizeCompressed; i < len(b)-TrailerSize; i++ {
				b[i] = 0xAA
			}
			return reseal(b)
		}, raw, ErrBlock, HeaderSizeCompressed},
		{"block emptied", func(b []byte) []byte {
			b = append(b[:HeaderSizeCompressed], 0, 0, 0, 0)
			le.PutUint32(b[offLength:], uint32(len(b)))
			return reseal(b)
		}, raw, ErrBlock, HeaderSizeCompressed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecompressor()
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			b := tc.damage(slices.Clone(v2))
			_, err = d.Decode(b, tc.maxEvents)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want a *CorruptError wrapping %v", err, tc.want)
			}
			if tc.offset >= 0 && ce.Offset != tc.offset {
				t.Fatalf("offset %d, want %d (%v)", ce.Offset, tc.offset, err)
			}
			if errors.Is(err, ErrTooLarge) && cap(d.buf) != 0 {
				t.Fatalf("refusing an oversized block allocated %d bytes first", cap(d.buf))
			}
			if cap(d.buf) > max(tc.maxEvents, 0) {
				t.Fatalf("buffer of %d bytes exceeds the caller's limit %d", cap(d.buf), tc.maxEvents)
			}
			// Verify finds all but what only decompressing shows: a
			// block that does not decode to its declared events, or a
			// size above this caller's own limit.
			onlyDecode := errors.Is(tc.want, ErrBlock) || (tc.want == ErrLayout && tc.offset == HeaderSizeCompressed) || tc.maxEvents < raw
			_, verr := Verify(tc.damage(slices.Clone(v2)))
			switch {
			case onlyDecode && verr != nil:
				t.Fatalf("Verify = %v, want it to pass (only decompressing finds this)", verr)
			case !onlyDecode && !errors.Is(verr, tc.want):
				t.Fatalf("Verify = %v, want %v as Decode", verr, tc.want)
			}
		})
	}
}

func TestVerifyHeader(t *testing.T) {
	eachCodec(t, verifyHeader)
}

func verifyHeader(t *testing.T, cm Compression) {
	c, _ := newCodec(t, cm)
	v1, v2 := compressed(t, c, 100)
	abort := AppendAbort(nil, 7, t0)
	for _, tc := range []struct {
		name string
		rec  []byte
		want Header
	}{
		{"version 1", v1, Header{Version: Version, Count: 100, Stored: len(v1), Raw: len(v1)}},
		{"version 2", v2, Header{Version: VersionCompressed, Count: 100, Stored: len(v2), Raw: len(v1), Codec: cm.Codec}},
		{"abort", abort, Header{Version: Version, Flags: Abort, Slot: 7, Stored: len(abort), Raw: len(abort)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Verify(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !h.Received().Equal(t0) {
				t.Fatalf("received %v, want %v", h.Received(), t0)
			}
			h.received = 0
			if h != tc.want {
				t.Fatalf("Verify = %+v, want %+v", h, tc.want)
			}
			if h.Compressed() != (tc.want.Version == VersionCompressed) {
				t.Fatalf("Compressed() = %v for version %d", h.Compressed(), h.Version)
			}
		})
	}
}

func TestDecompressEveryBitFlipAndTruncation(t *testing.T) {
	eachCodec(t, decompressEveryBitFlipAndTruncation)
}

func decompressEveryBitFlipAndTruncation(t *testing.T, cm Compression) {
	c, d := newCodec(t, cm)
	_, v2 := compressed(t, c, 20)
	for i := range v2 {
		for bit := range 8 {
			damaged := slices.Clone(v2)
			damaged[i] ^= 1 << bit
			if _, err := d.Decode(damaged, MaxBlockBytes); err == nil {
				t.Fatalf("flipping bit %d of byte %d went unnoticed", bit, i)
			}
		}
	}
	for n := range len(v2) {
		_, err := d.Decode(v2[:n], MaxBlockBytes)
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrLength) {
			t.Fatalf("truncated to %d bytes: %v, want ErrTruncated or ErrLength", n, err)
		}
	}
}

// TestBlockLargerThanDeclared: a block that decompresses to more than its
// header declares is refused without growing the buffer past the
// declared size, even when the caller's limit would allow more.
func TestBlockLargerThanDeclared(t *testing.T) {
	eachCodec(t, blockLargerThanDeclared)
}

func blockLargerThanDeclared(t *testing.T, cm Compression) {
	c, d := newCodec(t, cm)
	// The frame carries its content size; this record hides it by
	// declaring a smaller size, as a hostile writer would.
	_, v2 := compressed(t, c, 200)
	raw := le.Uint32(v2[offRawSize:])
	le.PutUint32(v2[offRawSize:], raw/2)
	reseal(v2)
	if _, err := d.Decode(v2, MaxBlockBytes); !errors.Is(err, ErrBlock) {
		t.Fatalf("Decode = %v, want ErrBlock", err)
	}
	if cap(d.buf) > int(raw/2) {
		t.Fatalf("buffer grew to %d bytes, past the declared %d", cap(d.buf), raw/2)
	}
}

func TestParseLevel(t *testing.T) {
	for l := LevelFastest; l <= LevelBest; l++ {
		got, err := ParseLevel(l.String())
		if err != nil || got != l {
			t.Fatalf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := ParseLevel("Better"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLevel("max"); err == nil {
		t.Fatal("ParseLevel accepted an unknown name")
	}
	for _, cm := range []Compression{{}, Zstd(0), S2(0), Zstd(LevelBest + 1), {Codec: 3, Level: LevelFastest}} {
		if _, err := NewCompressor(cm); err == nil {
			t.Fatalf("NewCompressor accepted %v", cm)
		}
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCompressorMemory measures what Compressors hold after compressing
// 1 MiB records and checks the bound CompressorMemory states.
func TestCompressorMemory(t *testing.T) {
	for _, events := range []int{3000, 12000} { // about 1 and 4 MiB
		rec, err := Encode(nil, t0, filebeatish(events))
		if err != nil {
			t.Fatal(err)
		}
		compressorMemory(t, rec)
	}
}

func compressorMemory(t *testing.T, rec []byte) {
	dst := make([]byte, 0, len(rec))
	var err error
	for _, l := range allCompressions {
		const n = 4
		before := heapInUse()
		cs := make([]*Compressor, n)
		for i := range cs {
			if cs[i], err = NewCompressor(l); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := cs[i].Compress(dst[:0], rec); err != nil {
					t.Fatal(err)
				}
			}
		}
		per := (int64(heapInUse()) - int64(before)) / n
		t.Logf("%d KiB records, level %s: %d KiB per Compressor (bound %d KiB)", len(rec)>>10, l, per>>10, CompressorMemory(l)>>10)
		if per > int64(CompressorMemory(l)) {
			t.Errorf("level %s: a Compressor holds %d bytes, CompressorMemory says at most %d", l, per, CompressorMemory(l))
		}
		if l.Codec == CodecS2 {
			// S2 borrows its tables from klauspost/compress's pools
			// for the length of one compression: what a compression
			// allocates with the pools emptied is what a Compressor
			// holds while it compresses.
			big := make([]byte, 0, 2*len(rec))
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&m0)
			if _, err := cs[0].Compress(big, rec); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			borrowed := int64(m1.TotalAlloc - m0.TotalAlloc)
			t.Logf("%d KiB records, %s: borrows %d KiB while compressing (bound %d KiB)", len(rec)>>10, l, borrowed>>10, CompressorMemory(l)>>10)
			if borrowed > int64(CompressorMemory(l)) {
				t.Errorf("%s: a compression borrows %d bytes, CompressorMemory says at most %d", l, borrowed, CompressorMemory(l))
			}
		}
		for _, c := range cs {
			c.Close()
		}
		runtime.KeepAlive(cs)
	}
}

// TestDecompressorMemory measures what Decompressors hold besides their
// output buffer and checks DecompressorMemory.
func TestDecompressorMemory(t *testing.T) {
	eachCodec(t, decompressorMemory)
}

func decompressorMemory(t *testing.T, cm Compression) {
	c, _ := newCodec(t, cm)
	_, v2 := compressed(t, c, 3000)
	raw := int(le.Uint32(v2[offRawSize:]))
	const n = 4
	before := heapInUse()
	ds := make([]*Decompressor, n)
	for i := range ds {
		var err error
		if ds[i], err = NewDecompressor(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := ds[i].Decode(v2, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	per := (int64(heapInUse())-int64(before))/n - int64(raw)
	t.Logf("%d KiB per Decompressor besides its %d KiB buffer (bound %d KiB)", per>>10, raw>>10, DecompressorMemory>>10)
	if per > DecompressorMemory {
		t.Errorf("a Decompressor holds %d bytes besides its buffer, DecompressorMemory says at most %d", per, DecompressorMemory)
	}
	for _, d := range ds {
		if cap(d.buf) != raw {
			t.Errorf("buffer of %d bytes for a %d-byte block", cap(d.buf), raw)
		}
		d.Close()
	}
}

// TestSteadyStateAllocations: reused Compressors and Decompressors
// allocate nothing per record.
func TestSteadyStateAllocations(t *testing.T) {
	eachCodec(t, steadyStateAllocations)
}

func steadyStateAllocations(t *testing.T, cm Compression) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts mean nothing")
	}
	c, d := newCodec(t, cm)
	v1, v2 := compressed(t, c, 250)
	// A dst a first compression has grown, as the input keeps its own:
	// S2 needs its worst-case size, a little above the record's.
	dst, _ := c.Compress(nil, v1)
	if n := testing.AllocsPerRun(20, func() { c.Compress(dst[:0], v1) }); n > 0 {
		t.Errorf("Compress allocates %v times per record", n)
	}
	if n := testing.AllocsPerRun(20, func() { d.Decode(v2, len(v1)) }); n > 0 {
		t.Errorf("Decompressor.Decode allocates %v times per record", n)
	}
}

// TestCloseLeavesNoGoroutine: a closed Compressor or Decompressor leaves
// nothing running.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d, err := NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range []Compression{Zstd(LevelBetter), S2(LevelDefault)} {
		c, err := NewCompressor(cm)
		if err != nil {
			t.Fatal(err)
		}
		_, v2 := compressed(t, c, 10)
		if _, err := d.Decode(v2, MaxBlockBytes); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	d.Close()
}

// TestCompressBuilt: for records just built, CompressBuilt writes exactly
// what Compress writes (compressed, or kept when it would not shrink);
// bytes that are not a whole version 1 record are refused, dst intact.
func TestCompressBuilt(t *testing.T) {
	eachCodec(t, compressBuilt)
}

func compressBuilt(t *testing.T, cm Compression) {
	c, _ := newCodec(t, cm)
	empty, _ := Encode(nil, t0, nil)
	tiny, _ := Encode(nil, t0, [][]byte{[]byte(`{}`)})
	many, _ := Encode(nil, t0, filebeatish(200))
	for _, rec := range [][]byte{empty, tiny, many, AppendAbort(nil, 2, t0)} {
		want, err := c.Compress([]byte("x"), rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CompressBuilt([]byte("x"), rec)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("CompressBuilt of a %d-byte record differs from Compress (%v)", len(rec), err)
		}
		// Unsealed (Builder.FinishBatchUnsealed): the same bytes, the
		// checksum written when the record is kept as it is.
		unsealed := slices.Clone(rec)
		clear(unsealed[len(unsealed)-TrailerSize:])
		got, err = c.CompressBuilt([]byte("x"), unsealed)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("CompressBuilt of an unsealed %d-byte record differs from Compress of the sealed one (%v)", len(rec), err)
		}
	}
	// The Builder's unsealed record is its sealed one with a zero
	// checksum.
	var bl Builder
	bl.Reset(t0)
	for _, ev := range filebeatish(20) {
		if err := bl.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	unsealed, err := bl.FinishBatchUnsealed(More, 3)
	if err != nil {
		t.Fatal(err)
	}
	unsealed = slices.Clone(unsealed)
	bl.Reset(t0)
	for _, ev := range filebeatish(20) {
		_ = bl.Add(ev)
	}
	sealed, _ := bl.FinishBatch(More, 3)
	if _, err := Decode(sealed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unsealed[:len(unsealed)-TrailerSize], sealed[:len(sealed)-TrailerSize]) || le.Uint32(unsealed[len(unsealed)-TrailerSize:]) != 0 {
		t.Fatalf("FinishBatchUnsealed is not FinishBatch with a zero checksum")
	}
	_, v2 := compressed(t, c, 50)
	for name, bad := range map[string][]byte{
		"too short":  many[:MinSize-1],
		"version 2":  v2,
		"truncated":  many[:len(many)-1],
		"with extra": append(slices.Clone(many), 0),
	} {
		if got, err := c.CompressBuilt([]byte("x"), bad); err == nil || string(got) != "x" {
			t.Fatalf("%s: CompressBuilt = %q, %v; want an error and dst as it was", name, got, err)
		}
	}
}

// TestDecodeTo: a version 2 record's events are decompressed into the
// spare capacity of the caller's buffer when they fit, leaving its
// contents alone, and into the Decompressor's own buffer when they do
// not; a version 1 record is decoded as Decode does. The events are
// Decode's either way.
func TestDecodeTo(t *testing.T) {
	eachCodec(t, decodeTo)
}

func decodeTo(t *testing.T, cm Compression) {
	c, d := newCodec(t, cm)
	v1, v2 := compressed(t, c, 40)
	want, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, got Record) {
		t.Helper()
		if got.Count() != want.Count() || !bytes.Equal(got.events, want.events) || got.Received() != want.Received() {
			t.Fatalf("%s: decoded record differs from Decode's", name)
		}
	}
	// Room for the events after what the buffer holds.
	buf := append(make([]byte, 0, 7+want.EventBytes()), "chunk: "...)
	rec, into, err := d.DecodeTo(buf, v2, MaxBlockBytes)
	if err != nil || !into {
		t.Fatalf("events that fit: into %v, %v", into, err)
	}
	same("into the buffer", rec)
	if &rec.events[0] != &buf[:len(buf)+1][len(buf)] || string(buf) != "chunk: " {
		t.Fatalf("the events are not right after the buffer's contents, or the contents changed: %q", buf)
	}
	// One byte short: the Decompressor's own buffer.
	short := append(make([]byte, 0, 7+want.EventBytes()-1), "chunk: "...)
	rec, into, err = d.DecodeTo(short, v2, MaxBlockBytes)
	if err != nil || into {
		t.Fatalf("events that do not fit: into %v, %v", into, err)
	}
	same("own buffer", rec)
	if string(short[:cap(short)][len(short):]) != string(make([]byte, cap(short)-len(short))) {
		t.Fatalf("the spare capacity was written although the events did not fit")
	}
	// Version 1: as Decode, never into.
	rec, into, err = d.DecodeTo(buf, v1, MaxBlockBytes)
	if err != nil || into {
		t.Fatalf("version 1: into %v, %v", into, err)
	}
	same("version 1", rec)
}

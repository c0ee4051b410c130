package record

import (
	"fmt"
	"slices"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Level is a compression level, from the fastest to the smallest output,
// as each codec understands it (see [NewCompressor]). Its names
// ("fastest", "default", "better", "best") are what a configuration file
// spells.
type Level uint8

const (
	// LevelFastest compresses fastest (about zstd level 1; s2.Encode).
	LevelFastest Level = 1
	// LevelDefault balances speed and size (about zstd level 3;
	// s2.EncodeBetter).
	LevelDefault Level = 2
	// LevelBetter compresses smaller and slower (about zstd level 7;
	// s2.EncodeBest).
	LevelBetter Level = 3
	// LevelBest compresses smallest and slowest (about zstd level 11;
	// s2.EncodeBest).
	LevelBest Level = 4
)

var levelNames = [...]string{LevelFastest: "fastest", LevelDefault: "default", LevelBetter: "better", LevelBest: "best"}

// String is the level's name, e.g. "default".
func (l Level) String() string {
	if l >= LevelFastest && l <= LevelBest {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// ParseLevel reads a level's name (case-insensitive), as String writes it.
func ParseLevel(s string) (Level, error) {
	for l := LevelFastest; l <= LevelBest; l++ {
		if strings.EqualFold(s, levelNames[l]) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("record: compression level %q: want fastest, default, better or best", s)
}

func (l Level) zstd() (zstd.EncoderLevel, error) {
	switch l {
	case LevelFastest:
		return zstd.SpeedFastest, nil
	case LevelDefault:
		return zstd.SpeedDefault, nil
	case LevelBetter:
		return zstd.SpeedBetterCompression, nil
	case LevelBest:
		return zstd.SpeedBestCompression, nil
	}
	return 0, fmt.Errorf("record: compression level %d is not defined", uint8(l))
}

// Compression is how a [Compressor] stores events: a codec and its
// level. The zero value (codec 0) means records are stored as they are.
type Compression struct {
	// Codec is CodecZstd or CodecS2; 0 compresses nothing.
	Codec Codec
	// Level trades the codec's speed for smaller records.
	Level Level
}

// Zstd is zstd at level l.
func Zstd(l Level) Compression { return Compression{Codec: CodecZstd, Level: l} }

// S2 is S2 at level l.
func S2(l Level) Compression { return Compression{Codec: CodecS2, Level: l} }

// Enabled reports whether records are compressed.
func (c Compression) Enabled() bool { return c.Codec != 0 }

// String is "none", or the codec and the level, e.g. "zstd fastest".
func (c Compression) String() string {
	if !c.Enabled() {
		return "none"
	}
	return c.Codec.String() + " " + c.Level.String()
}

// check reports whether c names a codec and a level this build has.
func (c Compression) check() error {
	if !c.Codec.known() {
		return fmt.Errorf("record: compression codec %s is not defined", c.Codec)
	}
	if c.Level < LevelFastest || c.Level > LevelBest {
		return fmt.Errorf("record: compression level %d is not defined", uint8(c.Level))
	}
	return nil
}

// CompressorMemory is an upper bound, in bytes, of what one Compressor of
// c holds once it has compressed records (its encoder's tables and
// history), not counting the dst buffers its caller passes; 0 when c is
// not enabled. It is measured by TestCompressorMemory on records of 1 and
// 4 MiB; a memory budget multiplies it by the number of Compressors alive
// at once. zstd's best level costs an order of magnitude more than its
// others. S2 keeps no history between records: its bound is the match
// tables one compression borrows from klauspost/compress's pools, at most
// one set per Compressor compressing at that moment.
func CompressorMemory(c Compression) int {
	switch {
	case !c.Enabled():
		return 0
	case c.Codec == CodecS2 && c.Level == LevelFastest:
		return compressorMemS2Fastest
	case c.Codec == CodecS2 && c.Level == LevelDefault:
		return compressorMemS2Default
	case c.Codec == CodecS2:
		return compressorMemS2Best
	}
	switch c.Level {
	case LevelFastest:
		return compressorMemFastest
	case LevelDefault:
		return compressorMemDefault
	case LevelBetter:
		return compressorMemBetter
	}
	return compressorMemBest
}

// DecompressorMemory is an upper bound, in bytes, of what one Decompressor
// holds besides its output buffer (its zstd decoder's state; S2 decodes
// with none). The output buffer keeps the capacity of the largest event
// block decoded so far, at most the largest maxEvents passed to Decode.
// Measured by TestDecompressorMemory.
const DecompressorMemory = decompressorMem

// Compressor turns version 1 records into version 2 records whose events
// are one compressed block, of the codec and level it was made with. A
// zstd Compressor holds one encoder, reused for every record; an S2
// Compressor holds nothing between records. Either way steady-state
// compression allocates nothing (see [CompressorMemory]). A Compressor is
// not safe for concurrent use: give each goroutine its own. Close
// releases it.
type Compressor struct {
	enc   *zstd.Encoder                // zstd only
	s2    func(dst, src []byte) []byte // S2 only: the block encoder of the level
	codec Codec                        // written in each record's header
}

// NewCompressor returns a Compressor of c, which must be enabled. S2's
// levels are its three block encoders: fastest is s2.Encode, default
// s2.EncodeBetter, better and best s2.EncodeBest.
func NewCompressor(c Compression) (*Compressor, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.Codec == CodecS2 {
		enc := s2.EncodeBest
		switch c.Level {
		case LevelFastest:
			enc = s2.Encode
		case LevelDefault:
			enc = s2.EncodeBetter
		}
		return &Compressor{s2: enc, codec: CodecS2}, nil
	}
	zl, err := c.Level.zstd()
	if err != nil {
		return nil, err
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zl),
		// One record is compressed at a time by one goroutine; more
		// would only cost memory.
		zstd.WithEncoderConcurrency(1),
		// The record's CRC-32C already covers the stored block, and a
		// decoded block is checked against its declared size and event
		// layout: a frame checksum would add 4 bytes and a pass for
		// little.
		zstd.WithEncoderCRC(false),
		// Records are at most a few MiB (two journal groups) and the
		// repetition in Filebeat events is between neighbours: a 1 MiB
		// window loses next to nothing and divides the memory by 3 to 5.
		zstd.WithWindowSize(encoderWindow),
		zstd.WithLowerEncoderMem(true),
	)
	if err != nil {
		return nil, fmt.Errorf("record: zstd encoder at level %s: %w", c.Level, err)
	}
	return &Compressor{enc: enc, codec: CodecZstd}, nil
}

// Compress verifies rec, a whole version 1 record as Decode accepts it, and
// appends to dst its version 2 form: the same flags, slot, count and receive
// time, with the events area compressed. When compressing does not make
// the record smaller, when it has no events (abort and void records
// included), or when its events area exceeds MaxBlockBytes, Compress
// appends rec unchanged, still version 1: readers tell the two apart by the
// version byte. dst must not overlap rec. An error (rec is not a valid
// version 1 record) leaves dst as it was.
func (c *Compressor) Compress(dst, rec []byte) ([]byte, error) {
	r, err := Decode(rec)
	if err != nil {
		return dst, fmt.Errorf("record: compress: %w", err)
	}
	return c.compress(dst, rec, r.count, r.events), nil
}

// CompressBuilt is Compress for a record this process has just built (a
// Builder's or Encode's result, untouched since), which it does not
// verify again: the input compresses every record on the
// acknowledgement path, where a second pass over bytes it wrote itself
// would buy nothing. Bytes read from a store or a peer must go through
// Compress, which would refuse damage that this would seal under a
// fresh CRC. rec's checksum need not be set (Builder.FinishBatchUnsealed):
// when rec is appended as it is, its checksum is written into it first.
// It checks only that rec has a version 1 header and fills what its
// length field says; otherwise it returns an error and leaves dst as it
// was.
func (c *Compressor) CompressBuilt(dst, rec []byte) ([]byte, error) {
	if len(rec) < MinSize || rec[offVersion] != Version || int(le.Uint32(rec[offLength:])) != len(rec) {
		return dst, fmt.Errorf("record: compress: not a version 1 record of %d bytes", len(rec))
	}
	out := c.compress(dst, rec, int(le.Uint32(rec[offCount:])), rec[HeaderSize:len(rec)-TrailerSize])
	if len(out)-len(dst) == len(rec) && out[len(dst)+offVersion] == Version {
		// Kept as it is (compressing would not shrink it): seal rec and
		// its copy.
		sum := checksum(rec[:len(rec)-TrailerSize])
		le.PutUint32(rec[len(rec)-TrailerSize:], sum)
		le.PutUint32(out[len(out)-TrailerSize:], sum)
	}
	return out, nil
}

// compress appends the version 2 form of rec, a version 1 record of
// count events whose events area is events, or rec itself when that
// would not be smaller (see Compress).
func (c *Compressor) compress(dst, rec []byte, count int, events []byte) []byte {
	if count == 0 || len(events) > MaxBlockBytes {
		return append(dst, rec...)
	}
	start := len(dst)
	var head [HeaderSizeCompressed]byte
	dst = append(dst, head[:]...)
	if c.s2 != nil {
		// The encoder writes into dst's spare capacity when it can hold
		// the worst case, so grow it to that first: no second copy.
		at := len(dst)
		dst = slices.Grow(dst, s2.MaxEncodedLen(len(events)))
		block := c.s2(dst[at:cap(dst)], events)
		dst = dst[:at+len(block)]
	} else {
		dst = c.enc.EncodeAll(events, dst)
	}
	size := len(dst) - start + TrailerSize
	if size >= len(rec) {
		return append(dst[:start], rec...)
	}
	h := readHeader(rec)
	h.version, h.length = VersionCompressed, uint32(size)
	out := dst[start:]
	putHeader(out, h)
	out[offCodec] = uint8(c.codec)
	le.PutUint32(out[offRawSize:], uint32(len(events)))
	return le.AppendUint32(dst, checksum(out))
}

// Close releases the encoder. The Compressor must not be used afterwards.
func (c *Compressor) Close() error {
	if c.enc == nil {
		return nil
	}
	return c.enc.Close()
}

// Decompressor decodes records of both versions, decompressing the event
// block of version 2 records into a buffer it owns and reuses. It decodes
// on the calling goroutine (no background goroutine) with bounded memory:
// no zstd window or block beyond MaxBlockBytes, and never more output
// than the record declares (see [DecompressorMemory]); its zstd decoder is
// made at the first zstd record. A Decompressor is not safe for
// concurrent use. Close releases it.
type Decompressor struct {
	dec *zstd.Decoder
	buf []byte
}

// NewDecompressor returns a Decompressor.
func NewDecompressor() (*Decompressor, error) { return &Decompressor{}, nil }

// zstdDecoder returns the Decompressor's zstd decoder, made at first use.
func (d *Decompressor) zstdDecoder() (*zstd.Decoder, error) {
	if d.dec != nil {
		return d.dec, nil
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxBlockBytes),
		zstd.WithDecoderMaxMemory(MaxBlockBytes),
		// Decode passes a buffer whose capacity is the declared size:
		// a block that would decode to more fails instead of growing it.
		zstd.WithDecodeAllCapLimit(true),
	)
	if err != nil {
		return nil, fmt.Errorf("record: zstd decoder: %w", err)
	}
	d.dec = dec
	return dec, nil
}

// Decode verifies the record that fills b exactly, of either version, and
// returns it. A version 1 record is decoded as [Decode] does, its events
// aliasing b (maxEvents does not apply: nothing is allocated). A version 2 record passes the same checks on its stored bytes
// (length, CRC, version, flags), then its codec must be known, and its
// declared uncompressed size must not exceed maxEvents (nor MaxBlockBytes):
// that is checked before anything is allocated, so maxEvents bounds the
// memory a hostile header can claim. The block must then decompress to
// exactly the declared size, holding exactly count events.
//
// The events of a version 2 record alias the Decompressor's buffer: they
// are valid until the next call of Decode (Record.Clone keeps them longer).
// Every failure is a *CorruptError wrapping one of the Err… sentinels,
// except that of making a zstd decoder.
func (d *Decompressor) Decode(b []byte, maxEvents int) (Record, error) {
	rec, _, err := d.DecodeTo(nil, b, maxEvents)
	return rec, err
}

// DecodeTo is Decode, but a version 2 record's events are decompressed
// into dst's spare capacity when they fit (the declared size is at most
// cap(dst)-len(dst)): they then alias dst[len(dst):len(dst)+size], and
// into is true. A caller that gathers the events of several records in
// one buffer (an output's chunk) so has them written where it keeps them,
// without a copy. Otherwise, and for a version 1 record, it is Decode and
// into is false. dst's first len(dst) bytes are never read or changed;
// its spare capacity is written only when the events fit it, and may
// then hold anything when the record is refused.
func (d *Decompressor) DecodeTo(dst, b []byte, maxEvents int) (rec Record, into bool, err error) {
	if len(b) >= HeaderSize && b[offVersion] != VersionCompressed {
		rec, err = Decode(b)
		return rec, false, err
	}
	h, raw, err := verifyStored(b, maxEvents)
	if err != nil {
		return Record{}, false, err
	}
	size := int(h.length)
	buf := d.buf
	if into = cap(dst)-len(dst) >= raw; into {
		buf = dst[len(dst):len(dst)]
	} else if cap(d.buf) < raw {
		d.buf = make([]byte, 0, raw)
		buf = d.buf
	}
	codec := Codec(b[offCodec])
	block := b[HeaderSizeCompressed : size-TrailerSize]
	var events []byte
	switch codec {
	case CodecS2:
		// The block states its decoded length first: check it against
		// the header's before decoding, so that the buffer of raw
		// bytes is the one s2 writes into and a lying block is refused
		// rather than allocated for.
		n, lerr := s2.DecodedLen(block)
		if lerr != nil {
			return Record{}, false, corrupt(HeaderSizeCompressed, ErrBlock, "%s block: %v", codec, lerr)
		}
		if n != raw {
			return Record{}, false, corrupt(HeaderSizeCompressed, ErrBlock, "block decompresses to %d bytes, header declares %d", n, raw)
		}
		events, err = s2.Decode(buf[:0:raw], block)
	default:
		dec, derr := d.zstdDecoder()
		if derr != nil {
			return Record{}, false, derr
		}
		events, err = dec.DecodeAll(block, buf[:0:raw])
	}
	if err != nil {
		return Record{}, false, corrupt(HeaderSizeCompressed, ErrBlock, "%s block: %v", codec, err)
	}
	if len(events) != raw {
		return Record{}, false, corrupt(HeaderSizeCompressed, ErrBlock, "block decompresses to %d bytes, header declares %d", len(events), raw)
	}
	if err := checkEvents(events, h.count, func(int) int { return HeaderSizeCompressed }); err != nil {
		return Record{}, false, err
	}
	return Record{received: h.received, flags: h.flags, slot: h.slot, count: int(h.count), events: events[:raw:raw], size: size}, into, nil
}

// Close releases the decoder. The Decompressor must not be used afterwards.
func (d *Decompressor) Close() {
	if d.dec != nil {
		d.dec.Close()
	}
}

// Memory bounds stated by CompressorMemory and DecompressorMemory; the
// tests that measure them fail when they no longer hold.
const (
	compressorMemFastest = 2 << 20
	compressorMemDefault = 7 << 19
	compressorMemBetter  = 7 << 20
	compressorMemBest    = 40 << 20
	// S2's tables, borrowed for one compression: 64 KiB for
	// s2.Encode, 576 KiB for EncodeBetter, 4.5 MiB for EncodeBest.
	compressorMemS2Fastest = 128 << 10
	compressorMemS2Default = 1 << 20
	compressorMemS2Best    = 5 << 20
	decompressorMem        = 512 << 10

	// encoderWindow is the farthest back a match may reach (see
	// NewCompressor).
	encoderWindow = 1 << 20
)

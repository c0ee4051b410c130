package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Version 1 layout. These values are on disk in every journal and ledger:
// never change them; add a new version instead (see doc.go).
const (
	// Version is the format version that Encode and Builder write: events
	// stored as they are.
	Version = 1

	offVersion  = 0
	offFlags    = 1
	offSlot     = 2
	offLength   = 4
	offCount    = 8
	offReceived = 12

	// HeaderSize is the size of the fixed header that precedes the events.
	HeaderSize = 20
	// TrailerSize is the size of the CRC that follows the events.
	TrailerSize = 4
	// EventOverhead is what each event adds besides its own bytes: its
	// length prefix.
	EventOverhead = 4
	// MinSize is the size of a record with no events.
	MinSize = HeaderSize + TrailerSize
	// MaxSize is the largest record the format can describe (the length
	// field is 32 bits). Stores set far lower limits of their own.
	MaxSize = 1<<32 - 1
)

// Version 2 layout: the version 1 header, then what a compressed event block
// needs (see doc.go, "Format, version 2"). On disk like version 1: never
// change these values.
const (
	// VersionCompressed is the format version whose events are one
	// compressed block, written by [Compressor] and read by [Decompressor].
	VersionCompressed = 2

	offCodec    = 20
	offReserved = 21
	offRawSize  = 24

	// HeaderSizeCompressed is the size of a version 2 header, which
	// precedes the compressed block.
	HeaderSizeCompressed = 28
	// MinSizeCompressed is the size of a version 2 record whose block is
	// empty (no valid record is that small: a block always holds a frame).
	MinSizeCompressed = HeaderSizeCompressed + TrailerSize
	// MaxBlockBytes is the largest uncompressed event block a version 2
	// record may declare. It bounds what a hostile header can make a
	// Decompressor accept whatever limit its caller passes, and it is the
	// largest window a decoder must support. A record whose events area is
	// bigger stays version 1.
	MaxBlockBytes = 64 << 20
)

// Codec names the compression of a version 2 record's event block (the
// byte at offset 20).
type Codec uint8

const (
	// CodecZstd: the block is Zstandard frames (RFC 8878) decoding to the
	// version 1 events area.
	CodecZstd Codec = 1
	// CodecS2: the block is one S2 block (klauspost/compress/s2's block
	// format, a superset of Snappy's) decoding to the version 1 events
	// area.
	CodecS2 Codec = 2
	// Value 0 is never valid (zero-filled bytes); other values are not
	// defined.
)

// String names the codec, e.g. "zstd".
func (c Codec) String() string {
	switch c {
	case CodecZstd:
		return "zstd"
	case CodecS2:
		return "s2"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// known reports whether this build reads blocks of codec c.
func (c Codec) known() bool { return c == CodecZstd || c == CodecS2 }

// Flags say how a record belongs to its client batch (see doc.go, "Batches
// and flags"). A record with no flag holds one whole batch.
type Flags uint8

const (
	// More: more records of this batch follow on the same slot.
	More Flags = 1 << 0
	// Cont: this record continues a batch begun in an earlier record of
	// the same slot.
	Cont Flags = 1 << 1
	// Abort: the batch open on this slot failed; its records must never
	// reach an output. An abort record holds no event and no other flag.
	Abort Flags = 1 << 2
	// Void: the events of this record were dropped because its batch
	// failed; what remains keeps the LSN, receive time and slot. A void
	// record holds no event and no other flag.
	Void Flags = 1 << 3

	knownFlags = More | Cont | Abort | Void
	// markers are the flags of records that carry no event and stand
	// alone.
	markers = Abort | Void
)

// String names the flags, e.g. "more|cont", or "-" for none.
func (f Flags) String() string {
	if f == 0 {
		return "-"
	}
	var s string
	for _, n := range []struct {
		f    Flags
		name string
	}{{More, "more"}, {Cont, "cont"}, {Abort, "abort"}, {Void, "void"}} {
		if f&n.f != 0 {
			if s != "" {
				s += "|"
			}
			s += n.name
			f &^= n.f
		}
	}
	if f != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#02x", uint8(f))
	}
	return s
}

// check reports what is wrong with flags f on a record of count events, or
// "" when they are valid.
func (f Flags) check(count uint32) string {
	switch {
	case f&^knownFlags != 0:
		return fmt.Sprintf("flags %#02x: bits %#02x are not defined", uint8(f), uint8(f&^knownFlags))
	case f&markers != 0 && f != Abort && f != Void:
		return fmt.Sprintf("flags %s: abort and void stand alone", f)
	case f&markers != 0 && count != 0:
		return fmt.Sprintf("flags %s on a record of %d events: such a record holds none", f, count)
	}
	return ""
}

// castagnoli is CRC-32C, the polynomial with hardware support on amd64 and
// arm64 and better error detection than IEEE for storage.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// le is the byte order of every integer in the format.
var le = binary.LittleEndian

// header is the decoded fixed part of a record.
type header struct {
	version  uint8
	flags    Flags
	slot     uint16
	length   uint32
	count    uint32
	received int64
}

// putHeader writes h into b[:HeaderSize]. It is the only place that writes
// header fields, so the offsets above are used in exactly two functions.
func putHeader(b []byte, h header) {
	b[offVersion] = h.version
	b[offFlags] = uint8(h.flags)
	le.PutUint16(b[offSlot:], h.slot)
	le.PutUint32(b[offLength:], h.length)
	le.PutUint32(b[offCount:], h.count)
	le.PutUint64(b[offReceived:], uint64(h.received))
}

// readHeader reads the header from b, which must hold HeaderSize bytes.
func readHeader(b []byte) header {
	return header{
		version:  b[offVersion],
		flags:    Flags(b[offFlags]),
		slot:     le.Uint16(b[offSlot:]),
		length:   le.Uint32(b[offLength:]),
		count:    le.Uint32(b[offCount:]),
		received: int64(le.Uint64(b[offReceived:])),
	}
}

// minSize is the smallest length field a record of version v may hold; 0
// for a version this build does not read.
func minSize(v uint8) uint32 {
	switch v {
	case Version:
		return MinSize
	case VersionCompressed:
		return MinSizeCompressed
	}
	return 0
}

// checksum is the CRC stored in a record's trailer for the bytes before it.
func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

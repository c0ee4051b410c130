package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Version 1 layout. These values are on disk in every journal and ledger:
// never change them; add a new version instead (see doc.go).
const (
	// Version is the format version this package writes.
	Version = 1

	offVersion  = 0
	offFlags    = 1
	offReserved = 2
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

// castagnoli is CRC-32C, the polynomial with hardware support on amd64 and
// arm64 and better error detection than IEEE for storage.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// le is the byte order of every integer in the format.
var le = binary.LittleEndian

// header is the decoded fixed part of a record.
type header struct {
	version  uint8
	flags    uint8
	reserved uint16
	length   uint32
	count    uint32
	received int64
}

// putHeader writes h into b[:HeaderSize]. It is the only place that writes
// header fields, so the offsets above are used in exactly two functions.
func putHeader(b []byte, h header) {
	b[offVersion] = h.version
	b[offFlags] = h.flags
	le.PutUint16(b[offReserved:], h.reserved)
	le.PutUint32(b[offLength:], h.length)
	le.PutUint32(b[offCount:], h.count)
	le.PutUint64(b[offReceived:], uint64(h.received))
}

// readHeader reads the header from b, which must hold HeaderSize bytes.
func readHeader(b []byte) header {
	return header{
		version:  b[offVersion],
		flags:    b[offFlags],
		reserved: le.Uint16(b[offReserved:]),
		length:   le.Uint32(b[offLength:]),
		count:    le.Uint32(b[offCount:]),
		received: int64(le.Uint64(b[offReceived:])),
	}
}

// checksum is the CRC stored in a record's trailer for the bytes before it.
func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

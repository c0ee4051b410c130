package journal

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/logpond/logpond/record"
)

// Entry frame layout (doc.go). On disk in every journal: never change it.
const (
	offFrameCRC   = 0
	offFrameLSN   = 4
	offFrameGroup = 12
	frameHeader   = 20
	// minFrame is the smallest valid frame: a header around an empty record.
	minFrame = frameHeader + record.MinSize
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameCRC is the frame checksum: the header fields and the record's own
// trailing CRC, which already covers every record byte.
func frameCRC(frame []byte) uint32 {
	c := crc32.Update(0, castagnoli, frame[offFrameLSN:frameHeader])
	return crc32.Update(c, castagnoli, frame[len(frame)-record.TrailerSize:])
}

// newFrame returns a frame around a copy of rec, which must be a record
// encoded by package record, with its header left for sealFrame. Appenders
// build their frames themselves, in parallel, so that the committer — one
// goroutine every acknowledgement waits for — copies no record bytes
// before tidwall does.
func newFrame(rec []byte) []byte {
	var header [frameHeader]byte
	// append, not make+copy: growslice leaves the copied bytes uncleared.
	return append(header[:], rec...)
}

// sealFrame fills in the header of a frame made by newFrame. The CRC
// covers the record only through the record's own CRC, so sealing costs
// the same whatever the record's size.
func sealFrame(frame []byte, lsn, group uint64) {
	binary.LittleEndian.PutUint64(frame[offFrameLSN:], lsn)
	binary.LittleEndian.PutUint64(frame[offFrameGroup:], group)
	binary.LittleEndian.PutUint32(frame[offFrameCRC:], frameCRC(frame))
}

// entrySize is the number of bytes tidwall writes for a frame around a
// record of n bytes: the uvarint length prefix and the frame.
func entrySize(n int) int64 {
	f := int64(frameHeader + n)
	return uvarintLen(f) + f
}

// frame is a parsed, verified entry.
type frame struct {
	lsn, group uint64
	rec        []byte // aliases the scanned buffer
}

// parseFrame verifies one frame: size, frame CRC, and the record's own
// checks. It does not know which LSN to expect; the caller checks that.
func parseFrame(b []byte) (frame, error) {
	if len(b) < minFrame {
		return frame{}, errFrameShort
	}
	if binary.LittleEndian.Uint32(b[offFrameCRC:]) != frameCRC(b) {
		return frame{}, errFrameCRC
	}
	f := frame{
		lsn:   binary.LittleEndian.Uint64(b[offFrameLSN:]),
		group: binary.LittleEndian.Uint64(b[offFrameGroup:]),
		rec:   b[frameHeader:],
	}
	if f.group > f.lsn {
		return frame{}, errFrameGroup
	}
	if _, err := record.Verify(f.rec); err != nil {
		return frame{}, err
	}
	return f, nil
}

// uvarintLen is the length of tidwall's uvarint prefix for an entry of n
// bytes.
func uvarintLen(n int64) int64 {
	var b [binary.MaxVarintLen64]byte
	return int64(binary.PutUvarint(b[:], uint64(n)))
}

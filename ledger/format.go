package ledger

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/logpond/logpond/record"
)

// On-disk constants (doc.go). Never change them.
const (
	// BlockSize is the alignment of every O_DIRECT buffer address, file
	// offset and length.
	BlockSize = 4096

	offFrameLen = 0
	offFrameCRC = 4
	offFrameLSN = 8
	frameHeader = 16

	segmentSuffix = ".seg"
	streamFile    = "STREAM"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// frameSize is the bytes a record of n bytes takes in a segment.
func frameSize(n int) int64 { return frameHeader + int64(n) }

// headerCRC covers the length and the LSN, so a header can be trusted (and
// a reader can size its buffer from it) before the record is read; the
// record checks itself with its own CRC.
func headerCRC(h []byte) uint32 {
	c := crc32.Update(0, castagnoli, h[offFrameLen:offFrameCRC])
	return crc32.Update(c, castagnoli, h[offFrameLSN:frameHeader])
}

// putFrame writes the frame for rec at the start of dst, which must hold
// frameSize(len(rec)) bytes.
func putFrame(dst []byte, lsn uint64, rec []byte) {
	le.PutUint32(dst[offFrameLen:], uint32(len(rec)))
	le.PutUint64(dst[offFrameLSN:], lsn)
	copy(dst[frameHeader:], rec)
	le.PutUint32(dst[offFrameCRC:], headerCRC(dst))
}

var (
	errHeader = errors.New("unusable frame header")
	errLSN    = errors.New("unexpected LSN")
	errGap    = errors.New("no frame with the next LSN after a skipped block")
)

// parseFrame reads the frame at the start of b. need > 0 means b ends
// before the frame does and need more bytes are required.
// hdr is what rec says of itself, verified (record.Verify: its CRC and
// layout, but a version 2 record's block is not decompressed here: a
// Reader does that for the records it returns).
func parseFrame(b []byte) (lsn uint64, rec []byte, hdr record.Header, need int, err error) {
	if len(b) < frameHeader {
		return 0, nil, hdr, frameHeader - len(b), nil
	}
	n := le.Uint32(b[offFrameLen:])
	if n < record.MinSize || le.Uint32(b[offFrameCRC:]) != headerCRC(b) {
		return 0, nil, hdr, 0, errHeader
	}
	if int64(len(b)) < frameSize(int(n)) {
		return 0, nil, hdr, int(frameSize(int(n)) - int64(len(b))), nil
	}
	rec = b[frameHeader : frameHeader+int(n)]
	if hdr, err = record.Verify(rec); err != nil {
		return 0, nil, hdr, 0, err
	}
	return le.Uint64(b[offFrameLSN:]), rec, hdr, 0, nil
}

func alignUp(n int64) int64   { return (n + BlockSize - 1) / BlockSize * BlockSize }
func alignDown(n int64) int64 { return n / BlockSize * BlockSize }

// peekHeader checks only a frame's header and returns its LSN.
func peekHeader(b []byte) (uint64, bool) {
	if len(b) < frameHeader || le.Uint32(b[offFrameLen:]) < record.MinSize || le.Uint32(b[offFrameCRC:]) != headerCRC(b) {
		return 0, false
	}
	return le.Uint64(b[offFrameLSN:]), true
}

// DiskBytes is the most a record of n bytes can take in a segment: its
// frame, rounded up to whole blocks, as a write starts on a block boundary.
func DiskBytes(n int) int64 {
	return (frameSize(n) + BlockSize - 1) / BlockSize * BlockSize
}

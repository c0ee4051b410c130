package dlq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/logpond/logpond/internal/framelog"
)

// On-disk format (doc.go). Never change these: every file ever written must
// stay readable; a different layout gets a new fileVersion and its own
// decoder next to this one.
const (
	fileMagic   = "LPDLQ"
	fileVersion = 1
	fileSuffix  = ".dlq"
	seqDigits   = 20 // digits of the sequence number in a file name

	// File header.
	offHdrMagic    = 0  // 5 bytes "LPDLQ"
	offHdrVersion  = 5  // 1 byte
	offHdrZero     = 6  // 2 bytes, zero
	offHdrSeq      = 8  // 8 bytes, the sequence number of the file name
	offHdrCRC      = 16 // 4 bytes, CRC-32C of bytes [0,16)
	fileHeaderSize = 20

	// Frame header; the payload follows it.
	offFrameLen     = 0  // 4 bytes, payload length
	offFrameWrite   = 4  // 8 bytes, file offset where the write holding the frame began
	offFramePCRC    = 12 // 4 bytes, CRC-32C of the payload
	offFrameHCRC    = 16 // 4 bytes, CRC-32C of bytes [0,16) and the file's sequence number
	frameHeaderSize = 20

	// Payload: fixed fields, then length-prefixed (u32) byte strings.
	offLSN          = 0  // u64
	offPosition     = 8  // u32
	offStatus       = 12 // i64
	offReceivedSec  = 20 // i64, Unix seconds
	offReceivedNsec = 28 // u32, nanoseconds within the second
	offFailedSec    = 32 // i64
	offFailedNsec   = 40 // u32
	offStrings      = 44 // Stream, Index, Action, DocID, ErrType, Reason, Event
	numStrings      = 7
	minPayload      = offStrings + 4*numStrings

	// Times are stored between the years 1 and 9999 (UTC), so that every
	// stored time decodes to a time.Time that encodes to the same bytes.
	minUnixSec = -62135596800 // 0001-01-01T00:00:00Z
	maxUnixSec = 253402300799 // 9999-12-31T23:59:59Z
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// fileName is the name of the file with sequence number seq.
func fileName(seq uint64) string { return fmt.Sprintf("%0*d%s", seqDigits, seq, fileSuffix) }

// putFileHeader writes the header of file seq into h (fileHeaderSize bytes).
func putFileHeader(h []byte, seq uint64) {
	copy(h[offHdrMagic:], fileMagic)
	h[offHdrVersion] = fileVersion
	le.PutUint16(h[offHdrZero:], 0)
	le.PutUint64(h[offHdrSeq:], seq)
	le.PutUint32(h[offHdrCRC:], checksum(h[:offHdrCRC]))
}

var (
	errHeader  = errors.New("bad file header")
	errVersion = errors.New("unsupported file version")
)

// checkFileHeader checks the header of file seq at the start of h.
func checkFileHeader(h []byte, seq uint64) error {
	switch {
	case len(h) < fileHeaderSize:
		return fmt.Errorf("%w: %d bytes, want %d", errHeader, len(h), fileHeaderSize)
	case le.Uint32(h[offHdrCRC:]) != checksum(h[:offHdrCRC]):
		return fmt.Errorf("%w: checksum mismatch", errHeader)
	case string(h[offHdrMagic:offHdrMagic+len(fileMagic)]) != fileMagic:
		return fmt.Errorf("%w: no %q magic", errHeader, fileMagic)
	case h[offHdrVersion] != fileVersion:
		return fmt.Errorf("%w %d (this logpond reads version %d)", errVersion, h[offHdrVersion], fileVersion)
	case le.Uint16(h[offHdrZero:]) != 0:
		return fmt.Errorf("%w: reserved bytes not zero", errHeader)
	case le.Uint64(h[offHdrSeq:]) != seq:
		return fmt.Errorf("%w: it says sequence %d, its name %d", errHeader, le.Uint64(h[offHdrSeq:]), seq)
	}
	return nil
}

// entryStrings lists an entry's variable-length fields in payload order.
func entryStrings(e *Entry) [numStrings - 1]string {
	return [...]string{e.Stream, e.Index, e.Action, e.DocID, e.ErrType, e.Reason}
}

// frameSize is the bytes the frame of e takes on disk.
func frameSize(e *Entry) int64 {
	n := int64(frameHeaderSize + minPayload + len(e.Event))
	for _, s := range entryStrings(e) {
		n += int64(len(s))
	}
	return n
}

var errTime = errors.New("time outside the years 1 to 9999")

// checkEntry reports whether e can be stored in files of segmentBytes
// bytes: its frame must fit in a file after the header, and its times must
// be storable. Append checks every entry before it writes any.
func checkEntry(e *Entry, segmentBytes int64) error {
	if n, limit := frameSize(e), segmentBytes-fileHeaderSize; n > limit {
		return fmt.Errorf("%w: stream %s LSN %d position %d needs %d bytes, a file of segment_bytes %d holds at most %d",
			ErrTooLarge, e.Stream, e.LSN, e.Position, n, segmentBytes, limit)
	}
	for _, t := range []time.Time{e.Received, e.Failed} {
		if s := t.Unix(); s < minUnixSec || s > maxUnixSec {
			return fmt.Errorf("dlq: stream %s LSN %d position %d: %w: %v", e.Stream, e.LSN, e.Position, errTime, t)
		}
	}
	return nil
}

// appendFrame appends the frame of e, which checkEntry accepted, to dst.
// Its write offset and header checksum stay zero: sealFrame fills them in
// once the frame's place in a write is known.
func appendFrame(dst []byte, e *Entry) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, frameHeaderSize+offStrings)...)
	p := dst[start+frameHeaderSize:]
	le.PutUint64(p[offLSN:], e.LSN)
	le.PutUint32(p[offPosition:], e.Position)
	le.PutUint64(p[offStatus:], uint64(int64(e.Status)))
	le.PutUint64(p[offReceivedSec:], uint64(e.Received.Unix()))
	le.PutUint32(p[offReceivedNsec:], uint32(e.Received.Nanosecond()))
	le.PutUint64(p[offFailedSec:], uint64(e.Failed.Unix()))
	le.PutUint32(p[offFailedNsec:], uint32(e.Failed.Nanosecond()))
	for _, s := range entryStrings(e) {
		dst = le.AppendUint32(dst, uint32(len(s)))
		dst = append(dst, s...)
	}
	dst = le.AppendUint32(dst, uint32(len(e.Event)))
	dst = append(dst, e.Event...)
	payload := dst[start+frameHeaderSize:]
	h := dst[start:]
	le.PutUint32(h[offFrameLen:], uint32(len(payload)))
	le.PutUint32(h[offFramePCRC:], checksum(payload))
	return dst
}

// sealFrame completes the header of a frame made by appendFrame for file
// seq: the file offset where its write begins, and the header checksum.
func sealFrame(frame []byte, seq uint64, writeStart int64) {
	le.PutUint64(frame[offFrameWrite:], uint64(writeStart))
	le.PutUint32(frame[offFrameHCRC:], headerChecksum(frame, seq))
}

// headerChecksum covers a frame header's bytes [0,16) and the sequence
// number of its file, which is not stored in the frame: a frame from another
// file (stale blocks of a purged file that a crash exposes, say) never
// checks out.
func headerChecksum(h []byte, seq uint64) uint32 {
	var s [8]byte
	le.PutUint64(s[:], seq)
	return crc32.Update(checksum(h[:offFrameHCRC]), castagnoli, s[:])
}

// frameHeader is a parsed frame header.
type frameHeader struct {
	payloadLen int64
	write      int64 // file offset where the frame's write began
	payloadCRC uint32
}

var (
	errShort      = errors.New("file ends inside a frame header")
	errZeros      = errors.New("zeros where a frame header should be")
	errHeaderCRC  = errors.New("frame header checksum mismatch")
	errLength     = errors.New("frame length out of range")
	errWriteStart = errors.New("frame's write offset does not fit the frames before it")
	errPayloadCRC = errors.New("payload checksum mismatch")
	errEntry      = errors.New("payload is not a valid entry")
)

// parseFrameHeader checks the header at the start of h, the frame at file
// offset off in file seq of size bytes: its checksum, a payload length that
// fits in the file, and a write offset between the file header and off.
// It does not read the payload.
func parseFrameHeader(h []byte, seq uint64, off, size int64) (frameHeader, error) {
	if len(h) < frameHeaderSize {
		return frameHeader{}, errShort
	}
	// The length is checked first, as a cheap filter while searching for
	// frames at every offset of a damaged tail.
	n := int64(le.Uint32(h[offFrameLen:]))
	if n < minPayload || n > size-off-frameHeaderSize {
		if n == 0 && allZero(h[:frameHeaderSize]) {
			return frameHeader{}, errZeros
		}
		if le.Uint32(h[offFrameHCRC:]) == headerChecksum(h, seq) {
			return frameHeader{}, fmt.Errorf("%w: %d payload bytes at offset %d of a %d-byte file", errLength, n, off, size)
		}
		return frameHeader{}, errHeaderCRC
	}
	if le.Uint32(h[offFrameHCRC:]) != headerChecksum(h, seq) {
		return frameHeader{}, errHeaderCRC
	}
	w := le.Uint64(h[offFrameWrite:])
	if w < fileHeaderSize || w > uint64(off) {
		return frameHeader{}, fmt.Errorf("%w: write offset %d for a frame at %d", errWriteStart, w, off)
	}
	return frameHeader{payloadLen: n, write: int64(w), payloadCRC: le.Uint32(h[offFramePCRC:])}, nil
}

// frames is the dead-letter file format as the framelog.Format of file seq:
// a frame's position is its offset, and its write the offset where its
// write began (doc.go, Writing). It keeps the entry of the last frame it
// verified.
type frames struct {
	seq   uint64
	entry Entry
}

func (*frames) MinSize() int64 { return frameHeaderSize + minPayload }

// Frame checks the frame at off and, when it is good, decodes its entry
// into fm.entry.
func (fm *frames) Frame(src framelog.Source, off int64, _ uint64) (f framelog.Frame, reason, err error) {
	size := src.Size()
	if size-off < frameHeaderSize {
		return f, errShort, nil
	}
	b, err := src.At(off, frameHeaderSize)
	if errors.Is(err, framelog.ErrShrank) {
		return f, err, nil
	} else if err != nil {
		return f, nil, err
	}
	h, reason := parseFrameHeader(b, fm.seq, off, size)
	if reason != nil {
		return f, reason, nil
	}
	n := frameHeaderSize + h.payloadLen
	if b, err = src.At(off, int(n)); errors.Is(err, framelog.ErrShrank) {
		return f, err, nil
	} else if err != nil {
		return f, nil, err
	}
	payload := b[frameHeaderSize:]
	if checksum(payload) != h.payloadCRC {
		return f, errPayloadCRC, nil
	}
	e, reason := decodeEntry(payload)
	if reason != nil {
		return f, reason, nil
	}
	fm.entry = e
	return framelog.Frame{Off: off, Size: n, Pos: uint64(off), Write: uint64(h.write)}, nil, nil
}

// Follows checks that the frame at f.Off belongs to the write of the frame
// before it, or begins a write.
func (*frames) Follows(prev, f framelog.Frame, _ uint64) error {
	if f.Write != prev.Write && f.Write != f.Pos {
		return fmt.Errorf("%w: the frame at %d says its write began at %d, neither its own offset nor %d, where the write of the frame before it began",
			errWriteStart, f.Off, f.Write, prev.Write)
	}
	return nil
}

func (*frames) Next(f framelog.Frame) uint64 { return f.Pos + uint64(f.Size) }

// End is never called: a dead-letter file's frames run to its end.
func (*frames) End(want, _ uint64) error { return fmt.Errorf("%w at offset %d", errShort, want) }

// decodeEntry decodes a payload whose checksum has been verified. Strings
// and Event are copies: they do not alias p. Times are in UTC.
func decodeEntry(p []byte) (Entry, error) {
	if len(p) < minPayload {
		return Entry{}, fmt.Errorf("%w: %d bytes, at least %d needed", errEntry, len(p), minPayload)
	}
	var e Entry
	e.LSN = le.Uint64(p[offLSN:])
	e.Position = le.Uint32(p[offPosition:])
	e.Status = int(int64(le.Uint64(p[offStatus:])))
	var err error
	if e.Received, err = decodeTime(p[offReceivedSec:], p[offReceivedNsec:]); err != nil {
		return Entry{}, err
	}
	if e.Failed, err = decodeTime(p[offFailedSec:], p[offFailedNsec:]); err != nil {
		return Entry{}, err
	}
	rest := p[offStrings:]
	var fields [numStrings][]byte
	for i := range fields {
		if len(rest) < 4 {
			return Entry{}, fmt.Errorf("%w: field %d: no length", errEntry, i)
		}
		n := le.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return Entry{}, fmt.Errorf("%w: field %d: %d bytes, %d left", errEntry, i, n, len(rest))
		}
		fields[i], rest = rest[:n], rest[n:]
	}
	if len(rest) != 0 {
		return Entry{}, fmt.Errorf("%w: %d bytes after the event", errEntry, len(rest))
	}
	e.Stream, e.Index, e.Action = string(fields[0]), string(fields[1]), string(fields[2])
	e.DocID, e.ErrType, e.Reason = string(fields[3]), string(fields[4]), string(fields[5])
	e.Event = append([]byte{}, fields[6]...)
	return e, nil
}

func decodeTime(sec, nsec []byte) (time.Time, error) {
	s, ns := int64(le.Uint64(sec)), le.Uint32(nsec)
	if s < minUnixSec || s > maxUnixSec || ns >= 1e9 {
		return time.Time{}, fmt.Errorf("%w: time %d s %d ns out of range", errEntry, s, ns)
	}
	return time.Unix(s, int64(ns)).UTC(), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

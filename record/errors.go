package record

import (
	"errors"
	"fmt"
)

// Kinds of damage. A decoding error wraps exactly one of these in a
// [*CorruptError]; test with errors.Is.
var (
	// ErrTruncated: the buffer ends before the record does (a torn write, a
	// short read, or a zero-length entry).
	ErrTruncated = errors.New("truncated")
	// ErrLength: the length field is impossible (smaller than an empty
	// record) or disagrees with the size of the buffer holding the record.
	ErrLength = errors.New("bad length")
	// ErrChecksum: the CRC-32C does not match the bytes it covers.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrVersion: the version byte names no known format. Version 0 is what
	// zero-filled bytes (a torn or preallocated tail) look like.
	ErrVersion = errors.New("unknown version")
	// ErrFlags: flag bits that this version does not define are set, or
	// the flags contradict each other or the event count (an abort or void
	// record with events).
	ErrFlags = errors.New("unknown flags")
	// ErrLayout: the checksum matches, yet the events do not exactly fill
	// the record (an event runs past the end, or bytes are left over). Only
	// a faulty or hostile writer produces this.
	ErrLayout = errors.New("bad event layout")
	// ErrCodec: a version 2 record names a codec this build does not
	// know, or its reserved bytes are not zero.
	ErrCodec = errors.New("unknown codec")
	// ErrTooLarge: a version 2 record declares an uncompressed event
	// block larger than the reader's limit (or MaxBlockBytes). It is
	// refused before anything is allocated for the block.
	ErrTooLarge = errors.New("event block too large")
	// ErrBlock: the checksum matches, yet a version 2 record's block
	// does not decompress, or decompresses to another size than its
	// header declares. Only a faulty or hostile writer produces this.
	ErrBlock = errors.New("bad compressed block")
)

// ErrCompressed is what [Decode] returns (wrapped, not in a
// *CorruptError) for an intact version 2 record: its events are
// compressed, and only a [Decompressor] yields them. The record itself is
// sound.
var ErrCompressed = errors.New("compressed record")

// CorruptError reports a record that cannot be decoded: what is wrong (Err,
// one of the sentinels above) and where decoding stopped (Offset, in bytes
// from the start of the record).
type CorruptError struct {
	Offset int
	Err    error
	Detail string
}

func (e *CorruptError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("record: %v at offset %d", e.Err, e.Offset)
	}
	return fmt.Sprintf("record: %v at offset %d: %s", e.Err, e.Offset, e.Detail)
}

// Unwrap returns the kind of damage, so errors.Is(err, ErrChecksum) works.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(off int, kind error, format string, args ...any) error {
	return &CorruptError{Offset: off, Err: kind, Detail: fmt.Sprintf(format, args...)}
}

package record

import (
	"fmt"
	"iter"
	"time"
)

// Record is a decoded, verified record. It does not copy event bytes: the
// slices it yields alias the buffer given to Decode and are valid exactly as
// long as that buffer is left unchanged (for a version 2 record, the
// Decompressor's buffer, valid until its next Decode).
type Record struct {
	received int64
	flags    Flags
	slot     uint16
	count    int
	events   []byte // the events region of the decoded buffer
	size     int
}

// Received is the time logpond received the batch, or the zero time when the
// writer did not know it.
func (r Record) Received() time.Time {
	if r.received == 0 {
		return time.Time{}
	}
	return time.Unix(0, r.received)
}

// Flags say how the record belongs to its client batch (see doc.go).
func (r Record) Flags() Flags { return r.flags }

// Slot is the input connection slot the record's batch arrived on.
func (r Record) Slot() uint16 { return r.slot }

// Count is the number of events in the record.
func (r Record) Count() int { return r.count }

// Size is the encoded size of the record in bytes, as stored (compressed,
// for version 2).
func (r Record) Size() int { return r.size }

// EventBytes is how many bytes Clone appends: the events with their
// length prefixes, as decoded (uncompressed).
func (r Record) EventBytes() int { return len(r.events) }

// Events yields the events in order, each aliasing the decoded buffer. The
// record was fully validated by Decode, so iteration cannot fail.
func (r Record) Events() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		rest := r.events
		for range r.count {
			n := le.Uint32(rest)
			if !yield(rest[EventOverhead : EventOverhead+n : EventOverhead+n]) {
				return
			}
			rest = rest[EventOverhead+n:]
		}
	}
}

// Clone appends the record's events to dst and returns the grown dst and a
// Record over the copy, which stays valid when the original buffer is
// reused. The copy is of verified bytes, so it is not verified again.
func (r Record) Clone(dst []byte) ([]byte, Record) {
	start := len(dst)
	dst = append(dst, r.events...)
	c := r
	c.events = dst[start:len(dst):len(dst)]
	return dst, c
}

// SizeOf reads the total record size from the first HeaderSize bytes of a
// record of either version, for readers of a stream of records that must
// know how much to read next. It checks what the header alone can show
// (version, length ≥ the version's empty record); the record still needs
// Decode (or a Decompressor's Decode).
func SizeOf(head []byte) (int, error) {
	if len(head) < HeaderSize {
		return 0, corrupt(len(head), ErrTruncated, "header needs %d bytes, have %d", HeaderSize, len(head))
	}
	h := readHeader(head)
	least := minSize(h.version)
	if least == 0 {
		return 0, versionError(h.version)
	}
	if h.length < least {
		return 0, corrupt(offLength, ErrLength, "length %d is below the %d bytes of an empty version %d record", h.length, least, h.version)
	}
	return int(h.length), nil
}

// Peek reads a record's batch flags and slot from its first HeaderSize
// bytes (either version), for a reader that routes records it trusts (already verified)
// without decoding them. It checks only the version and the flags.
func Peek(head []byte) (Flags, uint16, error) {
	if len(head) < HeaderSize {
		return 0, 0, corrupt(len(head), ErrTruncated, "header needs %d bytes, have %d", HeaderSize, len(head))
	}
	h := readHeader(head)
	if minSize(h.version) == 0 {
		return 0, 0, versionError(h.version)
	}
	if bad := h.flags.check(h.count); bad != "" {
		return 0, 0, corrupt(offFlags, ErrFlags, "%s", bad)
	}
	return h.flags, h.slot, nil
}

// Decode verifies the record that fills b exactly and returns it without
// copying: the length field must equal len(b), the checksum must match, the
// version and flags must be known, and the events must exactly fill the
// record. Every failure is a *CorruptError wrapping one of the Err…
// sentinels, but one: an intact version 2 record (length and checksum
// verified) returns an error wrapping ErrCompressed, since its events exist
// only once a [Decompressor] has decompressed them.
func Decode(b []byte) (Record, error) {
	size, err := verify(b)
	if err != nil {
		return Record{}, err
	}
	body := b[:size-TrailerSize]
	h := readHeader(b)
	if h.version == VersionCompressed {
		return Record{}, fmt.Errorf("record: version %d record of %d events: decode it with a Decompressor: %w", h.version, h.count, ErrCompressed)
	}
	if bad := h.flags.check(h.count); bad != "" {
		return Record{}, corrupt(offFlags, ErrFlags, "%s", bad)
	}
	events := body[HeaderSize:]
	if err := checkEvents(events, h.count, func(rest int) int { return size - TrailerSize - rest }); err != nil {
		return Record{}, err
	}
	return Record{received: h.received, flags: h.flags, slot: h.slot, count: int(h.count), events: events, size: size}, nil
}

// verify checks what both versions share: a known version, a length field
// equal to len(b), and the CRC-32C of every byte before the trailer. It
// returns the record's size.
func verify(b []byte) (int, error) {
	size, err := SizeOf(b)
	if err != nil {
		return 0, err
	}
	if size > len(b) {
		return 0, corrupt(len(b), ErrTruncated, "record is %d bytes, buffer ends after %d", size, len(b))
	}
	if size < len(b) {
		return 0, corrupt(offLength, ErrLength, "record is %d bytes but fills a buffer of %d", size, len(b))
	}
	if want, got := le.Uint32(b[size-TrailerSize:]), checksum(b[:size-TrailerSize]); want != got {
		return 0, corrupt(size-TrailerSize, ErrChecksum, "stored %08x, computed %08x", want, got)
	}
	return size, nil
}

// checkEvents verifies that count events, each a u32 length and its bytes,
// exactly fill events. at maps the number of bytes left unread to the
// record offset that an error reports.
func checkEvents(events []byte, count uint32, at func(rest int) int) error {
	rest := events
	for i := range count {
		if len(rest) < EventOverhead {
			return corrupt(at(len(rest)), ErrLayout, "event %d of %d: length prefix runs past the end", i+1, count)
		}
		n := le.Uint32(rest)
		if uint64(n) > uint64(len(rest)-EventOverhead) {
			return corrupt(at(len(rest)), ErrLayout, "event %d of %d: %d bytes declared, %d left", i+1, count, n, len(rest)-EventOverhead)
		}
		rest = rest[EventOverhead+int(n):]
	}
	if len(rest) != 0 {
		return corrupt(at(len(rest)), ErrLayout, "%d bytes left over after %d events", len(rest), count)
	}
	return nil
}

func versionError(v uint8) error {
	if v == 0 {
		return corrupt(offVersion, ErrVersion, "version 0 (zero-filled bytes?)")
	}
	return corrupt(offVersion, ErrVersion, "version %d, this build reads versions %d and %d", v, Version, VersionCompressed)
}

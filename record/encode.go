package record

import (
	"fmt"
	"math"
	"time"
)

// zeroHeader reserves the header while a record is being built; the real
// header is written by Finish once the length and count are known.
var zeroHeader [HeaderSize]byte

// Builder encodes records one after another into a buffer it owns and
// reuses, so steady-state encoding allocates nothing: events are copied
// straight from the caller's (possibly reused) buffers into the record.
//
// Use: Reset, Add each event (checking Size against the store's limit
// first), Finish. The slice Finish returns aliases the Builder's buffer and
// stays valid until the next Reset. A Builder is not safe for concurrent use.
type Builder struct {
	buf      []byte
	count    uint32
	received int64
	open     bool // between Reset and Finish
}

// Reset starts a new record received at the given time, keeping the buffer's
// capacity. A zero time is stored as "unknown" (0).
func (b *Builder) Reset(received time.Time) {
	b.buf = append(b.buf[:0], zeroHeader[:]...)
	b.count = 0
	b.received = unixNanos(received)
	b.open = true
}

// Add appends one event. It fails, leaving the record unchanged, when the
// record would exceed MaxSize or hold more events than the count field can
// express, or when called outside Reset…Finish.
func (b *Builder) Add(event []byte) error {
	if !b.open {
		return fmt.Errorf("record: Add outside Reset…Finish")
	}
	if b.count == math.MaxUint32 {
		return fmt.Errorf("record: too many events in one record (%d)", b.count)
	}
	if int64(b.Size())+EventOverhead+int64(len(event)) > MaxSize {
		return fmt.Errorf("record: event of %d bytes would make the record exceed %d bytes", len(event), int64(MaxSize))
	}
	b.buf = le.AppendUint32(b.buf, uint32(len(event)))
	b.buf = append(b.buf, event...)
	b.count++
	return nil
}

// Count is the number of events added since Reset.
func (b *Builder) Count() int { return int(b.count) }

// Size is the encoded size the record would have if finished now. Adding an
// event of n bytes grows it by EventOverhead + n.
func (b *Builder) Size() int {
	if !b.open {
		return len(b.buf)
	}
	return len(b.buf) + TrailerSize
}

// Finish writes the header and checksum and returns the encoded record: a
// whole batch (no flag) from slot 0. The slice is valid until the next
// Reset. Calling Finish twice returns the same record.
func (b *Builder) Finish() []byte {
	rec, _ := b.FinishBatch(0, 0) // no flag is always valid
	return rec
}

// FinishBatch is Finish for one record of a batch that may span several:
// f may hold More and Cont (see doc.go), slot is the connection slot the
// batch arrived on. It refuses any other flag. Calling it again after a
// success returns the same record, whatever its arguments.
func (b *Builder) FinishBatch(f Flags, slot uint16) ([]byte, error) {
	return b.finish(f, slot, true)
}

// FinishBatchUnsealed is FinishBatch without the checksum: the trailer is
// left zero, and the record is not valid until it is sealed. It is for a
// caller that hands the record straight to Compressor.CompressBuilt,
// which seals it only when it keeps it uncompressed: a checksum over the
// raw events that the compressed record replaces would be a pass over
// every event for nothing.
func (b *Builder) FinishBatchUnsealed(f Flags, slot uint16) ([]byte, error) {
	return b.finish(f, slot, false)
}

func (b *Builder) finish(f Flags, slot uint16, seal bool) ([]byte, error) {
	if !b.open {
		return b.buf, nil
	}
	if f&^(More|Cont) != 0 {
		return nil, fmt.Errorf("record: flags %s on a record of events: only more and cont apply", f)
	}
	putHeader(b.buf, header{version: Version, flags: f, slot: slot, length: uint32(len(b.buf) + TrailerSize), count: b.count, received: b.received})
	sum := uint32(0)
	if seal {
		sum = checksum(b.buf)
	}
	b.buf = le.AppendUint32(b.buf, sum)
	b.open = false
	return b.buf, nil
}

// Encode appends one record holding events, received at the given time, to
// dst and returns the extended slice: a whole batch (no flag) from slot 0.
// It allocates only when dst lacks capacity (one growth for the whole
// record).
func Encode(dst []byte, received time.Time, events [][]byte) ([]byte, error) {
	return encode(dst, header{received: unixNanos(received)}, events)
}

// AppendAbort appends an abort record for slot, written at the given time,
// to dst: the batch open on that slot failed (see doc.go).
func AppendAbort(dst []byte, slot uint16, at time.Time) []byte {
	dst, _ = encode(dst, header{flags: Abort, slot: slot, received: unixNanos(at)}, nil) // an empty record always fits
	return dst
}

// AppendVoid appends to dst the void record that stands in for rec (an
// encoded record, as Decode accepts it) once rec's batch has failed: no
// event, the Void flag, rec's receive time and slot. Only rec's header is
// read; an error means it is not a record of a known version.
func AppendVoid(dst, rec []byte) ([]byte, error) {
	if _, err := SizeOf(rec); err != nil {
		return dst, err
	}
	h := readHeader(rec)
	dst, _ = encode(dst, header{flags: Void, slot: h.slot, received: h.received}, nil)
	return dst, nil
}

// encode appends one record with h's flags, slot and receive time holding
// events to dst.
func encode(dst []byte, h header, events [][]byte) ([]byte, error) {
	size := int64(MinSize)
	for _, ev := range events {
		size += EventOverhead + int64(len(ev))
	}
	if size > MaxSize || int64(len(events)) > math.MaxUint32 {
		return dst, fmt.Errorf("record: %d events of %d bytes in all exceed the record format's limit of %d bytes", len(events), size-MinSize, int64(MaxSize))
	}
	start := len(dst)
	if need := start + int(size); cap(dst) < need {
		grown := make([]byte, start, need)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, zeroHeader[:]...)
	for _, ev := range events {
		dst = le.AppendUint32(dst, uint32(len(ev)))
		dst = append(dst, ev...)
	}
	h.version, h.length, h.count = Version, uint32(size), uint32(len(events))
	putHeader(dst[start:], h)
	return le.AppendUint32(dst, checksum(dst[start:])), nil
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

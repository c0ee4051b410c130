package elasticsearch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// A dead letter holds the event exactly as stored, and the record's
// receive time. A request's lines hold the event as indexed: without its
// @metadata member, for a data stream event with what routing added
// (@timestamp, data_stream members; see route.go) and, when it held raw
// newlines, compacted. So each batch keeps, next to its lines and never
// sent, what it takes to undo that on the source line: the bytes that
// were cut (the @metadata member and its comma) and where they go back,
// or the inverse of every edit, or, for a compacted event, the whole
// event. Building a dead letter then reads nothing from the ledger: the
// drain may have passed damage that a second read would meet, and a
// record of the open segment, which has no index, could only be found
// by reading the segment from its start.
//
// This costs, per event in a request or in the retry queue, the
// @metadata member (a few dozen bytes for Beats events) and keptHeader
// bytes: about a tenth of the lines of typical Beats events. A data
// stream event adds invHeader bytes per edit and the bytes an edit
// replaced (a null: 4 bytes; an insertion: none), never the event: what
// was added is in the source line already.
//
// One kept entry, at batch.kept[item.kept:] (integers little-endian):
//
//	offset  size  field
//	0       8     received: the record's receive time, Unix nanoseconds (0: none)
//	8       4     at: where rest goes back into the source line;
//	              wholeEvent: rest is the whole event;
//	              editList: rest is the inverse of the edits (edit.go)
//	12      4     n: the length of rest
//	16      n     rest
const (
	keptReceived = 0
	keptAt       = 8
	keptLen      = 12
	keptHeader   = 16

	wholeEvent = ^uint32(0)
	editList   = ^uint32(0) - 1
)

// errKept: a kept entry does not fit its batch or its item. It would be
// a bug in the output, never bad input.
var errKept = errors.New("elasticsearch: the kept part of a dead letter's event is inconsistent")

// appendKept appends the kept entry of an event to dst: rest goes back
// into its source line at at, or, with at == wholeEvent, is the event.
func appendKept(dst []byte, received time.Time, at uint32, rest []byte) []byte {
	var ns int64
	if !received.IsZero() {
		ns = received.UnixNano()
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(ns))
	dst = binary.LittleEndian.AppendUint32(dst, at)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(rest)))
	return append(dst, rest...)
}

// keptEntry returns the kept entry that starts at kept[off:], whole, and
// true; or as much of it as kept holds, and false, when it does not fit.
func keptEntry(kept []byte, off int) ([]byte, bool) {
	if off < 0 || off > len(kept) {
		return nil, false
	}
	if len(kept)-off < keptHeader {
		return kept[off:], false
	}
	n := binary.LittleEndian.Uint32(kept[off+keptLen:])
	if uint64(len(kept)-off-keptHeader) < uint64(n) {
		return kept[off:], false
	}
	return kept[off : off+keptHeader+int(n)], true
}

// keepEvent appends the kept entry of the event ev, whose lines were just
// appended to b.buf from start on with edits (sorted, as
// appendEditedSource applied them) applied, and returns where the entry
// starts.
func (b *batch) keepEvent(start int, ev []byte, edits []edit, received time.Time) int {
	off := len(b.kept)
	source := b.buf[start:]
	if i := bytes.IndexByte(source, '\n'); i >= 0 {
		source = source[i+1:]
	}
	switch {
	case len(source)-1 != editedLen(ev, edits):
		// Compacted (raw newlines, which valid JSON holds only between
		// tokens, were removed): the event cannot be spliced back.
		b.kept = appendKept(b.kept, received, wholeEvent, ev)
	case len(edits) == 0:
		b.kept = appendKept(b.kept, received, 0, nil)
	case len(edits) == 1 && len(edits[0].ins) == 0:
		// The common case, the @metadata cut alone: its bytes and where
		// they go back, without an edit record's header.
		e := edits[0]
		b.kept = appendKept(b.kept, received, uint32(e.at), ev[e.at:e.at+e.n])
	default:
		b.kept = appendKept(b.kept, received, editList, nil)
		b.kept = appendInverse(b.kept, ev, edits)
		binary.LittleEndian.PutUint32(b.kept[off+keptLen:], uint32(len(b.kept)-off-keptHeader))
	}
	return off
}

// original returns the event of it (an item of b) exactly as stored, in a
// new slice, and its record's receive time.
func (b *batch) original(it item) ([]byte, time.Time, error) {
	e, ok := keptEntry(b.kept, it.kept)
	if !ok || it.start < 0 || it.end > len(b.buf) || it.start >= it.end {
		return nil, time.Time{}, fmt.Errorf("%w (LSN %d, position %d)", errKept, it.lsn, it.pos)
	}
	var received time.Time
	if ns := int64(binary.LittleEndian.Uint64(e[keptReceived:])); ns != 0 {
		received = time.Unix(0, ns)
	}
	at, rest := binary.LittleEndian.Uint32(e[keptAt:]), e[keptHeader:]
	if at == wholeEvent {
		return append([]byte(nil), rest...), received, nil
	}
	// The source line follows the action line; both end with a newline.
	lines := b.buf[it.start:it.end]
	i := bytes.IndexByte(lines, '\n')
	if i < 0 || i > len(lines)-2 || lines[len(lines)-1] != '\n' {
		return nil, time.Time{}, fmt.Errorf("%w (LSN %d, position %d)", errKept, it.lsn, it.pos)
	}
	source := lines[i+1 : len(lines)-1]
	if at == editList {
		ev, ok := appendUndone(make([]byte, 0, len(source)+len(rest)), source, rest)
		if !ok {
			return nil, time.Time{}, fmt.Errorf("%w (LSN %d, position %d)", errKept, it.lsn, it.pos)
		}
		return ev, received, nil
	}
	if uint64(at) > uint64(len(source)) {
		return nil, time.Time{}, fmt.Errorf("%w (LSN %d, position %d)", errKept, it.lsn, it.pos)
	}
	ev := make([]byte, 0, len(source)+len(rest))
	ev = append(ev, source[:at]...)
	ev = append(ev, rest...)
	return append(ev, source[at:]...), received, nil
}

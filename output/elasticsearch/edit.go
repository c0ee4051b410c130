package elasticsearch

import (
	"encoding/binary"
)

// An event reaches its source line through a few byte edits: the
// @metadata member is cut, and a data stream event may gain a @timestamp
// and the members of its data_stream object. All of them are expressed
// the same way, so that the source line is written in one pass over the
// event and a dead letter can restore the event exactly by undoing them.

// edit replaces the n bytes of an event at at with ins.
type edit struct {
	at, n int
	ins   []byte
}

// editSpan is an edit while routing builds it: what it inserts is the
// span [from, to) of the routing's buffer, which may still move as it
// grows. It holds no pointer, so that sorting it is plain copying.
type editSpan struct {
	at, n, from, to int
}

// sortEdits orders edits by position; at one position, an insertion
// (n == 0) comes before a replacement, so that both apply in turn. An
// event has a few edits (at most one per member routing touches), so an
// insertion sort, stable, does it with the least work.
func sortEdits(edits []editSpan) {
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && editBefore(edits[j], edits[j-1]); j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
}

// editBefore reports whether a goes strictly before b (sortEdits).
func editBefore(a, b editSpan) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return min(a.n, 1) < min(b.n, 1)
}

// editsApply reports whether edits, sorted, fit ev and do not overlap. It
// guards against a bug in whoever built them, never against bad input:
// edits are built from spans found in ev.
func editsApply(ev []byte, edits []edit) bool {
	pos := 0
	for _, e := range edits {
		if e.at < pos || e.n < 0 || e.at+e.n > len(ev) {
			return false
		}
		pos = e.at + e.n
	}
	return true
}

// appendEdited appends ev with edits (sorted, not overlapping) applied.
func appendEdited(dst, ev []byte, edits []edit) []byte {
	pos := 0
	for _, e := range edits {
		dst = append(dst, ev[pos:e.at]...)
		dst = append(dst, e.ins...)
		pos = e.at + e.n
	}
	return append(dst, ev[pos:]...)
}

// editedLen is the length of ev with edits applied.
func editedLen(ev []byte, edits []edit) int {
	n := len(ev)
	for _, e := range edits {
		n += len(e.ins) - e.n
	}
	return n
}

// The inverse of edits, as a kept entry holds them (original.go): one
// record per edit, in order, positions in the edited event (integers
// little-endian):
//
//	offset  size  field
//	0       4     at: where, in the edited event, the edit's result starts
//	4       4     n: the length of that result, to remove
//	8       4     m: the length of orig
//	12      m     orig: the bytes of the event the edit replaced
const invHeader = 12

// appendInverse appends the inverse records of edits (sorted, applied to
// ev) to dst.
func appendInverse(dst, ev []byte, edits []edit) []byte {
	shift := 0
	for _, e := range edits {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(e.at+shift))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e.ins)))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(e.n))
		dst = append(dst, ev[e.at:e.at+e.n]...)
		shift += len(e.ins) - e.n
	}
	return dst
}

// appendUndone appends edited with the inverse records inv undone: the
// event as it was before the edits. ok is false when inv does not fit
// edited (a bug, never bad input).
func appendUndone(dst, edited, inv []byte) ([]byte, bool) {
	pos := 0
	for len(inv) > 0 {
		if len(inv) < invHeader {
			return dst, false
		}
		at := uint64(binary.LittleEndian.Uint32(inv))
		n := uint64(binary.LittleEndian.Uint32(inv[4:]))
		m := uint64(binary.LittleEndian.Uint32(inv[8:]))
		if at < uint64(pos) || at+n > uint64(len(edited)) || m > uint64(len(inv)-invHeader) {
			return dst, false
		}
		dst = append(dst, edited[pos:at]...)
		dst = append(dst, inv[invHeader:invHeader+m]...)
		pos = int(at + n)
		inv = inv[invHeader+m:]
	}
	return append(dst, edited[pos:]...), true
}

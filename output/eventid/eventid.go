// Package eventid derives the document id of an event from its place in a
// ledger: "<stream>-<lsn>-<pos>", where stream is the ledger's stream id
// (a UUID) in URL-safe base64, lsn the LSN of the event's record and pos
// the event's position in that record, from 0.
//
// The id depends only on where the event is stored, so every output that
// derives it for the same event gets the same id: the Elasticsearch output
// sends it with each create, and the Lumberjack output forwards it in
// @metadata._id, so that the Elasticsearch output of the next logpond
// stores the event under the id this ledger would have given it. Sending
// an event again (after a restart, or a failed batch) then stores nothing
// twice. The stream id keeps two ledgers (two instances, or a ledger
// rebuilt from scratch) apart; LSN and position never repeat within a
// stream (docs/design.md, §2).
package eventid

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"
)

// PrefixLen is the length of a prefix Prefix returns: a UUID's 16 bytes
// in unpadded base64.
const PrefixLen = 22

// Prefix returns the stream id as it starts every id derived in that
// stream: the UUID's 16 bytes in URL-safe base64 without padding
// (PrefixLen characters). It fails when streamID is not a UUID.
func Prefix(streamID string) (string, error) {
	u, err := uuid.Parse(streamID)
	if err != nil {
		return "", fmt.Errorf("eventid: ledger stream id %q: %w", streamID, err)
	}
	return base64.RawURLEncoding.EncodeToString(u[:]), nil
}

// Append appends to dst the id of the event at position pos of the record
// at lsn, in the stream whose Prefix is prefix: "<prefix>-<lsn>-<pos>". The
// id holds only characters that need no escaping in a JSON string.
func Append(dst []byte, prefix string, lsn uint64, pos int) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, '-')
	dst = appendDecimal(dst, lsn)
	dst = append(dst, '-')
	if pos < 0 {
		return strconv.AppendInt(dst, int64(pos), 10) // never from an output
	}
	return appendDecimal(dst, uint64(pos))
}

// appendDecimal is strconv.AppendUint(dst, v, 10) written in place: the
// output writes an id for every event it sends, and strconv formats into
// a buffer of its own and copies it.
func appendDecimal(dst []byte, v uint64) []byte {
	n := 1
	for x := v; x >= 10; x /= 10 {
		n++
	}
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	for i := n - 1; i > 0; i-- {
		out[i] = byte('0' + v%10)
		v /= 10
	}
	out[0] = byte('0' + v)
	return dst[:len(dst)+n]
}

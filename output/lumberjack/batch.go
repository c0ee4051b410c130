package lumberjack

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// batch is one Lumberjack window: up to BulkMaxSize events, each with
// its id in place, copied out of the ledger reader's buffer. Its events
// come from consecutive records (a record may span several batches).
type batch struct {
	data  []byte // the events, one after the other
	ends  []int  // ends[i]: where event i ends in data
	spans []span // which records the events belong to, in order
	// events is the window as go-lumber takes it (json.RawMessage over
	// data), built by seal.
	events []any
	bytes  int  // the events' bytes, before compression
	sent   bool // sent at least once: another send is a resend
	// refused counts the times in a row a receiver refused the window
	// (refusedError); ackedAt is the output's count of ACKed windows when
	// it was first refused (isolate.go).
	refused int
	ackedAt int64
}

// span is n consecutive events of record lsn, the first at position pos
// in the record; received is the record's receive time.
type span struct {
	lsn      uint64
	pos      int
	n        int
	received time.Time
}

// added records that the event at position pos of record lsn, received
// then, was just appended to data.
func (b *batch) added(lsn uint64, pos int, received time.Time) {
	b.ends = append(b.ends, len(b.data))
	if k := len(b.spans) - 1; k >= 0 && b.spans[k].lsn == lsn {
		b.spans[k].n++
	} else {
		b.spans = append(b.spans, span{lsn: lsn, pos: pos, n: 1, received: received})
	}
}

// len is the number of events added so far; once sealed, len(b.events)
// counts what is left of it.
func (b *batch) len() int { return len(b.ends) }

// seal builds the window go-lumber sends. The events alias data, which
// add no longer grows.
func (b *batch) seal() {
	b.events = make([]any, len(b.ends))
	start := 0
	for i, end := range b.ends {
		b.events[i] = json.RawMessage(b.data[start:end])
		start = end
	}
	b.bytes = len(b.data)
}

// drop removes the first n events of a sealed batch (ACKed by a window
// that then failed) and returns the spans they covered, for the tracker.
func (b *batch) drop(n int) []span {
	n = min(n, len(b.events))
	for _, e := range b.events[:n] {
		b.bytes -= len(e.(json.RawMessage))
	}
	b.events = b.events[n:]
	var done []span
	for n > 0 && len(b.spans) > 0 {
		s := &b.spans[0]
		k := min(n, s.n)
		done = append(done, span{lsn: s.lsn, pos: s.pos, n: k, received: s.received})
		s.n -= k
		s.pos += k
		n -= k
		if s.n == 0 {
			b.spans = b.spans[1:]
		}
	}
	return done
}

// split halves a sealed batch of at least two events: first holds its
// first half, rest the others. Both alias b's events; b is not used
// after. Each half starts with no refusal of its own, and keeps when the
// window was first refused.
func (b *batch) split() (first, rest *batch) {
	k := len(b.events) / 2
	rest = &batch{events: b.events, bytes: b.bytes, spans: slices.Clone(b.spans), sent: true, ackedAt: b.ackedAt}
	first = &batch{events: b.events[:k:k], spans: rest.drop(k), sent: true, ackedAt: b.ackedAt}
	first.bytes = b.bytes - rest.bytes
	return first, rest
}

// join makes one batch of the sealed batches bs, in order (pieces of
// one window, for the retry queue).
func join(bs []*batch) *batch {
	j := &batch{sent: true}
	for i, b := range bs {
		j.events = append(j.events, b.events...)
		j.spans = append(j.spans, b.spans...)
		j.bytes += b.bytes
		if i == 0 || b.ackedAt < j.ackedAt {
			j.ackedAt = b.ackedAt
		}
		j.refused = max(j.refused, b.refused)
	}
	return j
}

// rawEncoder is go-lumber's JSON encoder for the output's events: they
// are JSON already (or bytes the receiver takes as they are), so they
// travel byte for byte, never decoded and encoded again.
func rawEncoder(v any) ([]byte, error) {
	switch e := v.(type) {
	case json.RawMessage:
		return e, nil
	case []byte:
		return e, nil
	}
	return nil, fmt.Errorf("lumberjack: event of type %T: only raw bytes are sent", v)
}

package lumberjack

import (
	"encoding/json"
	"fmt"
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
}

// span is n consecutive events of record lsn.
type span struct {
	lsn uint64
	n   int
}

// added records that an event of record lsn was just appended to data.
func (b *batch) added(lsn uint64) {
	b.ends = append(b.ends, len(b.data))
	if k := len(b.spans) - 1; k >= 0 && b.spans[k].lsn == lsn {
		b.spans[k].n++
	} else {
		b.spans = append(b.spans, span{lsn: lsn, n: 1})
	}
}

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
		done = append(done, span{lsn: s.lsn, n: k})
		s.n -= k
		n -= k
		if s.n == 0 {
			b.spans = b.spans[1:]
		}
	}
	return done
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

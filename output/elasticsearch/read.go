package elasticsearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
	"github.com/logpond/logpond/record"
)

// errNotOneLine: an event that holds raw newlines and is not valid JSON,
// so it cannot be compacted onto the one line NDJSON gives it.
var errNotOneLine = errors.New("event is not valid JSON and spans several lines")

// chunk is a run of consecutive ledger records, copied out of the
// reader's buffer, that one worker turns into bulk requests. The reader
// only copies; the per-event work (metadata, index names, the body) runs
// in the workers, in parallel.
type chunk struct {
	data    []byte
	recs    []chunkRecord
	started time.Time // when the first record was added
}

type chunkRecord struct {
	lsn uint64
	rec record.Record // decoded from data
}

func (c *chunk) reset() {
	c.data, c.recs, c.started = c.data[:0], c.recs[:0], time.Time{}
}

// read reads the ledger from LSN from on as every output does
// (drain.Source.ReadLoop: damage passed, failed reads retried, each record
// registered with the tracker in LSN order), copies the records into
// chunks of about FlushBytes, and sends the chunks on out; it closes out
// when it returns. A partial chunk goes out, once no more records are
// waiting, when FlushInterval has passed since its first record or
// sooner when records stop coming (drain.ReadHooks.Linger). Chunk buffers come back on free. It holds
// cpu's slot while it reads and decodes records, and gives it before it
// waits (for a worker to take a chunk, for the ledger's tail).
func (o *Output) read(ctx context.Context, from uint64, tr *drain.Tracker, out chan<- *chunk, free chan *chunk, cpu *drain.CPUTurn) error {
	defer close(out)
	r := o.ledger.Reader(from)
	defer r.Close()
	next := func() *chunk {
		select {
		case c := <-free:
			c.reset()
			return c
		default:
			return &chunk{data: make([]byte, 0, o.opts.FlushBytes+o.opts.FlushBytes/8)}
		}
	}
	c := next()
	send := func() bool {
		cpu.Give()
		select {
		case out <- c:
			c = next()
			return cpu.Take(ctx) == nil
		case <-ctx.Done():
			return false
		}
	}
	err := o.src.ReadLoop(ctx, r, tr, drain.ReadHooks{
		CPU: cpu,
		// A compressed record's events are decompressed straight into
		// the chunk when they fit it: into its free capacity up to
		// FlushBytes (so that the record needs no chunk of its own), or
		// into all of it when the chunk is empty.
		BeforeNext: func() {
			room := cap(c.data)
			if len(c.recs) > 0 {
				room = min(room, max(o.opts.FlushBytes, len(c.data)))
			}
			r.DecodeTo(c.data[:len(c.data):room])
		},
		// The Reader verified the record when it read it; the chunk
		// holds its events (decompressed into it, or a copy), which the
		// worker uses as is.
		Record: func(lsn uint64, rec record.Record) bool {
			if rec.Count() == 0 {
				return true
			}
			// A chunk holds at most FlushBytes of events, or one record
			// when a record alone is larger: the memory formula counts
			// each chunk as the larger of flush_bytes and the largest
			// record, not their sum.
			if r.DecodedTo() {
				// Already in place, within the chunk's room.
				c.data = c.data[:len(c.data)+rec.EventBytes()]
			} else {
				if len(c.recs) > 0 && len(c.data)+rec.EventBytes() > o.opts.FlushBytes && !send() {
					return false
				}
				c.data, rec = rec.Clone(c.data)
			}
			if len(c.recs) == 0 {
				c.started = time.Now()
			}
			c.recs = append(c.recs, chunkRecord{lsn: lsn, rec: rec})
			return len(c.data) < o.opts.FlushBytes || send()
		},
		// Once caught up, a partial chunk waits for more records while
		// they keep coming, up to FlushInterval since its first.
		Linger: o.opts.FlushInterval,
		Held:   func() time.Time { return c.started },
		// Before a failed read is retried, and after the linger, what
		// was read goes out.
		Flush: func() (more, ok bool) {
			if len(c.recs) == 0 {
				return false, true
			}
			return true, send()
		},
	})
	if err != nil {
		return fmt.Errorf("elasticsearch: %w", err)
	}
	return nil
}

// process turns the records of c into bulk requests of about FlushBytes
// (action and source lines; one event alone may be larger, up to
// MaxRequestBytes) and delivers each once the retry queue has room.
func (w *worker) process(ctx context.Context, c *chunk) error {
	o := w.o
	events := 0
	for _, cr := range c.recs {
		events += cr.rec.Count()
	}
	// A request holds about FlushBytes of the chunk's events with their
	// action lines (a quarter more, generously): a chunk of records
	// larger than that becomes several requests, and a buffer the size of
	// the whole chunk would hold memory no request uses.
	n := min(len(c.data), o.opts.FlushBytes)
	b := newBatch(o.pool, n+n/4, events)
	// The batch in hand is released however process returns (b changes
	// when a request fills up).
	defer func() { b.release() }()
	// The routing counts, once per chunk (nameCache.routed).
	defer o.flushRouted(&w.names)
	// Encoding holds a CPU slot; every wait below gives it first.
	defer w.cpu.Give()
	if err := w.cpu.Take(ctx); err != nil {
		return err
	}
	for _, cr := range c.recs {
		rec := cr.rec
		pos := 0
		for raw := range rec.Events() {
			ev, verdict, reason, err := w.proc.Event(w.tr, cr.lsn, raw)
			if err != nil {
				return fmt.Errorf("elasticsearch: %w", err)
			}
			var dead *dlq.Entry
			switch verdict {
			case drain.Dropped:
				o.stats.delivered.Add(1)
				pos++
				continue
			case drain.Unsendable:
				dead = o.deadLetter(b, len(b.buf), cr.lsn, pos, rec.Received(), raw, 0, "unprocessable_event", reason)
			default:
				dead = o.add(b, cr.lsn, pos, rec.Received(), ev, &w.scratch, &w.names)
			}
			if dead != nil {
				// Nothing to send: keep it, then count it done.
				w.cpu.Give() // the store may wait for space
				if err := o.appendDeadLetters(ctx, []dlq.Entry{*dead}); err != nil {
					return err
				}
				if err := w.cpu.Take(ctx); err != nil {
					return err
				}
				if err := w.tr.Finish(cr.lsn, 1); err != nil {
					return fmt.Errorf("elasticsearch: %w", err)
				}
				o.stats.delivered.Add(1)
			}
			pos++
			if len(b.buf) > o.opts.FlushBytes && len(b.items) > 1 {
				// The last event would take the request past its size:
				// it starts the next one.
				last := b.items[len(b.items)-1]
				next := newBatch(o.pool, len(b.buf), 0)
				next.buf = append(next.buf, b.buf[last.start:last.end]...)
				next.kept = append(next.kept, b.kept[last.kept:]...) // its entry is the last one
				b.buf, b.kept, b.items = b.buf[:last.start], b.kept[:last.kept], b.items[:len(b.items)-1]
				w.cpu.Give()
				err := w.room(ctx)
				if err == nil {
					err = w.deliver(ctx, b, b.items)
				}
				b.release()
				b = next
				if err == nil {
					err = w.cpu.Take(ctx)
				}
				if err != nil {
					return err
				}
				last.start, last.end, last.kept = 0, len(next.buf), 0
				next.items = append(next.items, last)
			}
		}
	}
	w.cpu.Give()
	if len(b.items) == 0 {
		return nil
	}
	if err := w.room(ctx); err != nil {
		return err
	}
	return w.deliver(ctx, b, b.items)
}

// add appends the event at position pos of record lsn to b as a create
// action, to its data stream or index (route.go). An event that cannot be
// sent at all (an invalid data stream, too big for any request, or
// multi-line and not JSON) is not added: add returns its dead letter.
// Each event is counted once by where it went, here: a retry does not
// come back through add. scratch is the caller's buffer for index and
// pipeline names.
func (o *Output) add(b *batch, lsn uint64, pos int, received time.Time, ev []byte, scratch *[]byte, nc *nameCache) *dlq.Entry {
	start := len(b.buf)
	rt := &nc.route
	top, invalid := o.route(rt, ev, received)
	meta := &top.meta
	kind := routedIndex
	var name []byte
	switch {
	case rt.dataStream || invalid != "":
		name = rt.name
		kind = routedDataStream
	case o.metaOnlyIndex && meta.raw != nil && nc.meta != nil && bytes.Equal(meta.raw, nc.meta):
		// Same @metadata as the previous event (the rule within a Beats
		// batch), and the template reads nothing else: same index.
		name = nc.name
		if nc.fallback {
			kind = routedFallback
		}
	default:
		var ok bool
		name, ok = o.opts.Index.Append((*scratch)[:0], ev, received)
		if !ok {
			name = append(name[:0], o.opts.FallbackIndex...)
			kind = routedFallback
		}
		*scratch = name // keep the grown buffer; name is copied into b.buf below
		if o.metaOnlyIndex && meta.raw != nil {
			nc.meta = append(nc.meta[:0], meta.raw...)
			nc.name = append(nc.name[:0], name...)
			nc.fallback = kind == routedFallback
		}
	}
	b.buf = append(b.buf, `{"create":{"_index":`...)
	b.buf = appendJSONString(b.buf, name)
	if o.opts.DerivedIDs {
		b.buf = append(b.buf, `,"_id":`...)
		if meta.id != nil {
			b.buf = appendJSONString(b.buf, meta.id)
		} else {
			b.buf = append(b.buf, '"')
			b.buf = appendDocID(b.buf, o.idPrefix, lsn, pos)
			b.buf = append(b.buf, '"')
		}
	}
	switch {
	case meta.pipeline != nil:
		b.buf = append(b.buf, `,"pipeline":`...)
		b.buf = appendJSONString(b.buf, meta.pipeline)
	case o.opts.Pipeline != nil:
		if p, ok := o.opts.Pipeline.Append((*scratch)[:0], ev, received); ok && len(p) > 0 {
			b.buf = append(b.buf, `,"pipeline":`...)
			b.buf = appendJSONString(b.buf, p)
			*scratch = p
		}
	}
	b.buf = append(b.buf, "}}\n"...)
	var err error
	if invalid == "" {
		b.buf, err = appendEditedSource(b.buf, ev, rt.edits)
		b.buf = append(b.buf, '\n')
	}
	var dead *dlq.Entry
	switch {
	case invalid != "":
		// Elasticsearch would refuse the name: no round trip for it.
		dead = o.deadLetter(b, start, lsn, pos, received, ev, 0, "invalid_data_stream", invalid)
	case err != nil:
		dead = o.deadLetter(b, start, lsn, pos, received, ev, 0, "invalid_json", err.Error())
	case len(b.buf)-start > o.opts.MaxRequestBytes:
		dead = o.deadLetter(b, start, lsn, pos, received, ev, 0, "event_too_large",
			fmt.Sprintf("the bulk action for this event is %d bytes, more than max_request_bytes (%d)", len(b.buf)-start, o.opts.MaxRequestBytes))
	}
	if dead != nil {
		b.buf = b.buf[:start]
		o.stats.routedDeadLetter.Add(1)
		return dead
	}
	b.items = append(b.items, item{lsn: lsn, pos: uint32(pos), start: start, end: len(b.buf),
		kept: b.keepEvent(start, ev, rt.edits, received)})
	nc.routed[kind]++
	if kind == routedFallback {
		// Warned of only once it is sure to go there: a dead letter
		// does not.
		o.fellBack(ev)
	}
	return nil
}

// nameCache remembers the index name of the last @metadata seen, for
// templates that read only @metadata fields (the default one), and holds
// a worker's buffers for routing.
type nameCache struct {
	meta     []byte
	name     []byte
	fallback bool // name is the fallback index
	// route is the worker's routing state, kept for its buffers.
	route routing
	// routed counts the events routed each way since the last flush:
	// the output's counters are shared by its workers, and an atomic
	// add per event made their cache line travel between cores.
	routed [routedKinds]int64
}

// Where add routes an event.
const (
	routedIndex = iota
	routedDataStream
	routedFallback
	routedKinds
)

// flushRouted adds the counts of nc.routed to the output's counters and
// clears them.
func (o *Output) flushRouted(nc *nameCache) {
	for k, n := range nc.routed {
		if n == 0 {
			continue
		}
		switch k {
		case routedIndex:
			o.stats.routedIndex.Add(n)
		case routedDataStream:
			o.stats.routedDataStream.Add(n)
		case routedFallback:
			o.stats.routedFallback.Add(n)
		}
		nc.routed[k] = 0
	}
}

// deadLetter makes the dead letter of an event whose action starts at
// b.buf[start:].
func (o *Output) deadLetter(b *batch, start int, lsn uint64, pos int, received time.Time, ev []byte, status int, errType, reason string) *dlq.Entry {
	index, id := actionTarget(b.buf[start:])
	return &dlq.Entry{
		Stream: o.ledger.StreamID(), LSN: lsn, Position: uint32(pos), Index: index, Action: "create", DocID: id,
		Status: status, ErrType: errType, Reason: reason, Received: received, Failed: time.Now(),
		Event: append([]byte(nil), ev...),
	}
}

package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

// errNotOneLine: an event that holds raw newlines and is not valid JSON,
// so it cannot be compacted onto the one line NDJSON gives it.
var errNotOneLine = errors.New("event is not valid JSON and spans several lines")

// read turns ledger records from LSN from on into batches, in LSN order,
// and sends each on out; it closes out when it returns. A partial batch
// goes out when FlushInterval has passed since its first event and no more
// records are waiting.
func (o *Output) read(ctx context.Context, from uint64, tr *tracker, out chan<- *batch) error {
	defer close(out)
	r := o.ledger.Reader(from)
	defer r.Close()
	b := &batch{}
	send := func() bool {
		select {
		case out <- b:
			b = &batch{buf: make([]byte, 0, o.opts.FlushBytes+o.opts.FlushBytes/8)}
			return true
		case <-ctx.Done():
			return false
		}
	}
	var scratch []byte
	for {
		for r.Next() {
			lsn := r.LSN()
			rec, err := record.Decode(r.Record())
			if err != nil {
				// The ledger checked the frame; a record that does not
				// decode was stored broken, which retrying cannot fix.
				return fmt.Errorf("elasticsearch: ledger record %d: %w (inspect with `ledgerctl dump --from %d --count 1`)", lsn, err, lsn)
			}
			if err := tr.add(lsn, rec.Count()); err != nil {
				return err
			}
			pos := 0
			for ev := range rec.Events() {
				var dead *dlq.Entry
				scratch, dead = o.add(b, lsn, pos, rec.Received(), ev, scratch)
				if dead != nil {
					// Nothing to send: keep it, then count it done.
					if err := o.bury(ctx, []dlq.Entry{*dead}); err != nil {
						return err
					}
					if err := tr.finish(lsn, 1); err != nil {
						return err
					}
				}
				pos++
				if len(b.buf) > o.opts.MaxRequestBytes && len(b.items) > 1 {
					// The last event would take the request past the limit:
					// it starts the next one.
					last := b.items[len(b.items)-1]
					tail := append([]byte(nil), b.buf[last.start:last.end]...)
					b.buf, b.items = b.buf[:last.start], b.items[:len(b.items)-1]
					if !send() {
						return nil
					}
					last.start, last.end = 0, len(tail)
					b.buf, b.items, b.started = append(b.buf, tail...), append(b.items, last), time.Now()
				}
				if len(b.buf) >= o.opts.FlushBytes && !send() {
					return nil
				}
			}
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("elasticsearch: reading the ledger: %w", err)
		}
		// Caught up with the ledger.
		if len(b.items) == 0 {
			if err := r.Wait(ctx); err != nil {
				return nil // ctx ended
			}
			continue
		}
		if wait := time.Until(b.started.Add(o.opts.FlushInterval)); wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			err := r.Wait(wctx)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				continue // more records: fill the batch further
			}
		}
		if !send() {
			return nil
		}
	}
}

// add appends the event at position pos of record lsn to b as a create
// action. An event that cannot be sent at all (too big for any request,
// or multi-line and not JSON) is not added: add returns its dead letter.
func (o *Output) add(b *batch, lsn uint64, pos int, received time.Time, ev, scratch []byte) ([]byte, *dlq.Entry) {
	start := len(b.buf)
	meta := readMeta(ev)
	var ok bool
	scratch, ok = o.opts.Index.Append(scratch[:0], ev, received)
	if !ok {
		scratch = append(scratch[:0], o.opts.FallbackIndex...)
	}
	b.buf = append(b.buf, `{"create":{"_index":`...)
	b.buf = appendJSONString(b.buf, scratch)
	hasID := o.opts.DerivedIDs
	if hasID {
		b.buf = append(b.buf, `,"_id":`...)
		if meta.id != "" {
			b.buf = appendJSONString(b.buf, meta.id)
		} else {
			b.buf = append(b.buf, '"')
			b.buf = appendDocID(b.buf, o.idPrefix, lsn, pos)
			b.buf = append(b.buf, '"')
		}
	}
	switch {
	case meta.pipeline != "":
		b.buf = append(b.buf, `,"pipeline":`...)
		b.buf = appendJSONString(b.buf, meta.pipeline)
	case o.opts.Pipeline != nil:
		var p []byte
		if p, ok = o.opts.Pipeline.Append(scratch[:0], ev, received); ok && len(p) > 0 {
			b.buf = append(b.buf, `,"pipeline":`...)
			b.buf = appendJSONString(b.buf, p)
		}
		scratch = p
	}
	b.buf = append(b.buf, "}}\n"...)
	var err error
	b.buf, err = appendSource(b.buf, ev, meta.cut)
	b.buf = append(b.buf, '\n')
	var dead *dlq.Entry
	switch {
	case err != nil:
		dead = o.deadLetter(b, start, lsn, pos, received, ev, 0, "invalid_json", err.Error())
	case len(b.buf)-start > o.opts.MaxRequestBytes:
		dead = o.deadLetter(b, start, lsn, pos, received, ev, 0, "event_too_large",
			fmt.Sprintf("the bulk action for this event is %d bytes, more than max_request_bytes (%d)", len(b.buf)-start, o.opts.MaxRequestBytes))
	}
	if dead != nil {
		b.buf = b.buf[:start]
		return scratch, dead
	}
	if len(b.items) == 0 {
		b.started = time.Now()
	}
	b.items = append(b.items, item{lsn: lsn, pos: uint32(pos), start: start, end: len(b.buf), hasID: hasID})
	return scratch, nil
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

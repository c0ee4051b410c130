package elasticsearch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
)

// maxResponseBytes bounds how much of a bulk response is read. With
// filter_path a response is a few dozen bytes per item; error reasons make
// it longer, never near this.
const maxResponseBytes = 256 << 20

// maxKeptResponse bounds the response buffer a worker keeps for reuse.
// Responses are a few dozen bytes per item with filter_path; one full of
// error reasons can be far larger, and is left to the GC.
const maxKeptResponse = 4 << 20

// worker turns chunks of records into bulk requests and sends them, and
// sends the items of the retry queue when they are ready; Options.Workers
// run one each, and the controller decides how many of their requests are
// in flight.
type worker struct {
	o       *Output
	tr      *drain.Tracker
	rq      *retryQueue
	ctl     *controller
	scratch []byte // index and pipeline names
	names   nameCache
	results []itemResult   // reused per response
	resp    []byte         // the last response's body; its buffer is reused for the next
	cpu     *drain.CPUTurn // held while encoding, given before every wait
	proc    *drain.Processor
}

// run works until ctx ends or chunks closes, or a failure retrying cannot
// fix, which it returns. Ready retries go first (the cursor waits for
// them); new chunks are taken only while the retry queue has room.
// Chunk buffers go back on free.
func (w *worker) run(ctx context.Context, chunks <-chan *chunk, free chan<- *chunk) error {
	for {
		sent, err := w.sendRetry(ctx)
		if err != nil {
			return err
		}
		if sent {
			continue
		}
		changed, ready, full := w.rq.wait()
		if ready {
			continue
		}
		w.probe()
		in := chunks
		if full {
			in = nil // the retry queue's bound: send what it holds first
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case c, ok := <-in:
			if !ok {
				return nil
			}
			err := w.process(ctx, c)
			if cap(c.data) <= w.o.maxKeep {
				select {
				case free <- c:
				default:
				}
			}
			w.trim()
			if err != nil {
				return err
			}
		}
	}
}

// maxKeptNames bounds the name buffers a worker keeps between chunks.
// Index and pipeline names, and the @metadata they are made from, are
// short; an event with a huge @metadata member grows them once and should
// not leave them that large.
const maxKeptNames = 64 << 10

// trim drops the worker's name buffers when an outsized event grew them.
func (w *worker) trim() {
	if cap(w.scratch) > maxKeptNames {
		w.scratch = nil
	}
	if cap(w.names.meta) > maxKeptNames || cap(w.names.name) > maxKeptNames {
		w.names = nameCache{}
	}
}

// sendRetry sends the items of the retry queue that are ready, if any,
// and says whether it sent.
func (w *worker) sendRetry(ctx context.Context) (bool, error) {
	b := w.rq.take(w.o.pool, w.o.opts.FlushBytes)
	if b == nil {
		return false, nil
	}
	w.o.stats.resent.Add(int64(len(b.items)))
	err := w.deliver(ctx, b, b.items)
	b.release()
	return true, err
}

// probe lets the earliest waiting retry go early when nothing is in
// flight (see controller.probeAt).
func (w *worker) probe() {
	if at, ok := w.ctl.probeAt(); ok {
		w.rq.probe(at) // wakes the queue's waiters if it moved a group
	}
}

// room waits until the retry queue is below its bound, sending its ready
// items meanwhile: a request of new records goes only then, so that the
// queue never holds more than its bound plus one such request per worker.
func (w *worker) room(ctx context.Context) error {
	for {
		changed, ready, full := w.rq.wait()
		if !full {
			return nil
		}
		if ready {
			if _, err := w.sendRetry(ctx); err != nil {
				return err
			}
			continue
		}
		w.probe()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// deliver sends items (of b) once. Each item ends done, dead-lettered, or
// in the retry queue, from which any worker sends it again when the
// controller says (it never waits here). deliver returns an error only
// when ctx ended (items stay pending: the cursor does not pass them) or
// on a failure retrying cannot fix.
//
// Outcomes (docs/design.md, §7): a request that fails as a whole for
// reasons that are not the events' (refused, timeouts, 429, 5xx, auth)
// puts its items back with the capped, jittered backoff of the outage,
// for ever, while the data waits in the ledger; a request refused as a
// whole because of its content (400, 413) is split in halves until the
// event that causes it is alone, and that one is dead-lettered; in a 2xx
// response each item is done, retried, or dead-lettered.
func (w *worker) deliver(ctx context.Context, b *batch, items []item) error {
	o := w.o
	// Nothing is sent before the hosts were asked which cluster they
	// belong to, nor while they belong to different ones (cluster.go).
	if err := o.cluster.wait(ctx); err != nil {
		return err
	}
	round, err := w.ctl.acquire(ctx, len(items))
	if err != nil {
		return err
	}
	body := b.body(items)
	size := body.Len()
	start := time.Now()
	sent := o.inflight.start(start)
	status, resp, err := o.bulk(ctx, body, w.resp)
	o.inflight.done(sent, err == nil, time.Since(start))
	w.resp = nil
	if cap(resp) <= maxKeptResponse {
		w.resp = resp // not a rare huge one: kept for the next response
	}
	took := time.Since(start)
	o.stats.requests.Add(1)
	if o.opts.Observer != nil && ctx.Err() == nil {
		o.opts.Observer.Request(took, status, err)
	}
	if ctx.Err() != nil {
		w.ctl.release(result{})
		return ctx.Err()
	}
	res := result{rtt: took, bytes: size, sent: len(items), round: round}
	var reason string
	switch {
	case err != nil:
		reason = err.Error()
	case status == 400 || status == 413:
		w.ctl.release(res)
		errType, why := errorBody(resp)
		if why == "" {
			why = fmt.Sprintf("the request was refused as a whole with HTTP %d", status)
		}
		o.stats.refused.Add(1)
		if len(items) == 1 {
			return w.deadLetterItems(ctx, b, items, status, errType, why)
		}
		o.log.Warn("elasticsearch refused a whole bulk request: splitting it to isolate the events that cause it",
			"status", status, "type", errType, "reason", why, "events", len(items))
		half := len(items) / 2
		left, right := append([]item(nil), items[:half]...), append([]item(nil), items[half:]...)
		if err := w.deliver(ctx, b, left); err != nil {
			return err
		}
		return w.deliver(ctx, b, right)
	case status < 200 || status > 299:
		errType, why := errorBody(resp)
		reason = fmt.Sprintf("bulk request answered %d %s %s", status, errType, why)
	}
	var results []itemResult
	if reason == "" {
		results, err = parseBulkResponse(resp, len(items), w.results)
		if err != nil {
			reason = err.Error()
		}
		w.results = results
	}
	if reason != "" {
		o.stats.failedRequests.Add(1)
		o.outage(reason, start)
		res.failed = true
		wait := w.ctl.release(res)
		w.rq.push(b, items, time.Now().Add(wait), false)
		return nil
	}
	o.reachable()

	var retry, other, dead []item
	var deadResults []itemResult
	outcomes := make([]outcome, len(results))
	// Outcomes, counted once per response. Items come in runs of one
	// outcome (all 201 but for a few): the map is touched once per run.
	tally := map[tallyKey]int{}
	var last tallyKey
	same := 0 // items of outcome last since the last one counted
	for i, r := range results {
		out := classify(r, o.opts.DerivedIDs)
		outcomes[i] = out
		if k := (tallyKey{status: r.status, outcome: outcomeName(out, r.status), errType: r.errType}); same > 0 && k == last {
			same++
		} else {
			if same > 0 {
				tally[last] += same
			}
			last, same = k, 1
		}
		switch out {
		case outcomeRetry:
			if rejection(r) {
				retry = append(retry, items[i])
				break
			}
			it := items[i]
			if it.tries < math.MaxUint16 {
				it.tries++
			}
			other = append(other, it)
		case outcomeDead:
			dead = append(dead, items[i])
			deadResults = append(deadResults, r)
		}
	}
	if same > 0 {
		tally[last] += same
	}
	res.rejected, res.other = len(retry), len(other)
	res.accepted = len(items) - len(retry) - len(other)
	wait := w.ctl.release(res)
	w.rq.push(b, retry, time.Now().Add(wait), false)
	w.pushOwn(b, other)
	// The cluster answered: what waits in the retry queue (rejected items,
	// and the items of a request that failed as a whole while others
	// succeed) waits no longer than its health now says. During an outage
	// no request is answered, and the outage's backoff holds.
	w.rq.advance(w.ctl.healthDelay())
	run := itemRun{w: w}
	for i, out := range outcomes {
		if out == outcomeDone {
			if err := run.add(items[i].lsn); err != nil {
				return err
			}
		}
	}
	if err := run.flush(); err != nil {
		return err
	}
	o.count(tally)
	if len(dead) > 0 {
		return w.deadLetterResults(ctx, b, dead, deadResults)
	}
	return nil
}

// rejection says an item was refused for the cluster's load (429,
// es_rejected_execution_exception): such items wait as the cluster's health
// says and feed the controller. Other retryable failures (401, 403 such as
// a cluster_block_exception, 5xx) may last; each such item waits its own
// capped exponential backoff instead, as Logstash does.
func rejection(r itemResult) bool {
	return r.status == 429 || r.errType == "es_rejected_execution_exception"
}

// pushOwn queues items refused for other reasons than the cluster's load,
// each to go again after its own backoff: retry_initial_interval doubling
// with its tries up to retry_max_interval, jittered.
func (w *worker) pushOwn(b *batch, items []item) {
	for len(items) > 0 {
		tries := items[0].tries
		var group, rest []item
		for _, it := range items {
			if it.tries == tries {
				group = append(group, it)
			} else {
				rest = append(rest, it)
			}
		}
		d := backoff(w.o.opts.RetryInitial, w.o.opts.RetryMax, int(tries)-1)
		w.rq.push(b, group, time.Now().Add(d), true)
		items = rest
	}
}

// tallyKey groups a response's item outcomes for the counters.
type tallyKey struct {
	status  int
	outcome string // done, conflict, retry, dead
	errType string
}

// outcomeName is the metrics label of an outcome.
func outcomeName(out outcome, status int) string {
	switch {
	case out == outcomeDone && status == 409:
		return "conflict"
	case out == outcomeDone:
		return "done"
	case out == outcomeRetry:
		return "retry"
	}
	return "dead"
}

// count adds a response's outcomes to the counters and the Observer.
// (Dead letters are counted when they are written.)
func (o *Output) count(tally map[tallyKey]int) {
	for k, n := range tally {
		switch k.outcome {
		case "done":
			o.stats.indexed.Add(int64(n))
		case "conflict":
			o.stats.conflicts.Add(int64(n))
		case "retry":
			o.stats.retried.Add(int64(n))
		}
		if o.opts.Observer != nil && k.outcome != "dead" { // counted when written
			o.opts.Observer.Items(k.status, k.outcome, k.errType, n)
		}
	}
}

// itemRun finishes done items in the tracker, one call per run of items of
// the same record.
type itemRun struct {
	w   *worker
	lsn uint64
	n   int
}

func (r *itemRun) add(lsn uint64) error {
	if r.n > 0 && lsn != r.lsn {
		if err := r.flush(); err != nil {
			return err
		}
	}
	r.lsn = lsn
	r.n++
	return nil
}

func (r *itemRun) flush() error {
	if r.n == 0 {
		return nil
	}
	n := r.n
	r.n = 0
	if err := r.w.tr.Finish(r.lsn, n); err != nil {
		return fmt.Errorf("elasticsearch: %w", err)
	}
	r.w.o.stats.delivered.Add(int64(n))
	return nil
}

// deadLetterItems dead-letters items that all failed for one reason, then counts
// them done.
func (w *worker) deadLetterItems(ctx context.Context, b *batch, items []item, status int, errType, reason string) error {
	results := make([]itemResult, len(items))
	for i := range results {
		results[i] = itemResult{status: status, errType: errType, reason: reason}
	}
	return w.deadLetterResults(ctx, b, items, results)
}

// deadLetterResults writes one dead letter per item (synced), and only then
// marks the items done, so that the cursor never passes an event that is
// neither in Elasticsearch nor in the dead-letter store.
func (w *worker) deadLetterResults(ctx context.Context, b *batch, items []item, results []itemResult) error {
	o := w.o
	entries := make([]dlq.Entry, len(items))
	for i, it := range items {
		// From what the batch kept: the ledger is not read again.
		event, received, err := b.original(it)
		if err != nil {
			return err
		}
		index, id := actionTarget(b.buf[it.start:it.end])
		r := results[i]
		entries[i] = dlq.Entry{
			Stream: o.ledger.StreamID(), LSN: it.lsn, Position: it.pos, Index: index, Action: "create", DocID: id,
			Status: r.status, ErrType: r.errType, Reason: r.reason, Received: received, Failed: time.Now(), Event: event,
		}
	}
	if err := o.appendDeadLetters(ctx, entries); err != nil {
		return err
	}
	run := itemRun{w: w}
	for _, it := range items {
		if err := run.add(it.lsn); err != nil {
			return err
		}
	}
	return run.flush()
}

// appendDeadLetters appends entries to the dead-letter store (durable when
// it returns) and logs them, those the cluster refused and those the
// output could not send alike (rate-limited).
func (o *Output) appendDeadLetters(ctx context.Context, entries []dlq.Entry) error {
	if err := o.opts.DeadLetters.Append(ctx, entries); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("elasticsearch: dead-letter store: %w", err)
	}
	o.observeDead(entries)
	o.deadLog.Written(entries)
	return nil
}

// actionTarget returns the _index and _id of an action line.
func actionTarget(line []byte) (index, id string) {
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	a := gjson.GetBytes(line, "create")
	return a.Get("_index").String(), a.Get("_id").String()
}

// bulk sends one bulk request and returns the status and body of the
// response; err is a transport failure (nothing was answered).
func (o *Output) bulk(ctx context.Context, body *requestBody, dst []byte) (int, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	size := body.Len()
	res, err := o.client.Bulk(body,
		o.client.Bulk.WithContext(rctx),
		o.client.Bulk.WithFilterPath(filterPath))
	if o.opts.Gzip {
		// The client read the body into its gzip buffer before sending
		// and sends that instead: nothing else will close this one.
		body.Close()
	}
	if err != nil {
		body.failed()
		return 0, dst, err
	}
	defer res.Body.Close()
	buf := bytes.NewBuffer(dst[:0])
	if _, err := buf.ReadFrom(io.LimitReader(res.Body, maxResponseBytes)); err != nil {
		return 0, buf.Bytes(), fmt.Errorf("reading the bulk response: %w", err)
	}
	o.stats.bytesSent.Add(int64(size))
	return res.StatusCode, buf.Bytes(), nil
}

// outage records a request sent at sent that failed as a whole; the first
// of a series is logged (the wait state's entry), and the outage counts
// from when that request was sent: a request that waited Timeout for an
// answer that never came was the outage's beginning, not its end.
func (o *Output) outage(reason string, sent time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.downReason = reason
	if o.down.EnterAt(sent, o.log, slog.LevelWarn, "elasticsearch is failing requests: retrying with backoff; events wait in the ledger", "reason", reason) {
		o.stats.outages.Add(1)
	}
}

// reachable ends an outage (the wait state's exit), logging how long it
// lasted.
func (o *Output) reachable() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down.Active() { // the args cost allocations on every answered request
		o.down.Leave(o.log, "elasticsearch is answering again", "outage", o.down.Lasted().Round(time.Millisecond).String())
	}
}

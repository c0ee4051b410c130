package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/internal/drain"
)

// sender produces batches one after the other, each in its own
// transaction (ExactlyOnce) or as one idempotent flush. It owns the
// client: it opens it, and after a failure whose outcome it cannot know
// it closes it and opens a new one, which reads the position back.
type sender struct {
	o  *Output
	tr *drain.Tracker
	cl *kgo.Client
	// sent is the position in Kafka: every event before it is there.
	// Known once the client is open (ExactlyOnce); events before it are
	// finished without being produced again.
	sent  position
	tries int // failed attempts in a row, for the backoff
	// static are the output's static headers, made once.
	static []kgo.RecordHeader
}

// run takes batches from in until ctx ends or in closes.
func (s *sender) run(ctx context.Context, in <-chan *batch) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case b, ok := <-in:
			if !ok {
				return nil
			}
			if err := s.deliver(ctx, b); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

func (s *sender) close() {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
}

// deliver gets every event of b into Kafka or the dead letters, retrying
// for ever; it returns an error only when ctx ends or the dead-letter
// store or the tracker fails.
func (s *sender) deliver(ctx context.Context, b *batch) error {
	o := s.o
	for {
		if err := s.open(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.failed(ctx, err)
			continue
		}
		// Events Kafka already holds (a restart after a commit the
		// cursor file did not see yet) are done without a resend.
		if err := s.skipSent(b); err != nil {
			return err
		}
		if b.len() == 0 {
			return nil
		}
		recs, dead := s.records(b)
		if len(dead) > 0 {
			// Events no broker could take (their topic): dead letters
			// before anything is sent.
			if err := s.deadLetter(ctx, b, dead); err != nil {
				return err
			}
			continue
		}
		o.stats.batches.Add(1)
		o.stats.inFlight.Store(1)
		refused, err := s.produce(ctx, b, recs)
		o.stats.inFlight.Store(0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err == nil:
			s.done(b)
			return s.finish(b)
		case len(refused) > 0:
			// Kafka refused some records for good: they go to the dead
			// letters, and the rest of the batch is sent again.
			o.stats.failedBatches.Add(1)
			if err := s.deadLetter(ctx, b, refused); err != nil {
				return err
			}
		case fenced(err):
			// Another producer opened this transactional id after this
			// one: another logpond (or this one's successor) owns it
			// now. Opening it again at once would fence that one in
			// turn, and the two would take it from each other without
			// end; this output stands down for fencedPause instead, its
			// events waiting in the ledger, then opens the id again (the
			// other may be gone, or the refusal was not a fence after
			// all). Exactly-once holds either way: the position is read
			// back at each open.
			o.stats.failedBatches.Add(1)
			s.close()
			why := fmt.Sprintf("fenced: another producer opened the transactional id %q after this one (another logpond with this output's transactional_id, or a newer instance of this one); this output stands down and tries again in %s", o.txnID, fencedPause)
			o.waiting.Store(&why)
			o.log.Error("kafka output fenced by another producer with its transactional id: it stands down and tries again later; give each logpond its own transactional_id", "transactional_id", o.txnID, "retry_in", fencedPause.String(), "err", err)
			t := time.NewTimer(fencedPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		default:
			o.stats.failedBatches.Add(1)
			o.stats.resent.Add(int64(b.len()))
			s.failed(ctx, err)
		}
	}
}

// fencedPause is how long an output fenced by another producer with its
// transactional id stands down before it opens the id again: long beside
// a batch, so that the producer that fenced it works undisturbed.
const fencedPause = time.Minute

// fenced reports whether err says that another producer opened the
// output's transactional id after this one (Kafka then refuses this
// one's epoch).
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// open opens the client when there is none and, with ExactlyOnce, reads
// the output's position from Kafka. Opening a transactional producer
// under the output's id fences any other producer with that id and makes
// Kafka complete or abort the transaction the last one left open, so the
// position read is settled.
func (s *sender) open(ctx context.Context) error {
	if s.cl != nil {
		return nil
	}
	cl, err := s.o.newClient()
	if err != nil {
		return fmt.Errorf("opening a client: %w", err)
	}
	if !s.o.opts.ExactlyOnce {
		s.cl = cl
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, s.o.opts.Timeout)
	defer cancel()
	if _, _, err := cl.ProducerID(tctx); err != nil {
		cl.Close()
		return fmt.Errorf("initialising the transactional producer %q: %w", s.o.txnID, err)
	}
	p, err := s.o.readPosition(tctx, cl)
	if err != nil {
		cl.Close()
		return err
	}
	if s.sent.before(p) {
		s.o.log.Info("kafka holds events the cursor had not passed: they are not produced again", "lsn", p.lsn, "position", p.pos)
	}
	s.cl, s.sent = cl, p
	return nil
}

// skipSent finishes the events at the start of b that Kafka already
// holds, and drops them from b.
func (s *sender) skipSent(b *batch) error {
	n := 0
	for n < b.len() && b.at[n].pos.before(s.sent) {
		n++
	}
	if n == 0 {
		return nil
	}
	done := &batch{events: b.events[:n], at: b.at[:n]}
	if err := s.finish(done); err != nil {
		return err
	}
	s.o.stats.skipped.Add(int64(n))
	b.events, b.at = b.events[n:], b.at[n:]
	return nil
}

// failed records a failure of the whole batch: the client is closed (its
// transaction's outcome may be unknown; a new one reads the position
// back), Waiting says why, and the next try waits out the backoff.
func (s *sender) failed(ctx context.Context, err error) {
	o := s.o
	s.close()
	why := err.Error()
	if prev := o.waiting.Load(); prev == nil {
		o.stats.outages.Add(1)
		o.log.Warn("kafka failed a batch: retrying it with backoff while the events wait in the ledger", "err", err)
	}
	o.waiting.Store(&why)
	wait := min(o.opts.BackoffInit<<min(s.tries, 16), o.opts.BackoffMax)
	s.tries++
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// done records a batch that went through.
func (s *sender) done(b *batch) {
	o := s.o
	if o.waiting.Swap(nil) != nil {
		o.log.Info("kafka takes batches again")
	}
	s.tries = 0
	if b.len() > 0 {
		last := b.at[b.len()-1].pos
		s.sent = position{lsn: last.lsn, pos: last.pos + 1}
	}
}

// finish marks the events of b done with the tracker, record by record.
func (s *sender) finish(b *batch) error {
	for i := 0; i < len(b.at); {
		j := i
		for j < len(b.at) && b.at[j].pos.lsn == b.at[i].pos.lsn {
			j++
		}
		if err := s.tr.Finish(b.at[i].pos.lsn, j-i); err != nil {
			return fmt.Errorf("kafka: output %q: %w", s.o.opts.Name, err)
		}
		i = j
	}
	s.o.stats.delivered.Add(int64(len(b.at)))
	return nil
}

// refusal is an event Kafka (or its topic) refuses for good.
type refusal struct {
	i       int // in the batch
	topic   string
	errType string
	reason  string
}

// records builds the Kafka records of b, and the refusals of events that
// no broker could take: a topic that does not resolve without a
// fallback, or that is no valid topic name. The records, their headers,
// keys and ids are carved from a few allocations per batch, not several
// per event: a batch is thousands of events.
func (s *sender) records(b *batch) ([]*kgo.Record, []refusal) {
	o := s.o
	n := b.len()
	block := make([]kgo.Record, n)
	recs := make([]*kgo.Record, 0, n)
	perRecord := 1 + len(o.opts.Headers)
	headers := make([]kgo.RecordHeader, 0, n*perRecord)
	// The ids' bytes: an id is the stream prefix, two numbers and two
	// dashes; an arena that grows keeps the slices taken before valid.
	arena := make([]byte, 0, n*(eventid.PrefixLen+24))
	var dead []refusal
	var name []byte
	topic := ""
	for i, ev := range b.events {
		at := b.at[i]
		t, ok := o.opts.Topic.Append(name[:0], ev, at.received)
		name = t
		if string(t) != topic { // no allocation to compare
			topic = string(t)
		}
		tp := topic
		if !ok {
			if o.opts.FallbackTopic == "" {
				dead = append(dead, refusal{i: i, topic: o.opts.Topic.String(), errType: "topic_unresolved",
					reason: fmt.Sprintf("the topic format %q cannot be resolved for this event (missing field %s) and no fallback_topic is set", o.opts.Topic.String(), o.opts.Topic.MissingField(ev))})
				continue
			}
			tp = o.opts.FallbackTopic
			o.stats.fallback.Add(1)
		}
		if why := invalidTopic(tp); why != "" {
			dead = append(dead, refusal{i: i, topic: tp, errType: "invalid_topic", reason: fmt.Sprintf("the topic %q is not a valid Kafka topic name: %s", tp, why)})
			continue
		}
		r := &block[i]
		r.Topic, r.Value = tp, ev
		if o.opts.Key != nil {
			start := len(arena)
			if k, ok := o.opts.Key.Append(arena, ev, at.received); ok {
				arena = k
				r.Key = arena[start:len(arena):len(arena)]
			}
		}
		start := len(arena)
		arena = s.appendID(arena, ev, at.pos)
		h := len(headers)
		headers = append(headers, kgo.RecordHeader{Key: IDHeader, Value: arena[start:len(arena):len(arena)]})
		headers = append(headers, s.static...)
		r.Headers = headers[h:len(headers):len(headers)]
		recs = append(recs, r)
	}
	return recs, dead
}

// id is the event's id: its own @metadata._id (set by an upstream
// logpond), else the one its ledger position gives (package eventid), as
// the Elasticsearch output uses.
func (s *sender) id(ev []byte, p position) []byte { return s.appendID(nil, ev, p) }

// appendID appends the event's id (see id) to dst.
func (s *sender) appendID(dst, ev []byte, p position) []byte {
	// Most events carry no _id: a substring search is cheaper than a
	// lookup that walks the event.
	if bytes.Contains(ev, []byte(`"_id"`)) {
		if v := gjson.GetBytes(ev, "@metadata._id"); v.Type == gjson.String && v.Str != "" {
			return append(dst, v.Str...)
		}
	}
	return eventid.Append(dst, s.o.idPrefix, p.lsn, p.pos)
}

// invalidTopic says why t is not a topic name Kafka accepts ("" when it
// is): 1 to 249 characters of ASCII letters, digits, '.', '_' and '-',
// and not "." or "..".
func invalidTopic(t string) string {
	switch {
	case t == "":
		return "it is empty"
	case len(t) > 249:
		return fmt.Sprintf("it has %d characters, more than 249", len(t))
	case t == "." || t == "..":
		return "it is . or .."
	}
	for _, c := range []byte(t) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("it holds %q: only ASCII letters, digits, '.', '_' and '-' are allowed", c)
		}
	}
	return ""
}

// produce sends recs, the records of b (in order, one per event), in one
// transaction with the position after b (ExactlyOnce), or as one flush.
// On success every record is in Kafka (committed). Otherwise refused
// lists the records Kafka refuses for good (err is then not nil too),
// and nothing of b counts as sent: with ExactlyOnce the transaction is
// aborted or its outcome is read back at the next open.
func (s *sender) produce(ctx context.Context, b *batch, recs []*kgo.Record) (refused []refusal, err error) {
	o := s.o
	tctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	if o.opts.ExactlyOnce {
		if err := s.cl.BeginTransaction(); err != nil {
			return nil, fmt.Errorf("beginning a transaction: %w", err)
		}
	}
	var mu sync.Mutex
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i, r := range recs {
		o.stats.bytesSent.Add(int64(len(r.Value)))
		s.cl.Produce(tctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				errs[i] = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	if err := s.cl.Flush(tctx); err != nil {
		// Flush gave up (timeout, or the output stops) while records are
		// still buffered, or in flight to a broker that does not answer:
		// their promises would wait for the cluster. They are failed
		// now, buffered ones by the abort and those in flight by
		// closing the client, and the batch counts as not sent; the next
		// client settles the transaction left open.
		s.cl.UnsafeAbortBufferedRecords()
		s.close()
		wg.Wait()
		return nil, fmt.Errorf("producing the batch: %w", err)
	}
	wg.Wait()
	var firstErr error
	for i, e := range errs {
		if e == nil {
			continue
		}
		if firstErr == nil {
			firstErr = e
		}
		// recs[i] is the record of b's event i: records() keeps them in
		// order when it refuses none, and produce runs only then.
		if t, ok := permanent(e); ok {
			refused = append(refused, refusal{i: i, topic: recs[i].Topic, errType: t, reason: e.Error()})
		}
	}
	if firstErr == nil && o.opts.ExactlyOnce {
		last := recs[len(recs)-1]
		end := b.at[b.len()-1].pos
		firstErr = o.commitPosition(tctx, s.cl, last.Topic, last.Partition, last.Offset+1, position{lsn: end.lsn, pos: end.pos + 1})
	}
	if !o.opts.ExactlyOnce {
		if firstErr != nil {
			return refused, firstErr
		}
		return nil, nil
	}
	if firstErr != nil {
		// Abort what was produced; the client is closed by the caller
		// (failed) or kept for the retry without the refused records,
		// after the abort.
		aborted := s.cl.AbortBufferedRecords(tctx)
		if e := s.cl.EndTransaction(tctx, kgo.TryAbort); e != nil || aborted != nil {
			// The abort's outcome is unknown: a new client settles it.
			s.close()
		}
		return refused, firstErr
	}
	if err := s.cl.EndTransaction(tctx, kgo.TryCommit); err != nil {
		// Committed or not: the next open reads the position back.
		return nil, fmt.Errorf("committing the transaction: %w", err)
	}
	return nil, nil
}

// permanent says whether err refuses a record for good, and names it
// for the dead letter: retrying cannot help, and the event goes to the
// dead letters.
func permanent(err error) (string, bool) {
	for _, k := range []*kerr.Error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
		kerr.TopicAuthorizationFailed, kerr.UnknownTopicOrPartition, kerr.InvalidTopicException, kerr.PolicyViolation} {
		if errors.Is(err, k) {
			return strings.ToLower(k.Message), true
		}
	}
	return "", false
}

// deadLetter writes the refused events of b to the dead letters (synced),
// marks them done, and drops them from b; only then does the cursor pass
// them.
func (s *sender) deadLetter(ctx context.Context, b *batch, refused []refusal) error {
	o := s.o
	entries := make([]dlq.Entry, 0, len(refused))
	gone := make(map[int]bool, len(refused))
	now := time.Now()
	for _, r := range refused {
		at := b.at[r.i]
		entries = append(entries, dlq.Entry{Stream: o.ledger.StreamID(), LSN: at.pos.lsn, Position: uint32(at.pos.pos), Index: r.topic,
			Action: "produce", DocID: string(s.id(b.events[r.i], at.pos)), ErrType: r.errType, Reason: r.reason,
			Received: at.received, Failed: now, Event: b.events[r.i]})
		gone[r.i] = true
	}
	if err := o.opts.DeadLetters.Append(ctx, entries); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kafka: output %q: dead-letter store: %w", o.opts.Name, err)
	}
	o.deadLog.Written(entries)
	o.stats.dead.Add(int64(len(entries)))
	keep := &batch{}
	for i := range b.events {
		if gone[i] {
			if err := s.tr.Finish(b.at[i].pos.lsn, 1); err != nil {
				return fmt.Errorf("kafka: output %q: %w", o.opts.Name, err)
			}
			continue
		}
		keep.events = append(keep.events, b.events[i])
		keep.at = append(keep.at, b.at[i])
		keep.bytes += len(b.events[i])
	}
	*b = *keep
	return nil
}

package elasticsearch

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
)

// counters are the output's running totals; atomics, read by Stats.
type counters struct {
	requests, failedRequests, refused atomic.Int64
	bytesSent                         atomic.Int64
	indexed, conflicts, retried, dead atomic.Int64
	outages                           atomic.Int64
	resent, delivered                 atomic.Int64
	// Events by where add sent them (route.go), each counted once.
	routedDataStream, routedIndex, routedFallback, routedDeadLetter atomic.Int64
	// The fallback warning's rate limit (fellBack): when it was last
	// logged (Unix nanoseconds, 0: never) and the events that fell back
	// since.
	fallbackLogged, fallbackPending atomic.Int64
}

// fallbackLogEvery is the least time between two warnings about events
// that went to the fallback index: a source that lacks a field the index
// template names usually sends many such events, and the operator needs
// to hear of it, not of each.
const fallbackLogEvery = time.Minute

// fellBack notes that ev went to the fallback index because the index
// template names a field ev lacks, and warns about it at most once per
// fallbackLogEvery, with the number of such events since the last
// warning. Safe for concurrent use.
func (o *Output) fellBack(ev []byte) {
	c := &o.stats
	c.fallbackPending.Add(1)
	now := time.Now().UnixNano()
	last := c.fallbackLogged.Load()
	if last != 0 && now-last < int64(fallbackLogEvery) {
		return
	}
	if !c.fallbackLogged.CompareAndSwap(last, now) {
		return // another worker logs
	}
	n := c.fallbackPending.Swap(0)
	o.log.Warn("events lack a field the index template names: sent to the fallback index",
		"missing_field", o.opts.Index.MissingField(ev), "index", o.opts.Index.String(),
		"fallback_index", o.opts.FallbackIndex, "events", n, "per", fallbackLogEvery.String())
}

// Stats is a snapshot of what the output did since it was created.
type Stats struct {
	Requests       int64 // bulk requests sent (each retry counts)
	FailedRequests int64 // requests that failed as a whole and were retried
	Refused        int64 // requests refused for their content (400, 413), then split
	BytesSent      int64 // request bodies, before compression
	Indexed        int64 // items stored (2xx)
	Conflicts      int64 // creates answered 409: stored by an earlier attempt
	Retried        int64 // item retries (429, 5xx, 401, 403: any failure but 400, 404, 409)
	DeadLettered   int64 // events written to the dead-letter store
	// RoutedDataStream, RoutedIndex, RoutedFallback and RoutedDeadLetter
	// count the events read from the ledger by where they were sent, once
	// each however often they are retried: to a data stream, to the index
	// template's index, to the fallback index (the template named a field
	// the event lacks), or straight to the dead-letter store without a
	// request (an invalid data stream, not JSON, too large).
	RoutedDataStream, RoutedIndex, RoutedFallback, RoutedDeadLetter int64
	Outages                                                         int64  // series of failed requests
	Resent                                                          int64  // items sent again from the retry queue (after an item or a whole request failed)
	Delivered                                                       int64  // events done: stored, already stored (409), or dead-lettered
	CursorLSN                                                       uint64 // last persisted cursor
	// SkippedRecords counts the ledger records retention deleted before
	// the output sent them (it was more than its max_lag behind with the
	// ledger full); SkippedEvents their events, where the ledger knew
	// their number. SkippedRanges are the latest such ranges of LSNs
	// (first, last), oldest first.
	SkippedRecords, SkippedEvents int64
	SkippedRanges                 [][2]uint64
	// Reconnects, EventsWithoutID and ClosedUnacked are a Lumberjack
	// output's, mapped onto these Stats by the server (0 for an
	// Elasticsearch output): connections opened again after one closed,
	// events forwarded without a document id (a resend may store them
	// twice downstream), and windows the receiver closed the connection
	// on without acknowledging any of them (how it refuses a window).
	Reconnects, EventsWithoutID, ClosedUnacked int64
	// DamagedRanges counts the damaged ranges of the ledger the output
	// passed (each quarantined and logged once); DamagedRecords the
	// records they held, whose events were not sent.
	DamagedRanges  int64
	DamagedRecords int64
	// LedgerReadErrors counts the reads of the ledger its device failed
	// (each retried: nothing is skipped for them).
	LedgerReadErrors int64
}

// Gauges is the state of a running drain, for an operator watching it
// (all zero while Run is not running).
type Gauges struct {
	Running          bool    // Run is draining
	ConcurrencyLimit int     // bulk requests that may be in flight now
	InFlight         int     // bulk requests in flight now (a request waiting for its paced start is not)
	PaceRate         float64 // events/s the requests are paced to; 0 while not pacing
	// Yielding is true while the drain paces itself down because
	// logpond's own acknowledgements are slowed (Options.Local).
	Yielding      bool
	RetryEvents   int // items waiting in the retry queue
	RetryBytes    int // their bytes
	RetryMaxBytes int // the retry queue's bound (no new records are taken above it)
	// OldestRequest is when the oldest bulk request in flight was sent
	// (zero when none is): its age is how long the cluster has left the
	// output without an answer.
	OldestRequest time.Time
	// OldestPending is the receive time of the oldest event read from
	// the ledger and not yet done (zero when none): the output's lag in
	// time is its age. Records not yet read from the ledger are younger
	// unless none is read: see DoneLSN.
	OldestPending time.Time
	// DoneLSN is the LSN up to which every record is done (the cursor
	// the output persists next); ReadLSN the last record it read from the
	// ledger. The records after ReadLSN wait in the ledger, unread.
	DoneLSN, ReadLSN uint64
	// PendingEvents counts the events of the records read and not yet
	// done.
	PendingEvents int64
	// EventsPerRecord is the mean number of events per record read since
	// the drain started (0 before the first): an estimate for the records
	// not read yet.
	EventsPerRecord float64
}

// Stats returns the current totals. Safe for concurrent use.
func (o *Output) Stats() Stats {
	c := &o.stats
	src := o.src.Counts()
	return Stats{
		Requests: c.requests.Load(), FailedRequests: c.failedRequests.Load(), Refused: c.refused.Load(),
		BytesSent: c.bytesSent.Load(),
		Indexed:   c.indexed.Load(), Conflicts: c.conflicts.Load(), Retried: c.retried.Load(),
		DeadLettered: c.dead.Load(), Outages: c.outages.Load(), Resent: c.resent.Load(), Delivered: c.delivered.Load(),
		RoutedDataStream: c.routedDataStream.Load(), RoutedIndex: c.routedIndex.Load(),
		RoutedFallback: c.routedFallback.Load(), RoutedDeadLetter: c.routedDeadLetter.Load(),
		CursorLSN:     o.cursor.Persisted(),
		DamagedRanges: src.DamagedRanges, DamagedRecords: src.DamagedRecords, LedgerReadErrors: src.ReadErrors,
		SkippedRecords: src.SkippedRecords, SkippedEvents: src.SkippedEvents, SkippedRanges: src.SkippedRanges,
	}
}

// LedgerUnreadable says why the output cannot read the ledger right now
// ("" when it can): its device has answered errors since a time, and the
// reads are being retried. Safe for concurrent use.
func (o *Output) LedgerUnreadable() string { return o.src.Unreadable() }

// Gauges returns the running drain's state. Safe for concurrent use.
func (o *Output) Gauges() Gauges {
	var st Gauges
	if l := o.live.Load(); l != nil {
		st.Running = true
		st.ConcurrencyLimit, st.InFlight, st.PaceRate = l.ctl.state()
		st.Yielding = l.ctl.yielding()
		st.RetryEvents, st.RetryBytes = l.rq.size()
		st.RetryMaxBytes = l.rq.limit
		lag := l.tr.Lag()
		st.OldestPending, st.DoneLSN, st.ReadLSN = lag.OldestPending, lag.DoneLSN, lag.ReadLSN
		st.PendingEvents, st.EventsPerRecord = lag.PendingEvents, lag.EventsPerRecord
		st.OldestRequest, _ = o.inflight.oldest()
	}
	return st
}

// observeDead counts dead letters once they are written (synced): in the
// counters and, by their status and error type, in the Observer.
func (o *Output) observeDead(entries []dlq.Entry) {
	o.stats.dead.Add(int64(len(entries)))
	if o.opts.Observer == nil {
		return
	}
	type key struct {
		status  int
		errType string
	}
	tally := map[key]int{}
	for _, e := range entries {
		tally[key{e.Status, e.ErrType}]++
	}
	for k, n := range tally {
		o.opts.Observer.Items(k.status, "dead", k.errType, n)
	}
}

// live is what a running drain shares with Stats.
type live struct {
	tr  *drain.Tracker
	rq  *retryQueue
	ctl *controller
}

// Waiting says why the output is not making progress because of
// Elasticsearch, or "": it is failing whole requests (unreachable, 5xx,
// 429, auth), or it has left a request unanswered well past its usual
// response time (hung.go). (A full dead-letter store says so itself.) Safe for
// concurrent use.
func (o *Output) Waiting() string {
	o.mu.Lock()
	down, began, reason := o.down.Active(), o.down.Began(), o.downReason
	o.mu.Unlock()
	if down {
		return fmt.Sprintf("elasticsearch failing requests since %s: %s", began.Format(time.RFC3339), reason)
	}
	sent, usual := o.inflight.oldest()
	if age := time.Since(sent); !sent.IsZero() && age > hungAfter(usual, o.opts.HungAfter) {
		return fmt.Sprintf("elasticsearch has not answered a bulk request sent %s ago (usual response time %s; requests time out after %s): the cluster takes requests and does not answer them",
			age.Round(time.Second), usual.Round(time.Millisecond), o.opts.Timeout)
	}
	return ""
}

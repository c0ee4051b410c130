package kafka

import (
	"fmt"
	"github.com/logpond/logpond/output/internal/drain"
	"sync/atomic"
	"time"
)

// counters are the output's totals since New.
type counters struct {
	batches, failedBatches atomic.Int64
	bytesSent              atomic.Int64
	delivered, resent      atomic.Int64
	dead, skipped          atomic.Int64
	fallback               atomic.Int64
	outages                atomic.Int64
	inFlight               atomic.Int64
}

// Stats are an Output's totals since New.
type Stats struct {
	Batches       int64 // batches produced (transactions begun, with ExactlyOnce); each retry counts
	FailedBatches int64 // batches that failed and were retried, whole or without their refused events
	BytesSent     int64 // the events' bytes produced, before compression; each retry counts
	Delivered     int64 // events in Kafka (committed), or found there at start
	Resent        int64 // events produced again after their batch failed
	DeadLettered  int64 // events Kafka refused for good, kept in the dead letters
	Skipped       int64 // events Kafka already held when the output started (its position ahead of the cursor file)
	Fallback      int64 // events sent to fallback_topic
	Outages       int64 // times Kafka began failing batches
	CursorLSN     uint64

	DamagedRanges, DamagedRecords int64
	LedgerReadErrors              int64
	SkippedRecords, SkippedEvents int64
	SkippedRanges                 [][2]uint64
}

// Gauges are the state of a running Output.
type Gauges struct {
	Running         bool // Run is draining
	InFlight        int  // batches being produced now (0 or 1)
	OldestPending   time.Time
	DoneLSN         uint64
	ReadLSN         uint64
	PendingEvents   int64
	EventsPerRecord float64
}

// Stats returns the output's totals.
func (o *Output) Stats() Stats {
	c := &o.stats
	src := o.src.Counts()
	return Stats{
		Batches: c.batches.Load(), FailedBatches: c.failedBatches.Load(), BytesSent: c.bytesSent.Load(),
		Delivered: c.delivered.Load(), Resent: c.resent.Load(), DeadLettered: c.dead.Load(), Skipped: c.skipped.Load(),
		Fallback: c.fallback.Load(), Outages: c.outages.Load(), CursorLSN: o.cursor.Persisted(),
		DamagedRanges: src.DamagedRanges, DamagedRecords: src.DamagedRecords, LedgerReadErrors: src.ReadErrors,
		SkippedRecords: src.SkippedRecords, SkippedEvents: src.SkippedEvents, SkippedRanges: src.SkippedRanges,
	}
}

// Gauges returns the running drain's state (zero when not running).
func (o *Output) Gauges() Gauges {
	var g Gauges
	tr := o.live.Load()
	if tr == nil {
		return g
	}
	g.Running = true
	g.InFlight = int(o.stats.inFlight.Load())
	lag := tr.Lag()
	g.OldestPending, g.DoneLSN, g.ReadLSN = lag.OldestPending, lag.DoneLSN, lag.ReadLSN
	g.PendingEvents, g.EventsPerRecord = lag.PendingEvents, lag.EventsPerRecord
	return g
}

// Waiting says why the output is held back by Kafka: the last failure of
// a batch, while batches keep failing; "" when the last one went through.
func (o *Output) Waiting() string {
	if w := o.waiting.Load(); w != nil {
		return fmt.Sprintf("kafka output %q: %s", o.opts.Name, *w)
	}
	return ""
}

// LedgerUnreadable says why the output waits for the ledger's device.
func (o *Output) LedgerUnreadable() string { return o.src.Unreadable() }

// notSent counts an event the output's chain kept it from sending: a
// dropped one is delivered, an unsendable one a dead letter.
func (s *counters) notSent(v drain.Verdict) {
	switch v {
	case drain.Dropped:
		s.delivered.Add(1)
	case drain.Unsendable:
		s.dead.Add(1)
	}
}

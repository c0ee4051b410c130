package lumberjack

import (
	"fmt"
	"github.com/logpond/logpond/output/internal/drain"
	"sync/atomic"
	"time"
)

// counters are the output's running totals; atomics, read by Stats.
type counters struct {
	batches, failedBatches atomic.Int64
	bytesSent              atomic.Int64
	delivered, resent      atomic.Int64
	withoutID              atomic.Int64
	reconnects             atomic.Int64
	closedUnacked          atomic.Int64
	isolated, dead         atomic.Int64
}

// Stats is a snapshot of what the output did since it was created.
type Stats struct {
	Batches       int64 // windows sent (each resend counts)
	FailedBatches int64 // windows not (wholly) ACKed: connection lost, timeout; sent again
	BytesSent     int64 // the events' bytes sent, before compression (each resend counts)
	Delivered     int64 // events ACKed by a host
	Resent        int64 // events sent again after their window failed
	// EventsWithoutID counts the events forwarded without a document id:
	// not JSON objects, or with an @metadata that is not one.
	EventsWithoutID int64
	// Reconnects counts the connections opened after an earlier one of
	// the same sender closed (a failure, or TTL).
	Reconnects int64
	// ClosedUnacked counts the windows a receiver took whole and then
	// closed the connection on without acknowledging any of it: how a
	// Lumberjack receiver refuses a window (also counted in FailedBatches).
	ClosedUnacked int64
	// Isolated counts the windows a receiver refused repeatedly and the
	// output sent in halves to find the events it refuses; DeadLettered
	// the events it refused alone while it took other windows, which went
	// to the dead letters (isolate.go).
	Isolated, DeadLettered int64
	// Outages counts the times every host had failed since the last ACK.
	Outages   int64
	CursorLSN uint64 // last persisted cursor
	// DamagedRanges counts the damaged ranges of the ledger the output
	// passed (each quarantined and logged once); DamagedRecords the
	// records they held, whose events were not forwarded.
	DamagedRanges  int64
	DamagedRecords int64
	// LedgerReadErrors counts the reads of the ledger its device failed
	// (each retried: nothing is skipped for them).
	LedgerReadErrors int64
	// SkippedRecords counts the ledger records retention deleted before
	// the output sent them (it was more than its max_lag behind with the
	// ledger full); SkippedEvents their events, where the ledger knew
	// their number. SkippedRanges are the latest such ranges of LSNs
	// (first, last), oldest first.
	SkippedRecords, SkippedEvents int64
	SkippedRanges                 [][2]uint64
}

// Gauges is the state of a running drain, for an operator watching it
// (all zero while Run is not running).
type Gauges struct {
	Running        bool // Run is draining
	InFlight       int  // windows sent and waiting for their ACK now
	ConnectedHosts int  // hosts with at least one connection open
	// OldestPending is the receive time of the oldest event read from
	// the ledger and not yet ACKed (zero when none): the output's lag in
	// time is its age. Records not yet read are younger unless none is
	// read: see DoneLSN.
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
	o.hosts.mu.Lock()
	outages := o.hosts.outages
	o.hosts.mu.Unlock()
	return Stats{
		Batches: c.batches.Load(), FailedBatches: c.failedBatches.Load(), BytesSent: c.bytesSent.Load(),
		Delivered: c.delivered.Load(), Resent: c.resent.Load(), EventsWithoutID: c.withoutID.Load(),
		Reconnects: c.reconnects.Load(), ClosedUnacked: c.closedUnacked.Load(), Isolated: c.isolated.Load(), DeadLettered: c.dead.Load(), Outages: outages, CursorLSN: o.cursor.Persisted(),
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
	var g Gauges
	tr := o.live.Load()
	if tr == nil {
		return g
	}
	g.Running = true
	g.InFlight = int(o.inFlight.Load())
	g.ConnectedHosts = o.hosts.connectedHosts()
	lag := tr.Lag()
	g.OldestPending, g.DoneLSN, g.ReadLSN = lag.OldestPending, lag.DoneLSN, lag.ReadLSN
	g.PendingEvents, g.EventsPerRecord = lag.PendingEvents, lag.EventsPerRecord
	return g
}

// Waiting says why the output is held back by its hosts ("" when it is
// not): every host has failed since the last ACK, each with its last
// error; or a receiver refuses a window, which a sender is isolating.
// Safe for concurrent use.
func (o *Output) Waiting() string {
	if w := o.hosts.waiting(); w != "" {
		return w
	}
	if n := o.isolating.Load(); n != nil {
		return fmt.Sprintf("output.lumberjack.%s: %s", o.opts.Name, *n)
	}
	return ""
}

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

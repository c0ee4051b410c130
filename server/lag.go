package server

import (
	"math"
	"sync"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/elasticsearch"
)

// lag is how far an output is behind the ledger.
type lag struct {
	records, events, bytes int64
	// oldest is the receive time of the oldest event not yet done, zero
	// when every event in the ledger is done.
	oldest time.Time
}

// oldestSeconds is the age of the oldest event not yet done, 0 when none.
func (l lag) oldestSeconds() float64 {
	if l.oldest.IsZero() {
		return 0
	}
	return max(0, time.Since(l.oldest).Seconds())
}

// outputLag measures the lag of the output o of st: the records after
// what it has done, the events among them (exact for the records it has read,
// estimated from its mean events per record for the rest), their bytes in
// the ledger, and the age of the oldest one, which it reads from the
// ledger when the output has not read that record yet (Elasticsearch
// down: the backlog waits unread). Zero without a ledger.
func (s *Server) outputLag(st state, o outputState) lag {
	l := s.ledger()
	if l == nil || l.Err() != nil {
		return lag{}
	}
	g := o.gauges
	done, read := st.cursors[o.out.name], st.cursors[o.out.name]
	if g.Running {
		done, read = g.DoneLSN, max(g.ReadLSN, g.DoneLSN)
	}
	last := st.ledgerLast
	if done >= last {
		return lag{}
	}
	lg := lag{records: int64(last - done), bytes: l.BytesAfter(done), oldest: g.OldestPending}
	lg.events = eventsLeft(g, read, last)
	if lg.oldest.IsZero() {
		lg.oldest = o.out.oldest.received(l, done+1)
	}
	return lg
}

// eventsLeft estimates the events an output with gauges g has not done up
// to LSN last, when it has read up to read: those of the records read and
// not done are known (g.PendingEvents); the records not read yet count at
// the mean per record read so far, or one each before any was read.
func eventsLeft(g elasticsearch.Gauges, read, last uint64) int64 {
	perRecord := g.EventsPerRecord
	if perRecord == 0 {
		perRecord = 1 // nothing read yet to estimate from: at least the records
	}
	unread := last - min(read, last)
	return g.PendingEvents + int64(math.Round(float64(unread)*perRecord))
}

// oldestProbe remembers the receive time of the last record an output's
// lag probes read from the ledger (each output has its own). Every /metrics scrape, GET / and summary
// asks for the oldest record the output has not done, which does not move
// while Elasticsearch is down (the backlog waits unread), so the ledger is
// read only when the output's position moved; and a read seeks with the
// segment's sparse index, so it costs about the index interval and one
// read, not a scan of the segment. An LSN's record never changes once it
// is in the ledger (a reopened ledger rewrites only records it had not
// synced, from the same journal records), so what was read stays true.
// Safe for concurrent use: probes run one at a time.
type oldestProbe struct {
	mu sync.Mutex // guards the fields below
	// lsn is the LSN asked for, and at the receive time of the record
	// read (the oldest the ledger holds from lsn on); lsn is 0 until a
	// read found one.
	lsn uint64
	at  time.Time
	// bytesRead counts what the probes read from the ledger, in total.
	bytesRead int64
}

// received returns the receive time of the record at lsn in l (or of the
// oldest one after it that l holds), zero when l holds none that is
// readable.
func (p *oldestProbe) received(l *ledger.Ledger, lsn uint64) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lsn == lsn && lsn > 0 {
		return p.at
	}
	r := l.Reader(lsn)
	defer r.Close()
	found := r.Next()
	for found && r.Skipped() != nil {
		found = r.Next() // deleted before the output read them: the oldest is after them
	}
	p.bytesRead += r.BytesRead()
	if !found {
		return time.Time{} // not remembered: the next probe tries again
	}
	p.lsn, p.at = lsn, r.Decoded().Received()
	return p.at
}

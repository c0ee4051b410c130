package server

import (
	"math"
	"time"
)

// lag is how far the Elasticsearch output is behind the ledger.
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

// outputLag measures the output's lag from st: the records after what it
// has done, the events among them (exact for the records it has read,
// estimated from its mean events per record for the rest), their bytes in
// the ledger, and the age of the oldest one, which it reads from the
// ledger when the output has not read that record yet (Elasticsearch
// down: the backlog waits unread). Zero without an output or a ledger.
func (s *Server) outputLag(st state) lag {
	l := s.ledger()
	if s.output == nil || l == nil || st.output == nil || l.Err() != nil {
		return lag{}
	}
	g := st.outputGauges
	done, read := st.cursors[elasticsearchCursor], st.cursors[elasticsearchCursor]
	if g.Running {
		done, read = g.DoneLSN, max(g.ReadLSN, g.DoneLSN)
	}
	last := st.ledgerLast
	if done >= last {
		return lag{}
	}
	lg := lag{records: int64(last - done), bytes: l.BytesAfter(done), oldest: g.OldestPending}
	perRecord := g.EventsPerRecord
	if perRecord == 0 {
		perRecord = 1 // nothing read yet to estimate from: at least the records
	}
	unread := last - min(read, last)
	lg.events = g.PendingEvents + int64(math.Round(float64(unread)*perRecord))
	if lg.oldest.IsZero() {
		r := l.Reader(done + 1)
		if r.Next() {
			lg.oldest = r.Decoded().Received()
		}
		r.Close()
	}
	return lg
}

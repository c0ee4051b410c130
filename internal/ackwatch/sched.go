package ackwatch

import (
	"math"
	"runtime/metrics"
	"time"
)

// A process short of CPU shows it first in the Go scheduler: goroutines
// that are ready to run wait for a P (one of GOMAXPROCS) while others
// run. The acknowledgement path is a chain of such hand-offs (the
// connection's reader, the journal's committer after its fsync, the
// writer of the ACK), so each wait adds to every acknowledgement, and a
// drain racing through a backlog is what fills the Ps on a small machine.
// The runtime keeps a histogram of these waits (/sched/latencies:seconds);
// the watch reads it and turns the waits over about the last recentSpan
// into the mean number of goroutines that stood waiting: the run queue's
// length, by Little's law, whatever the number of goroutines.

// schedMetric is the runtime's histogram of how long goroutines stood
// runnable before they ran.
const schedMetric = "/sched/latencies:seconds"

const (
	schedSnaps = 16                    // snapshots kept, enough to span recentSpan at schedEvery
	schedEvery = 50 * time.Millisecond // a snapshot at most this often: each read copies ~160 counters
)

// schedHist returns the runtime's cumulative scheduling-latency histogram:
// bucket boundaries in seconds (len(counts)+1 of them, the first may be
// -Inf and the last +Inf) and counts. Tests replace it.
type schedHist func() (bounds []float64, counts []uint64)

// runtimeSchedHist reads the running process's histogram.
func runtimeSchedHist() schedHist {
	sample := []metrics.Sample{{Name: schedMetric}}
	return func() ([]float64, []uint64) {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
			return nil, nil
		}
		h := sample[0].Value.Float64Histogram()
		return h.Buckets, h.Counts
	}
}

type schedSnap struct {
	at     time.Time
	counts []uint64
}

// schedWatch keeps recent snapshots of the histogram. Not safe for
// concurrent use: the Watch's lock guards it.
type schedWatch struct {
	read    schedHist
	bounds  []float64
	snaps   [schedSnaps]schedSnap
	n, next int // snapshots held; where the next goes
}

// waiting is the mean number of goroutines that stood runnable, waiting
// for a P, over about the last recentSpan (from the oldest snapshot at
// least that old to now), and whether there was a span to judge.
func (s *schedWatch) waiting(now time.Time) (float64, bool) {
	newest := &s.snaps[(s.next+schedSnaps-1)%schedSnaps]
	if s.n == 0 || now.Sub(newest.at) >= schedEvery {
		bounds, counts := s.read()
		if len(counts) == 0 || len(bounds) != len(counts)+1 {
			return 0, false
		}
		s.bounds = bounds
		newest = &s.snaps[s.next]
		newest.at, newest.counts = now, append(newest.counts[:0], counts...)
		s.next = (s.next + 1) % schedSnaps
		s.n = min(s.n+1, schedSnaps)
	}
	var base *schedSnap
	for i := 1; i < s.n; i++ {
		c := &s.snaps[(s.next+schedSnaps-1-i)%schedSnaps]
		base = c
		if newest.at.Sub(c.at) >= recentSpan {
			break
		}
	}
	if base == nil || len(base.counts) != len(newest.counts) {
		return 0, false
	}
	span := newest.at.Sub(base.at).Seconds()
	if span < recentSpan.Seconds()/2 {
		return 0, false // too short to say
	}
	var waited float64 // seconds, each wait taken as its bucket's middle
	for i := range newest.counts {
		lo, hi := s.bounds[i], s.bounds[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo // the last bucket's waits count as its lower bound
		}
		waited += float64(newest.counts[i]-base.counts[i]) * (lo + hi) / 2
	}
	return waited / span, true
}

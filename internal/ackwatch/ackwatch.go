// Package ackwatch watches how long logpond takes to acknowledge batches,
// so that work which can wait (an output draining a backlog) gives way to
// the work Beats clients wait for.
//
// An acknowledgement waits for a journal group's fsync; in a quiet
// process it takes about one or two fsyncs plus the time to decode the
// batch. When it takes several fsyncs longer, something else is taking
// the CPU the input and the journal's committer need: on a small machine,
// typically an output racing through a backlog after an outage. The
// watch compares the recent acknowledgement latency with the journal's
// own fsync latency, so the judgement follows the device the journal
// runs on rather than a fixed number. It also reads the Go scheduler's
// waits (sched.go), which show a process short of CPU before the
// acknowledgements' latency does.
package ackwatch

import (
	"slices"
	"sync"
	"time"
)

const (
	samples     = 256                    // recent acknowledgements kept
	recentSpan  = 500 * time.Millisecond // acknowledgements this recent are judged
	minSamples  = 8                      // fewer say too little
	quantile    = 0.9                    // the recent latency judged is this quantile
	fsyncAlpha  = 0.1                    // weight of one fsync in its moving average
	rateBucket  = 100 * time.Millisecond // incoming events are counted per bucket
	rateBuckets = 20                     // over this many buckets (2 s)
)

// Slack is when the watch says the process is busy: when recent
// acknowledgements are slower than Factor × the journal's mean fsync (and
// than Floor), or when goroutines stood waiting for a P, on average, more
// than Runnable of them at a time (0: not judged).
type Slack struct {
	Factor   float64
	Floor    time.Duration
	Runnable float64
}

// DefaultSlack allows four fsyncs, and at least 2 ms: batch decoding and
// the wait for the group in progress take up to about two. And it allows
// goroutines to wait for a P 2% of the time (20 ms of waiting per second,
// summed over goroutines): a quiet logpond taking 20k events/s on two
// cores waits 0.1–0.3% of the time on average (at most about 1% over any
// half second), and one whose drain races through a backlog beside it
// about 3% on average and 5–25% over most half seconds, which makes its
// acknowledgements' p99 about twice as slow. Measured by the benchmark
// report's isolation part (docs/benchmarks.md).
var DefaultSlack = Slack{Factor: 4, Floor: 2 * time.Millisecond, Runnable: 0.02}

type sample struct {
	at      time.Time
	latency time.Duration
}

// Watch collects acknowledgement latencies, journal fsync latencies and
// the rate of acknowledged events. Its methods are safe for concurrent
// use; the zero value is not: use New.
type Watch struct {
	slack Slack
	now   func() time.Time

	mu     sync.Mutex
	acks   [samples]sample
	nAcks  int // samples held, up to len(acks)
	next   int // where the next sample goes
	fsync  float64
	counts [rateBuckets]int64
	bucket int64 // index (since the epoch, in rateBucket units) of the newest bucket
	sched  schedWatch
}

// New returns a watch judging with slack.
func New(slack Slack) *Watch {
	return &Watch{slack: slack, now: time.Now, sched: schedWatch{read: runtimeSchedHist()}}
}

// Acked records a batch of events acknowledged with latency: the time
// logpond took, from the batch's last byte to its ACK (plus any wait for
// logpond while the batch was read), not the time the batch took to
// arrive, which says how fast the client's link is, not how busy logpond
// is.
func (w *Watch) Acked(latency time.Duration, events int) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acks[w.next] = sample{at: now, latency: latency}
	w.next = (w.next + 1) % samples
	w.nAcks = min(w.nAcks+1, samples)
	w.advanceLocked(now)
	w.counts[w.bucket%rateBuckets] += int64(events)
}

// Fsynced records the duration of one journal group fsync.
func (w *Watch) Fsynced(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsync == 0 {
		w.fsync = d.Seconds()
		return
	}
	w.fsync += fsyncAlpha * (d.Seconds() - w.fsync)
}

// advanceLocked moves the newest bucket to now, zeroing the buckets it
// passes.
func (w *Watch) advanceLocked(now time.Time) {
	b := now.UnixNano() / int64(rateBucket)
	if w.bucket == 0 || b-w.bucket >= rateBuckets {
		w.counts = [rateBuckets]int64{}
	} else {
		for i := w.bucket + 1; i <= b; i++ {
			w.counts[i%rateBuckets] = 0
		}
	}
	if b > w.bucket {
		w.bucket = b
	}
}

// Pressure says whether the process is busy, and how many events per
// second were acknowledged over the last two seconds (incoming), the rate
// at which a backlog grows while nothing drains it. Busy means that
// acknowledgements are being made (enough of them recently to judge) and
// either they are slower than the journal's fsyncs explain or goroutines
// wait for a P more than the slack allows: the second comes first, as
// the scheduler's waits add to acknowledgements long before their p90
// shows it.
func (w *Watch) Pressure() (busy bool, incoming float64) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(now)
	var total int64
	for _, c := range w.counts {
		total += c
	}
	incoming = float64(total) / (rateBuckets * rateBucket).Seconds()
	var recent []time.Duration
	for i := range w.nAcks {
		if s := w.acks[i]; now.Sub(s.at) <= recentSpan {
			recent = append(recent, s.latency)
		}
	}
	if len(recent) < minSamples {
		return false, incoming
	}
	if w.slack.Runnable > 0 {
		if waiting, ok := w.sched.waiting(now); ok && waiting > w.slack.Runnable {
			return true, incoming
		}
	}
	if w.fsync == 0 {
		return false, incoming
	}
	slices.Sort(recent)
	q := recent[int(quantile*float64(len(recent)-1))]
	limit := max(w.slack.Floor, time.Duration(w.slack.Factor*w.fsync*float64(time.Second)))
	return q > limit, incoming
}

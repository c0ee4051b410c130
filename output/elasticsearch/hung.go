package elasticsearch

import (
	"sync"
	"time"
)

// A cluster that takes connections and never answers looks, request by
// request, like one that is slow: each request waits for Timeout (a
// minute by default) before it fails. The output instead compares the age
// of its oldest request in flight with the cluster's usual response time:
// well past it (hungFactor × the usual time, at least HungAfter), the
// output says in Waiting that the cluster does not answer, long before
// the first request times out.
const (
	hungFactor = 10
	// DefaultHungAfter is Options.HungAfter's default: the least time a
	// request may go unanswered before the cluster counts as not
	// answering, whatever its usual response time.
	DefaultHungAfter = 5 * time.Second
	// usualAlpha is the weight of the latest answered request in the
	// moving average of response times.
	usualAlpha = 0.2
)

// inflight tracks when each request in flight was sent, and the usual
// response time of answered requests. Safe for concurrent use.
type inflight struct {
	mu    sync.Mutex
	next  uint64
	sent  map[uint64]time.Time
	usual time.Duration // moving average of answered requests' time; 0 before the first
}

func newInflight() *inflight { return &inflight{sent: map[uint64]time.Time{}} }

// start records a request sent at t and returns its handle for done.
func (f *inflight) start(t time.Time) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.sent[f.next] = t
	return f.next
}

// done records the end of request id; answered, with the time it took,
// when the cluster answered it (whatever the status).
func (f *inflight) done(id uint64, answered bool, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sent, id)
	if !answered {
		return
	}
	if f.usual == 0 {
		f.usual = took
		return
	}
	f.usual = time.Duration((1-usualAlpha)*float64(f.usual) + usualAlpha*float64(took))
}

// oldest is when the oldest request in flight was sent (zero when none
// is), and the usual response time.
func (f *inflight) oldest() (sent time.Time, usual time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.sent {
		if sent.IsZero() || t.Before(sent) {
			sent = t
		}
	}
	return sent, f.usual
}

// hungAfter is how long a request may go unanswered before the cluster
// counts as not answering, given its usual response time.
func hungAfter(usual, least time.Duration) time.Duration {
	return max(hungFactor*usual, least)
}

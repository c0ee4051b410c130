package elasticsearch

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// The controller's constants. The concurrency rule is adaptive request
// concurrency as Vector does it (AIMD on requests in flight, one decision
// per window of about one round trip): +1 while responses are clean and
// no slower than usual and the limit was used, ×decreaseRatio on back
// pressure or rising latency.
const (
	decreaseRatio    = 0.9 // multiplicative decrease of the concurrency limit
	rttAlpha         = 0.4 // weight of a window's mean round trip in the moving average
	rttDeviations    = 2.5 // a window's round trip above mean + this × mean deviation is "rising"
	minWindow        = 50 * time.Millisecond
	heavyRejection   = 0.2         // rejected share of a window's items that counts as back pressure
	pacedRejection   = 0.05        // while pacing: a rejected share above this lowers the rate
	paceDoubling     = time.Second // while pacing: the rate doubles per this much time of clean windows
	paceStop         = time.Second // pacing stops after this much time of windows with nothing refused
	healthTau        = time.Second
	minPaceRate      = 100.0 // items/s: pacing never goes below
	minPaceSample    = 100   // items: fewer say too little about the share the cluster refuses
	rejectedDelayCap = 0.99  // the health delay's rejected share is capped here (finite delay)
)

// result is what one bulk request came to, for the controller.
type result struct {
	rtt      time.Duration
	bytes    int    // request body size
	sent     int    // items in the request
	accepted int    // items done (stored, already stored, dead-lettered)
	rejected int    // items refused for the cluster's load (429, es_rejected_execution_exception)
	other    int    // items to retry for other errors (401, 403, 5xx, …): their own backoff, no load signal
	failed   bool   // the request failed as a whole (no answer, timeout, 429, 5xx, …)
	round    uint64 // what acquire returned for the request
}

// controller decides when a request may go: it holds the concurrency
// limit (adaptive between 1 and max, or fixed at max), paces requests
// when the cluster refuses part of the work, gates every request during
// an outage, and says how long a retried item waits, from the cluster's
// recent health. Safe for concurrent use.
type controller struct {
	adaptive     bool
	max          int
	fullBytes    int // requests at least this big feed the latency signal
	retryInitial time.Duration
	retryMax     time.Duration
	now          func() time.Time // time.Now; tests step it

	mu       sync.Mutex
	limit    int
	inflight int
	wake     chan struct{} // closed when a slot frees, the limit rises or the gate moves

	// The current window.
	winStart    time.Time
	winRTT      time.Duration // sum over full-sized requests
	winRTTn     int
	winMaxUsed  int // most requests in flight during the window
	winSent     int
	winAccepted int
	winRejected int
	winPressure bool // a whole request failed (429, 5xx, timeout, no answer)

	// Moving average and mean deviation of full-sized requests' round trip
	// (seconds); 0 until measured.
	rttMean, rttDev float64

	// Pacing: items per second, 0 while not pacing; next is when the
	// next request may start.
	rate       float64
	next       time.Time
	cleanSince time.Time // start of the current run of windows with nothing refused while pacing

	// Health: accepted and rejected items, decayed with time constant
	// healthTau.
	acc, rej float64
	healthAt time.Time

	// Outage: rounds of whole requests that failed in a row since the
	// last answer. A round is the requests started since the last counted
	// failure: requests in flight together that fail from one blip count
	// once.
	consecutive int
	failRound   uint64
	gateUntil   time.Time

	lastAnswer time.Time // when the last request that was sent came back
}

func newController(adaptive bool, max, flushBytes int, retryInitial, retryMax time.Duration) *controller {
	c := &controller{adaptive: adaptive, max: max, fullBytes: flushBytes / 2, retryInitial: retryInitial, retryMax: retryMax,
		now: time.Now, limit: max, wake: make(chan struct{})}
	c.winStart = c.now()
	if adaptive {
		c.limit = 1 // grows within a few round trips while responses are clean
	}
	return c
}

// broadcastLocked wakes every waiter; c.mu must be held.
func (c *controller) broadcastLocked() {
	close(c.wake)
	c.wake = make(chan struct{})
}

// acquire waits for a request slot: fewer requests in flight than the
// limit (one during an outage), the outage gate passed, and the pacing
// schedule reached for a request of items items. It returns the round the
// request belongs to, for its result. Every acquire that returns a nil
// error must be followed by one release.
func (c *controller) acquire(ctx context.Context, items int) (uint64, error) {
	for {
		c.mu.Lock()
		now := c.now()
		limit := c.limit
		if c.consecutive >= 2 {
			limit = 1 // an outage: one request probes the cluster
		}
		// Pacing: the next request starts no earlier than c.next. The wait
		// is taken before the slot, so a waiting request does not count as
		// in flight, and it is at most about one window: the rate may
		// change meanwhile, and the wait is checked again on waking.
		var pace time.Duration
		if c.rate > 0 && now.Before(c.next) {
			pace = min(c.next.Sub(now), c.windowLenLocked())
		}
		if pace == 0 && c.inflight < limit && !now.Before(c.gateUntil) {
			c.inflight++
			c.winMaxUsed = max(c.winMaxUsed, c.inflight)
			if c.rate > 0 {
				// The next request waits for this one's items at the rate,
				// but never more than about one window.
				c.next = now.Add(min(time.Duration(float64(items)/c.rate*float64(time.Second)), c.windowLenLocked()))
			}
			round := c.failRound
			c.mu.Unlock()
			return round, nil
		}
		wake := c.wake
		gate := c.gateUntil.Sub(now)
		c.mu.Unlock()
		if pace > gate {
			gate = pace
		}
		var timer <-chan time.Time
		var t *time.Timer
		if gate > 0 {
			t = time.NewTimer(gate)
			timer = t.C
		}
		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// release gives back a slot with what the request came to (the zero
// result: nothing was sent) and adjusts the limit, the pacing and the
// health. It returns how long the items to retry wait before they go
// again.
func (c *controller) release(r result) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	defer c.broadcastLocked()
	if r.sent == 0 {
		return 0
	}
	now := c.now()
	c.lastAnswer = now
	c.decayLocked(now)
	if r.failed {
		c.winPressure = true
		if r.round == c.failRound {
			// The first failure of requests started since the last one
			// counted: a new round failed.
			c.consecutive++
			c.failRound++
		}
		d := backoff(c.retryInitial, c.retryMax, max(c.consecutive, 1)-1)
		if c.consecutive >= 2 {
			c.gateUntil = now.Add(d)
		}
		c.windowLocked(now)
		return d
	}
	c.consecutive, c.gateUntil = 0, time.Time{}
	c.acc += float64(r.accepted)
	c.rej += float64(r.rejected)
	sent := r.sent - r.other
	c.winSent += sent
	c.winAccepted += r.accepted
	c.winRejected += r.rejected
	if c.adaptive && c.rate == 0 && sent >= minPaceSample && float64(r.rejected) > heavyRejection*float64(sent) {
		// Start pacing at once: every request already on its way would be
		// refused as heavily.
		c.rate = max(minPaceRate, c.acc/healthTau.Seconds())
		c.next = now
	}
	if r.bytes >= c.fullBytes {
		c.winRTT += r.rtt
		c.winRTTn++
	}
	c.windowLocked(now)
	return c.healthDelayLocked()
}

// decayLocked ages the health counters to now.
func (c *controller) decayLocked(now time.Time) {
	if !c.healthAt.IsZero() {
		f := math.Exp(-float64(now.Sub(c.healthAt)) / float64(healthTau))
		c.acc *= f
		c.rej *= f
	}
	c.healthAt = now
}

// healthDelayLocked is how long a rejected item waits: little while the
// cluster accepts most of the work (retry_initial_interval/16 at least),
// growing with the share of recent items it rejected
// (retry_initial_interval at one half, retry_max_interval at most), with
// jitter so retries do not come back in lockstep. It does not
// depend on how often the item itself was rejected.
func (c *controller) healthDelayLocked() time.Duration {
	d := c.healthBaseLocked()
	return d/2 + rand.N(d/2+1)
}

// healthBaseLocked is the health delay before jitter.
func (c *controller) healthBaseLocked() time.Duration {
	share := 0.0
	if t := c.acc + c.rej; t > 0 {
		share = min(c.rej/t, rejectedDelayCap)
	}
	d := time.Duration(float64(c.retryInitial) * share / (1 - share))
	return min(max(d, c.retryInitial/16), c.retryMax)
}

// healthDelay is the longest wait the cluster's current health sets for
// an item to retry (before jitter).
func (c *controller) healthDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decayLocked(c.now())
	return c.healthBaseLocked()
}

// probeAt says when a retry may go early to probe the cluster: when
// nothing is in flight, retry_initial_interval after the last answer (the
// outage gate still holds it back during an outage). ok is false while
// requests are in flight: their answers tell the cluster's health.
func (c *controller) probeAt() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight > 0 {
		return time.Time{}, false
	}
	return c.lastAnswer.Add(c.retryInitial), true
}

// windowLenLocked is how long a window lasts: about one round trip.
func (c *controller) windowLenLocked() time.Duration {
	return max(minWindow, time.Duration(c.rttMean*float64(time.Second)))
}

// windowLocked ends the window when it has lasted about one round trip,
// and adjusts the concurrency limit and the pacing rate from it.
func (c *controller) windowLocked(now time.Time) {
	span := now.Sub(c.winStart)
	if span < c.windowLenLocked() {
		return
	}
	share := 0.0
	if c.winSent > 0 {
		share = float64(c.winRejected) / float64(c.winSent)
	}
	pressure := c.winPressure || share > heavyRejection
	rising := false
	var rtt float64
	if c.winRTTn > 0 {
		rtt = (c.winRTT / time.Duration(c.winRTTn)).Seconds()
		rising = c.rttMean > 0 && rtt > c.rttMean+rttDeviations*c.rttDev
	}
	if c.adaptive {
		switch {
		case pressure || rising:
			c.limit = max(1, min(c.limit-1, int(float64(c.limit)*decreaseRatio)))
		case c.winMaxUsed >= c.limit && c.limit < c.max:
			c.limit++
		}
		c.pace(now, span, share)
	}
	if c.winRTTn > 0 && !pressure {
		if c.rttMean == 0 {
			c.rttMean, c.rttDev = rtt, rtt/2
		} else {
			c.rttDev = (1-rttAlpha)*c.rttDev + rttAlpha*math.Abs(rtt-c.rttMean)
			c.rttMean = (1-rttAlpha)*c.rttMean + rttAlpha*rtt
		}
	}
	c.winStart, c.winRTT, c.winRTTn, c.winMaxUsed = now, 0, 0, c.inflight
	c.winSent, c.winAccepted, c.winRejected, c.winPressure = 0, 0, 0, false
}

// pace adjusts the pacing rate (items/s) at the end of a window. Fewer
// requests in flight do not slow a cluster that answers fast but refuses
// what it cannot take; pacing does. It starts when a window's items were
// refused heavily, at the rate the cluster accepted in it; it drops
// towards that rate whenever more than a few items are refused, doubles
// per second of windows that refuse few, and stops after paceStop of
// windows that refuse nothing (or when it is far above what the cluster
// takes): a backlog drains at full speed as soon as the cluster takes it.
func (c *controller) pace(now time.Time, span time.Duration, share float64) {
	if c.winSent == 0 {
		return
	}
	// Items/s the cluster took: over the window (responses end windows,
	// so the span is the time over which those items were answered), and
	// over about the last healthTau (steadier; it lags).
	window := float64(c.winAccepted) / span.Seconds()
	recent := c.acc / healthTau.Seconds()
	switch {
	case c.rate == 0:
		if c.winSent >= minPaceSample && share > heavyRejection {
			c.rate = max(minPaceRate, min(window, recent))
			c.next, c.cleanSince = now, time.Time{}
		}
	case share > pacedRejection || c.winPressure:
		// Down towards what the cluster took recently, by 5 to 30%.
		c.rate = max(minPaceRate, min(c.rate*0.95, max(recent, c.rate*0.7)))
		c.cleanSince = time.Time{}
	default:
		c.rate *= math.Exp2(span.Seconds() / paceDoubling.Seconds())
		if c.winRejected > 0 {
			c.cleanSince = time.Time{}
		} else if c.cleanSince.IsZero() {
			c.cleanSince = c.winStart
		}
		if c.rate > 4*recent || (!c.cleanSince.IsZero() && now.Sub(c.cleanSince) >= paceStop) {
			c.rate, c.cleanSince = 0, time.Time{} // the pace holds nothing back
		}
	}
}

// state returns the concurrency limit, the requests in flight and the
// pacing rate (0: none).
func (c *controller) state() (limit, inflight int, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit, c.inflight, c.rate
}

// backoff is the capped exponential backoff of the given attempt (0
// first), doubling from initial, with jitter (a value in [d/2, d]) so that
// workers, and several logpond instances, do not retry in lockstep.
func backoff(initial, maxD time.Duration, attempt int) time.Duration {
	d := initial
	for i := 0; i < attempt && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	return d/2 + rand.N(d/2+1)
}

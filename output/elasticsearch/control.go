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
	decreaseRatio      = 0.9 // multiplicative decrease of the concurrency limit
	rttAlpha           = 0.4 // weight of a window's mean round trip in the moving average
	rttDeviations      = 2.5 // a window's round trip above mean + this × mean deviation is "rising"
	minWindow          = 50 * time.Millisecond
	heavyRejection     = 0.2             // rejected share of a window's items that counts as back pressure
	pacedRejection     = 0.05            // while pacing: a rejected share above this lowers the rate
	paceGrowth         = 0.1             // while pacing: the rate rises by this share per second of windows refusing few
	paceGrowthDoubling = time.Second     // while pacing: above the rate of the last refusals, the rise doubles its speed per this much time
	paceFar            = 0.5             // while pacing: below this share of the rate of the last refusals the rate rises fast
	paceFarGrowth      = 1.0             // while pacing: the fast rise, as a share per second
	paceBelow          = 0.9             // while pacing: after refusals the rate drops to this share of what the cluster took, so its queue drains
	paceStop           = 2 * time.Second // pacing stops after this long with nothing refused and nothing held back
	healthTau          = time.Second
	rateSpan           = 2 * time.Second // the rate the cluster accepts is measured over about this long
	minPaceRate        = 100.0           // items/s: pacing never goes below
	minPaceSample      = 100             // items: fewer say too little about the share the cluster refuses
	rejectedDelayCap   = 0.99            // the health delay's rejected share is capped here (finite delay)
	yieldCut           = 0.5             // while acknowledgements are slowed: the pace's cut per window
	yieldFloor         = 2.5             // while acknowledgements are slowed: the pace stays above this × the events arriving (the backlog shrinks at least as fast as events arrive, with a margin for the rate's measurement)
	backgroundSpan     = 3 * time.Second // the background share of refusals is the least refused over about this long
	paceMaxWait        = time.Second     // while pacing: one request holds the next back at most this long (floorLocked)
	backgroundMax      = 0.5             // the background share of refusals is at most this: a cluster refusing more is overloaded or down
)

// LocalLoad tells the output how logpond itself is doing: whether its
// acknowledgements to Beats clients are slowed (busy) and how many events
// per second arrive. While busy, the adaptive controller paces the drain
// down, never below yieldFloor × the events arriving: a catch-up after an outage
// must not take the CPU the acknowledgements need, and the backlog must
// still shrink. Pressure is called once per window of about one round
// trip, with the controller's lock held: it must be quick and must not
// call back into the output.
type LocalLoad interface {
	Pressure() (busy bool, incoming float64)
}

// answer is when a request was answered and how many of its items the
// cluster accepted.
type answer struct {
	at       time.Time
	accepted int
}

// rateAnswers is how many answers acceptedRateLocked remembers.
const rateAnswers = 32

// windowShare is the share of its items a window saw refused, and when it
// ended.
type windowShare struct {
	at    time.Time
	share float64
}

// shareWindows is how many windows backgroundLocked remembers: windows
// last minWindow at least, so this covers backgroundSpan.
const shareWindows = int(backgroundSpan/minWindow) + 1

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
	local        LocalLoad        // nil: the drain never yields to acknowledgements
	busy         bool             // the last window found acknowledgements slowed

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
	pacedAt    time.Time // when the pace last held a request back
	ceiling    float64   // the rate when items were last refused heavily enough to lower it (0: unknown, nothing was accepted before)
	aboveSince time.Time // when the rate rose above ceiling again (zero: below it)
	cutting    bool      // the last window lowered the rate
	lastItems  int       // items of the last request started (floorLocked)

	// Health: accepted and rejected items, decayed with time constant
	// healthTau.
	acc, rej float64
	healthAt time.Time

	// The last answers' accepted items, for the rate the cluster takes
	// (acceptedRateLocked).
	answers lastN[answer]
	// The refused shares of the last windows that sent enough items to
	// tell (backgroundLocked).
	shares lastN[windowShare]

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
		now: time.Now, limit: max, wake: make(chan struct{}),
		answers: newLastN[answer](rateAnswers), shares: newLastN[windowShare](shareWindows)}
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
		round, wait, ok := c.tryAcquireLocked(items)
		wake := c.wake
		c.mu.Unlock()
		if ok {
			return round, nil
		}
		var timer <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
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

// tryAcquireLocked takes a request slot for items items if one is free
// now (ok), or says how long to wait before asking again (0: until a slot
// frees, c.wake). c.mu must be held.
func (c *controller) tryAcquireLocked(items int) (round uint64, wait time.Duration, ok bool) {
	now := c.now()
	limit := c.limit
	if c.consecutive >= 2 {
		limit = 1 // an outage: one request probes the cluster
	}
	// Pacing: the next request starts no earlier than c.next. The wait is
	// taken before the slot, so a waiting request does not count as in
	// flight, and it is at most about one window: the rate may change
	// meanwhile, and the wait is checked again on waking.
	var pace time.Duration
	if c.rate > 0 && now.Before(c.next) {
		pace = min(c.next.Sub(now), c.windowLenLocked())
		c.pacedAt = now // the pace holds a request back: it binds
	}
	if pace == 0 && c.inflight < limit && !now.Before(c.gateUntil) {
		c.inflight++
		c.lastItems = items
		c.winMaxUsed = max(c.winMaxUsed, c.inflight)
		if c.rate > 0 {
			// The next request waits until this one's items are paid for
			// at the rate. Time spent idle earns no credit, so a burst
			// after a pause is one request, not a second's worth. The
			// rate is at least the floor this request sets: it books at
			// most paceMaxWait.
			if f := c.floorLocked(); c.rate < f {
				c.setRateLocked(now, f)
			}
			c.next = later(c.next, now).Add(time.Duration(float64(items) / c.rate * float64(time.Second)))
		}
		return c.failRound, 0, true
	}
	return 0, max(pace, c.gateUntil.Sub(now)), false
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
	c.answers.push(answer{at: now, accepted: r.accepted})
	sent := r.sent - r.other
	c.winSent += sent
	c.winAccepted += r.accepted
	c.winRejected += r.rejected
	if c.adaptive && c.rate == 0 && sent >= minPaceSample && float64(r.rejected) > heavyRejection*float64(sent) {
		// Start pacing at once: every request already on its way would be
		// refused as heavily.
		c.startPaceLocked(now, float64(r.rejected)/float64(sent))
	}
	if r.bytes >= c.fullBytes {
		c.winRTT += r.rtt
		c.winRTTn++
	}
	c.windowLocked(now)
	return c.healthDelayLocked()
}

// lastN holds the last values pushed, oldest first, up to a bound.
type lastN[T any] struct{ buf []T }

func newLastN[T any](n int) lastN[T] { return lastN[T]{buf: make([]T, 0, n)} }

// push appends v, dropping the oldest value when full.
func (l *lastN[T]) push(v T) {
	if len(l.buf) == cap(l.buf) {
		copy(l.buf, l.buf[1:])
		l.buf = l.buf[:len(l.buf)-1]
	}
	l.buf = append(l.buf, v)
}

// acceptedRateLocked is the items/s the cluster accepted over about the
// last rateSpan: the items of the answers after the oldest answer in
// that span, over the time since it. Counting from an answer to an
// answer matters: the controller decides when an answer arrives, and
// answers come in lumps of a whole request's items (thousands), so a
// count that included the lump just arrived over a fixed span would
// overstate the rate by about one request per span.
func (c *controller) acceptedRateLocked(now time.Time) float64 {
	answers := c.answers.buf
	first := -1
	for i := range answers {
		if now.Sub(answers[i].at) <= rateSpan {
			first = i
			break
		}
	}
	if first < 0 || first == len(answers)-1 || !now.After(answers[first].at) {
		// One answer in the span says nothing about a rate: the decayed
		// count does, roughly.
		return c.acc / healthTau.Seconds()
	}
	if first > 0 {
		first-- // the span starts at the last answer before it
	}
	n := 0
	for _, a := range answers[first+1:] {
		n += a.accepted
	}
	return float64(n) / now.Sub(answers[first].at).Seconds()
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

// openGate lets the next request go now, whatever the outage's backoff
// said: a probe found the cluster answering (probe.go). The outage's one
// request at a time stays until a request succeeds.
func (c *controller) openGate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gateUntil = time.Time{}
	c.broadcastLocked()
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
	if c.winSent >= minPaceSample {
		c.shares.push(windowShare{at: now, share: share})
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
		busy, incoming := false, 0.0
		if c.local != nil {
			busy, incoming = c.local.Pressure()
		}
		c.busy = busy
		if busy {
			c.yieldLocked(now, incoming)
		} else {
			c.pace(now, span, share)
		}
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

// backgroundLocked is the share of items the cluster refuses whatever the
// pace: the least share refused by a window over about the last
// backgroundSpan. Refusals for load fall when the pace falls below what the
// cluster takes, and a pace that cuts after refusals finds such windows
// within seconds; refusals that stay whatever the pace (a node that is
// always short of something, a share of documents refused at random) are
// no reason to slow down further: the pace answers only what is refused
// beyond them. It is at most backgroundMax: a cluster that refuses most of
// the work for seconds is overloaded or down, and counted as background
// such a refusal would stop every cut, and raise the pace at every window
// while everything is refused.
func (c *controller) backgroundLocked(now time.Time) float64 {
	bg := -1.0
	for _, w := range c.shares.buf {
		if now.Sub(w.at) <= backgroundSpan && (bg < 0 || w.share < bg) {
			bg = w.share
		}
	}
	return min(max(bg, 0), backgroundMax)
}

// pace adjusts the pacing rate (items/s) at the end of a window. Fewer
// requests in flight do not slow a cluster that answers fast but refuses
// what it cannot take; pacing does. It starts when a window's items were
// refused heavily (startPaceLocked). While pacing, a window with more
// than a few items refused beyond the background share (backgroundLocked)
// lowers the rate by 5% at least, towards a bit below what the cluster
// accepted over the last seconds (or, refused heavily, what it accepted
// in the window), never below the floor (floorLocked); a window with few
// refused raises it, in proportion to its span (time the pace kept the
// output idle counts): by paceGrowth per second near the rate the last
// refusals began at, fast far below it, and ever faster above it. Near
// that rate the rise is slow on purpose: a cluster's write queue absorbs
// a rate above its capacity for a while before it refuses, so a fast rise
// overshoots far before the first refusal says so. Pacing stops when it
// no longer holds anything back: paceStop with nothing refused and no
// request waiting for the pace.
func (c *controller) pace(now time.Time, span time.Duration, share float64) {
	if c.winSent == 0 {
		return
	}
	// Items/s the cluster took: over the window (responses end windows,
	// so the span is the time over which those items were answered), and
	// over about the last healthTau (steadier; it lags).
	window := float64(c.winAccepted) / span.Seconds()
	recent := c.acceptedRateLocked(now)
	// What is refused beyond the background share is the load signal,
	// less what chance alone makes a window of winSent items refuse
	// above it (three standard deviations of a binomial share): small
	// windows vary a lot, and a pace cut at every unlucky one would only
	// go down.
	bg := c.backgroundLocked(now)
	excess := share - bg - 3*math.Sqrt(max(bg, pacedRejection)*(1-bg)/float64(c.winSent))
	switch {
	case c.rate == 0:
		if c.winSent >= minPaceSample && share > heavyRejection {
			c.startPaceLocked(now, share)
		}
	case excess > pacedRejection:
		target := max(recent*paceBelow, c.rate*0.5)
		if excess > heavyRejection {
			// Far above what the cluster takes: straight down below what
			// it took in this window, by half the share it refused (what
			// it took includes what its queue held before it filled, so
			// the window overstates what it takes for good), but not
			// below half of what it took over the last seconds: a window
			// can hold just one request that found the queue full.
			target = max(window*(1-share/2), recent*0.5)
		}
		c.lowerPaceLocked(now, max(c.floorLocked(), min(c.rate*0.95, target)))
	default:
		c.cutting = false
		if excess > pacedRejection/2 {
			c.cleanSince = time.Time{}
		} else if c.cleanSince.IsZero() {
			c.cleanSince = c.winStart
		}
		// Far below the rate of the last refusals the rise is fast (a
		// storm has ended, or a cut went deep), and so it is when that
		// rate is unknown (the cluster refused everything from the start:
		// nothing says where its limit is); nearer, it stays slow: the
		// cluster's limit is near. Above it, the cluster takes more than
		// it did, and the rise speeds up, doubling every
		// paceGrowthDoubling, so that after a storm the pace is back at
		// full speed within seconds.
		growth := paceGrowth
		if c.ceiling == 0 || c.rate < c.ceiling*paceFar {
			growth = paceFarGrowth
		} else if c.rate >= c.ceiling {
			if c.aboveSince.IsZero() {
				c.aboveSince = now
			}
			growth *= math.Exp2(now.Sub(c.aboveSince).Seconds() / paceGrowthDoubling.Seconds())
		}
		c.setRateLocked(now, c.rate*(1+growth*span.Seconds()))
		if !c.cleanSince.IsZero() && now.Sub(c.cleanSince) >= paceStop && now.Sub(c.pacedAt) >= paceStop {
			c.rate, c.cleanSince = 0, time.Time{} // the pace holds nothing back
		}
	}
}

// yieldLocked paces the drain down while logpond's own acknowledgements
// are slowed (LocalLoad): to the floor when it was not paced, then by
// yieldCut a window, but never below yieldFloor × the events arriving, so
// that a backlog shrinks at least as fast as new events arrive. Once
// acknowledgements are quick again, the pace rises as after refusals: fast
// far below the rate the yielding began at, slowly near it.
func (c *controller) yieldLocked(now time.Time, incoming float64) {
	floor := max(c.floorLocked(), yieldFloor*incoming)
	if c.rate == 0 {
		// Straight down to the floor: the drain was going flat out, and
		// acknowledgements are already slowed. It rises again fast (far
		// below the ceiling) as soon as they are quick.
		c.beginPaceLocked(now, c.acceptedRateLocked(now), floor)
		return
	}
	c.lowerPaceLocked(now, max(floor, c.rate*yieldCut))
}

// startPaceLocked starts pacing after a share of the items sent was
// refused: at what the cluster accepted over the last seconds, less half
// the share it now refuses (it took about what was sent until now, and
// takes less now).
func (c *controller) startPaceLocked(now time.Time, share float64) {
	recent := c.acceptedRateLocked(now)
	c.beginPaceLocked(now, recent, max(c.floorLocked(), recent*(1-share/2)))
}

// beginPaceLocked starts pacing at rate, the drain having gone at about
// ceiling until now: the rate the trouble began at, near which the pace
// later rises slowly.
func (c *controller) beginPaceLocked(now time.Time, ceiling, rate float64) {
	c.ceiling, c.aboveSince, c.cutting = ceiling, time.Time{}, true
	c.setRateLocked(now, rate)
	c.cleanSince, c.pacedAt = time.Time{}, now
}

// lowerPaceLocked lowers the pace to rate. The first cut of a series
// remembers the rate the trouble began at as the ceiling.
func (c *controller) lowerPaceLocked(now time.Time, rate float64) {
	if !c.cutting {
		c.ceiling = c.rate
	}
	c.aboveSince, c.cutting, c.cleanSince = time.Time{}, true, time.Time{}
	c.setRateLocked(now, rate)
}

// setRateLocked changes the pacing rate, keeping what the requests
// already sent owe: their remaining wait is rescaled to the new rate.
func (c *controller) setRateLocked(now time.Time, rate float64) {
	if c.rate > 0 && c.next.After(now) {
		c.next = now.Add(time.Duration(float64(c.next.Sub(now)) * c.rate / rate))
	} else {
		c.next = now
	}
	c.rate = rate
}

// floorLocked is the lowest pacing rate: minPaceRate, or the rate at
// which the last request's items take paceMaxWait if that is more. A rate
// below it would let one large request hold every other back for long:
// after a storm that refused everything the pace is at its floor, and at
// minPaceRate a request of thousands of items would book minutes, during
// which nothing is sent, so no answer can show that the cluster takes
// work again. One request per paceMaxWait is little for a cluster that
// refuses everything.
func (c *controller) floorLocked() float64 {
	return max(minPaceRate, float64(c.lastItems)/paceMaxWait.Seconds())
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// state returns the concurrency limit, the requests in flight and the
// pacing rate (0: none).
func (c *controller) state() (limit, inflight int, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit, c.inflight, c.rate
}

// yielding says whether the last window found logpond's own
// acknowledgements slowed, so that the pace gives way to them.
func (c *controller) yielding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy
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

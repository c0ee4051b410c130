package elasticsearch

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestUnluckyItemHoldsNothingBack: one item rejected (429) at least ten
// times in a row, and until every other event is stored, neither holds
// its worker (the only one) nor the events read after it; its retries
// come at the pace the cluster's health sets — which is good, as it takes
// everything else — not at one that doubles with its own attempts.
func TestUnluckyItemHoldsNothingBack(t *testing.T) {
	r := newRig(t, estest.Options{})
	const n = 2000
	const unlucky = `"event 7 `
	var mu sync.Mutex
	var attempts []time.Time
	othersDone := false
	r.es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, source []byte) (int, string, string, bool) {
		if !bytes.Contains(source, []byte(unlucky)) {
			return 0, "", "", false
		}
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, time.Now())
		if len(attempts) <= 10 || !othersDone {
			return 429, "es_rejected_execution_exception", "rejected by the test", true
		}
		return 0, "", "", false
	}})
	for i := range n {
		r.store(time.Now(), filebeatEvent(i, "")) // event i is in record i+1
	}
	const retryInitial = time.Second
	run := r.start(r.options(func(o *Options) {
		o.Workers, o.FixedConcurrency = 1, true
		o.FlushBytes = 4 << 10 // many requests after the unlucky one's
		o.RetryInitial, o.RetryMax = retryInitial, 10*time.Minute
	}))
	waitFor(t, "every other event stored while one is rejected", func() bool { return r.es.Count() == n-1 })
	mu.Lock()
	othersDone = true
	mu.Unlock()
	waitFor(t, "the unlucky event", func() bool { return r.es.Count() == n })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == n })
	run.Stop(t)
	r.checkAllStoredOnce(t)

	mu.Lock()
	defer mu.Unlock()
	if len(attempts) < 11 {
		t.Fatalf("the unlucky event was sent %d times, want at least 11", len(attempts))
	}
	// A backoff doubling with the item's attempts from retry_initial
	// would wait 2^9 s before the tenth retry; the cluster's health (it
	// took everything else) sets a short one, at most retry_initial.
	for i := 1; i < len(attempts); i++ {
		if gap := attempts[i].Sub(attempts[i-1]); gap > 2*retryInitial {
			t.Errorf("attempt %d came %s after the one before: the wait grew with the item's own attempts", i+1, gap)
		}
	}
}

// fakeClock steps a controller's time.
type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time       { return f.t }
func (f *fakeClock) step(d time.Duration) { f.t = f.t.Add(d) }
func newTestController(adaptive bool, max int) (*controller, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	c := newController(adaptive, max, 1<<20, time.Second, time.Minute)
	c.now = clk.now
	c.winStart = clk.t
	return c, clk
}

// round sends as many requests as the limit allows and answers them all
// with res after d.
func round(t *testing.T, c *controller, clk *fakeClock, d time.Duration, res result) {
	t.Helper()
	limit, _, _ := c.state()
	rounds := make([]uint64, limit)
	for i := range limit {
		r, err := c.acquire(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		rounds[i] = r
	}
	clk.step(d)
	for _, r := range rounds {
		res.round = r
		c.release(res)
	}
}

// TestConcurrencyAdapts: the limit grows by one per clean window up to
// the maximum, shrinks multiplicatively to one under rejections, and
// pacing starts at the rate the cluster accepted while it refuses most of
// the work; clean windows then raise it until it holds nothing back.
func TestConcurrencyAdapts(t *testing.T) {
	c, clk := newTestController(true, 8)
	clean := result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: 1000, accepted: 1000}
	if l, _, _ := c.state(); l != 1 {
		t.Fatalf("adaptive limit starts at %d, want 1", l)
	}
	for range 20 {
		round(t, c, clk, 100*time.Millisecond, clean)
	}
	if l, _, rate := c.state(); l != 8 || rate != 0 {
		t.Fatalf("after clean windows: limit %d, pace %.0f/s; want 8 and no pacing", l, rate)
	}
	// The cluster takes 300 of every 1000 items.
	pushed := result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: 1000, accepted: 300, rejected: 700}
	prev := 8
	var after5 float64
	for i := range 60 {
		round(t, c, clk, 100*time.Millisecond, pushed)
		l, _, rate := c.state()
		if l > prev {
			t.Fatalf("the limit grew from %d to %d under rejections", prev, l)
		}
		if i == 4 {
			after5 = rate
		}
		prev = l
	}
	l, _, rate := c.state()
	if l != 1 || rate <= 0 {
		t.Fatalf("under rejections: limit %d, pace %.0f/s; want 1 and pacing", l, rate)
	}
	// The cluster accepts 300 items of each request: 24000 items/s while
	// eight go every 100 ms. Within a few windows the pace is below that
	// (what it accepts while refusing most includes what its queue held),
	// and it does not rise while most is refused.
	if after5 <= 0 || after5 > 24000 {
		t.Errorf("pace %.0f/s after five windows of refusals, want below the 24000 items/s the cluster accepted", after5)
	}
	if rate > after5 {
		t.Errorf("pace rose from %.0f/s to %.0f/s while the cluster refused most items", after5, rate)
	}
	for range 200 {
		round(t, c, clk, 100*time.Millisecond, result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: 100, accepted: 100})
	}
	if l, _, rate := c.state(); rate != 0 || l != 8 {
		t.Errorf("after clean windows again: limit %d, pace %.0f/s; want 8 and no pacing", l, rate)
	}
}

// TestConcurrencyShrinksOnRisingLatencyAndFailures: clean answers that
// get much slower, and whole-request failures, lower the limit; a fixed
// controller never moves.
func TestConcurrencyShrinksOnRisingLatencyAndFailures(t *testing.T) {
	c, clk := newTestController(true, 8)
	clean := result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, accepted: 100}
	for range 20 {
		round(t, c, clk, 60*time.Millisecond, clean)
	}
	slow := clean
	slow.rtt = time.Second
	round(t, c, clk, time.Second, slow)
	if l, _, _ := c.state(); l >= 8 {
		t.Errorf("limit %d after a window ten times slower, want below 8", l)
	}
	for range 20 {
		round(t, c, clk, 60*time.Millisecond, clean)
	}
	for range 10 {
		// During an outage one request at a time goes.
		r, err := c.acquire(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		clk.step(60 * time.Millisecond)
		c.release(result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, failed: true, round: r})
		c.mu.Lock()
		c.gateUntil = time.Time{} // the test does not wait out the outage's backoff
		c.mu.Unlock()
	}
	if l, _, _ := c.state(); l != 1 {
		t.Errorf("limit %d after failing requests, want 1", l)
	}

	f, fclk := newTestController(false, 4)
	for range 10 {
		round(t, f, fclk, 60*time.Millisecond, result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, accepted: 10, rejected: 90})
	}
	if l, _, rate := f.state(); l != 4 || rate != 0 {
		t.Errorf("fixed: limit %d, pace %.0f/s; want 4 and no pacing", l, rate)
	}
}

// TestRetryDelayFollowsHealth: a rejected item waits little while the
// cluster takes most of the work, and longer the more it refuses,
// bounded by retry_max_interval; the wait does not depend on the item.
func TestRetryDelayFollowsHealth(t *testing.T) {
	c, clk := newTestController(true, 4)
	d := func(accepted, rejected int) time.Duration {
		t.Helper()
		if _, err := c.acquire(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		clk.step(10 * time.Millisecond)
		return c.release(result{rtt: time.Millisecond, sent: accepted + rejected, accepted: accepted, rejected: rejected})
	}
	if got := d(990, 10); got > time.Second/16 {
		t.Errorf("1%% rejected: wait %s, want at most retry_initial/16", got)
	}
	clk.step(time.Minute) // forget
	if got := d(100, 900); got < 4*time.Second {
		t.Errorf("90%% rejected: wait %s, want several retry_initial intervals", got)
	}
	clk.step(time.Minute)
	if got := d(0, 1000000); got > time.Minute {
		t.Errorf("all rejected: wait %s, more than retry_max", got)
	}
}

// TestRetryQueueTakesReadyItemsWithinItsBound: items come back out only
// once ready, up to the size asked, and the queue reports full at its
// bound.
func TestRetryQueueTakesReadyItemsWithinItsBound(t *testing.T) {
	pool := newBufPool(4, 0, 1<<20)
	q := newRetryQueue(100)
	defer q.close()
	b := newBatch(pool, 0, 0)
	for i := range 6 {
		start := len(b.buf)
		b.buf = append(b.buf, bytes.Repeat([]byte{'a' + byte(i)}, 29)...)
		b.buf = append(b.buf, '\n')
		b.items = append(b.items, item{lsn: uint64(i + 1), start: start, end: len(b.buf)})
	}
	q.push(b, b.items[:3], time.Now(), false)
	if _, _, full := q.wait(); full {
		t.Fatal("full at 90 of 100 bytes")
	}
	q.push(b, b.items[3:], time.Now().Add(time.Hour), false)
	if _, ready, full := q.wait(); !ready || !full {
		t.Fatalf("ready %v, full %v; want both", ready, full)
	}
	got := q.take(pool, 60)
	if got == nil || len(got.items) != 2 || string(got.buf[got.items[1].start:got.items[1].end]) != string(bytes.Repeat([]byte{'b'}, 29))+"\n" {
		t.Fatalf("took %+v, want the first two items", got)
	}
	got = q.take(pool, 60)
	if got == nil || len(got.items) != 1 || got.items[0].lsn != 3 {
		t.Fatalf("took %+v, want item 3", got)
	}
	if q.take(pool, 60) != nil {
		t.Fatal("took an item that is not ready")
	}
	if items, n := q.size(); items != 3 || n != 90 {
		t.Fatalf("size %d items, %d bytes; want 3, 90", items, n)
	}
}

// TestPacingPaysForEachRequest: while pacing, a request books the time
// its items take at the pace, and a change of pace rescales what is still
// owed; a request too large to pay for within paceMaxWait raises the pace
// to its floor (one such request per paceMaxWait) and books paceMaxWait.
func TestPacingPaysForEachRequest(t *testing.T) {
	c, clk := newTestController(true, 8)
	const n = 10000
	clean := result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: n, accepted: n}
	for range 20 {
		round(t, c, clk, 100*time.Millisecond, clean)
	}
	storm := result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: n, accepted: n / 20, rejected: n - n/20}
	for range 100 {
		round(t, c, clk, 100*time.Millisecond, storm)
	}
	_, _, rate := c.state()
	if rate == 0 {
		t.Fatal("no pacing after a 429 storm")
	}
	clk.step(c.nextWait())
	items := int(rate * paceMaxWait.Seconds() / 2)
	if _, err := c.acquire(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(float64(items) / rate * float64(time.Second))
	if got := c.nextWait(); got < want*99/100 || got > want*101/100 {
		t.Errorf("a request of %d items at %.0f items/s holds the next back %s, want %s", items, rate, got, want)
	}
	c.mu.Lock()
	c.setRateLocked(clk.now(), 2*rate)
	c.mu.Unlock()
	if got := c.nextWait(); got < want/2*99/100 || got > want/2*101/100 {
		t.Errorf("after the pace doubled the next waits %s, want %s", got, want/2)
	}

	c.release(result{}) // nothing sent: only the slot comes back
	clk.step(c.nextWait())
	large := 10 * items
	if _, err := c.acquire(t.Context(), large); err != nil {
		t.Fatal(err)
	}
	floor := float64(large) / paceMaxWait.Seconds()
	if got := c.nextWait(); got < paceMaxWait*99/100 || got > paceMaxWait*101/100 {
		t.Errorf("a request of %d items at %.0f items/s holds the next back %s, want paceMaxWait (%s)", large, 2*rate, got, paceMaxWait)
	}
	if _, _, rate := c.state(); rate < floor*99/100 || rate > floor*101/100 {
		t.Errorf("after a request of %d items the pace is %.0f items/s, want its floor %.0f", large, rate, floor)
	}
}

// TestPaceHoldsNoRequestLongAfterTotalRefusal: after seconds in which the
// cluster refused every item the pace is at its floor; once the cluster
// takes work again, a large request must not have booked its items at
// that floor (at minPaceRate, 9000 items hold the next request back for
// a minute and a half, and nothing is answered meanwhile to raise the
// pace): the first request goes within paceMaxWait, and the clean answers
// that follow raise the pace fast.
func TestPaceHoldsNoRequestLongAfterTotalRefusal(t *testing.T) {
	c, clk := newTestController(true, 4)
	const items, rtt = 9000, 200 * time.Millisecond
	// send sends as many requests of items as the controller lets go
	// now, answers them after rtt with accepted items of each taken, and
	// returns how many went; when none may go, it waits as long as the
	// controller says (on the simulated clock) and returns 0.
	send := func(accepted int) int {
		t.Helper()
		var rounds []uint64
		for {
			c.mu.Lock()
			round, wait, ok := c.tryAcquireLocked(items)
			c.mu.Unlock()
			if ok {
				rounds = append(rounds, round)
				continue
			}
			if len(rounds) == 0 {
				if wait <= 0 {
					t.Fatal("no request may go, with nothing in flight and no wait")
				}
				clk.step(wait)
			}
			break
		}
		if len(rounds) > 0 {
			clk.step(rtt)
		}
		for _, r := range rounds {
			c.release(result{rtt: rtt, bytes: 5 << 20, sent: items, accepted: accepted, rejected: items - accepted, round: r})
		}
		return len(rounds)
	}
	for end := clk.now().Add(5 * time.Second); clk.now().Before(end); {
		send(items)
	}
	for end := clk.now().Add(10 * time.Second); clk.now().Before(end); {
		send(0)
	}
	_, _, floor := c.state()
	recovered := clk.now()
	first := time.Duration(-1)
	for sent := 0; sent < 10; {
		n := send(items)
		if n > 0 && first < 0 {
			first = clk.now().Sub(recovered) - rtt
		}
		sent += n
	}
	_, _, rate := c.state()
	t.Logf("after 10 s of refusals the pace was %.0f items/s; once the cluster took work the first request went after %s, and after ten clean answers (%s) the pace is %.0f items/s",
		floor, first, clk.now().Sub(recovered), rate)
	if atFloor := float64(items) / paceMaxWait.Seconds(); floor > atFloor*1.01 {
		t.Errorf("after 10 s of refusals the pace is %.0f items/s, above its floor %.0f: refusing everything raised it", floor, atFloor)
	}
	if first > paceMaxWait {
		t.Errorf("the first request after the refusals waited %s, more than paceMaxWait (%s)", first, paceMaxWait)
	}
	if rate < 4*floor {
		t.Errorf("after ten clean answers the pace is %.0f items/s, less than 4 × the %.0f it had after the refusals", rate, floor)
	}
}

// nextWait is how long the pace holds the next request back now.
func (c *controller) nextWait() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rate == 0 {
		return 0
	}
	return max(0, c.next.Sub(c.now()))
}

// TestConcurrentFailuresCountOnce: requests in flight together that all
// fail from one blip count as one failed round: the outage backoff is
// that of the first attempt, and no gate closes; the next round's
// failure counts again.
func TestConcurrentFailuresCountOnce(t *testing.T) {
	c, clk := newTestController(true, 8)
	clean := result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, accepted: 100}
	for range 20 {
		round(t, c, clk, 60*time.Millisecond, clean)
	}
	rounds := make([]uint64, 8)
	for i := range rounds {
		r, err := c.acquire(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		rounds[i] = r
	}
	clk.step(60 * time.Millisecond)
	for i, r := range rounds {
		// retry_initial is 1 s: attempt 0 waits 0.5–1 s.
		if d := c.release(result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, failed: true, round: r}); d > time.Second {
			t.Errorf("failure %d of one blip waits %s, want the first attempt's backoff (at most 1s)", i+1, d)
		}
	}
	c.mu.Lock()
	consecutive, gate := c.consecutive, c.gateUntil
	c.mu.Unlock()
	if consecutive != 1 || !gate.IsZero() {
		t.Fatalf("after one blip: %d failed rounds, gate %v; want 1 and none", consecutive, gate)
	}
	r, err := c.acquire(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.release(result{rtt: 50 * time.Millisecond, bytes: 1 << 20, sent: 100, failed: true, round: r})
	c.mu.Lock()
	consecutive = c.consecutive
	c.mu.Unlock()
	if consecutive != 2 {
		t.Fatalf("after a second failed round: %d, want 2", consecutive)
	}
}

// TestRetriesFollowRecovery: items refused during a storm, with a storm's
// long wait, go again soon once the cluster takes work again — even when
// the retry queue is full and nothing else is in flight to show it.
func TestRetriesFollowRecovery(t *testing.T) {
	r := newRig(t, estest.Options{})
	const n = 400
	r.es.SetFaults(estest.Faults{ItemReject429: 1})
	for i := range n {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(func(o *Options) {
		o.Workers = 2
		o.FlushBytes = 4 << 10 // the retry queue (8 KiB) fills with a few requests
		// Everything refused: the health wait is 99 retry_initial, a few
		// minutes here.
		o.RetryInitial, o.RetryMax = 2*time.Second, time.Hour
	}))
	waitFor(t, "a full retry queue", func() bool {
		g := run.Out.Gauges()
		return g.RetryMaxBytes > 0 && g.RetryBytes >= g.RetryMaxBytes && g.InFlight == 0
	})
	r.es.SetFaults(estest.Faults{})
	waitFor(t, "every event stored after the storm", func() bool { return r.es.Count() == n })
	run.Stop(t)
	r.checkAllStoredOnce(t)
}

// TestRetryQueueAdvance: groups waiting longer than the current health
// says come forward within it; shorter waits stay.
func TestRetryQueueAdvance(t *testing.T) {
	pool := newBufPool(4, 0, 1<<20)
	q := newRetryQueue(1 << 20)
	defer q.close()
	b := newBatch(pool, 0, 0)
	for i := range 2 {
		start := len(b.buf)
		b.buf = append(b.buf, "x\n"...)
		b.items = append(b.items, item{lsn: uint64(i + 1), start: start, end: len(b.buf)})
	}
	now := time.Now()
	q.push(b, b.items[:1], now.Add(time.Hour), false)
	q.push(b, b.items[1:], now.Add(10*time.Millisecond), false)
	q.advance(time.Second)
	q.mu.Lock()
	defer q.mu.Unlock()
	if w := q.groups[0].ready.Sub(now); w > time.Second+time.Millisecond*100 {
		t.Errorf("a storm's group waits %s after advance(1s)", w)
	}
	if !q.groups[1].ready.Equal(now.Add(10 * time.Millisecond)) {
		t.Errorf("a short wait moved to %s", q.groups[1].ready.Sub(now))
	}
}

// TestRetryQueueBound: tiny events, whose requests are several times
// their records' size, all refused: the retry queue never holds more than
// its bound plus one request (flush_bytes and one event) per worker.
func TestRetryQueueBound(t *testing.T) {
	r := newRig(t, estest.Options{})
	r.es.SetFaults(estest.Faults{ItemReject429: 1})
	const n = 20000
	for i := 0; i < n; i += 500 {
		evs := make([][]byte, 500)
		for j := range evs {
			evs[j] = []byte(`{"m":1}`)
		}
		r.store(time.Now(), evs...)
	}
	const workers, flush = 2, 4 << 10
	run := r.start(r.options(func(o *Options) {
		o.Workers, o.FlushBytes = workers, flush
		o.RetryInitial, o.RetryMax = 10*time.Millisecond, 20*time.Millisecond
	}))
	const event = 200 // an action and source line of one event, generously
	bound := workers*flush + workers*(flush+event)
	most := 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		g := run.Out.Gauges()
		most = max(most, g.RetryBytes)
		if g.RetryBytes > bound {
			t.Fatalf("the retry queue holds %d bytes, above its bound %d", g.RetryBytes, bound)
		}
		time.Sleep(time.Millisecond)
	}
	run.Stop(t)
	if most < workers*flush {
		t.Fatalf("the retry queue held at most %d bytes: never full, the test shows nothing", most)
	}
}

// TestOtherItemErrorsBackOffPerItem: an item refused with an error that is
// not a rejection for load (403 cluster_block_exception) waits its own
// backoff, doubling from retry_initial, while the rest of the traffic is
// healthy; and such items neither pace requests nor lower the limit.
func TestOtherItemErrorsBackOffPerItem(t *testing.T) {
	r := newRig(t, estest.Options{})
	const n = 200
	const blocked = `"event 7 `
	var mu sync.Mutex
	var attempts []time.Time
	r.es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, source []byte) (int, string, string, bool) {
		if !bytes.Contains(source, []byte(blocked)) {
			return 0, "", "", false
		}
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, time.Now())
		if len(attempts) <= 6 {
			return 403, "cluster_block_exception", "index blocked by the test", true
		}
		return 0, "", "", false
	}})
	for i := range n {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	const retryInitial = 50 * time.Millisecond
	run := r.start(r.options(func(o *Options) {
		o.Workers = 2
		o.RetryInitial, o.RetryMax = retryInitial, time.Minute
	}))
	waitFor(t, "every event stored", func() bool { return r.es.Count() == n })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	mu.Lock()
	defer mu.Unlock()
	// The k-th retry waits at least half of retry_initial × 2^(k-1).
	for k := 1; k < len(attempts); k++ {
		if gap, least := attempts[k].Sub(attempts[k-1]), retryInitial<<(k-1)/2; gap < least {
			t.Errorf("retry %d came %s after the attempt before, want at least %s", k, gap, least)
		}
	}

	c, clk := newTestController(true, 8)
	for range 20 {
		round(t, c, clk, 100*time.Millisecond, result{rtt: 100 * time.Millisecond, bytes: 1 << 20, sent: 1000, accepted: 100, other: 900})
	}
	if l, _, rate := c.state(); l != 8 || rate != 0 {
		t.Errorf("items refused with 403: limit %d, pace %.0f/s; want 8 and no pacing", l, rate)
	}
}

// TestRetryQueueStaleTimer: a timer that fires after it was replaced
// leaves the queue's current timer in place (close can still stop it).
func TestRetryQueueStaleTimer(t *testing.T) {
	pool := newBufPool(4, 0, 1<<20)
	q := newRetryQueue(1 << 20)
	defer q.close()
	b := newBatch(pool, 0, 0)
	b.buf = append(b.buf, "x\ny\n"...)
	b.items = append(b.items, item{lsn: 1, start: 0, end: 2}, item{lsn: 2, start: 2, end: 4})
	q.push(b, b.items[:1], time.Now().Add(time.Hour), false)
	q.mu.Lock()
	stale := q.timer
	q.mu.Unlock()
	q.push(b, b.items[1:], time.Now().Add(time.Minute), false) // an earlier group: a new timer
	q.mu.Lock()
	current := q.timer
	q.mu.Unlock()
	if current == stale || current == nil {
		t.Fatal("the earlier group did not get a timer of its own")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fireLocked(stale) // the replaced timer's callback, late
	if q.timer != current {
		t.Fatalf("a stale timer's callback replaced the current timer with %v", q.timer)
	}
}

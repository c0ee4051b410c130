package elasticsearch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simAnswer is how a simulated cluster answers a request of n items at
// now: how many it accepts (the rest are refused with 429), or that the
// request failed as a whole (503).
type simAnswer func(now time.Time, n int) (accepted int, failed bool)

// simCluster is a cluster that takes at most rate items/s: a token bucket
// refilled at rate and holding one second's worth (its write queue),
// starting full; an item that finds it empty is refused (429).
type simCluster struct {
	rate   float64
	tokens float64
	at     time.Time
	until  time.Time // when set: from then on it accepts everything
}

func (s *simCluster) answer(now time.Time, n int) (int, bool) {
	if !s.until.IsZero() && !now.Before(s.until) {
		return n, false
	}
	return s.take(now, n), false
}

func (s *simCluster) take(now time.Time, n int) (accepted int) {
	if s.at.IsZero() {
		s.tokens = s.rate
	} else {
		s.tokens = min(s.rate, s.tokens+now.Sub(s.at).Seconds()*s.rate)
	}
	s.at = now
	accepted = min(n, int(s.tokens))
	s.tokens -= float64(accepted)
	return accepted
}

// simRun is what a simulated drain came to.
type simRun struct {
	elapsed  time.Duration
	rejected int // items refused
	failed   int // requests failed as a whole
	requests int
}

// simulateDrain drains backlog items through the controller with workers
// senders, on a simulated clock in 1 ms steps: each request carries up to
// perRequest items (items ready to retry first), takes rtt plus its items
// at the cluster's processing speed, and is answered by cluster (nil:
// accepts everything). Rejected items wait as long as release says,
// and no longer than the health delay once another request is answered,
// as the retry queue has them.
func simulateDrain(t *testing.T, backlog, workers, perRequest int, cluster simAnswer) simRun {
	return simulateDrainLocal(t, backlog, workers, perRequest, cluster, nil)
}

// simLocal stands for logpond's own load in a simulated drain: given the
// events/s delivered over the last half second, whether acknowledgements
// are slowed and how many events/s arrive.
type simLocal func(delivered float64) (busy bool, incoming float64)

// simLocalLoad is a LocalLoad over a simLocal and the simulation's
// deliveries.
type simLocalLoad struct {
	f    simLocal
	now  func() time.Time
	done []answer // deliveries of the last half second
}

func (l *simLocalLoad) Pressure() (bool, float64) {
	now := l.now()
	n := 0
	kept := l.done[:0]
	for _, d := range l.done {
		if now.Sub(d.at) <= 500*time.Millisecond {
			kept = append(kept, d)
			n += d.accepted
		}
	}
	l.done = kept
	return l.f(float64(n) / 0.5)
}

// simulateDrainLocal is simulateDrain with logpond's own load (nil: none).
func simulateDrainLocal(t *testing.T, backlog, workers, perRequest int, cluster simAnswer, local simLocal) simRun {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	c := newController(true, workers, 5<<20, 2*time.Second, 64*time.Second)
	c.now = clk.now
	c.winStart = clk.t
	var load *simLocalLoad
	if local != nil {
		load = &simLocalLoad{f: local, now: clk.now}
		c.local = load
	}
	start := clk.t
	type retryGroup struct {
		ready time.Time
		n     int
	}
	type flight struct {
		done  time.Time
		n     int
		round uint64
		busy  bool
	}
	var (
		fresh     = backlog
		delivered int
		retries   []retryGroup
		inflight  = make([]flight, workers)
		run       simRun
	)
	rtt := func(n int) time.Duration { return 60*time.Millisecond + time.Duration(n)*20*time.Microsecond }
	for delivered < backlog {
		now := clk.now()
		if now.Sub(start) > time.Hour {
			t.Fatalf("not drained after an hour (simulated): %d of %d delivered", delivered, backlog)
		}
		for i := range inflight {
			f := &inflight[i]
			if !f.busy || f.done.After(now) {
				continue
			}
			f.busy = false
			acc, failed := f.n, false
			if cluster != nil {
				acc, failed = cluster(now, f.n)
			}
			if failed {
				run.failed++
				wait := c.release(result{rtt: rtt(f.n), bytes: 5 << 20, sent: f.n, failed: true, round: f.round})
				retries = append(retries, retryGroup{now.Add(wait), f.n})
				continue
			}
			delivered += acc
			if load != nil {
				load.done = append(load.done, answer{at: now, accepted: acc})
			}
			run.rejected += f.n - acc
			wait := c.release(result{rtt: rtt(f.n), bytes: 5 << 20, sent: f.n, accepted: acc, rejected: f.n - acc, round: f.round})
			if f.n > acc {
				retries = append(retries, retryGroup{now.Add(wait), f.n - acc})
			}
			d := c.healthDelay()
			for j := range retries {
				if retries[j].ready.Sub(now) > d {
					retries[j].ready = now.Add(d)
				}
			}
		}
		for i := range inflight {
			f := &inflight[i]
			if f.busy {
				continue
			}
			// The request: ready retries first, then fresh items.
			n := 0
			for _, g := range retries {
				if !g.ready.After(now) {
					n += g.n
				}
			}
			n = min(n, perRequest)
			fromFresh := min(perRequest-n, fresh)
			if n+fromFresh == 0 {
				continue
			}
			c.mu.Lock()
			round, _, ok := c.tryAcquireLocked(n + fromFresh)
			c.mu.Unlock()
			if !ok {
				continue
			}
			for j, left := 0, n; left > 0 && j < len(retries); j++ {
				if retries[j].ready.After(now) {
					continue
				}
				k := min(left, retries[j].n)
				retries[j].n -= k
				left -= k
			}
			kept := retries[:0]
			for _, g := range retries {
				if g.n > 0 {
					kept = append(kept, g)
				}
			}
			retries = kept
			fresh -= fromFresh
			*f = flight{done: now.Add(rtt(n + fromFresh)), n: n + fromFresh, round: round, busy: true}
			run.requests++
		}
		clk.step(time.Millisecond)
	}
	run.elapsed = clk.now().Sub(start)
	return run
}

// TestPacingTakesWhatTheClusterTakes: against a cluster that takes a third
// of what the output could send, the drain takes about the ideal time
// (backlog / the cluster's rate) and sends few items the cluster refuses:
// the pace settles near the cluster's rate instead of hammering it.
func TestPacingTakesWhatTheClusterTakes(t *testing.T) {
	const backlog, workers = 600_000, 4
	drainAgainstCapacity(t, backlog, workers, []int{9000, 2000}, []float64{1.0 / 3, 1.0 / 10})
}

// randomCluster is a cluster that fails 2% of requests as a whole and
// refuses 10% of the items of the others, at random (rng), whatever the
// rate.
func randomCluster(rng *rand.Rand) simAnswer {
	return func(now time.Time, n int) (int, bool) {
		if rng.Float64() < 0.02 {
			return 0, true
		}
		acc := 0
		for range n {
			if rng.Float64() >= 0.10 {
				acc++
			}
		}
		return acc, false
	}
}

// TestRandomRejectionsCostLittle: a cluster that refuses 10% of items and
// 2% of requests at random, whatever the load, slows a drain by far less
// than half: rejected items go again within a fraction of
// retry_initial_interval, not after a backoff of their own.
func TestRandomRejectionsCostLittle(t *testing.T) {
	const backlog, workers, perRequest = 600_000, 4, 9000
	clean := simulateDrain(t, backlog, workers, perRequest, nil)
	random := simulateDrain(t, backlog, workers, perRequest, randomCluster(rand.New(rand.NewPCG(1, 2))))
	ratio := random.elapsed.Seconds() / clean.elapsed.Seconds()
	t.Logf("clean %s, random %s (×%.2f; %d items rejected, %d requests failed, %d requests)", clean.elapsed, random.elapsed, ratio, random.rejected, random.failed, random.requests)
	if ratio > 1.5 {
		t.Errorf("random rejections: drained in %s, ×%.2f the clean %s (more than 1.5)", random.elapsed, ratio, clean.elapsed)
	}
}

// TestRandomRejectionsDoNotHoldThePaceDown: pacing that began for a
// short storm must not be held down afterwards by refusals that do not
// depend on the rate: a cluster that then refuses 10% of items at random
// (and fails 2% of requests) still drains the backlog at about the speed
// it does without the storm. Lowering the pace at every window with a
// few refusals would take it down to the floor, and there it would stay.
func TestRandomRejectionsDoNotHoldThePaceDown(t *testing.T) {
	for _, c := range []struct{ backlog, perRequest int }{{600_000, 9000}, {60_000, 200}} {
		t.Run(fmt.Sprintf("%d items a request", c.perRequest), func(t *testing.T) {
			randomRejectionsDoNotHoldThePaceDown(t, c.backlog, 4, c.perRequest)
		})
	}
}

func randomRejectionsDoNotHoldThePaceDown(t *testing.T, backlog, workers, perRequest int) {
	randomly := randomCluster(rand.New(rand.NewPCG(3, 4)))
	random := simulateDrain(t, backlog, workers, perRequest, randomly)
	const storm = 2 * time.Second
	stormEnd := time.Unix(1e9, 0).Add(storm)
	randomRate := float64(backlog) / random.elapsed.Seconds()
	c := &simCluster{rate: math.Round(randomRate / 10)}
	r := simulateDrain(t, backlog, workers, perRequest, func(now time.Time, n int) (int, bool) {
		if now.Before(stormEnd) {
			return c.take(now, n), false
		}
		return randomly(now, n)
	})
	// A few seconds to learn which refusals stay whatever the pace.
	limit := random.elapsed + storm + 12*time.Second
	t.Logf("random alone %s; after a %s storm: %s (limit %s), %d rejected", random.elapsed, storm, r.elapsed, limit, r.rejected)
	if r.elapsed > limit {
		t.Errorf("drained in %s after a %s storm, more than %s: random refusals held the pace down", r.elapsed, storm, limit)
	}
}

// TestPacingRecoversAfterStorm: when a cluster that took a tenth of the
// work takes everything again, the pace rises back to full speed within
// seconds while the backlog drains (it never waits for a pause in the
// work to stop pacing).
func TestPacingRecoversAfterStorm(t *testing.T) {
	const backlog, workers, perRequest = 600_000, 4, 9000
	clean := simulateDrain(t, backlog, workers, perRequest, nil)
	cleanRate := float64(backlog) / clean.elapsed.Seconds()
	const storm = 10 * time.Second
	c := &simCluster{rate: math.Round(cleanRate / 10), until: time.Unix(1e9, 0).Add(storm)}
	r := simulateDrain(t, backlog, workers, perRequest, c.answer)
	// At most what the storm let through, then the rest at full speed,
	// with some seconds to find it.
	rest := float64(backlog) - c.rate*storm.Seconds()
	limit := storm + time.Duration(rest/cleanRate*float64(time.Second)) + 8*time.Second
	t.Logf("clean %s; a %s storm at %.0f items/s: drained in %s (limit %s), %d rejected", clean.elapsed, storm, c.rate, r.elapsed, limit, r.rejected)
	if r.elapsed > limit {
		t.Errorf("drained in %s after a %s storm, more than %s: the pace did not recover", r.elapsed, storm, limit)
	}
}

// TestDrainYieldsToAcknowledgements: while logpond's acknowledgements are
// slowed the drain paces itself down, but never below 1.5 × the events
// arriving, so the backlog still shrinks; when they are slowed only above
// some drain rate, the drain settles near that rate.
func TestDrainYieldsToAcknowledgements(t *testing.T) {
	const backlog, workers, perRequest, incoming = 600_000, 4, 9000, 10000.0
	clean := simulateDrain(t, backlog, workers, perRequest, nil)
	cleanRate := float64(backlog) / clean.elapsed.Seconds()

	always := simulateDrainLocal(t, backlog, workers, perRequest, nil, func(float64) (bool, float64) { return true, incoming })
	floor := time.Duration(backlog / (yieldFloor * incoming) * float64(time.Second))
	t.Logf("clean %s (%.0f events/s); acknowledgements always slowed: %s (at the floor: %s)", clean.elapsed, cleanRate, always.elapsed, floor)
	if always.elapsed < floor*8/10 || always.elapsed > floor*12/10 {
		t.Errorf("acknowledgements always slowed: drained in %s, want about %s (%.1f × the %.0f events/s arriving)", always.elapsed, floor, yieldFloor, incoming)
	}

	limit := cleanRate / 3 // acknowledgements slow down above this drain rate
	above := simulateDrainLocal(t, backlog, workers, perRequest, nil, func(d float64) (bool, float64) { return d > limit, incoming })
	ideal := time.Duration(backlog / limit * float64(time.Second))
	t.Logf("acknowledgements slowed above %.0f events/s: %s (%s at that rate)", limit, above.elapsed, ideal)
	if above.elapsed < ideal*9/10 || above.elapsed > ideal*14/10 {
		t.Errorf("acknowledgements slowed above %.0f events/s: drained in %s, want about %s", limit, above.elapsed, ideal)
	}
}

// TestPacingTakesWhatTheClusterTakesInSmallRequests: the same with
// requests of a few hundred items, whose windows refuse a share that
// varies a lot by chance alone, and a cluster that takes half of what the
// output could send as well: the pace settles near the cluster's rate and
// is not cut down by unlucky windows.
func TestPacingTakesWhatTheClusterTakesInSmallRequests(t *testing.T) {
	const backlog, workers = 200_000, 4
	drainAgainstCapacity(t, backlog, workers, []int{1000, 500, 200}, []float64{1.0 / 2, 1.0 / 3, 1.0 / 10})
}

// TestPacingTakesWhatTheClusterTakesDespiteRandomRefusals: a cluster that
// takes a third of what the output could send and also refuses 10% of the
// items it takes, at random: the pace settles near what it takes (the
// random refusals are its background share, no reason to slow down), and
// beyond them few items are sent only to be refused for load.
func TestPacingTakesWhatTheClusterTakesDespiteRandomRefusals(t *testing.T) {
	const backlog, workers, refused = 300_000, 4, 0.10
	for _, perRequest := range []int{9000, 2000, 200} {
		clean := simulateDrain(t, backlog, workers, perRequest, nil)
		cleanRate := float64(backlog) / clean.elapsed.Seconds()
		rng := rand.New(rand.NewPCG(5, 6))
		c := &simCluster{rate: math.Round(cleanRate / 3)}
		r := simulateDrain(t, backlog, workers, perRequest, func(now time.Time, n int) (int, bool) {
			took := c.take(now, n)
			acc := 0
			for range took {
				if rng.Float64() >= refused {
					acc++
				}
			}
			c.tokens += float64(took - acc) // refused at random: not taken
			return acc, false
		})
		ideal := time.Duration(float64(backlog) / c.rate * float64(time.Second))
		perDelivered := float64(r.rejected) / float64(backlog)
		// Every delivered event was refused at random 1/(1-refused)-1
		// times on average, whatever the pace.
		random := 1/(1-refused) - 1
		t.Logf("%d items a request, cluster takes %.0f items/s (a third of clean) and refuses %.0f%% at random: drained in %s (ideal %s, ×%.2f), %d rejected (%.3f per delivered, %.3f of them at random), %d requests",
			perRequest, c.rate, 100*refused, r.elapsed, ideal, r.elapsed.Seconds()/ideal.Seconds(), r.rejected, perDelivered, random, r.requests)
		if r.elapsed > ideal*12/10 {
			t.Errorf("%d items a request: drained in %s, more than 1.2 × the ideal %s", perRequest, r.elapsed, ideal)
		}
		if perDelivered > random+0.1 {
			t.Errorf("%d items a request: %.3f rejected items sent per delivered event, more than the %.3f refused at random + 0.1", perRequest, perDelivered, random)
		}
	}
}

// TestPacingRecoversAfterTotalRefusal: a cluster that refuses every item
// for seconds and then takes a third of what the output could send is
// drained within 1.1 × the ideal time (the refusal, then the backlog at
// the cluster's rate). The refusal takes the pace down to its floor; a
// large request booked at minPaceRate would hold every request back for
// minutes once the cluster takes work again, with no answer meanwhile to
// raise the pace. A refusal of everything is no background share (the
// pace would rise while everything is refused), and a cluster that took
// nothing before gives no limit to rise slowly near.
func TestPacingRecoversAfterTotalRefusal(t *testing.T) {
	const backlog, workers, refusal = 300_000, 4, 10 * time.Second
	for _, perRequest := range []int{9000, 2000, 200} {
		clean := simulateDrain(t, backlog, workers, perRequest, nil)
		cleanRate := float64(backlog) / clean.elapsed.Seconds()
		refusalEnd := time.Unix(1e9, 0).Add(refusal)
		c := &simCluster{rate: math.Round(cleanRate / 3)}
		r := simulateDrain(t, backlog, workers, perRequest, func(now time.Time, n int) (int, bool) {
			if now.Before(refusalEnd) {
				return 0, false
			}
			return c.take(now, n), false
		})
		ideal := refusal + time.Duration(float64(backlog)/c.rate*float64(time.Second))
		t.Logf("%d items a request, every item refused for %s, then the cluster takes %.0f items/s (a third of clean): drained in %s (ideal %s, ×%.2f), %d rejected (%.3f per delivered), %d requests",
			perRequest, refusal, c.rate, r.elapsed, ideal, r.elapsed.Seconds()/ideal.Seconds(), r.rejected, float64(r.rejected)/backlog, r.requests)
		if r.elapsed > ideal*11/10 {
			t.Errorf("%d items a request: drained in %s, more than 1.1 × the ideal %s: the pace stayed down after the refusal", perRequest, r.elapsed, ideal)
		}
	}
}

// drainAgainstCapacity drains backlog, for each request size, into clusters
// taking each share of the clean drain's rate (429 beyond), and fails when
// a drain takes more than 1.1 × the ideal backlog/rate or sends more than
// 0.1 refused items per delivered event.
func drainAgainstCapacity(t *testing.T, backlog, workers int, perRequests []int, shares []float64) {
	t.Helper()
	for _, perRequest := range perRequests {
		clean := simulateDrain(t, backlog, workers, perRequest, nil)
		cleanRate := float64(backlog) / clean.elapsed.Seconds()
		for _, share := range shares {
			c := &simCluster{rate: math.Round(cleanRate * share)}
			r := simulateDrain(t, backlog, workers, perRequest, c.answer)
			ideal := time.Duration(float64(backlog) / c.rate * float64(time.Second))
			perDelivered := float64(r.rejected) / float64(backlog)
			t.Logf("%d items a request, cluster takes %.0f items/s (%.2f of clean %.0f/s): drained in %s (ideal %s, ×%.2f), %d rejected (%.3f per delivered), %d requests",
				perRequest, c.rate, share, cleanRate, r.elapsed, ideal, r.elapsed.Seconds()/ideal.Seconds(), r.rejected, perDelivered, r.requests)
			if r.elapsed > ideal*11/10 {
				t.Errorf("%d items a request, cluster at %.2f of clean: drained in %s, more than 1.1 × the ideal %s", perRequest, share, r.elapsed, ideal)
			}
			if perDelivered > 0.1 {
				t.Errorf("%d items a request, cluster at %.2f of clean: %.3f rejected items sent per delivered event, more than 0.1", perRequest, share, perDelivered)
			}
		}
	}
}

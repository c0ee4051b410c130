package ackwatch

import (
	"math"
	"slices"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestPressure(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		fsync    time.Duration
		acks     []time.Duration // one every 10 ms
		busy     bool
		incoming float64 // events/s, each ack carries 100 events
	}{
		{"quiet: about two fsyncs", 1 * ms, repeat(2*ms, 50), false, 50 * 100 / 2.0},
		{"slowed: ten fsyncs", 1 * ms, repeat(10*ms, 50), true, 50 * 100 / 2.0},
		{"slow device: ten ms acks over 5 ms fsyncs", 5 * ms, repeat(10*ms, 50), false, 50 * 100 / 2.0},
		{"floor: tiny fsyncs, acks under the floor", 100 * time.Microsecond, repeat(1900*time.Microsecond, 50), false, 50 * 100 / 2.0},
		{"a few slow among many quick", 1 * ms, append(repeat(2*ms, 46), repeat(50*ms, 4)...), false, 50 * 100 / 2.0},
		{"too few to judge", 1 * ms, repeat(50*ms, minSamples-1), false, float64(minSamples-1) * 100 / 2.0},
		{"no fsync seen yet", 0, repeat(50*ms, 50), false, 50 * 100 / 2.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1e9, 0)}
			w := New(DefaultSlack)
			w.now = clk.now
			if tc.fsync > 0 {
				w.Fsynced(tc.fsync)
			}
			for _, l := range tc.acks {
				clk.t = clk.t.Add(10 * time.Millisecond)
				w.Acked(l, 100)
			}
			busy, incoming := w.Pressure()
			if busy != tc.busy {
				t.Errorf("busy = %v, want %v", busy, tc.busy)
			}
			if incoming != tc.incoming {
				t.Errorf("incoming = %.0f events/s, want %.0f", incoming, tc.incoming)
			}
		})
	}
}

// TestPressureForgets: slow acknowledgements older than the recent span
// no longer count, and the incoming rate falls to zero two seconds after
// the last batch.
func TestPressureForgets(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	w := New(DefaultSlack)
	w.now = clk.now
	w.Fsynced(time.Millisecond)
	for range 50 {
		clk.t = clk.t.Add(10 * time.Millisecond)
		w.Acked(20*time.Millisecond, 10)
	}
	if busy, _ := w.Pressure(); !busy {
		t.Fatal("not busy with acknowledgements at twenty fsyncs")
	}
	clk.t = clk.t.Add(recentSpan + time.Millisecond)
	if busy, incoming := w.Pressure(); busy || incoming == 0 {
		t.Errorf("%s later: busy %v, incoming %.0f/s; want not busy, still some incoming", recentSpan, busy, incoming)
	}
	clk.t = clk.t.Add(2 * time.Second)
	if _, incoming := w.Pressure(); incoming != 0 {
		t.Errorf("2 s after the last batch: incoming %.0f events/s, want 0", incoming)
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// fakeSched is a scheduling-latency histogram a test fills: bounds of 0,
// 1 ms, 2 ms, +Inf.
type fakeSched struct{ counts []uint64 }

func (f *fakeSched) read() ([]float64, []uint64) {
	return []float64{0, 0.001, 0.002, math.Inf(1)}, slices.Clone(f.counts)
}

// TestPressureFromTheScheduler: goroutines waiting for a P make the
// process busy while acknowledgements are being made, even when the
// acknowledgements' p90 does not show it yet; waits within the slack, or
// waits with no acknowledgements to protect (a drain alone), do not.
func TestPressureFromTheScheduler(t *testing.T) {
	for _, tc := range []struct {
		name    string
		acks    int     // acknowledgements of 2 ms, one every 10 ms, over the last 500 ms
		waiting float64 // goroutines waiting for a P, on average, over the span
		fsync   time.Duration
		busy    bool
	}{
		{"quiet scheduler", 50, 0.005, time.Millisecond, false},
		{"just within the slack", 50, 0.019, time.Millisecond, false},
		{"Ps taken by other work", 50, 0.05, time.Millisecond, true},
		{"no fsync seen yet", 50, 0.05, 0, true},
		{"no acknowledgements to protect", minSamples - 1, 0.5, time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1e9, 0)}
			fs := &fakeSched{counts: []uint64{0, 0, 0}}
			w := New(DefaultSlack)
			w.now, w.sched.read = clk.now, fs.read
			if tc.fsync > 0 {
				w.Fsynced(tc.fsync)
			}
			// Waits of 1.5 ms (the middle of [1 ms, 2 ms)), spread so that
			// tc.waiting goroutines wait on average over the span.
			perStep := tc.waiting * 0.010 / 0.0015
			var owed float64
			for i := range 60 {
				clk.t = clk.t.Add(10 * time.Millisecond)
				owed += perStep
				fs.counts[1] += uint64(owed)
				owed -= float64(uint64(owed))
				if i >= 60-tc.acks {
					w.Acked(2*time.Millisecond, 100)
				}
				w.Pressure() // snapshots as the controller's windows would take them
			}
			if busy, _ := w.Pressure(); busy != tc.busy {
				t.Errorf("busy = %v, want %v", busy, tc.busy)
			}
		})
	}
}

// TestSchedWaiting: the mean number of goroutines waiting is the summed
// wait over the span (each wait its bucket's middle) per second, judged
// over about recentSpan, and not judged over a span too short to say.
func TestSchedWaiting(t *testing.T) {
	clk := time.Unix(1e9, 0)
	fs := &fakeSched{counts: []uint64{0, 0, 0}}
	s := schedWatch{read: fs.read}
	if _, ok := s.waiting(clk); ok {
		t.Fatal("judged from one snapshot")
	}
	clk = clk.Add(100 * time.Millisecond)
	fs.counts = []uint64{1000, 0, 0} // waits under 1 ms: 0.5 ms each
	if _, ok := s.waiting(clk); ok {
		t.Fatal("judged over 100 ms")
	}
	clk = clk.Add(400 * time.Millisecond)
	fs.counts = []uint64{1000, 100, 7} // 100 of 1.5 ms; those over 2 ms count as 2 ms
	got, ok := s.waiting(clk)
	want := (1000*0.0005 + 100*0.0015 + 7*0.002) / 0.5
	if !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("waiting = %v, %v; want %v", got, ok, want)
	}
	// Later snapshots judge the last half second only.
	for range 20 {
		clk = clk.Add(50 * time.Millisecond)
		s.waiting(clk)
	}
	if got, ok := s.waiting(clk); !ok || got != 0 {
		t.Errorf("waiting after a second of none = %v, %v; want 0", got, ok)
	}
}

package ackwatch

import (
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

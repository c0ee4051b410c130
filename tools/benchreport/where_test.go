package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestHistQuantile: quantiles of the observations between two scrapes,
// interpolated within buckets as Prometheus's histogram_quantile does,
// and counts above a bound.
func TestHistQuantile(t *testing.T) {
	inf := math.Inf(1)
	before := hist{{0.001, 10}, {0.002, 10}, {0.004, 10}, {inf, 10}}
	after := hist{{0.001, 60}, {0.002, 100}, {0.004, 109}, {inf, 110}}
	d := after.since(before)
	if d.total() != 100 {
		t.Fatalf("total %v, want 100", d.total())
	}
	for _, tc := range []struct {
		q, want float64
	}{
		{0.5, 0.001},    // the 50th of 100 is the last of the first bucket
		{0.7, 0.0015},   // 20 of the second bucket's 40
		{0.99, 0.004},   // the 99th is the last finite one
		{0.999, 0.004},  // in +Inf: the highest finite bound
		{0.25, 0.00050}, // within the first bucket, from 0
	} {
		if got := d.quantile(tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := d.above(0.0009); got != 50 {
		t.Errorf("above 0.9 ms: %v, want the 50 over the 1 ms bound", got)
	}
	if got := (hist{}).quantile(0.99); got != 0 {
		t.Errorf("empty histogram's quantile %v", got)
	}
	if got := after.since(hist{{0.001, 1}}); got.total() != 110 {
		t.Errorf("since an unlike scrape: total %v, want the later scrape's 110", got.total())
	}
}

// TestWhere: two snapshots of a phase give its rates per second and the
// quantiles of what happened between them; a phase without them shows
// dashes.
func TestWhere(t *testing.T) {
	inf := math.Inf(1)
	t0 := time.Unix(1e9, 0)
	a := whereSnap{at: t0, haveScrape: true, haveProc: true, cores: 2,
		hists: map[string]hist{
			"logpond_input_ack_seconds":     {{0.002, 0}, {0.004, 0}, {inf, 0}},
			"logpond_journal_fsync_seconds": {{0.001, 0}, {0.002, 0}, {inf, 0}},
			"go_sched_latencies_seconds":    {{0.0009175, 0}, {0.0105, 0}, {inf, 0}},
		},
		values:  map[string]float64{"go_cpu_classes_total_cpu_seconds_total": 1, "go_cpu_classes_gc_total_cpu_seconds_total": 0.1},
		threads: threadStat{cpu: time.Second, runDelay: time.Second}, busy: 10 * time.Second,
	}
	b := a
	b.at = t0.Add(10 * time.Second)
	b.hists = map[string]hist{
		"logpond_input_ack_seconds":     {{0.002, 50}, {0.004, 100}, {inf, 100}},
		"logpond_journal_fsync_seconds": {{0.001, 200}, {0.002, 200}, {inf, 200}},
		"go_sched_latencies_seconds":    {{0.0009175, 900}, {0.0105, 1000}, {inf, 1000}},
	}
	b.values = map[string]float64{"go_cpu_classes_total_cpu_seconds_total": 6, "go_cpu_classes_gc_total_cpu_seconds_total": 0.6,
		"go_sched_latencies_seconds_sum": 0.5, "logpond_journal_fsync_seconds_sum": 0.1, "go_sched_gomaxprocs_threads": 2}
	b.threads = threadStat{cpu: 6 * time.Second, runDelay: 3 * time.Second}
	b.busy = 20 * time.Second
	w := where(a, b)
	if !w.Valid || w.CPU != 0.5 || w.RunDelay != 200 || w.MachineBusy != 1 || w.GCShare != 0.1 || w.SchedWait != 50 || w.SchedOver1 != 10 || w.Procs != 2 {
		t.Errorf("where = %+v", w)
	}
	if w.FsyncMean != 500*time.Microsecond || w.AckP99 != 3960*time.Microsecond {
		t.Errorf("fsync mean %v (want 500µs), ack p99 %v (want 3.96ms)", w.FsyncMean, w.AckP99)
	}
	md := whereMarkdown([]isoPhase{{Name: "quiet", Where: w}, {Name: "catch-up"}})
	for _, want := range []string{"| quiet | 3.96 | 0.99 | 0.50 | 0 | 50.0 | 10.0 | 200 | 0.0 | 10% | 0.50 | 1.00 of 2 |", "| catch-up | – |", "one of its 2 Ps"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if where(a, whereSnap{at: b.at}).Valid {
		t.Error("a phase whose end could not be read is valid")
	}
	if whereMarkdown([]isoPhase{{Name: "quiet"}}) != "" {
		t.Error("a table for phases that read nothing")
	}
}

// TestProcReaders: this process's threads show CPU time, and the machine
// at least one CPU, read from /proc as a phase reads logpond's.
func TestProcReaders(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	th, err := readThreadStat(os.Getpid())
	if err != nil || th.cpu <= 0 {
		t.Errorf("readThreadStat: %+v, %v", th, err)
	}
	busy, cores, err := readMachineCPU()
	if err != nil || busy <= 0 || cores < 1 {
		t.Errorf("readMachineCPU: busy %v, %d cores, %v", busy, cores, err)
	}
	if _, err := readThreadStat(-1); err == nil {
		t.Error("readThreadStat of no process read something")
	}
}

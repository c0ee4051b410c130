package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// whereNames are the histograms a phase's "where the time went" reads
// from logpond's /metrics.
var whereNames = []string{"logpond_input_ack_seconds", "logpond_journal_fsync_seconds", "go_sched_latencies_seconds", "go_sched_pauses_total_gc_seconds"}

// whereSnap is what isoRun reads at a phase's start and end to say where
// the acknowledgements' time went.
type whereSnap struct {
	at         time.Time
	hists      map[string]hist
	values     map[string]float64
	threads    threadStat
	busy       time.Duration // the machine's CPU time spent busy
	cores      int
	haveProc   bool
	haveScrape bool
}

// takeWhere reads logpond's metrics and its threads' and the machine's
// CPU accounting. What cannot be read is left out (and shows as "–").
func takeWhere(admin string, pid int) whereSnap {
	s := whereSnap{at: time.Now()}
	if h, err := scrapeHists(admin, whereNames...); err == nil {
		if v, err := scrape(admin); err == nil {
			s.hists, s.values, s.haveScrape = h, v, true
		}
	}
	if t, err := readThreadStat(pid); err == nil {
		if busy, cores, err := readMachineCPU(); err == nil {
			s.threads, s.busy, s.cores, s.haveProc = t, busy, cores, true
		}
	}
	return s
}

// isoWhere is where a phase's acknowledgement latency came from: logpond's
// own view of it (its ack histogram: from a batch's last byte to its ACK),
// the journal's fsyncs, how long goroutines waited for a P (the Go
// scheduler) and threads for a CPU (the kernel), the GC, and how busy
// logpond and the machine were.
type isoWhere struct {
	Valid       bool
	AckP99      time.Duration // logpond_input_ack_seconds over the phase
	FsyncP99    time.Duration
	FsyncMean   time.Duration
	FsyncStalls float64 // fsyncs over about 16 ms (the histogram's 16.4 ms bound): the device stalled
	SchedWait   float64 // goroutines' total wait for a P per second of the phase (go_sched_latencies_seconds), in ms/s
	SchedOver1  float64 // of those waits, how many per second exceeded about 1 ms (the histogram's 0.92 ms bound)
	GCCycles    float64 // GC cycles per second
	GCPauses1ms float64 // stop-the-world pauses above about 1 ms, per second
	GCShare     float64 // the GC's share of logpond's CPU time
	CPU         float64 // logpond's CPU, in cores
	RunDelay    float64 // logpond's threads' total wait on a kernel run queue, in ms per second
	MachineBusy float64 // the machine's busy CPU, in cores
	Cores       int
	Procs       int // logpond's GOMAXPROCS
}

// where compares two snapshots of one phase.
func where(a, b whereSnap) isoWhere {
	var w isoWhere
	el := b.at.Sub(a.at).Seconds()
	if el <= 0 || !a.haveScrape || !b.haveScrape || !a.haveProc || !b.haveProc {
		return w
	}
	w.Valid = true
	d := func(name string) hist { return b.hists[name].since(a.hists[name]) }
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	w.AckP99 = sec(d("logpond_input_ack_seconds").quantile(0.99))
	fs := d("logpond_journal_fsync_seconds")
	w.FsyncP99 = sec(fs.quantile(0.99))
	w.FsyncStalls = fs.above(0.016)
	if n := fs.total(); n > 0 {
		w.FsyncMean = sec((b.values["logpond_journal_fsync_seconds_sum"] - a.values["logpond_journal_fsync_seconds_sum"]) / n)
	}
	w.SchedWait = (b.values["go_sched_latencies_seconds_sum"] - a.values["go_sched_latencies_seconds_sum"]) * 1000 / el
	w.SchedOver1 = d("go_sched_latencies_seconds").above(0.0009) / el
	w.GCPauses1ms = d("go_sched_pauses_total_gc_seconds").above(0.0009) / el
	w.GCCycles = (b.values["go_gc_cycles_total_gc_cycles_total"] - a.values["go_gc_cycles_total_gc_cycles_total"]) / el
	if cpu := b.values["go_cpu_classes_total_cpu_seconds_total"] - a.values["go_cpu_classes_total_cpu_seconds_total"]; cpu > 0 {
		w.GCShare = (b.values["go_cpu_classes_gc_total_cpu_seconds_total"] - a.values["go_cpu_classes_gc_total_cpu_seconds_total"]) / cpu
	}
	w.CPU = (b.threads.cpu - a.threads.cpu).Seconds() / el
	w.RunDelay = float64((b.threads.runDelay - a.threads.runDelay).Milliseconds()) / el
	w.MachineBusy = (b.busy - a.busy).Seconds() / el
	w.Cores, w.Procs = b.cores, int(b.values["go_sched_gomaxprocs_threads"])
	return w
}

// threadStat sums /proc/PID/task/*/schedstat over a process's threads:
// time on a CPU and time runnable but waiting on a run queue.
type threadStat struct{ cpu, runDelay time.Duration }

// readThreadStat reads it for pid. A thread that exits meanwhile is
// skipped (its time is lost from both snapshots' sums only if it exits
// between them, which logpond's long-lived threads do not).
func readThreadStat(pid int) (threadStat, error) {
	var t threadStat
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(dirs) == 0 {
		return t, fmt.Errorf("schedstat of %d: none (%v)", pid, err)
	}
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		on, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return t, fmt.Errorf("schedstat %s: %q", p, b)
		}
		t.cpu += time.Duration(on)
		t.runDelay += time.Duration(wait)
	}
	return t, nil
}

// readMachineCPU reads /proc/stat's first line: the CPU time all CPUs
// spent busy (all but idle and iowait), and how many CPUs there are.
func readMachineCPU() (busy time.Duration, cores int, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Split(string(b), "\n")
	f := strings.Fields(lines[0])
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", lines[0])
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q: %w", lines[0], err)
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += time.Duration(v) * tick
		}
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "cpu") {
			cores++
		}
	}
	return busy, cores, nil
}

// whereMarkdown is the table of where each phase's acknowledgement time
// went, or "" when no phase could read it.
func whereMarkdown(phases []isoPhase) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	some := false
	for _, ph := range phases {
		some = some || ph.Where.Valid
	}
	if !some {
		return ""
	}
	p("\nWhere the acknowledgements' time went, over each phase's load: logpond's own measure of the acknowledgement (`logpond_input_ack_seconds`, from a batch's last byte to its ACK; the client's figure above adds the batch's trip and the client's own waits), the journal's group fsync, how long logpond's goroutines stood runnable waiting for one of its %d Ps (GOMAXPROCS; the Go scheduler: `go_sched_latencies_seconds`) and its threads waiting for a CPU (the kernel: `/proc/PID/task/*/schedstat`), its GC, its CPU and the machine's (load generator and sink included). Histogram quantiles are interpolated within buckets, as Prometheus does.\n\n", firstProcs(phases))
	p("| phase | logpond ack p99 ms | fsync p99 ms | fsync mean ms | fsyncs over 16 ms | goroutines' wait for a P ms/s | waits over 1 ms /s | threads' wait for a CPU ms/s | GC cycles /s | GC share of CPU | logpond CPU cores | machine busy cores |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, ph := range phases {
		w := ph.Where
		if !w.Valid {
			p("| %s | – | – | – | – | – | – | – | – | – | – | – |\n", ph.Name)
			continue
		}
		p("| %s | %s | %s | %s | %.0f | %.1f | %.1f | %.0f | %.1f | %.0f%% | %.2f | %.2f of %d |\n", ph.Name, ms(w.AckP99), ms(w.FsyncP99), ms(w.FsyncMean), w.FsyncStalls,
			w.SchedWait, w.SchedOver1, w.RunDelay, w.GCCycles, 100*w.GCShare, w.CPU, w.MachineBusy, w.Cores)
	}
	p("\nHow to read it: the GC's share and the journal device's stalls (fsyncs over 16 ms) say whether the GC or the disk held acknowledgements up; the waits for a P and for a CPU say whether other work in logpond (a catch-up's reading, decompressing and encoding) or on the machine (here the load generator and the sink, which parses every bulk request the drain sends) stood in their way. An acknowledgement is a chain of hand-offs between goroutines (the connection's reader, the journal's committer back from its fsync, the ACK's writer), so each wait for a P adds to it, and to the fsync's measured time too. The output yields on those waits (`internal/ackwatch`): compare the catch-up, paced down to a few times the incoming events, with the catch-up that does not give way.\n")
	return b.String()
}

// firstProcs is logpond's GOMAXPROCS as the phases saw it.
func firstProcs(phases []isoPhase) int {
	for _, ph := range phases {
		if ph.Where.Procs > 0 {
			return ph.Where.Procs
		}
	}
	return 0
}

// roundsMarkdown lists every isolation round's ack p99 against the quiet
// phase's of the same round, and the catch-up's delivered / incoming: the
// goal is met only if every round meets it.
func roundsMarkdown(rounds [][]isoPhase) string {
	if len(rounds) == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\nEvery round (goal: the catch-up's ack p99 at most 1.5× the quiet phase's of the same round, in every round, while the drain delivers at least twice the events arriving):\n\n")
	p("| round | quiet ack p99 ms | catch-up ack p99 ms | catch-up p99 / quiet p99 | catch-up delivered / incoming | throttled ack p99 ms | throttled p99 / quiet p99 |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, phases := range rounds {
		byName := map[string]isoPhase{}
		for _, ph := range phases {
			byName[ph.Name] = ph
		}
		quiet := byName["quiet"].Result.Percentile(0.99)
		cu, th := byName["catch-up"], byName["throttled"]
		vs := func(ph isoPhase) string {
			if quiet <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f×", float64(ph.Result.Percentile(0.99))/float64(quiet))
		}
		p("| %d | %s | %s | %s | %.2f× | %s | %s |\n", i+1, ms(quiet), ms(cu.Result.Percentile(0.99)), vs(cu), cu.DeliveredPerIncoming(), ms(th.Result.Percentile(0.99)), vs(th))
	}
	return b.String()
}

package main

import (
	"fmt"
	"strings"
	"time"
)

// report is everything one benchreport run measured.
type report struct {
	Date, Machine, Revision string
	JournalDev, LedgerDev   string
	Opts                    options
	Ingest                  []ingestRow
	Isolation               []isoPhase   // the first round's phases
	IsoRounds               [][]isoPhase // every round's
	Small                   []smallRun
	Drain                   []drainRun
	DrainCPU                []drainCPURun
	Fanout                  *fanoutResult
	Datastreams             []dsRun
	Compression             *compressionResult
	Kafka                   []kafkaRun
	Processing              *procResult
	HotPaths                []hotPathRow
	Flames                  []*flame
	StraceNote              string
	PNG                     string
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func size(n int) string {
	switch {
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func mib(n int64) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(n)/(1<<20))
}

// stateMiB is a codec's state bound in MiB, exactly as stated: the bounds
// are a few MiB or less, where mib's rounding would read 0.125 as 0.
func stateMiB(n int64) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%g", float64(n)/(1<<20))
}

func cpu(c float64) string {
	if c <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", c)
}

// measured is the line a section measured in a partial run opens with
// (none in a full run: the report's header says when it ran).
func (r *report) measured() string {
	if r.Opts.parts == defaultOptions().parts {
		return ""
	}
	return fmt.Sprintf("Measured %s, logpond %s, in a run of `-parts %s` on the same machine.\n\n", r.Date, r.Revision, r.Opts.parts)
}

// markdown renders the report.
func (r *report) markdown() string {
	var b strings.Builder
	o := r.Opts
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# logpond benchmarks\n\n")
	p("Produced by `make bench-report` (`tools/benchreport`); every figure below comes from one run of it. Do not edit by hand: run it again.\n\n")
	p("- **Date:** %s\n- **Machine:** %s\n- **logpond:** %s\n", r.Date, r.Machine, r.Revision)
	p("- **Journal:** %s (the machine's disk)\n- **Ledger:** %s\n", r.JournalDev, r.LedgerDev)
	p("- **Command:** `sudo make bench-report` (= `bin/benchreport -duration %s -rounds %d -backlog %d -isolation-duration %s -isolation-rate %.0f -isolation-rounds %d -throttle %d -small-conns %d -small-duration %s -drain-events %d -drain-cpu-events %d -drain-size %d -drain-refusal %s -fanout-events %d -fanout-size %d -datastreams-events %d -datastreams-size %d -logs LOGS -compression-events %d -compression-duration %s -compression-rounds %d -processing-events %d -processing-rounds %d`)\n\n",
		o.duration, o.rounds, o.backlog, o.isoDuration, o.isoRate, o.isoRounds, o.throttleBPS, o.smallConns, o.smallDuration, o.drainEvents, o.drainCPUEvents, o.drainSize, o.drainRefusal, o.fanoutEvents, o.fanoutSize, o.dsEvents, o.dsSize,
		o.zEvents, o.zDuration, o.zRounds, o.procEvents, o.procRounds)
	p("The machine is shared and has 2 cores: the load generator, the server under test and (in the isolation run) the Elasticsearch sink share them, so absolute figures are modest and only the ratios within one run mean much.\n\n")

	p("## Ingest: logpond beside the baselines\n\n")
	p("Each shape is measured %d times, the three servers interleaved round by round (noop, naive, logpond), %s each, on empty stores; the table shows medians over the rounds (peak RSS: the largest). ", o.rounds, o.duration)
	p("Clients: `beatsbench` (go-lumber's client, the library Beats use), 4 connections, each sending a window and waiting for its ACK as Filebeat does; events are JSON with log-like text, so zlib level 3 compresses them about as much as real logs.")
	for _, row := range r.Ingest {
		if row.Shape == "real logs" {
			p(" The real-logs rows send real log lines as Filebeat wraps them (the compression part's events, %d B on average, cycled): the synthetic text is words drawn at random from a short list, on which S2, the codec logpond compresses its records with, runs several times slower than on real logs (see the codec table of the compression part), so that the synthetic rows charge logpond's compression more than real logs would.", row.EventSize)
			break
		}
	}
	p("\n\n")
	p("- **noop**: acknowledges every window at once; no durability (an upper bound for the protocol and the client).\n")
	p("- **naive**: appends each window to one file on the journal's disk and fdatasyncs it before the ACK, one window at a time.\n")
	p("- **logpond**: `bin/logpond`, output disabled (ingest only): journal group commit on the machine's disk, flusher to the ledger on its own device.\n\n")
	p("%s", r.measured())
	p("MB/s counts event bytes before compression. CPU is the server process's user+system time per million acknowledged events; peak RSS is the server's VmHWM (logpond's is mostly its bounded buffers: the input's in-flight budget, the journal's in-memory tail for the flusher, the ledger's write buffer); formula is what the memory formula of docs/operations.md gives for logpond's configuration, its soft memory limit; ×naive and ×noop are logpond's events/s over the baseline's, the median of the per-round ratios.\n\n")
	p("| event | zlib | window | server | events/s | MB/s | ack p50 ms | ack p99 ms | ack p999 ms | CPU s/Mev | peak RSS MiB | formula MiB | ×naive | ×noop |\n")
	p("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Ingest {
		for _, s := range []struct {
			name string
			v    summary
		}{{"noop", row.Noop}, {"naive", row.Naive}, {"**logpond**", row.Logpond}} {
			ratios := "| | |"
			if s.name == "**logpond**" {
				ratios = fmt.Sprintf("| %s | **%.2f×** | %.2f× |", mib(row.Formula), row.VsNaive, row.VsNoop)
			}
			p("| %s | %d | %d×%d | %s | %.0f | %.1f | %s | %s | %s | %s | %s %s\n", row.event(), row.Compression, row.Connections, row.Batch, s.name,
				s.v.EventsPerSec, s.v.MBPerSec, ms(s.v.P50), ms(s.v.P99), ms(s.v.P999), cpu(s.v.CPUPerMillion), mib(s.v.PeakRSS), ratios)
		}
	}
	p("\n%s", ingestGoalsMarkdown(r.Ingest))

	p("## Isolation: acknowledgements do not follow the ledger\n\n")
	p("logpond with its Elasticsearch output on (draining into an accept-all bulk sink, `estest.Sink`), loaded at a fixed %.0f events/s (4 connections × 250-event windows of 1 KiB) for %s in three phases, each on fresh stores (and, in the first round, a fourth: a catch-up that does not give way); the phases run %d times, and the table shows the first round:\n\n", o.isoRate, o.isoDuration, len(r.IsoRounds))
	if o.parts != defaultOptions().parts {
		p("Measured %s, logpond %s, in a run of `-parts %s` on the same machine.\n\n", r.Date, r.Revision, o.parts)
	}
	p("| phase | what | ack p50 ms | ack p99 ms | ack p999 ms | p99 / quiet p99 | while draining p50 / p99 / p999 ms | delivered / incoming | most records not yet in the ledger | largest output lag (records) | peak RSS MiB | formula MiB |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var quietP99 time.Duration
	for _, ph := range r.Isolation {
		if ph.Name == "quiet" {
			quietP99 = ph.Result.Percentile(0.99)
		}
	}
	for _, ph := range r.Isolation {
		during := "–"
		if ph.DrainWindow > 0 {
			during = fmt.Sprintf("%s / %s / %s (first %.1f s)", ms(ph.DrainP[0]), ms(ph.DrainP[1]), ms(ph.DrainP[2]), ph.DrainWindow.Seconds())
		} else if ph.Name == "catch-up" || ph.Name == unyieldingPhase {
			during = "not drained within the phase"
		}
		vsQuiet := "–"
		if quietP99 > 0 {
			vsQuiet = fmt.Sprintf("%.2f×", float64(ph.Result.Percentile(0.99))/float64(quietP99))
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %.2f× | %.0f | %.0f | %s | %s |\n", ph.Name, ph.What, ms(ph.Result.Percentile(0.5)), ms(ph.Result.Percentile(0.99)),
			ms(ph.Result.Percentile(0.999)), vsQuiet, during, ph.DeliveredPerIncoming(), ph.MaxUnflushed, ph.MaxLag, mib(ph.PeakRSS), mib(ph.Formula))
	}
	for _, ph := range r.Isolation {
		if ph.FillPeakRSS > 0 {
			p("\nBuilding the %s phase's backlog (output off, 4 × 2048-event windows of 1 KiB as fast as acknowledged): peak RSS %s MiB, formula %s MiB.\n", ph.Name, mib(ph.FillPeakRSS), mib(ph.FillFormula))
		}
	}
	p("%s", roundsMarkdown(r.IsoRounds))
	p("%s", whereMarkdown(r.Isolation))
	p("\n- **quiet**: nothing to drain but what comes in.\n")
	p("- **catch-up**: the ledger was first filled to the backlog with the output off; logpond was restarted with the output on, and the load started with it: the drain reads the ledger (O_DIRECT) and sends bulk requests while the journal takes the new events. \"While draining\" covers the acknowledgements until the sink had received as many events as the backlog held. The output gives way to the acknowledgements (it paces its drain down while they are slower than the journal's fsyncs explain or logpond's goroutines wait for a P more than 2%% of the time, never below 2.5 times the events arriving): \"delivered / incoming\" is the events the sink received over the phase per event acknowledged, at least 2 while a backlog drains, so it shrinks at least as fast as events arrive.\n")
	p("- **%s**: the catch-up again, from a backlog built the same way, with the output's `concurrency = \"fixed\"`, which turns its adaptation off and with it the giving way: the drain goes as fast as the sink takes it. Run in the first round only, to show what giving way saves.\n", unyieldingPhase)
	p("- **throttled**: logpond in a blkio cgroup capping the ledger's loop device at %.0f MiB/s read and write, well under the incoming %.0f MB/s: the flusher falls behind (records wait in the journal, see \"not yet in the ledger\"; a record is one 250-event window) while acknowledgements depend only on the journal's device. The flusher catches up after the phase, when logpond, out of the cgroup again, stops.\n\n", float64(o.throttleBPS)/(1<<20), o.isoRate*1024/1e6)
	if r.PNG != "" {
		p("![ack latency over time in the three isolation phases](%s)\n\n", r.PNG)
		p("p99 of the acknowledgement latency per half second, per phase (log scale).\n\n")
	}

	p("## Many small clients\n\n")
	if len(r.Small) > 0 {
		s0 := r.Small[0]
		p("%d connections, each sending %d-event windows of %d B as fast as they are acknowledged, %s per run, output disabled. ", s0.Connections, s0.Window, s0.Size, o.smallDuration)
		p("A record is what one window becomes in the journal; records per fsync is how many windows one group commit made durable together. ")
		p("\"From metrics\" divides logpond's `logpond_journal_group_records` sum by `logpond_journal_fsyncs_total`; \"at the syscall\" divides the same records by the fsync and fdatasync calls on the journal's files and directory that `strace -f -y -e trace=fsync,fdatasync` saw over the process's life (a handful of them at start and at the final flush; strace slows every traced thread, so that run is slower and its groups differ).\n\n")
		p("| run | events/s | ack p50 ms | ack p99 ms | records | journal fsyncs | records per fsync | ledger fsync calls | peak RSS MiB | formula MiB |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Small {
			fsyncs, per, ledger := fmt.Sprintf("%.0f (metrics)", s.Fsyncs), fmt.Sprintf("%.1f (metrics)", s.RecordsPerFsync), "–"
			if s.FsyncSyscalls > 0 {
				fsyncs = fmt.Sprintf("%d (syscalls)", s.FsyncSyscalls)
				per = fmt.Sprintf("%.1f (at the syscall); %.1f (metrics)", s.RecordsPerFsyncSyscall, s.RecordsPerFsync)
				ledger = fmt.Sprint(s.FsyncSyscallsLedger)
			}
			p("| %s | %.0f | %s | %s | %.0f | %s | %s | %s | %s | %s |\n", s.How, s.Result.EventsPerSec(), ms(s.Result.Percentile(0.5)), ms(s.Result.Percentile(0.99)), s.Records, fsyncs, per, ledger, mib(s.PeakRSS), mib(s.Formula))
		}
		p("\n")
	}
	if r.StraceNote != "" {
		p("%s.\n\n", r.StraceNote)
	}
	if len(r.Drain) > 0 {
		p("%s", drainMarkdown(r.Drain, r.DrainCPU, o, r.measured()))
	}
	if r.Fanout != nil {
		p("%s", fanoutMarkdown(r.Fanout, o))
	}
	if len(r.Datastreams) > 0 {
		p("%s", dsMarkdown(r))
	}
	if r.Compression != nil {
		p("%s", compressionMarkdown(r.Compression, o))
	}
	if len(r.Kafka) > 0 {
		p("%s", kafkaMarkdown(r))
	}
	if r.Processing != nil {
		p("%s", procMarkdown(r))
	}
	if len(r.HotPaths) > 0 {
		p("%s", hotPathMarkdown(r.HotPaths, r.measured()))
	}
	if len(r.Flames) > 0 {
		p("%s", flameMarkdown(r))
	}
	p("## Reproduce\n\n")
	p("```\nsudo make bench-report          # builds, then runs tools/benchreport; about %s here (flame graphs: flamegraph.pl on PATH, or FLAMEGRAPH=path)\n", estimate(o).Round(time.Minute))
	p("make bench-beats                 # the 4 × 2048 and 200 × 50 shapes against the baselines (tools/beatsbench/bench.sh)\n")
	p("go test -run '^$' -bench 'Drain$' -benchtime 1x -count 3 ./output/elasticsearch   # the output alone\n")
	p("go test -run '^$' -bench DrainPushback -benchtime 1x ./output/elasticsearch        # the output alone, clean / random / overload / storm\n")
	p("go test -run 'TestPacing|TestRandomRejections|TestDrainYields' -v ./output/elasticsearch  # the controller in simulated drains\n")
	p("%s   # the processor chains alone, one core\n```\n", procBenchCommand(o))
	return b.String()
}

// estimate is roughly how long a run takes with these options.
func estimate(o options) time.Duration {
	ingestShapes := len(o.sizes) * 2
	if o.logs != "" {
		ingestShapes += 2 // the real-log shapes, when the folder is there
	}
	ingest := time.Duration(ingestShapes*3*o.rounds) * (o.duration + 700*time.Millisecond)
	iso := 3*(o.isoDuration+2*time.Second) + time.Duration(o.backlog/(300<<20))*time.Second
	// The profiles' drains, then the CPU backlog filled and drained
	// o.rounds times (about 300000 events/s each way here).
	drain := 2*time.Minute + o.drainRefusal + time.Duration(o.drainEvents/3000)*time.Second +
		time.Duration(int64(o.rounds+1)*o.drainCPUEvents/300000)*time.Second
	// Two loads and four drains of the fan-out backlog, each a few seconds
	// plus logpond's start and stop.
	fanout := time.Minute + time.Duration(o.fanoutEvents/1000)*time.Second
	// Three backlogs filled (each followed by the settle wait), then
	// dsRounds drains of each: fills and drains ran at about 50000
	// events/s here, plus about a second for logpond's start and stop.
	datastreams := 3*o.settle + time.Duration(3+3*dsRounds)*(time.Second+time.Duration(o.dsEvents/50000)*time.Second)
	// The codecs (about 20 s), two loads (each after the settle wait), the
	// ingest shapes (one settle each, then two servers a round, each about
	// a second besides its duration) and the drains (about 30000 events/s
	// here, plus logpond's start and stop).
	shapes := time.Duration(len(o.sizes)*2 + 2)
	compression := 20*time.Second + 2*(o.settle+time.Duration(o.zEvents/40000)*time.Second) +
		shapes*(o.settle+time.Duration(2*o.zRounds)*(o.zDuration+time.Second)) +
		time.Duration(2*o.zRounds)*(2*time.Second+time.Duration(o.zEvents/30000)*time.Second)
	// One fill, then kafkaRounds times eight drains of the drain part's
	// backlog (about 100000 events/s here, plus the start, the stop and
	// the consumer's check).
	kafka := o.settle + kafkaRounds*8*(3*time.Second+time.Duration(o.drainEvents/100000)*time.Second)
	// Building and running BenchmarkProcessing (4 sub-benchmarks, each
	// procCount times its benchtime and its calibration), one fill
	// (about 40000 events/s here) and 2 × procRounds drains (about 30000
	// events/s, plus logpond's start and stop).
	benchtime, _ := time.ParseDuration(o.procBenchtime)
	processing := 30*time.Second + time.Duration(4*o.procCount)*(benchtime+time.Second) + o.settle + time.Duration(o.procEvents/40000)*time.Second +
		time.Duration(2*o.procRounds)*(2*time.Second+time.Duration(o.procEvents/30000)*time.Second)
	// Building the three packages' tests, then 7 benchmarks, each
	// hotPathCount times a second and its calibration.
	hotpaths := 30*time.Second + 7*hotPathCount*2*time.Second
	return ingest + iso + 2*(o.smallDuration+2*time.Second) + drain + fanout + datastreams + compression + kafka + processing + hotpaths
}

// The ingest goals, at every shape: logpond's CPU per acknowledged event
// at most goalIngestCPUVsNoop times the no-durability server's, and its
// events/s at least goalIngestVsNaive times the naive server's.
const (
	goalIngestCPUVsNoop = 2.0
	goalIngestVsNaive   = 1.0
)

// ingestGoalsMarkdown states the ingest goals' verdicts over rows, with
// the figure of every shape, so that a shape that misses a goal shows
// beside those that meet it. The CPU ratio is of the medians the table
// shows; a row without noop's CPU is left out of it.
func ingestGoalsMarkdown(rows []ingestRow) string {
	if len(rows) == 0 {
		return ""
	}
	name := func(row ingestRow) string { return fmt.Sprintf("%s zlib %d", row.event(), row.Compression) }
	var b strings.Builder
	var cpuShapes, naiveShapes []string
	worstCPU, worstNaive := -1.0, -1.0
	var worstCPUAt, worstNaiveAt string
	for _, row := range rows {
		if row.Noop.CPUPerMillion > 0 {
			x := row.Logpond.CPUPerMillion / row.Noop.CPUPerMillion
			cpuShapes = append(cpuShapes, fmt.Sprintf("%s %.2f×", name(row), x))
			if x > worstCPU {
				worstCPU, worstCPUAt = x, name(row)
			}
		}
		naiveShapes = append(naiveShapes, fmt.Sprintf("%s %.2f×", name(row), row.VsNaive))
		if worstNaive < 0 || row.VsNaive < worstNaive {
			worstNaive, worstNaiveAt = row.VsNaive, name(row)
		}
	}
	if len(cpuShapes) > 0 {
		fmt.Fprintf(&b, "Goal: logpond's CPU per acknowledged event at most %.1f× noop's at every shape (the medians above). Verdict: %s. Per shape: %s.\n\n",
			goalIngestCPUVsNoop, verdict(worstCPU <= goalIngestCPUVsNoop, fmt.Sprintf("highest %.2f×, %s", worstCPU, worstCPUAt)), strings.Join(cpuShapes, ", "))
	}
	fmt.Fprintf(&b, "Goal: logpond's events/s at least %.1f× naive's at every shape (×naive). Verdict: %s. Per shape: %s.\n\n",
		goalIngestVsNaive, verdict(worstNaive >= goalIngestVsNaive, fmt.Sprintf("lowest %.2f×, %s", worstNaive, worstNaiveAt)), strings.Join(naiveShapes, ", "))
	return b.String()
}

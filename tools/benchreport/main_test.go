package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/processors"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

func fakeResult(evps float64, lat time.Duration) lumberload.Result {
	r := lumberload.Result{Events: int64(evps), Bytes: int64(evps) * 1000, Elapsed: time.Second, CPU: time.Second, PeakRSS: 64 << 20}
	for i := range 100 {
		l := lat + time.Duration(i)*time.Microsecond
		r.Latencies = append(r.Latencies, l)
		r.Timeline = append(r.Timeline, lumberload.Sample{At: time.Duration(i) * 20 * time.Millisecond, Latency: l})
	}
	return r
}

// TestMarkdown: the report shows each shape's three servers with the
// medians and logpond's ratios, every isolation phase and the small-client
// runs, and the commands that reproduce it.
func TestMarkdown(t *testing.T) {
	o := defaultOptions()
	o.rounds = 3
	rs := func(evps ...float64) []lumberload.Result {
		var out []lumberload.Result
		for _, e := range evps {
			out = append(out, fakeResult(e, time.Millisecond))
		}
		return out
	}
	row := ingestRow{EventSize: 1024, Compression: 3, Connections: 4, Batch: 2048,
		Noop: summarize(rs(900, 1000, 1100)), Naive: summarize(rs(100, 300, 200)), Logpond: summarize(rs(500, 400, 600)), VsNaive: 2.5, VsNoop: 0.5, Formula: 200 << 20}
	if row.Naive.EventsPerSec != 200 || row.Logpond.EventsPerSec != 500 || row.Logpond.PeakRSS != 64<<20 {
		t.Fatalf("summaries are not medians: %+v %+v", row.Naive, row.Logpond)
	}
	real := row
	real.Shape, real.EventSize, real.Compression = "real logs", 851, 0
	real.VsNaive = 0.9
	real.Logpond = summarize(rs(500, 400, 600))
	real.Logpond.CPUPerMillion = 2500
	r := &report{Date: "2026-12-02", Machine: "test machine", Revision: "abc", Opts: o, Ingest: []ingestRow{row, real},
		Isolation: []isoPhase{
			{Name: "quiet", What: "idle", Result: fakeResult(20000, 2*time.Millisecond)},
			{Name: "catch-up", What: "draining", Result: fakeResult(20000, 3*time.Millisecond), DrainWindow: 2 * time.Second, DrainP: [3]time.Duration{time.Millisecond, 5 * time.Millisecond, 9 * time.Millisecond},
				PeakRSS: 150 << 20, Formula: 250 << 20, FillPeakRSS: 120 << 20, FillFormula: 190 << 20},
			{Name: "throttled", What: "slow ledger", Result: fakeResult(20000, 2*time.Millisecond), MaxUnflushed: 580},
			{Name: unyieldingPhase, What: "not giving way", Result: fakeResult(20000, 6*time.Millisecond), Delivered: 200000},
		},
		Small: []smallRun{
			{How: "plain", Result: fakeResult(300000, 10*time.Millisecond), Records: 7000, Fsyncs: 100, RecordsPerFsync: 70, Connections: 500, Window: 50, Size: 1024, PeakRSS: 100 << 20, Formula: 190 << 20},
			{How: "under strace", Result: fakeResult(100000, 30*time.Millisecond), Records: 2000, Fsyncs: 60, RecordsPerFsync: 33.3, FsyncSyscalls: 62, FsyncSyscallsLedger: 9, RecordsPerFsyncSyscall: 32.3, Connections: 500, Window: 50, Size: 1024},
		},
		PNG: "plot.png"}
	r.IsoRounds = [][]isoPhase{r.Isolation, {
		{Name: "quiet", Result: fakeResult(20000, 4*time.Millisecond)},
		{Name: "catch-up", Result: fakeResult(20000, 5*time.Millisecond), Delivered: 50000},
		{Name: "throttled", Result: fakeResult(20000, 4*time.Millisecond)},
	}}
	md := r.markdown()
	for _, want := range []string{
		"| 1 KiB | 3 | 4×2048 | noop | 1000 |",
		"| 1 KiB | 3 | 4×2048 | naive | 200 |",
		"| 1 KiB | 3 | 4×2048 | **logpond** | 500 | 0.5 | 1.05 | 1.10 | 1.10 | 2000.00 | 64 | 200 | **2.50×** | 0.50× |",
		"| 1 KiB | 3 | 4×2048 | naive | 200 | 0.2 | 1.05 | 1.10 | 1.10 | 5000.00 | 64 | | |",
		"| real logs | 0 | 4×2048 | **logpond** | 500 |", "the compression part's events, 851 B on average, cycled",
		"| 0 | 150 | 250 |", "peak RSS 120 MiB, formula 190 MiB", "| – | 100 | 190 |",
		"| catch-up | draining |", "| 1.48× | 1.00 / 5.00 / 9.00 (first 2.0 s)", "| throttled | slow ledger |", "| 580 |",
		"| plain | 300000 |", "70.0 (metrics)", "62 (syscalls)", "32.3 (at the syscall)",
		"![ack latency over time", "(plot.png)", "make bench-report", "test machine", "2026-12-02",
		"the phases run 2 times, and the table shows the first round",
		"| 1 | 2.10 | 3.10 | 1.48× | 0.00× | 2.10 | 1.00× |", "| 2 | 4.10 | 5.10 | 1.24× | 2.50× | 4.10 | 1.00× |",
		"-isolation-rounds 3 -throttle",
		"at most 2.0× noop's at every shape (the medians above). Verdict: **not met** (highest 2.50×, real logs zlib 0). Per shape: 1 KiB zlib 3 2.00×, real logs zlib 0 2.50×.",
		"at least 1.0× naive's at every shape (×naive). Verdict: **not met** (lowest 0.90×, real logs zlib 0). Per shape: 1 KiB zlib 3 2.50×, real logs zlib 0 0.90×.",
		"| catch-up, not yielding | not giving way | 6.05 | 6.10 | 6.10 | 2.91× | not drained within the phase | 10.00× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestDrainMarkdown: the drain table gives each paced profile its ideal
// time, n/C for overload and the refusal plus n/C for storm, and the
// drain time over it; the CPU table gives each round's CPU per event and
// judges the median round against the goal.
func TestDrainMarkdown(t *testing.T) {
	runs := []drainRun{
		{Profile: "clean", What: "every item accepted", Events: 300000, Elapsed: 6 * time.Second, Stored: 300000, Created: 300000},
		{Profile: "overload", What: drainProfiles[2].what, Events: 300000, Elapsed: 29 * time.Second, AcceptRate: 10000, Rejected: 3000},
		{Profile: "storm", What: strings.Replace(drainProfiles[3].what, "first R", "first 10s", 1), Events: 300000, Elapsed: 44 * time.Second, AcceptRate: 10000, Refusal: 10 * time.Second, Rejected: 60000},
	}
	cpu := []drainCPURun{
		{Events: 500000, Startup: 300 * time.Millisecond, Drain: 900 * time.Millisecond, Elapsed: time.Second, Warmup: 100 * time.Millisecond, WarmEvents: 50000},
		{Events: 500000, Startup: 300 * time.Millisecond, Drain: 700 * time.Millisecond, Elapsed: time.Second, Warmup: 160 * time.Millisecond, WarmEvents: 50000},
		{Events: 500000, Startup: 300 * time.Millisecond, Drain: 800 * time.Millisecond, Elapsed: time.Second, Warmup: 0, WarmEvents: 0},
	}
	md := drainMarkdown(runs, cpu, defaultOptions(), "")
	for _, want := range []string{
		// 0.54 s over the last 450000 events; the first 50000 cost
		// 0.16 s, 0.06 s more than 1.20 µs each.
		"| 2 | 1.00 | 500000 | 1.40 | 1.20 | 0.10 | 0.30 |",
		"| 3 | 1.00 | 500000 | 1.60 | 1.60 | 0.00 | 0.30 |",
		"Verdict: **not met** (1.60 µs)",
		"| overload | the server accepts C = 10000 items/s (a token bucket holding one second's worth) and answers 429 beyond | 29.0 | 4.83× | 30.0 | 0.97× | 3000 | 0.010 |",
		"| storm | every item 429 for the first 10s, then as overload: C = 10000 items/s, 429 beyond | 44.0 | 7.33× | 40.0 | 1.10× | 60000 | 0.200 |",
		"storm ≤ 1.2× ideal",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("drain section lacks %q:\n%s", want, md)
		}
	}
}

// TestCountFsyncs counts each call on the journal's and the ledger's files
// once, including calls strace split into unfinished and resumed lines,
// and nothing else.
func TestCountFsyncs(t *testing.T) {
	log := `101 fdatasync(7</tmp/w/journal/00000000000000000001/00000000000000000001>) = 0
102 fdatasync(7</tmp/w/journal/00000000000000000001/00000000000000000001> <unfinished ...>
101 fsync(9</tmp/w/ledger-fs/ledger/0000000001.seg>) = 0
102 <... fdatasync resumed>)            = 0
103 fsync(3</tmp/w/journal>) = 0
104 fsync(11</tmp/other/file>) = 0
105 read(7</tmp/w/journal/x>, "", 10) = 0
`
	path := filepath.Join(t.TempDir(), "strace.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	j, l, err := countFsyncs(path, "/tmp/w/journal", "/tmp/w/ledger-fs/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if j != 3 || l != 1 {
		t.Fatalf("journal %d, ledger %d fsyncs; want 3 and 1", j, l)
	}
}

// TestPlot writes a readable PNG.
func TestPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.png")
	phases := []isoPhase{{Name: "quiet", What: "x", Result: fakeResult(1, time.Millisecond)}, {Name: "throttled", What: "y", Result: fakeResult(1, 4*time.Millisecond)}}
	if err := writePlot(path, 20000, phases); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Fatalf("%s is %v", path, b)
	}
}

// TestQuickReport runs the whole report, every part (the datastreams
// part's routing checks included), on this machine
// with tiny durations: the binaries are built, the ledger gets a loop
// device, the isolation run fills and drains a backlog and throttles the
// ledger's device. It needs root and the loop tools; it checks that every
// part produced its rows, not the figures.
func TestQuickReport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the quick report takes about half a minute")
	}
	if os.Geteuid() != 0 {
		t.Skip("benchreport needs root (loop device, cgroup)")
	}
	for _, tool := range []string{"mkfs.ext4", "losetup", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not available: %v", tool, err)
		}
	}
	if err := throttleSupported(); err != nil {
		t.Skipf("cannot throttle a block device here: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for pkg, name := range map[string]string{"../../cmd/logpond": "logpond", "../beatsbench": "beatsbench"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	o := defaultOptions()
	o.out, o.png, o.bin, o.work = filepath.Join(dir, "b.md"), filepath.Join(dir, "b.png"), bin, dir
	o.duration, o.rounds = 300*time.Millisecond, 1
	o.backlog, o.isoDuration, o.throttleBPS = 64<<20, time.Second, 1<<20
	o.smallConns, o.smallDuration, o.settle = 20, 500*time.Millisecond, 0
	o.ledgerImage = 2 << 30
	o.drainEvents, o.drainRefusal = 20000, time.Second
	o.fanoutEvents = 20000
	o.dsEvents = 20000
	o.logs, o.zEvents, o.zDuration = testLogsDir(t), 20000, 300*time.Millisecond
	o.procEvents, o.procBenchtime, o.procCount = 20000, "100x", 1
	progress, err := os.Create(filepath.Join(dir, "progress"))
	if err != nil {
		t.Fatal(err)
	}
	defer progress.Close()
	if err := run(context.Background(), o, progress); err != nil {
		p, _ := os.ReadFile(progress.Name())
		t.Fatalf("%v\n%s", err, p)
	}
	b, err := os.ReadFile(o.out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, shape := range []string{"256 B | %s | 4×2048", "1 KiB | %s | 4×2048", "90 KiB | %s | 4×68"} {
		for _, comp := range []string{"0", "3"} {
			for _, server := range []string{"noop", "naive", "**logpond**"} {
				if want := "| " + fmt.Sprintf(shape, comp) + " | " + server + " | "; !strings.Contains(md, want) {
					t.Errorf("report lacks %q", want)
				}
			}
		}
	}
	for _, want := range []string{"| quiet |", "| catch-up |", "| throttled |", "| plain |", "| clean |", "| random |", "| overload |", "| storm |", "| 3 outputs |", "| A + B down |", "| classic |", "| agent |", "| agent-partial |",
		"| grok-COMBINEDAPACHELOG |", "| 1 | none | ", "| 2 | chain | ",
		"### What the drain costs logpond per event", "Goal: at most 1.5 µs", "| `BenchmarkReadBatch/plain` | input |", "| `BenchmarkEncodeFilebeat` | output |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := os.Stat(o.logs); err != nil {
		if !strings.Contains(md, "Not measured: no folder of real log lines") {
			t.Errorf("no logs at %s, and the compression part does not say it was skipped", o.logs)
		}
	} else {
		for _, want := range []string{"| zstd fastest |", "| s2 fastest |", "| zstd per event |", "| " + ledgerName(zDefault) + " | 20000 |", "| " + ledgerName("zstd") + " | 20000 |", `| none (compression = "none") | 20000 |`,
			"| real logs | 3 | 4×2048 | **" + ledgerName(zDefault) + "** |", "| 90 KiB | 0 | 4×68 | " + ledgerName("zstd") + " |", "| 90 KiB | 0 | 4×68 | none (compression = \"none\") |"} {
			if !strings.Contains(md, want) {
				t.Errorf("report lacks %q", want)
			}
		}
		z := md[strings.Index(md, "## Compression"):]
		z = z[:strings.Index(z[3:], "\n## ")+3]
		if strings.Count(z, "Verdict:") != 3 {
			t.Errorf("the compression part has not its three verdicts")
		}
	}
	if _, err := exec.LookPath("strace"); err == nil && !strings.Contains(md, "| under strace |") {
		t.Errorf("strace is installed but the report has no traced run")
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
	checkPNG(t, o.png)
}

// TestFanoutMarkdown: each fan-out table compares its fan-out run with
// its 1-output run (bytes per event, device bytes read, A's rate), the
// isolation rows are medians of the interleaved runs, and the section
// names the goals and the command that reproduces it.
func TestFanoutMarkdown(t *testing.T) {
	o := defaultOptions()
	a := medianRun([]fanRun{
		{Case: "A alone", Healthy: 1, Events: 300000, Elapsed: 7 * time.Second, PeakRSS: 60 << 20, Rounds: 1},
		{Case: "A alone", Healthy: 1, Events: 300000, Elapsed: 5 * time.Second, PeakRSS: 70 << 20, Rounds: 1},
		{Case: "A alone", Healthy: 1, Events: 300000, Elapsed: 6 * time.Second, PeakRSS: 65 << 20, Rounds: 1},
	})
	if a.Elapsed != 6*time.Second || a.PeakRSS != 70<<20 || a.Rounds != 3 {
		t.Fatalf("median run: %+v", a)
	}
	f := &fanoutResult{
		OneCopy: []fanRun{
			{Case: "1 output", Healthy: 1, Events: 300000, LedgerBytes: 150000000, PeakRSS: 100 << 20, Formula: 200 << 20},
			{Case: "3 outputs", Healthy: 3, Events: 310000, LedgerBytes: 158100000, PeakRSS: 170 << 20, Formula: 236 << 20},
		},
		Reads: []fanRun{
			{Case: "1 output", Healthy: 1, Events: 300000, Elapsed: 4 * time.Second, ElapsedAll: 4 * time.Second, DeviceRead: 100 << 20, SentBytes: 125 << 20},
			{Case: "3 outputs", Healthy: 3, Events: 300000, Elapsed: 9 * time.Second, ElapsedAll: 10 * time.Second, DeviceRead: 130 << 20, SentBytes: 375 << 20},
		},
		Isolation: []fanRun{a, {Case: "A + B down", Healthy: 1, Down: 1, Events: 300000, Elapsed: 6500 * time.Millisecond, PeakRSS: 80 << 20, Formula: 219 << 20, Rounds: 3}},
	}
	r := &report{Date: "2026-12-02", Opts: o, Fanout: f}
	md := r.markdown()
	for _, want := range []string{
		"## Fan-out: outputs sharing one ledger",
		"| 1 output | 300000 | 150000000 | 500.0 | 1.00× | 100 | 200 |",
		"| 3 outputs | 310000 | 158100000 | 510.0 | 1.02× | 170 | 236 |",
		"| 1 output | 4.0 | 75000 | 125.0 | 100.0 | 0.800 | 1.00× |",
		"| 3 outputs | 10.0 | 30000 | 375.0 | 130.0 | 0.347 | 1.30× |",
		"| A alone | 6.0 | 50000 | 1.00× | 70 |",
		"| A + B down | 6.5 | 46154 | 0.92× | 80 | 219 |",
		"interleaved 3 times",
		"the median of the per-round ratios",
		"within 5%", "at most 1.5×", "at least 0.9×",
		"`sudo bin/benchreport -parts fanout -fanout-events 300000 -fanout-size 512 -out /tmp/fanout.md`",
		"-fanout-events 300000 -fanout-size 512 -datastreams-events 300000 -datastreams-size 512 -logs LOGS -compression-events 200000 -compression-duration 2s -compression-rounds 2 -processing-events 300000 -processing-rounds 2`)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	r.Fanout = nil
	if strings.Contains(r.markdown(), "Fan-out") {
		t.Errorf("the fan-out section is there although the part did not run")
	}
}

// TestMedianDSPairsRounds: a shape's ratios to classic are taken round by
// round and their median reported, so that a round in which the whole
// machine was slow does not count against one shape only; its CPU is the
// median over the rounds, its drain the median run's.
func TestMedianDSPairsRounds(t *testing.T) {
	run := func(elapsed, cpu time.Duration) dsRun {
		return dsRun{Events: 1000, Elapsed: elapsed, CPU: cpu, PeakRSS: int64(cpu)}
	}
	classic := []dsRun{run(time.Second, time.Second), run(2*time.Second, 2*time.Second), run(time.Second, time.Second)}
	// Round 2 was slow for both; unpaired medians would give 2 s / 1 s.
	shape := []dsRun{run(1100*time.Millisecond, 1040*time.Millisecond), run(2100*time.Millisecond, 2080*time.Millisecond), run(1200*time.Millisecond, 1020*time.Millisecond)}
	m := medianDS(shape, classic)
	if m.CPU != 1040*time.Millisecond || m.Elapsed != 1200*time.Millisecond || m.Rounds != 3 || m.PeakRSS != int64(2080*time.Millisecond) {
		t.Errorf("median run: CPU %v, elapsed %v, rounds %d, peak %d", m.CPU, m.Elapsed, m.Rounds, m.PeakRSS)
	}
	if m.CPURatio != 1.04 {
		t.Errorf("CPU ratio %v, want the median per-round ratio 1.04 (rounds: 1.04, 1.04, 1.02)", m.CPURatio)
	}
	if want := 1 / 1.1; math.Abs(m.SpeedRatio-want) > 1e-9 {
		t.Errorf("speed ratio %v, want the median per-round ratio %v", m.SpeedRatio, want)
	}
	if c := medianDS(classic, classic); c.CPURatio != 1 || c.SpeedRatio != 1 {
		t.Errorf("classic's own ratios %v, %v, want 1", c.CPURatio, c.SpeedRatio)
	}
}

// TestDatastreamsMarkdown: the data streams table gives each shape its
// events, drain time, stall, rate without the stall, rate over classic's, memory and where its
// documents landed, and states the goal and the command that reproduces
// it; from a run of that part alone, it says when and on which revision.
func TestDatastreamsMarkdown(t *testing.T) {
	o := defaultOptions()
	o.dsEvents = 300000
	runs := []dsRun{
		{Shape: lumberload.ShapeClassic, What: dsShapes[0].what, Events: 300000, Elapsed: 7 * time.Second, Stall: time.Second, StallAt: 299008, PeakRSS: 70 << 20, CPU: 3 * time.Second, Formula: 200 << 20, Rounds: 3, SpeedRatio: 1, CPURatio: 1,
			Landed: map[string]int{classicIndex: 300000}},
		{Shape: lumberload.ShapeAgent, What: dsShapes[1].what, Events: 300000, Elapsed: 7500 * time.Millisecond, PeakRSS: 75 << 20, CPU: 3300 * time.Millisecond, Formula: 200 << 20, Rounds: 3, SpeedRatio: 0.8, CPURatio: 1.1,
			Landed: map[string]int{"logs-nginx.error-default": 150000, "logs-nginx.access-default": 150000}},
		{Shape: lumberload.ShapeAgentPartial, What: dsShapes[2].what, Events: 300000, Elapsed: 8 * time.Second, PeakRSS: 80 << 20, CPU: 3600 * time.Millisecond, Formula: 200 << 20, Rounds: 3, SpeedRatio: 0.75, CPURatio: 1.2},
	}
	md := (&report{Date: "2026-12-05", Opts: o, Datastreams: runs}).markdown()
	for _, want := range []string{
		"## Data streams: what routing each event costs",
		"One backlog of 300000 events of 512 B per event shape",
		"interleaved 3 times",
		"the median of the per-round ratios",
		"| classic | no data_stream: to `index`, as sent | 300000 | 7.00 | 1.00 | 50000 | 1.00× | 10.00 | 1.00× | 70 | 200 | 1 index: `beatsbench-1` 300000 |",
		"| agent | Elastic Agent's: @timestamp and a whole data_stream: to its data stream, as sent | 300000 | 7.50 | 0.00 | 40000 | 0.80× | 11.00 | 1.10× | 75 | 200 | 2 data streams: `logs-nginx.access-default` 150000, `logs-nginx.error-default` 150000 |",
		"| agent-partial | ",
		"| 300000 | 8.00 | 0.00 | 37500 | 0.75× | 12.00 | 1.20× | 80 | 200 | – |",
		"count the drain time without the stall",
		"Goals: agent and agent-partial drain at least 0.9× classic's events/s, and cost logpond at most 1.05× classic's CPU per event.",
		"Every row of this section: `sudo bin/benchreport -parts datastreams -datastreams-events 300000 -datastreams-size 512 -out /tmp/ds.md` (after `make build`).",
		"-datastreams-events 300000 -datastreams-size 512 -logs LOGS -compression-events 200000 -compression-duration 2s -compression-rounds 2 -processing-events 300000 -processing-rounds 2`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "in a run of `-parts") {
		t.Errorf("a whole report's data streams section says it comes from a run of some parts:\n%s", md)
	}
	o.parts = "datastreams"
	md = (&report{Date: "2026-12-05 06:27 UTC", Revision: "abc", Opts: o, Datastreams: runs}).markdown()
	if want := "Measured 2026-12-05 06:27 UTC, logpond abc, in a run of `-parts datastreams` on the same machine."; !strings.Contains(md, want) {
		t.Errorf("the section of a datastreams run lacks %q:\n%s", want, md)
	}
	o = defaultOptions()
	if strings.Contains((&report{Opts: o}).markdown(), "Data streams") {
		t.Errorf("the data streams section is there although the part did not run")
	}
	if !strings.Contains(defaultOptions().parts, "datastreams") {
		t.Errorf("datastreams is not among the default parts %q", defaultOptions().parts)
	}
}

// TestCheckLanded: a drain's documents pass only when every classic event
// is in the index and every Agent-shaped event in its own data stream
// with @timestamp and its whole data_stream object; one missing, one in
// the wrong place or one left incomplete fails it.
func TestCheckLanded(t *testing.T) {
	const n = 8
	agentDoc := func(i int, stream, source string) estest.Doc {
		return estest.Doc{Index: ".ds-" + stream + "-000001", DataStream: stream, ID: fmt.Sprint(i), Source: []byte(source)}
	}
	complete := func(i int) string {
		return fmt.Sprintf(`{"@timestamp":"2026-01-01T00:00:00.000Z","data_stream":{"type":"logs","dataset":%q,"namespace":"default"},"n":%d,"message":"x"}`, lumberload.Dataset(i), i)
	}
	var classic, agent []estest.Doc
	for i := range n {
		ev, err := lumberload.ShapedEvent(lumberload.ShapeClassic, 256, i)
		if err != nil {
			t.Fatal(err)
		}
		classic = append(classic, estest.Doc{Index: classicIndex, ID: fmt.Sprint(i), Source: ev})
		agent = append(agent, agentDoc(i, lumberload.DataStream(i), complete(i)))
	}
	landed, err := checkLanded(lumberload.ShapeClassic, classic, n)
	if err != nil || landed[classicIndex] != n || len(landed) != 1 {
		t.Fatalf("classic: %v, %v", landed, err)
	}
	landed, err = checkLanded(lumberload.ShapeAgentPartial, agent, n)
	if err != nil || len(landed) != len(lumberload.Datasets()) || landed[lumberload.DataStream(0)] != n/len(lumberload.Datasets()) {
		t.Fatalf("agent-partial: %v, %v", landed, err)
	}
	bad := func(docs []estest.Doc, i int, d estest.Doc) []estest.Doc {
		out := slices.Clone(docs)
		out[i] = d
		return out
	}
	for name, c := range map[string]struct {
		shape lumberload.Shape
		docs  []estest.Doc
	}{
		"classic missing":            {lumberload.ShapeClassic, classic[1:]},
		"classic in a data stream":   {lumberload.ShapeClassic, bad(classic, 2, agentDoc(2, "logs-generic-default", string(classic[2].Source)))},
		"classic in another index":   {lumberload.ShapeClassic, bad(classic, 2, estest.Doc{Index: "logpond-fallback", ID: "2", Source: classic[2].Source})},
		"agent in the index":         {lumberload.ShapeAgent, bad(agent, 3, estest.Doc{Index: classicIndex, ID: "3", Source: []byte(complete(3))})},
		"agent in the wrong stream":  {lumberload.ShapeAgent, bad(agent, 3, agentDoc(3, lumberload.DataStream(4), complete(3)))},
		"agent-partial not filled":   {lumberload.ShapeAgentPartial, bad(agent, 5, agentDoc(5, lumberload.DataStream(5), fmt.Sprintf(`{"@timestamp":"2026-01-01T00:00:00Z","data_stream":{"dataset":%q},"n":5}`, lumberload.Dataset(5))))},
		"agent-partial no timestamp": {lumberload.ShapeAgentPartial, bad(agent, 6, agentDoc(6, lumberload.DataStream(6), fmt.Sprintf(`{"data_stream":{"type":"logs","dataset":%q,"namespace":"default"},"n":6}`, lumberload.Dataset(6))))},
		"not an event":               {lumberload.ShapeAgent, bad(agent, 7, agentDoc(7, lumberload.DataStream(7), `{"message":"x"}`))},
	} {
		if _, err := checkLanded(c.shape, c.docs, n); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

// TestProcEvents: the processing backlog's events are Filebeat events of
// about 1 KiB around lines of about 200 B that differ from one another,
// one in 20 an OPTIONS request and one in 10 a line the tokenizer does
// not match; procKindOf reads each line's kind back; and the real chain,
// compiled from procChain as logpond's configuration holds it, drops
// exactly the OPTIONS requests and leaves documents that checkProcessed
// takes, while the events as received pass the check without the chain.
func TestProcEvents(t *testing.T) {
	const n = 2000
	events := procEvents(n)
	var census procCensus
	lines := map[string]bool{}
	for i, ev := range events {
		var v struct {
			Message string `json:"message"`
			Log     struct{ Offset int64 }
		}
		if err := json.Unmarshal(ev, &v); err != nil {
			t.Fatalf("event %d is not JSON: %v\n%s", i, err, ev)
		}
		line, kind := procLine(i)
		if v.Message != line || procKindOf(line) != kind {
			t.Fatalf("event %d: message %q, kind %v; the line %q, kind %v", i, v.Message, procKindOf(v.Message), line, kind)
		}
		if len(ev) < 900 || len(ev) > 1150 || len(line) < 140 || len(line) > 260 {
			t.Errorf("event %d is %d B, its line %d B: %s", i, len(ev), len(line), line)
		}
		lines[line] = true
		census.Events++
		census.EventBytes += int64(len(ev))
		census.MessageBytes += int64(len(line))
		switch kind {
		case procOptions:
			census.Options++
		case procUnmatched:
			census.Unmatched++
		}
	}
	if census.Options != n/20 || census.Unmatched != n/10 || len(lines) != n {
		t.Fatalf("%d OPTIONS requests, %d unmatched lines, %d distinct lines in %d events", census.Options, census.Unmatched, len(lines), n)
	}
	if mean := float64(census.EventBytes) / n; mean < 980 || mean > 1070 {
		t.Errorf("events are %.0f B on average, not about 1 KiB", mean)
	}
	if mean := float64(census.MessageBytes) / n; mean < 180 || mean > 220 {
		t.Errorf("lines are %.0f B on average, not about 200 B", mean)
	}

	var cfg struct {
		Processors conf.Processors `toml:"processors"`
	}
	if _, err := toml.Decode(procChain, &cfg); err != nil {
		t.Fatalf("procChain: %v", err)
	}
	list, err := processors.Compile("processors", cfg.Processors)
	if err != nil {
		t.Fatalf("procChain: %v", err)
	}
	if list.Len() != 5 {
		t.Fatalf("procChain has %d processors", list.Len())
	}
	runner := processors.NewChain(list).NewRunner()
	var processed, received []estest.Doc
	for i, ev := range events {
		received = append(received, estest.Doc{ID: fmt.Sprint(i), Source: ev})
		out, keep, err := runner.Run(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, kind := procLine(i); keep != (kind != procOptions) {
			t.Fatalf("event %d (kind %v) kept: %v\n%s", i, kind, keep, ev)
		}
		if keep {
			processed = append(processed, estest.Doc{ID: fmt.Sprint(i), Source: slices.Clone(out)})
		}
	}
	dropped, dissected, flagged, err := checkProcessed(processed, true, census)
	if err != nil {
		t.Fatalf("the chain's documents: %v", err)
	}
	if dropped != census.Options || flagged != census.Unmatched || dissected != census.Events-census.Options-census.Unmatched {
		t.Fatalf("dropped %d, dissected %d, flagged %d", dropped, dissected, flagged)
	}
	if _, _, _, err := checkProcessed(received, false, census); err != nil {
		t.Fatalf("the events as received: %v", err)
	}

	// What the checks refuse.
	swap := func(docs []estest.Doc, i int, source string) []estest.Doc {
		out := slices.Clone(docs)
		out[i].Source = []byte(source)
		return out
	}
	options := received[7] // line 7 is an OPTIONS request
	unmatched := slices.IndexFunc(processed, func(d estest.Doc) bool { return d.ID == "3" })
	for name, c := range map[string]struct {
		docs  []estest.Doc
		chain bool
	}{
		"a document missing":         {processed[1:], true},
		"an OPTIONS request stored":  {swap(processed, 0, string(options.Source)), true},
		"an event left as received":  {swap(processed, 0, string(received[0].Source)), true},
		"no label":                   {swap(processed, 0, strings.Replace(string(processed[0].Source), `"labels"`, `"label"`, 1)), true},
		"a line not flagged":         {swap(processed, unmatched, strings.Replace(string(processed[unmatched].Source), "dissect_parsing_error", "x", 1)), true},
		"the status code a string":   {swap(processed, 0, strings.Replace(string(processed[0].Source), `"status_code":200`, `"status_code":"200"`, 1)), true},
		"processed without a chain":  {swap(received, 0, string(processed[0].Source)), false},
		"an event missing, no chain": {received[1:], false},
	} {
		if _, _, _, err := checkProcessed(c.docs, c.chain, census); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
	if !strings.Contains(string(processed[0].Source), `"status_code":200`) {
		t.Fatalf("event 0's document has not the status 200 the check above changes: %s", processed[0].Source)
	}
}

// TestParseProcBench takes the medians of go test -bench's result lines
// per sub-benchmark (a -N suffix of GOMAXPROCS aside) and refuses output
// that lacks a sub-benchmark or a count of one.
func TestParseProcBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/logpond/logpond/output/processors
cpu: Some CPU @ 2.00GHz
BenchmarkProcessing/parse+serialize         	 1000000	      2100 ns/op	 487.62 MB/s	    476190 events/s	     128 B/op	       2 allocs/op
BenchmarkProcessing/parse+serialize         	 1000000	      2000 ns/op	 512.00 MB/s	    500000 events/s	     128 B/op	       2 allocs/op
BenchmarkProcessing/parse+serialize         	 1000000	      2500 ns/op	 409.60 MB/s	    400000 events/s	     128 B/op	       2 allocs/op
BenchmarkProcessing/dissect+rename+drop_fields+add_fields-2         	  500000	      4000 ns/op	 256.00 MB/s	    250000 events/s	     512 B/op	      12 allocs/op
BenchmarkProcessing/dissect+rename+drop_fields+add_fields-2         	  500000	      3000 ns/op	 341.33 MB/s	    333333 events/s	     512 B/op	      11 allocs/op
BenchmarkProcessing/dissect+rename+drop_fields+add_fields-2         	  500000	      5000 ns/op	 204.80 MB/s	    200000 events/s	     512 B/op	      13 allocs/op
BenchmarkProcessing/grok-COMBINEDAPACHELOG  	  200000	      9000 ns/op	 113.78 MB/s	    111111 events/s	    1024 B/op	      20 allocs/op
BenchmarkProcessing/grok-COMBINEDAPACHELOG  	  200000	      9000 ns/op	 113.78 MB/s	    111111 events/s	    1024 B/op	      20 allocs/op
BenchmarkProcessing/grok-COMBINEDAPACHELOG  	  200000	      9000 ns/op	 113.78 MB/s	    111111 events/s	    1024 B/op	      20 allocs/op
BenchmarkProcessing/decode_json_fields      	  300000	      3000 ns/op	 341.33 MB/s	    333333 events/s	     900 B/op	      30 allocs/op
BenchmarkProcessing/decode_json_fields      	  300000	      3000 ns/op	 341.33 MB/s	    333333 events/s	     900 B/op	      30 allocs/op
BenchmarkProcessing/decode_json_fields      	  300000	      3000 ns/op	 341.33 MB/s	    333333 events/s	     900 B/op	      30 allocs/op
PASS
ok  	github.com/logpond/logpond/output/processors	60.123s
`
	rows, err := parseProcBench(out, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	if r := rows[0]; r.Name != "parse+serialize" || r.NsPerEvent != 2100 || r.EventsPerSec != 476190 || r.AllocsPerOp != 2 || r.BytesPerOp != 128 || r.Goal != 0 || r.Met() {
		t.Errorf("parse+serialize: %+v", r)
	}
	if r := rows[1]; r.NsPerEvent != 4000 || r.EventsPerSec != 250000 || r.AllocsPerOp != 12 || r.Goal != 500000 || r.Met() {
		t.Errorf("dissect chain: %+v", r)
	}
	if r := rows[2]; r.Name != "grok-COMBINEDAPACHELOG" || r.Goal != 100000 || !r.Met() {
		t.Errorf("grok: %+v", r)
	}
	if r := rows[3]; r.Goal != 300000 || !r.Met() || r.Counts != 3 {
		t.Errorf("decode_json_fields: %+v", r)
	}
	if _, err := parseProcBench(out, 4); err == nil {
		t.Errorf("3 counts taken for 4")
	}
	var cut []string
	for line := range strings.Lines(out) {
		if !strings.Contains(line, "grok") {
			cut = append(cut, line)
		}
	}
	if _, err := parseProcBench(strings.Join(cut, ""), 3); err == nil || !strings.Contains(err.Error(), "grok-COMBINEDAPACHELOG") {
		t.Errorf("no grok lines: %v", err)
	}
	if got := procBenchCommand(defaultOptions()); got != `GOMAXPROCS=1 go test -run '^$' -bench '^BenchmarkProcessing$' -benchtime 2s -count 3 ./output/processors/` {
		t.Errorf("command: %s", got)
	}
}

// TestProcMarkdown: the processing section shows the one-core medians
// beside their goals, every drain run with its peak RSS, the medians with
// and without the chain, the ratios against their goals and the commands
// that reproduce it; from a run of that part alone, it says when and on
// which revision.
func TestProcMarkdown(t *testing.T) {
	o := defaultOptions()
	census := procCensus{Events: 300000, Options: 15000, Unmatched: 30000, EventBytes: 300000 * 1030, MessageBytes: 300000 * 201}
	run := func(chain bool, elapsed, stall, cpu time.Duration, rss int64) procRun {
		r := procRun{Chain: chain, Events: census.Events, Stored: int(census.Events), Elapsed: elapsed, Stall: stall, CPU: cpu, PeakRSS: rss << 20, Formula: 200 << 20}
		if chain {
			r.Stored, r.Dropped, r.Dissected, r.Flagged = int(census.Kept()), census.Options, 255000, census.Unmatched
		}
		return r
	}
	res := &procResult{GoVersion: "go1.26.8", Census: census,
		Bench: []procBenchRow{
			{Name: "parse+serialize", What: procBenches[0].what, Counts: 3, NsPerEvent: 2000, EventsPerSec: 500000, AllocsPerOp: 2, BytesPerOp: 128},
			{Name: "dissect+rename+drop_fields+add_fields", What: procBenches[1].what, Goal: 500000, Counts: 3, NsPerEvent: 2500, EventsPerSec: 400000, AllocsPerOp: 12, BytesPerOp: 512},
			{Name: "grok-COMBINEDAPACHELOG", What: procBenches[2].what, Goal: 100000, Counts: 3, NsPerEvent: 9000, EventsPerSec: 111111, AllocsPerOp: 20, BytesPerOp: 1024},
		},
		Runs: []procRun{
			run(false, 6*time.Second, time.Second, 3*time.Second, 70),
			run(true, 7*time.Second, 500*time.Millisecond, 4500*time.Millisecond, 80),
			run(false, 7*time.Second, time.Second, 3*time.Second, 72),
			run(true, 8*time.Second, 500*time.Millisecond, 4800*time.Millisecond, 85),
		}}
	none, chain := res.summary(false), res.summary(true)
	if none.Elapsed != 6.5 || none.EventsPerSec != 55000 || none.PeakRSS != 72<<20 || chain.Elapsed != 7.5 || chain.EventsPerSec != (300000/6.5+300000/7.5)/2 || none.Runs != 2 {
		t.Fatalf("summaries: %+v, %+v", none, chain)
	}
	md := (&report{Date: "2026-12-05", Opts: o, Processing: res}).markdown()
	for _, want := range []string{
		"## Processing: what a chain of processors costs",
		"`sudo bin/benchreport -parts processing -processing-events 300000 -processing-rounds 2 -out /tmp/processing.md` (after `make build`)",
		"`GOMAXPROCS=1 go test -run '^$' -bench '^BenchmarkProcessing$' -benchtime 2s -count 3 ./output/processors/` from the repository's root",
		"Peak RSS does not apply to these figures",
		"| parse+serialize | ", "| 2000 | 500000 | 2 | 128 | n/a (in-process) | – | no goal: the floor |",
		"| 2500 | 400000 | 12 | 512 | n/a (in-process) | ≥ 500000 | **not met** (400000) |",
		"| 9000 | 111111 | 20 | 1024 | n/a (in-process) | ≥ 100000 | **met** (111111) |",
		"A backlog of 300000 Filebeat 9 events (1030 B each on average",
		"(201 B on average)", "(15000 in the backlog)", "(30000)", "interleaved 2 times",
		"[processors.drop_event.when.equals]",
		"| 1 | none | 300000 | 300000 | – | – | – | 6.00 | 1.00 | 60000 | 10.00 | 70 | 200 |",
		"| 2 | chain | 300000 | 285000 | 15000 | 255000 | 30000 | 7.00 | 0.50 | 46154 | 15.00 | 80 | 200 |",
		"| none | 6.50 | 55000 | 10.00 | 72 |",
		"| chain | 7.50 | 43077 | 15.50 | 85 |",
		"The chain costs logpond 5.50 µs of CPU per event (1.55× none's).",
		"events/s at least 0.8×, verdict **not met** (0.78×)",
		"drain time at most 1.5×, verdict **met** (1.15×)",
		"GOMAXPROCS=1 go test -run '^$' -bench '^BenchmarkProcessing$' -benchtime 2s -count 3 ./output/processors/   # the processor chains alone, one core",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "in a run of `-parts") {
		t.Errorf("a whole report's processing section says it comes from a run of some parts")
	}
	o.parts = "processing"
	md = (&report{Date: "2026-12-05 06:27 UTC", Revision: "abc", Opts: o, Processing: res}).markdown()
	if want := "Measured 2026-12-05 06:27 UTC, logpond abc, in a run of `-parts processing` on the same machine."; !strings.Contains(md, want) {
		t.Errorf("the section of a processing run lacks %q", want)
	}
	if strings.Contains((&report{Opts: defaultOptions()}).markdown(), "## Processing") {
		t.Errorf("the processing section is there although the part did not run")
	}
	if !strings.Contains(defaultOptions().parts, "processing") {
		t.Errorf("processing is not among the default parts %q", defaultOptions().parts)
	}
}

// TestParseHotPaths divides each hot path's medians by its events per
// operation, and refuses output that lacks a benchmark's runs or its
// events/op.
func TestParseHotPaths(t *testing.T) {
	var out strings.Builder
	for _, h := range hotPaths {
		for i := range hotPathCount {
			n := 1.0
			if strings.HasPrefix(h.name, "BenchmarkReadBatch") {
				n = 2048
			}
			fmt.Fprintf(&out, "%s-2 \t 100\t %.0f ns/op\t 5.0 MB/s\t %.0f events/op\t %.0f B/op\t %.0f allocs/op\n", h.name, n*float64(100+i), n, n*8, n*float64(i))
		}
	}
	rows, err := parseHotPaths("goos: linux\n" + out.String() + "PASS\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(hotPaths) {
		t.Fatalf("%d rows for %d hot paths", len(rows), len(hotPaths))
	}
	for _, r := range rows {
		if r.NsPerEvent != 101 || r.BytesPerEvent != 8 || r.AllocsPerEvent != 1 {
			t.Errorf("%s: %v ns, %v B, %v allocs per event; want the medians per event: 101, 8, 1", r.name, r.NsPerEvent, r.BytesPerEvent, r.AllocsPerEvent)
		}
	}
	md := hotPathMarkdown(rows, "")
	if !strings.Contains(md, "| `BenchmarkReadBatch/plain` | input |") || !strings.Contains(md, "| 2048 | 101.0 | 8.00 | 1.000 |") {
		t.Errorf("hot path table:\n%s", md)
	}
	noMetric := strings.ReplaceAll(out.String(), "events/op", "widgets/op")
	if _, err := parseHotPaths(noMetric); err == nil || !strings.Contains(err.Error(), "events/op") {
		t.Errorf("output without events/op: %v, want an error naming it", err)
	}
	lines := strings.SplitAfter(out.String(), "\n")
	if _, err := parseHotPaths(strings.Join(lines[1:], "")); err == nil || !strings.Contains(err.Error(), hotPaths[0].name) {
		t.Errorf("output with a run missing: %v, want an error naming %s", err, hotPaths[0].name)
	}
}

// TestIngestLoads: each size at zlib 0 and 3 in a Filebeat window of at
// most about 6 MiB, then, given payloads, the real-log loads at zlib 0
// and 3 with the payloads' mean size.
func TestIngestLoads(t *testing.T) {
	got := ingestLoads([]int{256, 90 << 10}, time.Second, nil)
	if len(got) != 4 || got[0].cfg.Batch != 2048 || got[2].cfg.Batch != 68 || got[1].cfg.Compression != 3 || got[3].name != "90 KiB" || got[0].shape != "" {
		t.Fatalf("synthetic loads: %+v", got)
	}
	payloads := [][]byte{[]byte(`{"a":1}`), []byte(`{"message":"x"}`)}
	got = ingestLoads([]int{256}, time.Second, payloads)
	if len(got) != 4 {
		t.Fatalf("%d loads, want 2 synthetic and 2 of real logs", len(got))
	}
	for i, comp := range []int{0, 3} {
		l := got[2+i]
		if l.shape != "real logs" || l.cfg.Compression != comp || l.cfg.EventSize != 11 || len(l.cfg.Payloads) != 2 || l.cfg.Duration != time.Second {
			t.Errorf("real-log load %d: %+v", i, l)
		}
	}
}

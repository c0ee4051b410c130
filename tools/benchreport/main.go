// Command benchreport measures logpond end to end and writes
// docs/benchmarks.md (run it as `make bench-report`, as root):
//
//   - ingest: events/s, MB/s, ack latency p50/p99/p999, server CPU seconds
//     per million events and peak RSS for 256 B, 1 KiB and 90 KiB events
//     with zlib compression 0 and 3, logpond beside the no-durability
//     (noop) and naive-durable baselines of beatsbench, interleaved in
//     rounds within one run;
//   - isolation: ack latency at a fixed rate with the Elasticsearch output
//     idle, draining a catch-up backlog of -backlog bytes, and with the
//     ledger's loop device throttled by a blkio cgroup, plotted over time
//     (a PNG beside the report);
//   - drain: a backlog of -drain-events events drained into an estest
//     server that accepts everything, rejects at random (10% of items
//     429, 2% of requests 503), accepts only a third of the clean rate (a
//     token bucket, 429 beyond), or refuses every item for -drain-refusal
//     and then accepts a third of the clean rate; then a backlog of
//     -drain-cpu-events events -rounds times into the accept-all sink,
//     for logpond's CPU per delivered event;
//   - many small clients: -small-conns connections each sending windows of
//     50 events, records per journal fsync counted from /metrics and, under
//     strace, at the syscall;
//   - fanout: named Elasticsearch outputs sharing one ledger: the ledger's
//     bytes for the same load with 1 and 3 outputs, the device bytes read
//     draining one backlog with 1 and with 3 outputs in step, and one
//     output's drain rate alone and beside an output whose server is down
//     (-fanout-events events of -fanout-size bytes);
//   - datastreams: what routing each event to its data stream costs: one
//     backlog per event shape (classic Beats events, Elastic Agent events,
//     Agent events the output must complete), -datastreams-events events
//     of -datastreams-size bytes each, drained into an estest server with
//     data_stream = "auto", checking where every event landed;
//   - compression: the ledger's zstd records on real log lines (-logs,
//     wrapped as Filebeat events): the codecs compared in-process, the
//     ledger's bytes per event byte, ingest and the drain of a backlog
//     with the default compression beside compression = "none". Without
//     the folder of logs the part says so and skips itself;
//   - processing: what the outputs' processors cost: BenchmarkProcessing's
//     chains on one core (go test -bench with GOMAXPROCS=1), and a
//     backlog of -processing-events Filebeat events carrying Apache log
//     lines drained into an estest server without processors and with a
//     five-processor chain (dissect, drop_event, rename, drop_fields,
//     add_fields), interleaved -processing-rounds times, checking what
//     the chain left in the server;
//   - hotpaths: the Go benchmarks of the per-event hot paths (reading a
//     window, building a record, decoding it, encoding an event for
//     Elasticsearch) on one core with -benchmem, per event.
//
// The journal goes under the work directory on this machine's disk; the
// ledger goes on a loop-mounted ext4 whose image lives in /dev/shm, so the
// two stores are on different block devices as docs/design.md, §8 asks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/logpond/logpond/tools/internal/lumberload"
)

type options struct {
	out, png, bin  string
	cpuProfiles    string // when set, every logpond run writes a CPU profile here
	flamegraph     string // flamegraph.pl's path: when set, flame graphs of the ingest and drain paths
	work           string // where the journal and the loop image's mount point go
	duration       time.Duration
	rounds         int
	sizes          []int
	backlog        int64
	isoDuration    time.Duration
	isoRate        float64
	isoRounds      int // the isolation part's three phases are run this many times
	throttleBPS    int64
	smallConns     int
	smallDuration  time.Duration
	ledgerImage    int64
	settle         time.Duration // wait after deleting a run's stores (lumberload.Trash)
	parts          string        // comma-separated: ingest, isolation, small, drain, fanout, datastreams, compression, kafka, processing, hotpaths
	drainEvents    int64
	drainCPUEvents int64
	drainSize      int
	drainLimit     time.Duration // a drain profile that takes longer fails the run
	drainRefusal   time.Duration // the storm profile refuses every item this long first
	fanoutEvents   int64         // events of the fan-out runs' load and backlog
	fanoutSize     int
	dsEvents       int64 // events of each shape's backlog in the datastreams part
	dsSize         int
	logs           string        // folder of *.log files of real log lines (the compression part)
	zEvents        int64         // events of the compression part's ledger loads and backlogs
	zDuration      time.Duration // length of each of its ingest measurements
	zRounds        int           // its interleaved rounds of zstd and none
	procEvents     int64         // events of the processing part's backlog
	procRounds     int           // its interleaved rounds of drains without and with the chain
	procBenchtime  string        // go test -benchtime of its one-core figures
	procCount      int           // go test -count of its one-core figures
}

func defaultOptions() options {
	return options{
		out: "docs/benchmarks.md", png: "docs/benchmarks-isolation.png", bin: "bin",
		work: os.TempDir(), duration: 5 * time.Second, rounds: 3, sizes: []int{256, 1024, 90 << 10},
		backlog: 2 << 30, isoDuration: 40 * time.Second, isoRate: 20000, isoRounds: 3, throttleBPS: 4 << 20,
		smallConns: 500, smallDuration: 10 * time.Second, ledgerImage: 14 << 30,
		settle: 5 * time.Second, parts: "ingest,isolation,small,drain,fanout,datastreams,compression,kafka,processing,hotpaths",
		drainEvents: 500000, drainCPUEvents: 2000000, drainSize: 512, drainLimit: 10 * time.Minute, drainRefusal: 10 * time.Second,
		fanoutEvents: 300000, fanoutSize: 512, dsEvents: 300000, dsSize: 512,
		// Relative to the repository's root, where make bench-report runs.
		logs: "", zEvents: 200000, zDuration: 2 * time.Second, zRounds: 2,
		procEvents: 300000, procRounds: 2, procBenchtime: "2s", procCount: 3,
	}
}

func main() {
	o := defaultOptions()
	flag.StringVar(&o.out, "out", o.out, "the report to write (Markdown)")
	flag.StringVar(&o.png, "png", o.png, "the latency-over-time plot of the isolation run (PNG)")
	flag.StringVar(&o.bin, "bin", o.bin, "directory holding logpond and beatsbench")
	flag.StringVar(&o.flamegraph, "flamegraph", o.flamegraph, "draw flame graphs of the ingest path (the ingest part's 256 B, zlib 0 runs) and of the drain (the processing part's runs, without and with the chain) with this flamegraph.pl (github.com/brendangregg/FlameGraph), beside -out")
	flag.StringVar(&o.cpuProfiles, "cpuprofiles", o.cpuProfiles, "write a CPU profile of every logpond run to this directory, named for the run's configuration (for `go tool pprof`; profiling costs a few percent of CPU)")
	flag.StringVar(&o.work, "work", o.work, "directory for the journal (put it on the disk to measure)")
	flag.DurationVar(&o.duration, "duration", o.duration, "length of each ingest measurement")
	flag.IntVar(&o.rounds, "rounds", o.rounds, "interleaved rounds of noop, naive and logpond per event size and compression")
	backlog := flag.Int64("backlog", o.backlog, "bytes of ledger backlog the isolation run drains while it measures")
	flag.DurationVar(&o.isoDuration, "isolation-duration", o.isoDuration, "length of each isolation phase")
	flag.Float64Var(&o.isoRate, "isolation-rate", o.isoRate, "events/s sent during the isolation phases")
	flag.IntVar(&o.isoRounds, "isolation-rounds", o.isoRounds, "how many times the isolation phases run (the table shows the first; every round's ratios are listed)")
	flag.Int64Var(&o.throttleBPS, "throttle", o.throttleBPS, "bytes/s each way the ledger's device is throttled to in the isolation run")
	flag.IntVar(&o.smallConns, "small-conns", o.smallConns, "connections of the many-small-clients run")
	flag.DurationVar(&o.smallDuration, "small-duration", o.smallDuration, "length of the many-small-clients runs")
	flag.Int64Var(&o.drainEvents, "drain-events", o.drainEvents, "events in the drain run's backlog")
	flag.Int64Var(&o.drainCPUEvents, "drain-cpu-events", o.drainCPUEvents, "events in the backlog the drain run drains into the accept-all sink for logpond's CPU per event")
	flag.IntVar(&o.drainSize, "drain-size", o.drainSize, "bytes per event of the drain run's backlog")
	flag.DurationVar(&o.drainRefusal, "drain-refusal", o.drainRefusal, "how long the drain run's storm profile refuses every item before it accepts a third of the clean rate")
	flag.Int64Var(&o.fanoutEvents, "fanout-events", o.fanoutEvents, "events of the fan-out runs' load and backlog")
	flag.IntVar(&o.fanoutSize, "fanout-size", o.fanoutSize, "bytes per event of the fan-out runs")
	flag.Int64Var(&o.dsEvents, "datastreams-events", o.dsEvents, "events of each event shape's backlog in the datastreams run")
	flag.IntVar(&o.dsSize, "datastreams-size", o.dsSize, "bytes per event of the datastreams run (every shape the same)")
	flag.StringVar(&o.logs, "logs", o.logs, "folder of *.log files of real log lines for the compression part (it skips itself without them)")
	flag.Int64Var(&o.zEvents, "compression-events", o.zEvents, "real-log events of each ledger load and backlog in the compression part")
	flag.DurationVar(&o.zDuration, "compression-duration", o.zDuration, "length of each ingest measurement in the compression part")
	flag.IntVar(&o.zRounds, "compression-rounds", o.zRounds, "interleaved rounds of zstd and none in the compression part's ingest and drain")
	flag.Int64Var(&o.procEvents, "processing-events", o.procEvents, "events of the processing part's backlog (1 KiB Filebeat events carrying Apache log lines)")
	flag.IntVar(&o.procRounds, "processing-rounds", o.procRounds, "interleaved rounds of drains without and with the chain in the processing part")
	flag.StringVar(&o.parts, "parts", o.parts, "which measurements to run, comma-separated, of ingest, isolation, small, drain, fanout, datastreams, compression, kafka, processing and hotpaths (a partial report, for trying things out)")
	flag.Parse()
	o.backlog = *backlog
	if o.rounds < 1 || o.duration <= 0 || o.isoDuration <= 0 || o.isoRounds < 1 || o.smallDuration <= 0 || o.isoRate <= 0 || o.smallConns < 1 || o.backlog < 1 || o.drainEvents < 1 || o.drainCPUEvents < 1 || o.drainSize < 1 || o.fanoutEvents < 1 || o.fanoutSize < 1 || o.dsEvents < 1 || o.dsSize < 1 || o.zEvents < 1 || o.zDuration <= 0 || o.zRounds < 1 || o.procEvents < 1 || o.procRounds < 1 || o.drainRefusal <= 0 || o.throttleBPS < 1 {
		fmt.Fprintln(os.Stderr, "benchreport: -rounds, the durations, -isolation-rate, -small-conns, -backlog, -throttle and the event counts and sizes must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// run measures everything and writes the report and the plot.
func run(ctx context.Context, o options, progress *os.File) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (it mounts a loop device for the ledger and creates a blkio cgroup)")
	}
	for _, b := range []string{"logpond", "beatsbench"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return fmt.Errorf("%s: build it first (make build): %w", b, err)
		}
	}
	for _, tool := range []string{"mkfs.ext4", "losetup", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed to give the ledger its own device: %w", tool, err)
		}
	}
	if o.flamegraph != "" {
		if _, err := exec.LookPath(o.flamegraph); err != nil {
			return fmt.Errorf("-flamegraph: %w", err)
		}
	}
	work, err := os.MkdirTemp(o.work, "benchreport-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var profileOnly map[string]bool
	if o.flamegraph != "" && o.cpuProfiles == "" {
		// The flame graphs need the profiles of their runs, and nothing
		// else does: the other runs go unprofiled, so that profiling
		// costs none of their figures.
		o.cpuProfiles = filepath.Join(work, "profiles")
		if err := os.MkdirAll(o.cpuProfiles, 0o755); err != nil {
			return err
		}
		profileOnly = flameConfigs()
	}
	lfs, err := mountLoop(filepath.Join("/dev/shm", filepath.Base(work)+".img"), filepath.Join(work, "ledger-fs"), o.ledgerImage)
	if err != nil {
		return err
	}
	defer lfs.unmount()
	b := &bench{o: o, work: work, lfs: lfs, log: progress, trash: &lumberload.Trash{}, profileOnly: profileOnly}
	defer b.trash.Empty(0)
	rep := &report{
		Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Machine: machine(), Revision: revision(),
		JournalDev: deviceOf(work), LedgerDev: fmt.Sprintf("%s, ext4 on %s (image in /dev/shm, a RAM-backed file)", lfs.dev, lfs.img),
		Opts: o,
	}
	parts := map[string]bool{}
	for _, p := range strings.Split(o.parts, ",") {
		parts[strings.TrimSpace(p)] = true
	}
	if parts["ingest"] {
		if rep.Ingest, err = b.ingest(ctx); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
	}
	if parts["isolation"] {
		for round := range o.isoRounds {
			phases, err := b.isolation(ctx, round == 0)
			if err != nil {
				return fmt.Errorf("isolation: %w", err)
			}
			rep.IsoRounds = append(rep.IsoRounds, phases)
		}
		rep.Isolation = rep.IsoRounds[0]
		if err := writePlot(o.png, o.isoRate, rep.Isolation); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		rep.PNG = filepath.Base(o.png)
	}
	if parts["small"] {
		if rep.Small, rep.StraceNote, err = b.smallClients(ctx); err != nil {
			return fmt.Errorf("many small clients: %w", err)
		}
	}
	if parts["drain"] {
		if rep.Drain, rep.DrainCPU, err = b.drain(ctx); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	if parts["fanout"] {
		if rep.Fanout, err = b.fanout(ctx); err != nil {
			return fmt.Errorf("fanout: %w", err)
		}
	}
	if parts["datastreams"] {
		if rep.Datastreams, err = b.datastreams(ctx); err != nil {
			return fmt.Errorf("datastreams: %w", err)
		}
	}
	if parts["compression"] {
		if rep.Compression, err = b.compression(ctx); err != nil {
			return fmt.Errorf("compression: %w", err)
		}
	}
	if parts["kafka"] {
		if rep.Kafka, err = b.kafka(ctx); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
	}
	if parts["processing"] {
		if rep.Processing, err = b.processing(ctx); err != nil {
			return fmt.Errorf("processing: %w", err)
		}
	}
	if parts["hotpaths"] {
		if rep.HotPaths, err = b.hotPathBench(ctx); err != nil {
			return fmt.Errorf("hotpaths: %w", err)
		}
	}
	if o.flamegraph != "" && ctx.Err() == nil {
		if rep.Flames, err = b.flames(parts); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		// Interrupted: the figures are partial; keep the old report.
		return fmt.Errorf("interrupted, %s left as it was: %w", o.out, err)
	}
	if err := os.WriteFile(o.out, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	if rep.PNG == "" {
		fmt.Fprintf(progress, "wrote %s\n", o.out)
		return nil
	}
	fmt.Fprintf(progress, "wrote %s and %s\n", o.out, o.png)
	return nil
}

// The lines logpond logs when it listens.
var (
	beatsRE = regexp.MustCompile(`beats input listening" addr=(\S+)`)
	adminRE = regexp.MustCompile(`admin listening" addr=(\S+)`)
	noopRE  = regexp.MustCompile(`listening (\S+)`)
)

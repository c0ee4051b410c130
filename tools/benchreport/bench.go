package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// bench runs the measurements; one at a time, on fresh stores.
type bench struct {
	o     options
	work  string
	lfs   *loopFS
	log   io.Writer
	trash *lumberload.Trash
	runs  int // logpond processes started, numbering their CPU profiles
	// profileOnly, when set, names the configurations whose runs write
	// profiles (with cpuProfiles); the others write none.
	profileOnly map[string]bool
}

func (b *bench) journalDir() string { return filepath.Join(b.work, "journal") }
func (b *bench) ledgerDir() string  { return filepath.Join(b.lfs.dir, "ledger") }

// fresh moves both stores (and the naive baseline's file, which lives in
// the journal's directory) to the trash, so that every run starts empty.
// With settle, it also empties the trash and waits for the disk to settle
// (lumberload.Trash): the ingest rounds settle before the noop server,
// which does not touch the disk, so no server pays for the deletion of
// another's files.
func (b *bench) fresh(settle bool) error {
	for _, d := range []string{b.journalDir(), b.ledgerDir()} {
		if err := b.trash.Move(d); err != nil {
			return err
		}
	}
	if !settle {
		return nil
	}
	if err := b.trash.Empty(b.o.settle); err != nil {
		return err
	}
	// Give the deleted ledger's blocks back to /dev/shm now rather than
	// when ext4 gets round to it.
	exec.Command("fstrim", b.lfs.dir).Run()
	return nil
}

// config writes a logpond configuration and returns its path. es is the
// Elasticsearch URL to drain into, "" for no output.
func (b *bench) config(name, es string) (string, error) { return b.configWith(name, es, "") }

// configWith is config with more lines (each ending in a newline) in the
// [ledger] section.
func (b *bench) configWith(name, es, ledger string) (string, error) {
	return b.configOut(name, es, ledger, "")
}

// configOut is configWith with more lines (each ending in a newline) in
// the [output.elasticsearch] section, when es is set.
func (b *bench) configOut(name, es, ledger, output string) (string, error) {
	out := "enabled = false"
	if es != "" {
		out = fmt.Sprintf("hosts = [%q]\n%s", es, output)
	}
	text := fmt.Sprintf(`[journal]
dir = %q
[ledger]
dir = %q
max_bytes = "%dMiB"
%s[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
%s
[admin]
listen = "127.0.0.1:0"
[log]
level = "info"
`, b.journalDir(), b.ledgerDir(), b.o.ledgerImage*3/4>>20, ledger, out)
	path := filepath.Join(b.work, name+".toml")
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// formula is the memory formula's value (conf.Memory, docs/operations.md)
// for the configuration at path: what the report shows beside each run's
// measured peak RSS.
func formula(path string) (int64, error) {
	c, err := conf.Load(path)
	if err != nil {
		return 0, fmt.Errorf("the memory formula of %s: %w", path, err)
	}
	return c.Memory().Total(), nil
}

// profileArgs are the arguments that make a logpond run write its CPU
// profile (with -cpuprofiles), named NNN-<name>.pprof in run order, and
// its block and mutex profiles beside it, NNN-<name>-block.pprof and
// NNN-<name>-mutex.pprof; none without, or for a configuration
// profileOnly leaves out.
func (b *bench) profileArgs(name string) []string {
	b.runs++
	if b.o.cpuProfiles == "" || (b.profileOnly != nil && !b.profileOnly[name]) {
		return nil
	}
	path := func(suffix string) string {
		return filepath.Join(b.o.cpuProfiles, fmt.Sprintf("%03d-%s%s.pprof", b.runs, name, suffix))
	}
	return []string{"-cpuprofile", path(""), "-blockprofile", path("-block"), "-mutexprofile", path("-mutex")}
}

// logpond starts bin/logpond with a configuration (optionally under a
// wrapper command such as strace) and returns it with its admin address.
func (b *bench) logpond(cfg string, wrapper ...string) (*lumberload.Process, string, error) {
	args := append(wrapper, filepath.Join(b.o.bin, "logpond"), "-config", cfg)
	args = append(args, b.profileArgs(strings.TrimSuffix(filepath.Base(cfg), filepath.Ext(cfg)))...)
	p, err := lumberload.Start(exec.Command(args[0], args[1:]...), beatsRE)
	if err != nil {
		return nil, "", err
	}
	// The admin line comes before the beats line.
	m := p.Find(adminRE)
	if m == nil {
		p.Stop()
		return nil, "", fmt.Errorf("logpond logged no admin address:\n%s", p.Output())
	}
	return p, m[1], nil
}

// summary is one server's figures for one shape, over the rounds.
type summary struct {
	EventsPerSec, MBPerSec float64
	P50, P99, P999         time.Duration
	CPUPerMillion          float64
	PeakRSS                int64
}

// summarize takes the median of each figure over rounds, and the largest
// peak RSS.
func summarize(rs []lumberload.Result) summary {
	med := func(f func(lumberload.Result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	var s summary
	s.EventsPerSec = med(lumberload.Result.EventsPerSec)
	s.MBPerSec = med(lumberload.Result.MBPerSec)
	s.P50 = time.Duration(med(func(r lumberload.Result) float64 { return float64(r.Percentile(0.5)) }))
	s.P99 = time.Duration(med(func(r lumberload.Result) float64 { return float64(r.Percentile(0.99)) }))
	s.P999 = time.Duration(med(func(r lumberload.Result) float64 { return float64(r.Percentile(0.999)) }))
	s.CPUPerMillion = med(lumberload.Result.CPUPerMillion)
	for _, r := range rs {
		s.PeakRSS = max(s.PeakRSS, r.PeakRSS)
	}
	return s
}

// ingestRow is one event size and compression level.
type ingestRow struct {
	// Shape names the events when they are not the synthetic ones of
	// EventSize bytes: "real logs".
	Shape                                      string
	EventSize, Compression, Connections, Batch int
	Noop, Naive, Logpond                       summary
	VsNaive, VsNoop                            float64 // medians of the per-round events/s ratios
	Formula                                    int64   // logpond's memory formula
}

// event names a row's events as the table does: their shape, or the
// synthetic events' size.
func (row ingestRow) event() string {
	if row.Shape != "" {
		return row.Shape
	}
	return size(row.EventSize)
}

// servers are the three compared, in the order they run in each round.
var servers = []string{"noop", "naive", "logpond"}

// ingest measures every event size and compression level against the
// baselines, the servers interleaved round by round.
func (b *bench) ingest(ctx context.Context) ([]ingestRow, error) {
	cfgPath, err := b.config("ingest", "")
	if err != nil {
		return nil, err
	}
	mem, err := formula(cfgPath)
	if err != nil {
		return nil, err
	}
	shapes, err := b.ingestShapes()
	if err != nil {
		return nil, err
	}
	var rows []ingestRow
	for _, sh := range shapes {
		cfg, size, comp, batch := sh.cfg, sh.cfg.EventSize, sh.cfg.Compression, sh.cfg.Batch
		res := map[string][]lumberload.Result{}
		for round := range b.o.rounds {
			for _, name := range servers {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if err := b.fresh(name == servers[0]); err != nil {
					return nil, err
				}
				var cmd *exec.Cmd
				re := noopRE
				switch name {
				case "logpond":
					args := append([]string{"-config", cfgPath}, b.profileArgs(ingestProfileName(size, comp))...)
					cmd, re = exec.Command(filepath.Join(b.o.bin, "logpond"), args...), beatsRE
				case "naive":
					if err := os.MkdirAll(b.journalDir(), 0o755); err != nil {
						return nil, err
					}
					cmd = exec.Command(filepath.Join(b.o.bin, "beatsbench"), "-serve", "naive", "-naive-dir", b.journalDir())
				default:
					cmd = exec.Command(filepath.Join(b.o.bin, "beatsbench"), "-serve", "noop")
				}
				r, err := lumberload.Measure(cmd, re, cfg)
				if err != nil {
					return nil, fmt.Errorf("%s, compression %d, round %d, %s: %w", sh.name, comp, round+1, name, err)
				}
				res[name] = append(res[name], r)
				fmt.Fprintf(b.log, "ingest %9s  zlib %d  round %d  %-8s %10.0f events/s  p99 %s\n",
					sh.name, comp, round+1, name, r.EventsPerSec(), r.Percentile(0.99).Round(time.Microsecond))
			}
		}
		row := ingestRow{Shape: sh.shape, EventSize: size, Compression: comp, Connections: cfg.Connections, Batch: batch,
			Noop: summarize(res["noop"]), Naive: summarize(res["naive"]), Logpond: summarize(res["logpond"]), Formula: mem}
		var vsNaive, vsNoop []float64
		for i := range b.o.rounds {
			lp := res["logpond"][i].EventsPerSec()
			vsNaive = append(vsNaive, lp/res["naive"][i].EventsPerSec())
			vsNoop = append(vsNoop, lp/res["noop"][i].EventsPerSec())
		}
		slices.Sort(vsNaive)
		slices.Sort(vsNoop)
		row.VsNaive, row.VsNoop = vsNaive[len(vsNaive)/2], vsNoop[len(vsNoop)/2]
		rows = append(rows, row)
	}
	return rows, nil
}

// ingestShape is one load of the ingest part.
type ingestShape struct {
	name  string // for the log and the compression part's rows
	shape string // ingestRow.Shape
	cfg   lumberload.Config
}

// ingestShapes are the ingest part's loads (ingestLoads), with the real
// log lines of -logs when that folder is there. The synthetic text is
// words drawn at random from a short list: zlib compresses it about as
// much as real logs, but S2, which logpond compresses its records with,
// runs several times slower on it than on real logs (the compression
// part's codec table), and the real-log rows show what that is worth.
func (b *bench) ingestShapes() ([]ingestShape, error) {
	files, err := filebeatlogs.Load(b.o.logs)
	if errors.Is(err, os.ErrNotExist) {
		return ingestLoads(b.o.sizes, b.o.duration, nil), nil
	}
	if err != nil {
		return nil, err
	}
	return ingestLoads(b.o.sizes, b.o.duration, filebeatlogs.AllEvents(files)), nil
}

// ingestLoads are the loads of an ingest comparison, each lasting d: the
// synthetic events of each size at zlib 0 and 3, then, when there are
// payloads (real log lines as Filebeat sends them), those at zlib 0 and
// 3, cycled. The ingest part and the compression part's ingest share
// them.
func ingestLoads(sizes []int, d time.Duration, payloads [][]byte) []ingestShape {
	var shapes []ingestShape
	for _, sz := range sizes {
		for _, comp := range []int{0, 3} {
			// Filebeat's default window (bulk_max_size 2048), but no more
			// than about 6 MiB a batch for large events.
			batch := min(2048, max(1, (6<<20)/sz))
			shapes = append(shapes, ingestShape{size(sz), "", lumberload.Config{Connections: 4, Batch: batch, EventSize: sz, Compression: comp, Duration: d}})
		}
	}
	if len(payloads) == 0 {
		return shapes
	}
	var total int
	for _, p := range payloads {
		total += len(p)
	}
	for _, comp := range []int{0, 3} {
		shapes = append(shapes, ingestShape{"real logs", "real logs", lumberload.Config{Connections: 4, Batch: 2048, EventSize: total / len(payloads), Compression: comp, Payloads: payloads, Duration: d}})
	}
	return shapes
}

// isoPhase is one phase of the isolation run.
type isoPhase struct {
	Name, What    string
	Result        lumberload.Result
	DrainWindow   time.Duration // catch-up: how long the backlog took to drain (0: not drained within the phase)
	DrainP        [3]time.Duration
	BacklogBytes  int64
	BacklogEvents int64
	MaxUnflushed  float64 // most records seen in the journal but not yet in the ledger: how far the flusher fell behind
	MaxLag        float64 // largest ledger lag seen (records the output had still to send)
	Delivered     int64   // events the sink received during the phase
	Elapsed       time.Duration
	Samples       int // metric samples taken during the phase
	Yielding      int // of them, with the output giving way to acknowledgements
	FsyncMean     time.Duration
	PeakRSS       int64 // logpond's, over the phase
	Formula       int64 // logpond's memory formula
	FillPeakRSS   int64 // catch-up: logpond's while it built the backlog (output off)
	FillFormula   int64
	Where         isoWhere // where the acknowledgements' time went, over the load
}

// DeliveredPerIncoming is the output's events/s over the phase as a
// multiple of the events/s acknowledged: about 1 with nothing to drain;
// during a catch-up, above 1 means the backlog shrinks.
func (ph isoPhase) DeliveredPerIncoming() float64 {
	if ph.Result.Events == 0 {
		return 0
	}
	return float64(ph.Delivered) / float64(ph.Result.Events)
}

// unyieldingPhase is the catch-up phase run with the output's
// concurrency fixed: a drain that does not give way to acknowledgements,
// beside which the catch-up's figures say what giving way saves.
const unyieldingPhase = "catch-up, not yielding"

// isolation measures ack latency at a fixed rate in three phases: output
// idle, output draining a backlog of o.backlog bytes, and the ledger's
// device throttled. With unyielding, a fourth phase drains the backlog
// without giving way (unyieldingPhase).
func (b *bench) isolation(ctx context.Context, unyielding bool) ([]isoPhase, error) {
	sink, err := estest.StartSink()
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	load := lumberload.Config{Connections: 4, Batch: 250, EventSize: 1024, Duration: b.o.isoDuration, Rate: b.o.isoRate}
	var phases []isoPhase

	// Quiet: nothing to drain but what comes in.
	if err := b.fresh(true); err != nil {
		return nil, err
	}
	ph, err := b.isoRun(ctx, "quiet", "output idle but for the incoming events", sink, load, nil, 0)
	if err != nil {
		return nil, err
	}
	phases = append(phases, ph)

	// Catch-up: fill the ledger with no output running, then restart with
	// the output on and measure while it drains.
	catchUp := func(name string, what func(backlogBytes int64) string) error {
		if err := b.fresh(true); err != nil {
			return err
		}
		var fill isoPhase
		backlogBytes, backlogEvents, err := b.fillBacklog(ctx, &fill)
		if err != nil {
			return err
		}
		ph, err := b.isoRun(ctx, name, what(backlogBytes), sink, load, nil, backlogEvents)
		if err != nil {
			return err
		}
		ph.BacklogBytes, ph.BacklogEvents = backlogBytes, backlogEvents
		ph.FillPeakRSS, ph.FillFormula = fill.FillPeakRSS, fill.FillFormula
		phases = append(phases, ph)
		return nil
	}
	if err := catchUp("catch-up", func(n int64) string { return fmt.Sprintf("output draining a %.1f GiB backlog", float64(n)/(1<<30)) }); err != nil {
		return nil, err
	}
	if unyielding {
		if err := catchUp(unyieldingPhase, func(int64) string { return "the same, the output's concurrency fixed: it does not give way" }); err != nil {
			return nil, err
		}
	}

	// Throttled: the ledger's device capped well below the incoming rate.
	if err := b.fresh(true); err != nil {
		return nil, err
	}
	th, err := newThrottle(b.lfs.major, b.lfs.minor, b.o.throttleBPS)
	if err != nil {
		return nil, fmt.Errorf("throttle the ledger's device: %w", err)
	}
	defer th.remove()
	ph, err = b.isoRun(ctx, "throttled", fmt.Sprintf("ledger device throttled to %.0f MiB/s each way", float64(b.o.throttleBPS)/(1<<20)), sink, load, th, 0)
	if err != nil {
		return nil, err
	}
	phases = append(phases, ph)
	return phases, nil
}

// fillBacklog runs logpond without output and loads it as fast as it
// acknowledges until its ledger holds o.backlog bytes; it stops logpond
// (whose final flush moves the journal into the ledger) and returns the
// ledger's bytes and the events acknowledged into it.
func (b *bench) fillBacklog(ctx context.Context, ph *isoPhase) (int64, int64, error) {
	cfgPath, err := b.config("fill", "")
	if err != nil {
		return 0, 0, err
	}
	if ph.FillFormula, err = formula(cfgPath); err != nil {
		return 0, 0, err
	}
	p, admin, err := b.logpond(cfgPath)
	if err != nil {
		return 0, 0, err
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The sampler stops the load once the ledger holds the backlog.
	reached := make(chan bool, 1)
	go func() {
		for lctx.Err() == nil {
			if m, err := scrape(admin); err == nil && m["logpond_ledger_bytes"] >= float64(b.o.backlog) {
				reached <- true
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		reached <- false
	}()
	r, err := lumberload.Run(lctx, p.Addr(), lumberload.Config{Connections: 4, Batch: 2048, EventSize: 1024, Duration: 10 * time.Minute})
	cancel()
	if <-reached && ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil // stopped because the backlog was there
	}
	last, serr := scrape(admin)
	ph.FillPeakRSS = p.PeakRSS()
	if stopErr := p.Stop(); stopErr != nil {
		return 0, 0, fmt.Errorf("stop after filling: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return 0, 0, fmt.Errorf("fill the backlog: %w", err)
	}
	if serr != nil {
		return 0, 0, serr
	}
	if last["logpond_ledger_bytes"] < float64(b.o.backlog) {
		return 0, 0, fmt.Errorf("the ledger never reached %d bytes", b.o.backlog)
	}
	fmt.Fprintf(b.log, "isolation: backlog of %.0f MiB, %d events\n", last["logpond_ledger_bytes"]/(1<<20), r.Events)
	return int64(last["logpond_ledger_bytes"]), r.Events, nil
}

// isoRun starts logpond draining into sink (in throttle's cgroup when it
// is not nil), loads it at a fixed rate, and samples how far its flusher
// and output are behind meanwhile. With a backlog of events in the ledger,
// it notes when the sink has received them all.
func (b *bench) isoRun(ctx context.Context, name, what string, sink *estest.Sink, load lumberload.Config, throttle *blkioThrottle, backlog int64) (isoPhase, error) {
	ph := isoPhase{Name: name, What: what}
	var outLines string
	if name == unyieldingPhase {
		// Fixed concurrency turns the adaptation off, yielding included.
		outLines = "concurrency = \"fixed\"\n"
	}
	cfgPath, err := b.configOut("iso-"+strings.NewReplacer(" ", "-", ",", "").Replace(name), sink.URL(), "", outLines)
	if err != nil {
		return ph, err
	}
	if ph.Formula, err = formula(cfgPath); err != nil {
		return ph, err
	}
	p, admin, err := b.logpond(cfgPath)
	if err != nil {
		return ph, err
	}
	if throttle != nil {
		if err := throttle.add(p.Pid()); err != nil {
			p.Stop()
			return ph, fmt.Errorf("put logpond in the throttled cgroup: %w", err)
		}
	}
	sink.Reset()
	start := time.Now()
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for sctx.Err() == nil {
			if m, err := scrape(admin); err == nil {
				ph.MaxUnflushed = max(ph.MaxUnflushed, m["logpond_journal_last_lsn"]-m["logpond_ledger_last_lsn"])
				ph.MaxLag = max(ph.MaxLag, m["logpond_ledger_lag_records"])
				ph.Samples++
				if m["logpond_output_yielding"] == 1 {
					ph.Yielding++
				}
				if n := m["logpond_journal_fsync_seconds_count"]; n > 0 {
					ph.FsyncMean = time.Duration(m["logpond_journal_fsync_seconds_sum"] / n * float64(time.Second))
				}
			}
			if backlog > 0 && ph.DrainWindow == 0 && sink.Items() >= backlog {
				ph.DrainWindow = time.Since(start)
			}
			select {
			case <-sctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	before := takeWhere(admin, p.Pid())
	ph.Result, err = lumberload.Run(ctx, p.Addr(), load)
	ph.Delivered, ph.Elapsed = sink.Items(), time.Since(start)
	ph.Where = where(before, takeWhere(admin, p.Pid()))
	stopSampling()
	wg.Wait()
	ph.PeakRSS = p.PeakRSS()
	if throttle != nil {
		// Out of the cgroup before stopping: the final flush would
		// otherwise write the whole unflushed journal at the throttled rate.
		if err := os.WriteFile(filepath.Join(filepath.Dir(throttle.dir), "cgroup.procs"), fmt.Appendf(nil, "%d", p.Pid()), 0); err != nil {
			fmt.Fprintf(b.log, "isolation: could not move logpond out of the throttled cgroup (its stop will be slow): %v\n", err)
		}
	}
	if stopErr := p.Stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stop: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return ph, fmt.Errorf("%s: %w", name, err)
	}
	if ph.DrainWindow > 0 {
		var during []time.Duration
		for _, s := range ph.Result.Timeline {
			if s.At <= ph.DrainWindow {
				during = append(during, s.Latency)
			}
		}
		slices.Sort(during)
		ph.DrainP = [3]time.Duration{lumberload.Percentile(during, 0.5), lumberload.Percentile(during, 0.99), lumberload.Percentile(during, 0.999)}
	}
	fmt.Fprintf(b.log, "isolation %-9s p50 %s p99 %s p999 %s, max unflushed %.0f records, max lag %.0f records, drained in %s, delivered/incoming %.2f, yielding in %d of %d samples, mean fsync %s\n", name,
		ph.Result.Percentile(0.5).Round(time.Microsecond), ph.Result.Percentile(0.99).Round(time.Microsecond),
		ph.Result.Percentile(0.999).Round(time.Microsecond), ph.MaxUnflushed, ph.MaxLag, ph.DrainWindow.Round(time.Millisecond),
		ph.DeliveredPerIncoming(), ph.Yielding, ph.Samples, ph.FsyncMean.Round(time.Microsecond))
	w := ph.Where
	fmt.Fprintf(b.log, "isolation %-9s where: logpond ack p99 %s, fsync p99 %s mean %s (%.0f over 16 ms), goroutines waited for a P %.1f ms/s (%.1f/s over 1 ms), GC %.1f cycles/s (%.0f%% of CPU, %.1f/s pauses over 1 ms), logpond CPU %.2f cores, its threads waited for a CPU %.1f ms/s, machine busy %.2f of %d cores\n", name,
		w.AckP99.Round(time.Microsecond), w.FsyncP99.Round(time.Microsecond), w.FsyncMean.Round(time.Microsecond), w.FsyncStalls, w.SchedWait, w.SchedOver1, w.GCCycles, 100*w.GCShare, w.GCPauses1ms, w.CPU, w.RunDelay, w.MachineBusy, w.Cores)
	return ph, nil
}

// smallRun is one run of many connections with small windows.
type smallRun struct {
	How                       string
	Result                    lumberload.Result
	Records, Fsyncs           float64 // journal records appended and group fsyncs, from /metrics
	RecordsPerFsync           float64
	FsyncSyscalls             int // fsync+fdatasync calls on the journal, counted by strace; 0 when not traced
	FsyncSyscallsLedger       int // the same on the ledger
	RecordsPerFsyncSyscall    float64
	Connections, Window, Size int
	PeakRSS, Formula          int64 // logpond's peak RSS and memory formula
}

// smallClients runs o.smallConns connections × 50-event windows twice:
// plain (records per fsync from logpond's own counters) and under strace
// (fsync and fdatasync calls on journal files counted at the syscall).
// The note says why the traced run is missing, when it is.
func (b *bench) smallClients(ctx context.Context) ([]smallRun, string, error) {
	load := lumberload.Config{Connections: b.o.smallConns, Batch: 50, EventSize: 1024, Duration: b.o.smallDuration}
	cfgPath, err := b.config("small", "")
	if err != nil {
		return nil, "", err
	}
	mem, err := formula(cfgPath)
	if err != nil {
		return nil, "", err
	}
	var runs []smallRun
	one := func(how string, wrapper []string, straceLog string) error {
		if err := b.fresh(true); err != nil {
			return err
		}
		p, admin, err := b.logpond(cfgPath, wrapper...)
		if err != nil {
			return err
		}
		before, err := scrape(admin)
		if err != nil {
			p.Stop()
			return err
		}
		r, err := lumberload.Run(ctx, p.Addr(), load)
		after, serr := scrape(admin)
		peak := p.PeakRSS()
		if straceLog != "" {
			peak = 0 // p is strace; logpond is its child
			if child := childOf(p.Pid()); child > 0 {
				peak = peakRSS(child)
			}
		}
		if err == nil {
			err = serr
		}
		if straceLog != "" {
			// SIGTERM logpond itself, strace's child, and let it finish its
			// final flush: strace exits once its child has (a SIGTERM to
			// strace would detach and leave logpond running).
			if child := childOf(p.Pid()); child > 0 {
				syscall.Kill(child, syscall.SIGTERM)
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && lumberload.Running(child); {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
		if stopErr := p.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop: %w\n%s", stopErr, p.Output())
		}
		if err != nil {
			return fmt.Errorf("%s: %w", how, err)
		}
		s := smallRun{How: how, Result: r, Connections: load.Connections, Window: load.Batch, Size: load.EventSize, PeakRSS: peak, Formula: mem}
		s.Records = after["logpond_journal_group_records_sum"] - before["logpond_journal_group_records_sum"]
		s.Fsyncs = after["logpond_journal_fsyncs_total"] - before["logpond_journal_fsyncs_total"]
		if s.Fsyncs > 0 {
			s.RecordsPerFsync = s.Records / s.Fsyncs
		}
		if straceLog != "" {
			journal, ledger, err := countFsyncs(straceLog, b.journalDir(), b.ledgerDir())
			if err != nil {
				return err
			}
			s.FsyncSyscalls, s.FsyncSyscallsLedger = journal, ledger
			if journal > 0 {
				s.RecordsPerFsyncSyscall = s.Records / float64(journal)
			}
		}
		runs = append(runs, s)
		fmt.Fprintf(b.log, "small clients (%s): %.0f events/s, p99 %s, %.1f records per fsync (metrics), %d journal fsync syscalls\n",
			how, r.EventsPerSec(), r.Percentile(0.99).Round(time.Microsecond), s.RecordsPerFsync, s.FsyncSyscalls)
		return nil
	}
	if err := one("plain", nil, ""); err != nil {
		return nil, "", err
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		return runs, "strace is not installed here (apt-get install strace): the syscall count was skipped", nil
	}
	log := filepath.Join(b.work, "strace.log")
	if err := one("under strace", []string{strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", log}, log); err != nil {
		return nil, "", err
	}
	return runs, "", nil
}

// peakRSS is the peak resident set (VmHWM) of process pid, 0 when unknown.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// childOf returns a process's first child, 0 when it has none.
func childOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	var c int
	fmt.Sscan(string(b), &c)
	return c
}

// countFsyncs counts, in an `strace -f -y` log, the fsync and fdatasync
// calls on files (or the directory) of the journal and of the ledger. With
// -y strace prints each descriptor's path; a call that another thread
// interrupts is split into an "unfinished" line, which has the path, and a
// "resumed" line, which has not, so each call is counted once.
func countFsyncs(path, journalDir, ledgerDir string) (journal, ledger int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "fsync(") && !strings.Contains(line, "fdatasync(") {
			continue
		}
		switch {
		case strings.Contains(line, "<"+journalDir):
			journal++
		case strings.Contains(line, "<"+ledgerDir):
			ledger++
		}
	}
	return journal, ledger, sc.Err()
}

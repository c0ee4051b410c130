package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// The compression part's goals (docs/benchmarks.md states them beside
// each table).
const (
	goalLedgerPerEventByte = 0.10 // ledger bytes per event byte with the defaults
	moonLedgerPerEventByte = 0.05
	goalVsNone             = 0.9 // ingest and drain with the defaults over with compression = "none"
)

// ledgerCompressions are the ledger settings compared: the defaults
// first, then the other codec, zstd, at the default level, then
// compression = "none". Each maps to the lines added to the
// configuration's [ledger] section.
var ledgerCompressions = []struct{ name, ledger string }{
	{zDefault, ""},
	{"zstd", `compression = "zstd"` + "\n"},
	{zNone, `compression = "none"` + "\n"},
}

// The names of the default and the uncompressed ledger settings.
const (
	zDefault = "default"
	zNone    = "none"
)

// zLedgerRow is one ledger setting's bytes for a load of real-log events.
type zLedgerRow struct {
	Compression        string
	Events, EventBytes int64   // acknowledged, and their bytes as sent (before zlib)
	LedgerBytes        float64 // logpond_ledger_bytes once everything is flushed
	RawBytes           float64 // logpond_ledger_raw_bytes_total: records before compression
	StoredBytes        float64 // logpond_ledger_stored_bytes_total: records as stored
	PeakRSS, Formula   int64
	MBPerSec           float64 // of event bytes while loading (as fast as acknowledged)
}

// PerEventByte is the ledger's bytes per event byte sent.
func (r zLedgerRow) PerEventByte() float64 {
	if r.EventBytes == 0 {
		return 0
	}
	return r.LedgerBytes / float64(r.EventBytes)
}

// zIngestRow is one ingest shape, logpond with the default ledger and
// with zstd beside logpond with compression = "none", interleaved round
// by round.
type zIngestRow struct {
	Shape                           string // an event size, or "real logs"
	Compression, Connections, Batch int    // Compression: zlib level of the client
	Default, Zstd, None             summary
	VsNone, ZstdVsNone              float64 // medians of the per-round events/s ratios over none's
	Formula                         int64   // the default configuration's memory formula
}

// zDrainRow is one ledger setting's drain of the same events.
type zDrainRow struct {
	Compression string
	Events      int64
	Elapsed     time.Duration // median over the rounds: from logpond's start until the sink held every event
	DeviceRead  float64       // logpond_ledger_device_read_bytes_total of the median run
	CPU         time.Duration // logpond's CPU time over the median run
	PeakRSS     int64         // the largest over the rounds
	Formula     int64
	Rounds      int
	VsNone      float64 // median of the per-round drain-rate ratios over none's
}

// EventsPerSec is the drain rate.
func (r zDrainRow) EventsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Events) / r.Elapsed.Seconds()
}

// compressionResult is what the compression part measured, or why it
// skipped itself.
type compressionResult struct {
	Skipped    string // why nothing was measured; "" when it ran
	LogsDir    string
	Names      []string // the log files' names, without .log
	Files      int
	Events     int // lines of real logs, one event each
	EventBytes int64
	Codecs     []codecRow
	Placement  []placementRow
	placeOpts  placementOptions
	Ledger     []zLedgerRow
	Ingest     []zIngestRow
	Drain      []zDrainRow
}

// compression measures what compressing the ledger costs and saves, on
// real log lines wrapped as Filebeat events: the codecs in-process, the
// ledger's bytes, ingest and the drain of a backlog, each with the
// defaults, with zstd and with compression = "none". Without the folder of logs it
// says so and measures nothing.
func (b *bench) compression(ctx context.Context) (*compressionResult, error) {
	res := &compressionResult{LogsDir: b.o.logs}
	files, err := filebeatlogs.Load(b.o.logs)
	if errors.Is(err, os.ErrNotExist) {
		res.Skipped = fmt.Sprintf("no folder of real log lines at %q (-logs LOGS): the compression part needs them and was skipped", b.o.logs)
		fmt.Fprintf(b.log, "compression: %s\n", res.Skipped)
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	payloads := filebeatlogs.AllEvents(files)
	res.Files, res.Events = len(files), len(payloads)
	for _, f := range files {
		res.Names = append(res.Names, f.Name)
	}
	for _, p := range payloads {
		res.EventBytes += int64(len(p))
	}
	fmt.Fprintf(b.log, "compression: %d events from %d files of %s, %.0f B each on average\n", res.Events, res.Files, b.o.logs, float64(res.EventBytes)/float64(res.Events))

	if res.Codecs, err = measureCodecs(files); err != nil {
		return nil, err
	}
	for _, c := range res.Codecs {
		fmt.Fprintf(b.log, "compression: codec %-15s ratio %.3f (files %.3f), compress %.0f MB/s, decompress %.0f MB/s, %.2f / %.2f CPU ms per 1000 events\n",
			c.Codec, c.Ratio(), c.FileMean, c.CompressMBps, c.DecompressMBps, c.CompressCPU, c.DecompressCPU)
	}

	// Where to compress: the same events through an in-process journal
	// and ledger, compressed in the flusher, in the input, or not at all.
	res.placeOpts = placementOptions{JournalDir: b.work, LedgerDir: b.lfs.dir, Events: payloads, Producers: 4, BatchEvents: codecRecordEvents,
		Duration: b.o.zDuration, Rounds: b.o.zRounds, Compression: conf.Default().Ledger.RecordCompression(), FlushInterval: time.Duration(conf.Default().Ledger.FlushInterval)}
	if res.Placement, err = measurePlacement(ctx, res.placeOpts); err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}

	// The ledger's bytes, and a backlog per setting for the drains.
	saved := map[string]string{}
	defer func() {
		for _, s := range saved {
			os.RemoveAll(s)
		}
	}()
	for _, lc := range ledgerCompressions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row, err := b.zFill(ctx, lc.name, lc.ledger, payloads)
		if err != nil {
			return nil, fmt.Errorf("ledger bytes, %s: %w", lc.name, err)
		}
		res.Ledger = append(res.Ledger, row)
		saved[lc.name] = filepath.Join(b.lfs.dir, "z-saved-"+lc.name)
		if err := copyStores(b.journalDir(), b.ledgerDir(), saved[lc.name]); err != nil {
			return nil, err
		}
		fmt.Fprintf(b.log, "compression: ledger %s: %d events of %.0f MiB, ledger %.0f MiB (%.3f per event byte), raw %.0f MiB, stored %.0f MiB, peak RSS %d MiB\n",
			lc.name, row.Events, float64(row.EventBytes)/(1<<20), row.LedgerBytes/(1<<20), row.PerEventByte(), row.RawBytes/(1<<20), row.StoredBytes/(1<<20), row.PeakRSS>>20)
	}

	if res.Ingest, err = b.zIngest(ctx, payloads); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if res.Drain, err = b.zDrain(ctx, res.Ledger, saved); err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	return res, nil
}

// zConfig writes the configuration of one ledger setting (es: the
// Elasticsearch URL to drain into, "" for no output) and returns its path
// and memory formula.
func (b *bench) zConfig(name, es, ledger string) (string, int64, error) {
	path, err := b.configWith("z-"+name, es, ledger)
	if err != nil {
		return "", 0, err
	}
	mem, err := formula(path)
	return path, mem, err
}

// zFill loads fresh stores, output off, with o.zEvents real-log events (4
// connections × 2048-event windows, zlib 3 as Filebeat sends them, as fast
// as acknowledged), waits until the flusher has moved every record into
// the ledger, and reads the ledger's bytes and counters; it stops logpond,
// leaving the stores in place.
func (b *bench) zFill(ctx context.Context, name, ledger string, payloads [][]byte) (zLedgerRow, error) {
	row := zLedgerRow{Compression: name}
	if err := b.fresh(true); err != nil {
		return row, err
	}
	cfg, mem, err := b.zConfig("fill-"+name, "", ledger)
	if err != nil {
		return row, err
	}
	row.Formula = mem
	p, admin, err := b.logpond(cfg)
	if err != nil {
		return row, err
	}
	r, err := lumberload.Run(ctx, p.Addr(), lumberload.Config{Connections: 4, Batch: 2048, Compression: 3, Payloads: payloads, Events: b.o.zEvents, Duration: 10 * time.Minute})
	var m map[string]float64
	if err == nil {
		m, err = flushed(ctx, admin)
	}
	row.PeakRSS = p.PeakRSS()
	if stopErr := p.Stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stop: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return row, err
	}
	if r.Events < b.o.zEvents {
		return row, fmt.Errorf("only %d of %d events acknowledged", r.Events, b.o.zEvents)
	}
	row.Events, row.EventBytes, row.MBPerSec = r.Events, r.Bytes, r.MBPerSec()
	row.LedgerBytes, row.RawBytes, row.StoredBytes = m["logpond_ledger_bytes"], m["logpond_ledger_raw_bytes_total"], m["logpond_ledger_stored_bytes_total"]
	if row.LedgerBytes <= 0 {
		return row, fmt.Errorf("logpond_ledger_bytes is %v after %d events", row.LedgerBytes, r.Events)
	}
	return row, nil
}

// flushed waits until the ledger holds every record the journal does (the
// flusher runs every flush_interval) and returns the metrics then.
func flushed(ctx context.Context, admin string) (map[string]float64, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := scrape(admin)
		if err != nil {
			return nil, err
		}
		if last := m["logpond_journal_last_lsn"]; last > 0 && m["logpond_ledger_last_lsn"] >= last {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the ledger is at LSN %v a minute after the load, the journal at %v", m["logpond_ledger_last_lsn"], m["logpond_journal_last_lsn"])
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// zIngest measures logpond with each ledger setting at the ingest part's
// shapes and with real-log events, the settings interleaved round by
// round on empty stores, output off.
func (b *bench) zIngest(ctx context.Context, payloads [][]byte) ([]zIngestRow, error) {
	shapes := ingestLoads(b.o.sizes, b.o.zDuration, payloads)
	cfgs := map[string]string{}
	var mem int64
	for _, lc := range ledgerCompressions {
		path, m, err := b.zConfig("ingest-"+lc.name, "", lc.ledger)
		if err != nil {
			return nil, err
		}
		cfgs[lc.name] = path
		if lc.name == zDefault {
			mem = m
		}
	}
	var rows []zIngestRow
	for _, sh := range shapes {
		res := map[string][]lumberload.Result{}
		for round := range b.o.zRounds {
			for i, lc := range ledgerCompressions {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				// Settle once a shape, before its first run: every run of a
				// shape then pays the same for the deletions before it.
				if err := b.fresh(round == 0 && i == 0); err != nil {
					return nil, err
				}
				r, err := lumberload.Measure(exec.Command(filepath.Join(b.o.bin, "logpond"), "-config", cfgs[lc.name]), beatsRE, sh.cfg)
				if err != nil {
					return nil, fmt.Errorf("%s, zlib %d, round %d, %s: %w", sh.name, sh.cfg.Compression, round+1, lc.name, err)
				}
				res[lc.name] = append(res[lc.name], r)
				fmt.Fprintf(b.log, "compression: ingest %-9s zlib %d  round %d  %-7s %10.0f events/s %7.1f MB/s  p99 %s  peak RSS %d MiB\n",
					sh.name, sh.cfg.Compression, round+1, lc.name, r.EventsPerSec(), r.MBPerSec(), r.Percentile(0.99).Round(time.Microsecond), r.PeakRSS>>20)
			}
		}
		vsNone := func(name string) float64 {
			var vs []float64
			for i := range b.o.zRounds {
				vs = append(vs, res[name][i].EventsPerSec()/res[zNone][i].EventsPerSec())
			}
			return median(vs)
		}
		rows = append(rows, zIngestRow{Shape: sh.name, Compression: sh.cfg.Compression, Connections: sh.cfg.Connections, Batch: sh.cfg.Batch,
			Default: summarize(res[zDefault]), Zstd: summarize(res["zstd"]), None: summarize(res[zNone]),
			VsNone: vsNone(zDefault), ZstdVsNone: vsNone("zstd"), Formula: mem})
	}
	return rows, nil
}

// median is the middle of xs (the upper one of an even count), 0 for none.
func median[T cmp.Ordered](xs []T) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// zDrain drains each setting's saved backlog into an accept-all sink
// (estest.Sink), the settings interleaved o.zRounds times, each run from
// a fresh copy of the stores, logpond configured with the setting that
// filled them.
func (b *bench) zDrain(ctx context.Context, fills []zLedgerRow, saved map[string]string) ([]zDrainRow, error) {
	sink, err := estest.StartSink()
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	runs := map[string][]zDrainRow{}
	for round := range b.o.zRounds {
		for i, lc := range ledgerCompressions {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := b.fresh(false); err != nil {
				return nil, err
			}
			if err := restoreStores(saved[lc.name], b.journalDir(), b.ledgerDir()); err != nil {
				return nil, err
			}
			cfg, mem, err := b.zConfig("drain-"+lc.name, sink.URL(), lc.ledger)
			if err != nil {
				return nil, err
			}
			r := zDrainRow{Compression: lc.name, Events: fills[i].Events, Formula: mem}
			sink.Reset()
			start := time.Now()
			p, admin, err := b.logpond(cfg)
			if err != nil {
				return nil, err
			}
			limit := start.Add(b.o.drainLimit)
			for sink.Items() < r.Events && ctx.Err() == nil && time.Now().Before(limit) {
				time.Sleep(20 * time.Millisecond)
			}
			r.Elapsed = time.Since(start)
			m, serr := scrape(admin)
			r.PeakRSS, r.CPU = p.PeakRSS(), p.CPU()
			stopErr := p.Stop()
			if got := sink.Items(); got < r.Events {
				return nil, fmt.Errorf("%s: %d of %d events delivered after %s", lc.name, got, r.Events, r.Elapsed.Round(time.Second))
			}
			if serr != nil {
				return nil, serr
			}
			if stopErr != nil {
				return nil, fmt.Errorf("%s: stop: %w\n%s", lc.name, stopErr, p.Output())
			}
			r.DeviceRead = m["logpond_ledger_device_read_bytes_total"]
			runs[lc.name] = append(runs[lc.name], r)
			fmt.Fprintf(b.log, "compression: drain %-4s round %d: %d events in %.2f s (%.0f/s), device read %.0f MiB, CPU %.2f s, peak RSS %d MiB\n",
				lc.name, round+1, r.Events, r.Elapsed.Seconds(), r.EventsPerSec(), r.DeviceRead/(1<<20), r.CPU.Seconds(), r.PeakRSS>>20)
		}
	}
	var rows []zDrainRow
	for _, lc := range ledgerCompressions {
		row := medianDrain(runs[lc.name])
		if lc.name != zNone {
			var vs []float64
			for i := range b.o.zRounds {
				vs = append(vs, runs[lc.name][i].EventsPerSec()/runs[zNone][i].EventsPerSec())
			}
			row.VsNone = median(vs)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// medianDrain is the run with the median drain time, with the largest
// peak RSS of them all and the count of runs.
func medianDrain(rs []zDrainRow) zDrainRow {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b zDrainRow) int { return int(a.Elapsed - b.Elapsed) })
	m := sorted[len(sorted)/2]
	for _, r := range rs {
		m.PeakRSS = max(m.PeakRSS, r.PeakRSS)
	}
	m.Rounds = len(rs)
	return m
}

// verdict renders a goal's outcome: "met" or "not met", with the figure.
func verdict(met bool, figure string) string {
	if met {
		return "**met** (" + figure + ")"
	}
	return "**not met** (" + figure + ")"
}

// compressionCommand is the command that reproduces the compression part.
func compressionCommand(o options) string {
	return fmt.Sprintf("sudo bin/benchreport -parts compression -logs LOGS -compression-events %d -compression-duration %s -compression-rounds %d -out /tmp/compression.md", o.zEvents, o.zDuration, o.zRounds)
}

// compressionMarkdown renders the compression section.
func compressionMarkdown(c *compressionResult, o options) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Compression: stored records\n\n")
	if c == nil {
		return b.String()
	}
	if c.Skipped != "" {
		p("Not measured: %s.\n\n", c.Skipped)
		return b.String()
	}
	cmd := compressionCommand(o)
	p("Real log lines (%d files, one program's log each: %s; %d lines, %.0f B per event on average) wrapped one per event as Filebeat sends them (`@timestamp`, `message`, `log.file.path`, `log.offset`, `host`, `agent`, `ecs`, `input`; one host per file). Every table of this section: `%s` (after `make build`), LOGS being a folder of such `*.log` files (`make bench-report` passes its `BENCH_LOGS`). The default ledger is %s; the tables set beside it zstd at the same level and `compression = \"none\"`.\n\n",
		c.Files, strings.Join(c.Names, ", "), c.Events, float64(c.EventBytes)/float64(max(c.Events, 1)), cmd, defaultCompression())

	p("### Codecs on real logs, one core\n\n")
	p("In-process (no server): records of %d consecutive events of one file (Filebeat's default `bulk_max_size`; a file's last record smaller, lines never repeated), %d records. Stored / raw is the bytes stored over the version 1 record bytes, over all records; per-file mean is the mean of each file's ratio, so that one large, repetitive log does not stand for all. MB/s are of raw bytes on one goroutine locked to its thread; CPU is that thread's time per 1000 events. Codecs other than logpond's own are charged a version 2 record's header and CRC, as if logpond stored their block. Every codec's output is decompressed and compared with its events before it is timed. No logpond runs here: its memory is in the other tables; \"state MiB\" is the bound `record.CompressorMemory` states for one of logpond's compressors (S2's: the tables one compression borrows).\n\n",
		codecRecordEvents, records(c.Codecs))
	p("| codec | what | stored / raw | per-file mean | compress MB/s | decompress MB/s | compress CPU ms / 1000 events | decompress CPU ms / 1000 events | state MiB |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Codecs {
		p("| %s | %s | %.3f | %.3f | %.0f | %.0f | %.2f | %.2f | %s |\n", r.Codec, r.What, r.Ratio(), r.FileMean, r.CompressMBps, r.DecompressMBps, r.CompressCPU, r.DecompressCPU, stateMiB(r.Memory))
	}
	p("\n")

	if len(c.Placement) > 0 {
		var sb strings.Builder
		renderPlacement(&sb, c.Placement, c.placeOpts)
		p("%s", sb.String())
		p("%s\n\n", placementChoice(c.Placement))
	}

	p("### Ledger bytes per event byte\n\n")
	p("logpond with each ledger setting but the output off, loaded with %d real-log events (4 connections × 2048-event windows, zlib 3, cycling through the lines, each connection from its own place), then, once the flusher has moved every record into the ledger, `logpond_ledger_bytes` over the event bytes acknowledged (JSON, before the client's zlib). Raw and stored are `logpond_ledger_raw_bytes_total` and `logpond_ledger_stored_bytes_total`: the records before and after compression.\n\n", o.zEvents)
	p("| ledger | events | event MiB | ledger MiB | ledger bytes per event byte | raw MiB | stored MiB | stored / raw | load MB/s | peak RSS MiB | formula MiB |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var defaultPer float64
	for _, r := range c.Ledger {
		sr := "–"
		if r.RawBytes > 0 {
			sr = fmt.Sprintf("%.3f", r.StoredBytes/r.RawBytes)
		}
		p("| %s | %d | %.1f | %.1f | %.3f | %.1f | %.1f | %s | %.1f | %s | %s |\n", ledgerName(r.Compression), r.Events, float64(r.EventBytes)/(1<<20), r.LedgerBytes/(1<<20), r.PerEventByte(),
			r.RawBytes/(1<<20), r.StoredBytes/(1<<20), sr, r.MBPerSec, mib(r.PeakRSS), mib(r.Formula))
		if r.Compression == zDefault {
			defaultPer = r.PerEventByte()
		}
	}
	p("\nGoal: at most %.2f ledger bytes per event byte with the defaults (moonshot: %.2f). Verdict: %s; moonshot %s.\n\n", goalLedgerPerEventByte, moonLedgerPerEventByte,
		verdict(defaultPer > 0 && defaultPer <= goalLedgerPerEventByte, fmt.Sprintf("%.3f", defaultPer)), verdict(defaultPer > 0 && defaultPer <= moonLedgerPerEventByte, fmt.Sprintf("%.3f", defaultPer)))

	p("### Ingest: each setting beside none\n\n")
	p("logpond, output off, with the default ledger (%s), with zstd and with `compression = \"none\"`, interleaved round by round, %d rounds of %s each on empty stores, at the ingest part's shapes and with the real-log events (cycled through); medians over the rounds (peak RSS: the largest). × none is a setting's events/s over none's, the median of the per-round ratios. With compression on, the input compresses each record before the journal (docs/design.md, \"Compressed records\"), on the acknowledgement path, and the journal and the ledger then write a fraction of the bytes: the ratio weighs the one against the other, on two shared cores.\n\n", defaultCompression(), o.zRounds, o.zDuration)
	p("| event | zlib | window | ledger | events/s | MB/s | ack p99 ms | CPU s/Mev | peak RSS MiB | formula MiB | × none |\n")
	p("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	worst := zIngestRow{VsNone: -1}
	for _, r := range c.Ingest {
		for _, s := range []struct {
			name, formula, vs string
			v                 summary
		}{
			{"**" + ledgerName(zDefault) + "**", mib(r.Formula), fmt.Sprintf("**%.2f×**", r.VsNone), r.Default},
			{ledgerName("zstd"), "", fmt.Sprintf("%.2f×", r.ZstdVsNone), r.Zstd},
			{ledgerName(zNone), "", "", r.None},
		} {
			p("| %s | %d | %d×%d | %s | %.0f | %.1f | %s | %s | %s | %s | %s |\n", r.Shape, r.Compression, r.Connections, r.Batch, s.name, s.v.EventsPerSec, s.v.MBPerSec, ms(s.v.P99), cpu(s.v.CPUPerMillion), mib(s.v.PeakRSS), s.formula, s.vs)
		}
		if worst.VsNone < 0 || r.VsNone < worst.VsNone {
			worst = r
		}
	}
	if len(c.Ingest) > 0 {
		p("\nGoal: the default ledger at least %.1f× none's events/s at every shape. Verdict: %s.\n\n", goalVsNone,
			verdict(worst.VsNone >= goalVsNone, fmt.Sprintf("lowest %.2f×, %s zlib %d", worst.VsNone, worst.Shape, worst.Compression)))
	}

	p("### Drain: a backlog of real-log events, each setting beside none\n\n")
	p("The backlogs of the ledger table above (built with the output off, one per setting), each drained from a fresh copy of its stores into an accept-all bulk sink (`estest.Sink`, in-process) by logpond configured as it was filled, the settings interleaved %d times; the median run by drain time (peak RSS: the largest). Time runs from logpond's start until the sink holds every event. Device read is `logpond_ledger_device_read_bytes_total`: the bytes the output's reader read from the segment files.\n\n", o.zRounds)
	p("| ledger | events | drain s | events/s | × none | device read MiB | logpond CPU s | peak RSS MiB | formula MiB |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var drainVsNone float64
	for _, r := range c.Drain {
		vs := ""
		switch r.Compression {
		case zDefault:
			vs, drainVsNone = fmt.Sprintf("**%.2f×**", r.VsNone), r.VsNone
		case zNone:
		default:
			vs = fmt.Sprintf("%.2f×", r.VsNone)
		}
		p("| %s | %d | %.2f | %.0f | %s | %.1f | %.2f | %s | %s |\n", ledgerName(r.Compression), r.Events, r.Elapsed.Seconds(), r.EventsPerSec(), vs, r.DeviceRead/(1<<20), r.CPU.Seconds(), mib(r.PeakRSS), mib(r.Formula))
	}
	if len(c.Drain) > 0 {
		p("\nGoal: the default ledger drains at least %.1f× none's events/s (the median of the per-round ratios). Verdict: %s.\n\n", goalVsNone, verdict(drainVsNone >= goalVsNone, fmt.Sprintf("%.2f×", drainVsNone)))
	}
	return b.String()
}

// records is the records of the codec table (every codec has the same).
func records(rs []codecRow) int {
	if len(rs) == 0 {
		return 0
	}
	return rs[0].Records
}

// ledgerName is how the tables name a ledger setting.
func ledgerName(c string) string {
	switch c {
	case zDefault:
		return defaultCompression() + " (default)"
	case zNone:
		return `none (compression = "none")`
	}
	lv := conf.Default().Ledger.CompressionLevel
	return fmt.Sprintf("%s %s (compression = %q)", c, lv, c)
}

// defaultCompression names the default configuration's codec and level,
// e.g. "s2 fastest".
func defaultCompression() string { return conf.Default().Ledger.RecordCompression().String() }

// placementChoice says where logpond compresses and what this run's
// placement table measured for each option beside none.
func placementChoice(rows []placementRow) string {
	var base placementRow
	for _, r := range rows {
		if r.Key == placements[placeNone].key {
			base = r
		}
	}
	eps := func(r placementRow) float64 { return r.median(placementRun.eventsPerSec) }
	cpuM := func(r placementRun) float64 { return r.cpuPerMillion() }
	var parts []string
	for _, r := range rows {
		if r.Key == base.Key {
			continue
		}
		parts = append(parts, fmt.Sprintf("(%s) %s acknowledged %s none's events/s at %s its CPU per event", r.Key, r.What,
			ratio(eps(r), eps(base)), ratio(r.median(cpuM), base.median(cpuM))))
	}
	return "logpond compresses in the input, before the journal (option (b)): the journal then writes and fsyncs a few percent of the bytes and the flusher only copies, against the compression's time on each acknowledgement. In this run, " + strings.Join(parts, "; ") + "."
}

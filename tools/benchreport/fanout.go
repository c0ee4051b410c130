package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// fanRun is one run of the fan-out benchmark: logpond with Healthy
// Elasticsearch outputs draining into estest servers that accept
// everything, and Down outputs whose servers are paused (unreachable) for
// the whole run.
type fanRun struct {
	Case          string // what the row shows, e.g. "3 outputs" or "A + B down"
	Healthy, Down int
	Events        int64         // in the ledger at the end (one copy) or in the backlog (drains)
	Elapsed       time.Duration // drains: from logpond's start until output A's server held every event
	ElapsedAll    time.Duration // drains: until every healthy output's server held every event
	LedgerBytes   int64         // logpond_ledger_bytes once every record was flushed and delivered
	DeviceRead    int64         // logpond_ledger_device_read_bytes_total at the end
	SentBytes     int64         // logpond_output_bytes_total, summed over the outputs
	PeakRSS       int64         // the largest over the runs
	Formula       int64         // logpond's memory formula
	Rounds        int           // runs of this case the row is the median of (drains)
}

// Outputs is how many outputs the run configured.
func (r fanRun) Outputs() int { return r.Healthy + r.Down }

// BytesPerEvent is the ledger's bytes per event held (one copy).
func (r fanRun) BytesPerEvent() float64 {
	if r.Events == 0 {
		return 0
	}
	return float64(r.LedgerBytes) / float64(r.Events)
}

// ReadPerSent is the ledger's device bytes read per bulk byte sent: with
// outputs in step sharing the ledger's read cache it shrinks as outputs
// are added.
func (r fanRun) ReadPerSent() float64 {
	if r.SentBytes == 0 {
		return 0
	}
	return float64(r.DeviceRead) / float64(r.SentBytes)
}

// Rate is output A's events/s over its drain.
func (r fanRun) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Events) / r.Elapsed.Seconds()
}

// fanoutResult is the three fan-out measurements, each a 1-output run
// first and the fan-out run second.
type fanoutResult struct {
	OneCopy   []fanRun // the same load ingested with 1 and 3 outputs draining it
	Reads     []fanRun // the same backlog drained by 1 and by 3 healthy outputs
	Isolation []fanRun // the same backlog drained by A alone and by A beside B, which is down
}

// fanoutOutputs is how many outputs the fan-out runs compare with one.
const fanoutOutputs = 3

// fanout runs the three fan-out measurements with o.fanoutEvents events
// of o.fanoutSize bytes.
func (b *bench) fanout(ctx context.Context) (*fanoutResult, error) {
	res := &fanoutResult{}
	for _, n := range []int{1, fanoutOutputs} {
		r, err := b.fanOneCopy(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("one copy, %d outputs: %w", n, err)
		}
		res.OneCopy = append(res.OneCopy, r)
		fmt.Fprintf(b.log, "fanout one copy %s: %d events, ledger %d bytes (%.1f per event), peak RSS %d MiB\n", r.Case, r.Events, r.LedgerBytes, r.BytesPerEvent(), r.PeakRSS>>20)
	}

	// One backlog, built with the output off, for every drain.
	events, saved, err := b.savedBacklog(ctx, "fanout-saved", b.o.fanoutEvents, b.o.fanoutSize, lumberload.ShapeClassic)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(saved)
	type drainCase struct {
		to            *[]fanRun
		what          string
		healthy, down int
	}
	drains := []drainCase{
		{&res.Reads, "1 output", 1, 0},
		{&res.Reads, fmt.Sprintf("%d outputs", fanoutOutputs), fanoutOutputs, 0},
	}
	// The isolation pair is interleaved over fanoutIsoRounds rounds, each
	// case's median kept: a short drain on a shared machine is noisy, and
	// the goal is a ratio of two of them.
	var iso [2][]fanRun
	for range fanoutIsoRounds {
		drains = append(drains, drainCase{&iso[0], "A alone", 1, 0}, drainCase{&iso[1], "A + B down", 1, 1})
	}
	for _, d := range drains {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.fresh(false); err != nil {
			return nil, err
		}
		if err := restoreStores(saved, b.journalDir(), b.ledgerDir()); err != nil {
			return nil, err
		}
		r, err := b.fanDrain(ctx, d.what, events, d.healthy, d.down)
		r.Rounds = 1
		if err != nil {
			return nil, err
		}
		*d.to = append(*d.to, r)
		fmt.Fprintf(b.log, "fanout drain %-10s %d events: A in %.1f s, all in %.1f s; device read %d bytes, sent %d bytes (%.3f), peak RSS %d MiB\n", r.Case, events,
			r.Elapsed.Seconds(), r.ElapsedAll.Seconds(), r.DeviceRead, r.SentBytes, r.ReadPerSent(), r.PeakRSS>>20)
	}
	for _, rs := range iso {
		res.Isolation = append(res.Isolation, medianRun(rs))
	}
	return res, nil
}

// fanoutIsoRounds is how many times the isolation pair runs.
const fanoutIsoRounds = 3

// medianRun is the run with the median drain time of output A, with the
// largest peak RSS of them all and the count of runs.
func medianRun(rs []fanRun) fanRun {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b fanRun) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	m := sorted[len(sorted)/2]
	for _, r := range rs {
		m.PeakRSS = max(m.PeakRSS, r.PeakRSS)
	}
	m.Rounds = len(rs)
	return m
}

// fanServers starts healthy estest servers that accept everything and
// down servers paused before logpond starts, so that their outputs find
// nothing listening for the whole run. Outputs are named a, b, c, … in
// that order; close stops every server.
func fanServers(healthy, down int) (outs []fanOutput, srvs []*estest.Server, closeAll func(), err error) {
	closeAll = func() {
		for _, s := range srvs {
			s.Close()
		}
	}
	for i := range healthy + down {
		s, err := estest.Start(estest.Options{Seed: int64(i + 1)})
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		srvs = append(srvs, s)
		if i >= healthy {
			if err := s.Pause(); err != nil {
				closeAll()
				return nil, nil, nil, err
			}
		}
		outs = append(outs, fanOutput{name: string(rune('a' + i)), url: s.URL()})
	}
	return outs, srvs, closeAll, nil
}

// fanOneCopy ingests o.fanoutEvents events into fresh stores with n
// outputs draining them as they arrive, the ledger keeping drained
// segments (retention), and returns the ledger's bytes once every record
// is flushed and every output has delivered it.
func (b *bench) fanOneCopy(ctx context.Context, n int) (fanRun, error) {
	r := fanRun{Case: outputsName(n), Healthy: n}
	if err := b.fresh(true); err != nil {
		return r, err
	}
	outs, srvs, closeAll, err := fanServers(n, 0)
	if err != nil {
		return r, err
	}
	defer closeAll()
	// Drained segments stay for the whole run, so that the ledger's bytes
	// are everything the load put in it rather than what the outputs had
	// not yet passed.
	cfg, err := b.fanoutConfig(fmt.Sprintf("fanout-copy-%d", n), outs, "24h")
	if err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	p, admin, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	if _, err := loadEvents(ctx, p.Addr(), admin, b.o.fanoutEvents, b.o.fanoutSize, lumberload.ShapeClassic, false); err != nil {
		p.Stop()
		return r, err
	}
	// The load has stopped: wait until the flusher has moved the journal
	// into the ledger and every cursor has passed its last record.
	limit := time.Now().Add(b.o.drainLimit)
	var m map[string]float64
	for {
		m, err = scrape(admin)
		if err == nil && m["logpond_ledger_last_lsn"] >= m["logpond_journal_last_lsn"] && m["logpond_ledger_lag_records"] == 0 {
			break
		}
		if ctx.Err() != nil || time.Now().After(limit) {
			p.Stop()
			return r, fmt.Errorf("not flushed and drained after %s (last scrape: %v): %v", b.o.drainLimit, err, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.LedgerBytes = int64(m["logpond_ledger_bytes"])
	r.PeakRSS = p.PeakRSS()
	if err := p.Stop(); err != nil {
		return r, fmt.Errorf("stop: %w\n%s", err, p.Output())
	}
	if r.Events, err = ledgerEvents(b.ledgerDir()); err != nil {
		return r, err
	}
	for i, s := range srvs {
		if got := s.Count(); got != int(r.Events) {
			return r, fmt.Errorf("output %s stored %d documents of the %d events in the ledger", outs[i].name, got, r.Events)
		}
	}
	return r, nil
}

// fanDrain starts logpond over the restored backlog of events with
// healthy outputs draining into estest servers and down outputs whose
// servers are paused, and waits until every healthy server holds every
// event, exactly once.
func (b *bench) fanDrain(ctx context.Context, what string, events int64, healthy, down int) (fanRun, error) {
	r := fanRun{Case: what, Healthy: healthy, Down: down, Events: events}
	outs, srvs, closeAll, err := fanServers(healthy, down)
	if err != nil {
		return r, err
	}
	defer closeAll()
	cfg, err := b.fanoutConfig("fanout-"+strings.ReplaceAll(what, " ", "-"), outs, "0s")
	if err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	start := time.Now()
	p, admin, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	limit := time.Now().Add(b.o.drainLimit)
	done := make([]time.Duration, healthy)
	for left := healthy; left > 0; {
		if ctx.Err() != nil || time.Now().After(limit) {
			p.Stop()
			return r, fmt.Errorf("%s: output a stored %d of %d events after %s", what, srvs[0].Count(), events, time.Since(start).Round(time.Second))
		}
		for i := range healthy {
			if done[i] == 0 && srvs[i].Count() >= int(events) {
				done[i] = time.Since(start)
				left--
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Elapsed = done[0]
	for _, d := range done {
		r.ElapsedAll = max(r.ElapsedAll, d)
	}
	m, err := scrape(admin)
	r.PeakRSS = p.PeakRSS()
	if stopErr := p.Stop(); stopErr != nil {
		return r, fmt.Errorf("%s: stop: %w\n%s", what, stopErr, p.Output())
	}
	if err != nil {
		return r, err
	}
	r.DeviceRead, r.SentBytes = int64(m["logpond_ledger_device_read_bytes_total"]), int64(m["logpond_output_bytes_total"])
	for i := range healthy {
		if st := srvs[i].Stats(); srvs[i].Count() != int(events) || st.Created != events {
			return r, fmt.Errorf("%s: output %s: %d documents stored, %d created, for %d events: not exactly once", what, outs[i].name, srvs[i].Count(), st.Created, events)
		}
	}
	return r, nil
}

func outputsName(n int) string {
	if n == 1 {
		return "1 output"
	}
	return fmt.Sprintf("%d outputs", n)
}

// fanOutput is one named Elasticsearch output of a fan-out configuration.
type fanOutput struct{ name, url string }

// fanoutConfig writes a logpond configuration with one
// [output.elasticsearch.NAME] table per output (none: outputs off) and the
// ledger's retention, and returns its path.
func (b *bench) fanoutConfig(name string, outs []fanOutput, retention string) (string, error) {
	var o strings.Builder
	if len(outs) == 0 {
		o.WriteString("[output.elasticsearch]\nenabled = false\n")
	}
	for _, out := range outs {
		fmt.Fprintf(&o, "[output.elasticsearch.%s]\nhosts = [%q]\n", out.name, out.url)
	}
	text := fmt.Sprintf(`[journal]
dir = %q
[ledger]
dir = %q
max_bytes = "%dMiB"
retention = %q
[input.beats]
listen = "127.0.0.1:0"
%s[admin]
listen = "127.0.0.1:0"
[log]
level = "info"
`, b.journalDir(), b.ledgerDir(), b.o.ledgerImage*3/4>>20, retention, o.String())
	path := filepath.Join(b.work, name+".toml")
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// loadEvents loads the logpond listening on addr with 4 connections of
// 2048-event windows of size-byte events of a shape until its admin listener at
// admin reports n events acknowledged, and returns the load's result.
// With exact, the load sends exactly n events (lumberload.Config.Events),
// the last window cut short, rather than whole windows until the
// threshold, which overshoots by up to a window per connection.
func loadEvents(ctx context.Context, addr, admin string, n int64, size int, shape lumberload.Shape, exact bool) (lumberload.Result, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for lctx.Err() == nil {
			if m, err := scrape(admin); err == nil && m["logpond_input_events_total"] >= float64(n) {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	cfg := lumberload.Config{Connections: 4, Batch: 2048, EventSize: size, Shape: shape, Duration: 10 * time.Minute}
	if exact {
		cfg.Events = n
	}
	res, err := lumberload.Run(lctx, addr, cfg)
	if ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	if err != nil {
		return res, fmt.Errorf("load %d events: %w", n, err)
	}
	return res, nil
}

// fanoutMarkdown renders the fan-out section.
func fanoutMarkdown(f *fanoutResult, o options) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Fan-out: outputs sharing one ledger\n\n")
	if f == nil {
		return b.String()
	}
	p("Named Elasticsearch outputs (`[output.elasticsearch.NAME]`, default settings), each draining into its own in-process `estest` server from its own cursor in one ledger (direct IO, a 32 MiB read cache shared by the outputs' readers). Events of %d B; every healthy output must store each event exactly once. Peak RSS is logpond's VmHWM over the run, formula its memory formula.\n\n", o.fanoutSize)

	p("### One copy: the ledger's bytes do not grow with the outputs\n\n")
	p("At least %d events ingested (4 × 2048-event windows as fast as acknowledged) into fresh stores, the outputs draining as the events arrive and the ledger keeping drained segments (`retention = \"24h\"`); the ledger's bytes (`logpond_ledger_bytes`) once everything is flushed and delivered. The load stops at a threshold, so the events differ a little between runs: the ratio compares bytes per event.\n\n", o.fanoutEvents)
	p("| outputs | events | ledger bytes | bytes per event | × 1 output | peak RSS MiB | formula MiB |\n")
	p("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range f.OneCopy {
		p("| %s | %d | %d | %.1f | %s | %s | %s |\n", r.Case, r.Events, r.LedgerBytes, r.BytesPerEvent(), ratio(r.BytesPerEvent(), first(f.OneCopy).BytesPerEvent()), mib(r.PeakRSS), mib(r.Formula))
	}
	p("\nGoal: within 5%% of 1 output (0.95× to 1.05×).\n\n")

	p("### Reads in step: outputs close together read the device about once\n\n")
	p("A backlog of %d events, built first with the outputs off, drained from copies of the same stores by 1 output and by %d healthy outputs. Device read is `logpond_ledger_device_read_bytes_total` (what the readers read from the segment files past the shared cache); sent is `logpond_output_bytes_total` summed over the outputs (bulk bytes).\n\n", first(f.Reads).Events, fanoutOutputs)
	p("| outputs | drain s (all outputs) | events/s per output | sent MiB | device read MiB | device read / sent | device read × 1 output | peak RSS MiB | formula MiB |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range f.Reads {
		rate := 0.0
		if r.ElapsedAll > 0 {
			rate = float64(r.Events) / r.ElapsedAll.Seconds()
		}
		p("| %s | %.1f | %.0f | %.1f | %.1f | %.3f | %s | %s | %s |\n", r.Case, r.ElapsedAll.Seconds(), rate, float64(r.SentBytes)/(1<<20), float64(r.DeviceRead)/(1<<20), r.ReadPerSent(),
			ratio(float64(r.DeviceRead), float64(first(f.Reads).DeviceRead)), mib(r.PeakRSS), mib(r.Formula))
	}
	p("\nGoal: the device bytes read with %d outputs at most 1.5× those read with 1.\n\n", fanoutOutputs)

	p("### Isolation: an output that is down does not slow the others\n\n")
	p("The same backlog drained by output A alone, then by A beside output B whose server is paused (nothing listening) for the whole run, the two interleaved %d times; each row is the median run by A's drain time (peak RSS: the largest). Time runs from logpond's start until A's server holds every event.\n\n", first(f.Isolation).Rounds)
	p("| run | A's drain s | A's events/s | × A alone | peak RSS MiB | formula MiB |\n")
	p("|---|---:|---:|---:|---:|---:|\n")
	for _, r := range f.Isolation {
		p("| %s | %.1f | %.0f | %s | %s | %s |\n", r.Case, r.Elapsed.Seconds(), r.Rate(), ratio(r.Rate(), first(f.Isolation).Rate()), mib(r.PeakRSS), mib(r.Formula))
	}
	p("\nGoal: A's rate beside B down at least 0.9× A's rate alone.\n\n")
	p("Every row of this section: `sudo bin/benchreport -parts fanout -fanout-events %d -fanout-size %d -out /tmp/fanout.md` (after `make build`).\n\n", o.fanoutEvents, o.fanoutSize)
	return b.String()
}

// first is the first run, or the zero run when there is none.
func first(rs []fanRun) fanRun {
	if len(rs) == 0 {
		return fanRun{}
	}
	return rs[0]
}

// ratio renders x/base as "1.02×", or "–" when base is 0.
func ratio(x, base float64) string {
	if base == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x/base)
}

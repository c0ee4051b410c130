package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// dsRounds is how many times each shape's backlog is drained, the shapes
// interleaved round by round: a short drain on a shared machine is noisy,
// and the goal is a ratio of two of them. The ratios are taken within a
// round (drains seconds apart, under the same load from the machine's
// other tenants) and the table shows their median. The order of the
// shapes rotates from round to round.
const dsRounds = 5

// classicIndex is where the default output configuration sends a classic
// event of lumberload's: its index is %{[@metadata][beat]}-%{[@metadata][version]}.
const classicIndex = "beatsbench-1"

// dsShapes are the shapes the datastreams part drains, classic first (the
// others are compared with it), each with what it is.
var dsShapes = []struct {
	shape lumberload.Shape
	what  string
}{
	{lumberload.ShapeClassic, "no data_stream: to `index`, as sent"},
	{lumberload.ShapeAgent, "Elastic Agent's: @timestamp and a whole data_stream: to its data stream, as sent"},
	{lumberload.ShapeAgentPartial, "data_stream naming only the dataset, no @timestamp: to its data stream, the output adding @timestamp, type and namespace"},
}

// dsRun is one shape's drain: the median over the rounds.
type dsRun struct {
	Shape   lumberload.Shape
	What    string
	Events  int64
	Elapsed time.Duration // from logpond's start until the server held every event
	// Stall is the longest the server's document count stood still
	// (drainRun.Stall): the output's wait for more events before the
	// last request when that is not full, which depends on where the
	// backlog ends; StallAt is the count it stood at.
	Stall   time.Duration
	StallAt int
	PeakRSS int64 // the largest over the rounds
	// CPU is logpond's CPU time over the drain (start included), the
	// median over the rounds: what routing costs logpond, apart from the
	// test server, which shares the machine.
	CPU     time.Duration
	Formula int64
	Rounds  int
	// SpeedRatio and CPURatio are the medians over the rounds of this
	// shape's events/s and CPU per event over classic's in the same
	// round (1 for classic itself).
	SpeedRatio, CPURatio float64
	// Landed is how many documents each index (classic) or data stream
	// (Agent shapes) holds after the drain, the same in every round.
	Landed map[string]int
}

// Net is the drain time without its longest stall: what the shapes are
// compared by, as the wait before a backlog's last request is the same
// whatever the events (a backlog ending on a full request has none).
func (r dsRun) Net() time.Duration { return r.Elapsed - r.Stall }

// CPUPerEvent is logpond's CPU time per event of the backlog, in µs.
func (r dsRun) CPUPerEvent() float64 { return r.CPU.Seconds() * 1e6 / float64(r.Events) }

// EventsPerSec is the drain rate over Net.
func (r dsRun) EventsPerSec() float64 { return float64(r.Events) / r.Net().Seconds() }

// datastreams builds one backlog per shape, of o.dsEvents events of
// o.dsSize bytes, with the output off, and drains each dsRounds times
// into a fresh estest server from a copy of its stores, with the default
// output settings (data_stream = "auto"), checking that every event
// landed where its shape says, once.
func (b *bench) datastreams(ctx context.Context) ([]dsRun, error) {
	type backlog struct {
		events int64
		saved  string
	}
	var backlogs []backlog
	defer func() {
		for _, bl := range backlogs {
			os.RemoveAll(bl.saved)
		}
	}()
	for _, s := range dsShapes {
		events, saved, err := b.savedBacklog(ctx, "ds-saved-"+string(s.shape), b.o.dsEvents, b.o.dsSize, s.shape)
		if err != nil {
			return nil, fmt.Errorf("%s backlog: %w", s.shape, err)
		}
		backlogs = append(backlogs, backlog{events, saved})
	}
	runs := make([][]dsRun, len(dsShapes))
	for round := range dsRounds {
		// Each round starts with the next shape, so that no shape always
		// follows the same one (and the deletion of its stores).
		for k := range dsShapes {
			i := (round + k) % len(dsShapes)
			s := dsShapes[i]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := b.fresh(false); err != nil {
				return nil, err
			}
			if err := restoreStores(backlogs[i].saved, b.journalDir(), b.ledgerDir()); err != nil {
				return nil, err
			}
			var landed map[string]int
			check := func(srv *estest.Server) error {
				var err error
				landed, err = checkLanded(s.shape, srv.Docs(), backlogs[i].events)
				return err
			}
			d, err := b.drainOnce(ctx, "datastreams-"+string(s.shape), s.what, backlogs[i].events, drainFaults{}, check)
			if err != nil {
				return nil, err
			}
			r := dsRun{Shape: s.shape, What: s.what, Events: d.Events, Elapsed: d.Elapsed, Stall: d.Stall, StallAt: d.StallAt, PeakRSS: d.PeakRSS, CPU: d.CPU, Formula: d.Formula, Landed: landed}
			runs[i] = append(runs[i], r)
			fmt.Fprintf(b.log, "datastreams %-13s %d events in %.2f s (longest stall %.2f s at %d; %.0f/s without it), logpond CPU %.2f s, peak RSS %d MiB; %d bulk requests, 409 %d, 429 %d, 503 %d; landed %v\n",
				s.shape, r.Events, r.Elapsed.Seconds(), r.Stall.Seconds(), r.StallAt, r.EventsPerSec(), r.CPU.Seconds(), r.PeakRSS>>20, d.Requests, d.Conflicts, d.Rejected, d.Failed503, landed)
		}
	}
	out := make([]dsRun, len(runs))
	for i, rs := range runs {
		out[i] = medianDS(rs, runs[0])
	}
	return out, nil
}

// medianDS is the run with the median Net drain time, with the median CPU
// over the rounds, the largest peak RSS of them all, the count of runs,
// and the medians of the per-round ratios to classic's runs (round by
// round: rs[i] and classic[i] were drained seconds apart).
func medianDS(rs, classic []dsRun) dsRun {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b dsRun) int { return cmp.Compare(a.Net(), b.Net()) })
	m := sorted[len(sorted)/2]
	cpus := make([]time.Duration, len(rs))
	speed := make([]float64, len(rs))
	cpu := make([]float64, len(rs))
	for i, r := range rs {
		m.PeakRSS = max(m.PeakRSS, r.PeakRSS)
		cpus[i] = r.CPU
		speed[i] = r.EventsPerSec() / classic[i].EventsPerSec()
		cpu[i] = r.CPUPerEvent() / classic[i].CPUPerEvent()
	}
	m.CPU = median(cpus)
	m.SpeedRatio, m.CPURatio = median(speed), median(cpu)
	m.Rounds = len(rs)
	return m
}

// checkLanded checks that the stored documents are the events of one
// shape, each where an output with default settings must put it: a
// classic event in classicIndex and no data stream; an Agent-shaped event
// number n in lumberload.DataStream(n), stored with @timestamp and the
// whole data_stream object it was routed by (the output completes
// agent-partial's). With drainOnce's check (as many documents stored, and
// answered 201, as the backlog's events) this makes every event stored
// once, where it belongs. It returns the documents per index or data
// stream.
func checkLanded(shape lumberload.Shape, docs []estest.Doc, events int64) (map[string]int, error) {
	if int64(len(docs)) != events {
		return nil, fmt.Errorf("%d documents stored for %d events", len(docs), events)
	}
	landed := map[string]int{}
	for _, d := range docs {
		var v struct {
			N          *int    `json:"n"`
			Timestamp  *string `json:"@timestamp"`
			DataStream *struct {
				Type, Dataset, Namespace string
			} `json:"data_stream"`
		}
		if err := json.Unmarshal(d.Source, &v); err != nil || v.N == nil {
			return nil, fmt.Errorf("document %s/%s is not an event of the load (%v): %.200s", d.Index, d.ID, err, d.Source)
		}
		switch shape {
		case lumberload.ShapeClassic:
			if d.DataStream != "" || d.Index != classicIndex {
				return nil, fmt.Errorf("classic event %d landed in %s (data stream %q), not in the index %s", *v.N, d.Index, d.DataStream, classicIndex)
			}
			landed[d.Index]++
		default:
			want := lumberload.DataStream(*v.N)
			if d.DataStream != want {
				return nil, fmt.Errorf("%s event %d landed in %s (data stream %q), not in the data stream %s", shape, *v.N, d.Index, d.DataStream, want)
			}
			if v.Timestamp == nil || v.DataStream == nil || v.DataStream.Type != "logs" || v.DataStream.Dataset != lumberload.Dataset(*v.N) || v.DataStream.Namespace != "default" {
				return nil, fmt.Errorf("%s event %d stored in %s without @timestamp or its whole data_stream: %.300s", shape, *v.N, want, d.Source)
			}
			landed[d.DataStream]++
		}
	}
	return landed, nil
}

// landedText is where a shape's documents landed, for the table.
func landedText(r dsRun) string {
	if len(r.Landed) == 0 {
		return "–"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r.Landed)) {
		parts = append(parts, fmt.Sprintf("`%s` %d", name, r.Landed[name]))
	}
	kind := "index"
	if r.Shape != lumberload.ShapeClassic {
		kind = "data streams"
	}
	return fmt.Sprintf("%d %s: %s", len(r.Landed), kind, strings.Join(parts, ", "))
}

// dsMarkdown renders the data streams section of r. From a run of some
// parts only (-parts), the section says when and on which revision it was
// measured, so that it still says so when it replaces the section of a
// whole report.
func dsMarkdown(r *report) string {
	runs, o := r.Datastreams, r.Opts
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Data streams: what routing each event costs\n\n")
	if len(runs) == 0 {
		return b.String()
	}
	p("One backlog of %d events of %d B per event shape, each built with the output off, then drained into a fresh in-process `estest` server (which enforces data stream rules: create only, `@timestamp` required) from a copy of its stores, with the default output settings (`data_stream = \"auto\"`: an event with a `data_stream` object goes to the data stream it names, any other to `index`). The shapes are drained in turn, interleaved %d times, each round starting with the next shape; the table shows each shape's median drain, its median CPU (peak RSS: the largest), and, in the × classic columns, the median of the per-round ratios (each round's drains seconds apart, so a stretch when the shared machine was slow weighs on every shape alike). Time runs from logpond's start until the server holds every event; \"stall\" is the longest the server's document count stood still after its first rise (to the poll's 20 ms): when the backlog's last bulk request is not full, the output waits for more events until the ledger has not grown for two `ledger.flush_interval` (200 ms) before it sends it, a wait that depends only on where the backlog ends, not on the events, so events/s and × classic count the drain time without the stall. Every event must be stored exactly once (201 once per event), a classic event in the index `%s`, an Agent-shaped event in its data stream `logs-{dataset}-default` with `@timestamp` and its whole `data_stream` object. The Agent shapes cycle through %d datasets, so every bulk request holds events bound for %d data streams.\n\n",
		o.dsEvents, o.dsSize, runs[0].Rounds, classicIndex, len(lumberload.Datasets()), len(lumberload.Datasets()))
	if o.parts != defaultOptions().parts {
		p("Measured %s, logpond %s, in a run of `-parts %s` on the same machine.\n\n", r.Date, r.Revision, o.parts)
	}
	p("| shape | what | events | drain s | stall s | events/s | × classic | logpond CPU µs/event | × classic | peak RSS MiB | formula MiB | landed (documents) |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, run := range runs {
		p("| %s | %s | %d | %.2f | %.2f | %.0f | %.2f× | %.2f | %.2f× | %s | %s | %s |\n", run.Shape, run.What, run.Events, run.Elapsed.Seconds(), run.Stall.Seconds(), run.EventsPerSec(), run.SpeedRatio,
			run.CPUPerEvent(), run.CPURatio, mib(run.PeakRSS), mib(run.Formula), landedText(run))
	}
	p("\nGoals: agent and agent-partial drain at least 0.9× classic's events/s, and cost logpond at most 1.05× classic's CPU per event. The drain time also holds the in-process test server's work, on the same two cores, and its data stream checks (parsing each `@timestamp`, backing indices) are work classic events do not cause; logpond's CPU per event is routing's own cost. agent-partial's stored documents are larger than the others (the output adds `@timestamp`, type and namespace: about 70 B on each 512 B event), so there is more to send and store per event.\n\n")
	p("Every row of this section: `sudo bin/benchreport -parts datastreams -datastreams-events %d -datastreams-size %d -out /tmp/ds.md` (after `make build`).\n\n", o.dsEvents, o.dsSize)
	return b.String()
}

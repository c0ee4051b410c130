package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// drainCPURun is one drain of the drain part's backlog into the
// accept-all sink (estest.Sink), measured for logpond's CPU: the sink
// parses nothing but action lines, so the two cores are logpond's as
// much as they can be.
type drainCPURun struct {
	Events int64
	// Startup is logpond's CPU time from its start until the sink
	// acknowledged its first item: opening the stores, recovery and
	// the first read, paid once per start whatever the backlog.
	Startup time.Duration
	// Drain is logpond's CPU time from the sink's first item until its
	// last, and Elapsed the time between them.
	Drain, Elapsed time.Duration
	// Warmup is logpond's CPU time from the sink's first item until it
	// had WarmEvents of them (about drainCPUWarmup of the backlog): the
	// part of Drain in which the output's buffers and the heap are
	// touched for the first time.
	Warmup     time.Duration
	WarmEvents int64
	PeakRSS    int64
	Formula    int64
}

// PerEvent is logpond's CPU time per delivered event over the drain, in
// µs.
func (r drainCPURun) PerEvent() float64 { return r.Drain.Seconds() * 1e6 / float64(r.Events) }

// Steady is PerEvent after the warm-up: over the events after the first
// WarmEvents, in µs.
func (r drainCPURun) Steady() float64 {
	return (r.Drain - r.Warmup).Seconds() * 1e6 / float64(r.Events-r.WarmEvents)
}

// WarmupExtra is what the warm-up cost beyond the steady cost of its
// events, in CPU seconds.
func (r drainCPURun) WarmupExtra() float64 {
	return r.Warmup.Seconds() - r.Steady()*float64(r.WarmEvents)/1e6
}

// drainCPUWarmup is the share of the backlog counted as the drain's
// warm-up.
const drainCPUWarmup = 0.1

// drainCPU drains the saved backlog (events of it) into a fresh
// accept-all sink rounds times, each from a fresh copy of the stores.
func (b *bench) drainCPU(ctx context.Context, saved string, events int64, rounds int) ([]drainCPURun, error) {
	var runs []drainCPURun
	for round := range rounds {
		if err := b.fresh(false); err != nil {
			return nil, err
		}
		if err := restoreStores(saved, b.journalDir(), b.ledgerDir()); err != nil {
			return nil, err
		}
		r, err := b.drainCPUOnce(ctx, events)
		if err != nil {
			return nil, fmt.Errorf("drain CPU round %d: %w", round+1, err)
		}
		fmt.Fprintf(b.log, "drain cpu round %d: %d events in %.2f s, logpond CPU %.2f s (%.2f µs/event; %.2f after the first %d), %.2f s before the first item, peak RSS %d MiB\n",
			round+1, events, r.Elapsed.Seconds(), r.Drain.Seconds(), r.PerEvent(), r.Steady(), r.WarmEvents, r.Startup.Seconds(), r.PeakRSS>>20)
		runs = append(runs, r)
	}
	return runs, nil
}

// drainCPUOnce starts logpond over the restored stores with its output
// pointed at a fresh sink and samples its CPU time when the first item
// arrives and when the last does (the sink's count, polled every
// drainCPUPoll: the sink counts an item when it answers its request).
func (b *bench) drainCPUOnce(ctx context.Context, events int64) (drainCPURun, error) {
	r := drainCPURun{Events: events}
	sink, err := estest.StartSink()
	if err != nil {
		return r, err
	}
	defer sink.Close()
	cfg, err := b.config("drain-cpu", sink.URL())
	if err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	p, _, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Stop()
		}
	}()
	limit := time.Now().Add(b.o.drainLimit)
	var first time.Time
	var startCPU time.Duration
	warmMark := int64(float64(events) * drainCPUWarmup)
	for {
		n := sink.Items()
		if n > 0 && first.IsZero() {
			first, startCPU = time.Now(), p.CPU()
		}
		if n >= warmMark && r.WarmEvents == 0 && n < events {
			r.Warmup, r.WarmEvents = p.CPU()-startCPU, n
		}
		if n >= events {
			r.Elapsed, r.Drain = time.Since(first), p.CPU()-startCPU
			break
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if time.Now().After(limit) {
			return r, fmt.Errorf("%d of %d events delivered: %w", n, events, errors.New("time limit passed"))
		}
		time.Sleep(drainCPUPoll)
	}
	r.Startup, r.PeakRSS = startCPU, p.PeakRSS()
	stopped = true
	if err := p.Stop(); err != nil {
		return r, fmt.Errorf("stop: %w\n%s", err, p.Output())
	}
	if n := sink.Items(); n != events {
		return r, fmt.Errorf("the sink acknowledged %d items for %d events", n, events)
	}
	return r, nil
}

// drainCPUPoll is how often drainCPUOnce reads the sink's count: often
// enough to time a drain of a second to a percent, and seldom enough that
// the polling process, on the same two cores, does not take logpond's
// CPU.
const drainCPUPoll = 5 * time.Millisecond

// goalDrainCPU is the most CPU per delivered event, in µs, the drain of
// 512 B events into the accept-all sink may cost logpond.
const goalDrainCPU = 1.5

// drainCPUMarkdown is the drain part's CPU table: each round, and the
// median.
func drainCPUMarkdown(runs []drainCPURun, size int) string {
	if len(runs) == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### What the drain costs logpond per event\n\n")
	p("A backlog of %d events of %d B, built as the one above, drained %d times, each from a fresh copy of the stores, into the accept-all bulk sink (`estest.Sink`, in-process: it answers 201 for every action line and parses nothing else), so that the two cores are logpond's as much as they can be. CPU is logpond's user and system time from the sink's first item until its last, per delivered event; start is its CPU time before the first item (opening the stores, recovery, the first read: paid once per start, whatever the backlog). No processors: the processing part shows what a chain adds.\n\n", runs[0].Events, size, len(runs))
	p("The first %.0f%% of the events pay a warm-up besides: the output's chunk and request buffers, and the Go heap as it grows to its working size, are touched for the first time (page faults, which `perf` shows to be dear on this virtual machine). \"After the warm-up\" is the CPU per event over the rest; \"warm-up extra\" is what the first events cost beyond that rate, once per drain whatever the backlog. Drain s ends with about two `ledger.flush_interval` (200 ms) in which the last, partial request waits for more events, nearly free of CPU.\n\n", drainCPUWarmup*100)
	p("| round | drain s | events/s | logpond CPU µs/event | after the warm-up µs/event | warm-up extra CPU s | start CPU s | peak RSS MiB | formula MiB |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	per := make([]float64, 0, len(runs))
	for i, r := range runs {
		p("| %d | %.2f | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %s |\n", i+1, r.Elapsed.Seconds(), float64(r.Events)/r.Elapsed.Seconds(), r.PerEvent(), r.Steady(), r.WarmupExtra(), r.Startup.Seconds(), mib(r.PeakRSS), mib(r.Formula))
		per = append(per, r.PerEvent())
	}
	med := midMedian(per)
	p("\nGoal: at most %.1f µs of logpond's CPU per delivered event (the median round). Verdict: %s.\n\n", goalDrainCPU, verdict(med <= goalDrainCPU, fmt.Sprintf("%.2f µs", med)))
	return b.String()
}

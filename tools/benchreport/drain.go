package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// drainRun is one profile of the drain benchmark: the same backlog
// drained into an estest server with some faults.
type drainRun struct {
	Profile, What string
	Events        int64         // the backlog
	Elapsed       time.Duration // from logpond's start until the server held every event
	Stored        int           // documents in the server at the end
	Created       int64         // items the server answered 201
	Conflicts     int64         // items answered 409 (sent again after being stored)
	Rejected      int64         // items answered 429
	Failed503     int64         // requests answered 503
	Requests      int64         // bulk requests the server saw
	AcceptRate    float64       // overload and storm: the server's items/s; 0 otherwise
	Refusal       time.Duration // storm: how long every item was refused first
	PeakRSS       int64
	Formula       int64         // logpond's memory formula
	CPU           time.Duration // logpond's CPU time (user and system) from its start until the server held every event
	// Stall is the longest the server's document count stood still
	// between its first rise and every event, to the poll's 20 ms, and
	// StallAt the count it stood at: when the backlog's last bulk
	// request is not full, the output waits for more events until the
	// ledger has not grown for two ledger.flush_interval (200 ms by
	// default) before it sends it, a wait that depends on where the
	// backlog ends, not on the events.
	Stall   time.Duration
	StallAt int
}

// drainProfiles are the fault sets, in the order they run; the overload
// and storm rates are set from the clean run.
var drainProfiles = []struct{ name, what string }{
	{"clean", "every item accepted"},
	{"random", "10% of items 429, 2% of requests 503, at random"},
	{"overload", "the server accepts C items/s (a token bucket holding one second's worth) and answers 429 beyond"},
	{"storm", "every item 429 for the first R, then as overload: C items/s, 429 beyond"},
}

// drainFaults is what the estest server of one drain profile injects:
// first from logpond's start, then, when after is positive, then from
// after on.
type drainFaults struct {
	first, then estest.Faults
	after       time.Duration
}

// drain builds a backlog of o.drainEvents events of o.drainSize bytes with
// the output off, keeps a copy of both stores, and drains that same
// backlog into an estest server once per profile; then it drains a
// backlog of o.drainCPUEvents events o.rounds times into the accept-all
// sink for logpond's CPU per event (drainCPU).
func (b *bench) drain(ctx context.Context) ([]drainRun, []drainCPURun, error) {
	events, saved, err := b.savedBacklog(ctx, "drain-saved", b.o.drainEvents, b.o.drainSize, lumberload.ShapeClassic)
	if err != nil {
		return nil, nil, err
	}
	defer func() { os.RemoveAll(saved) }()
	var runs []drainRun
	var clean time.Duration
	for _, pr := range drainProfiles {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := b.fresh(false); err != nil {
			return nil, nil, err
		}
		if err := restoreStores(saved, b.journalDir(), b.ledgerDir()); err != nil {
			return nil, nil, err
		}
		var f drainFaults
		rate := 0.0
		what := pr.what
		switch pr.name {
		case "random":
			f.first = estest.Faults{ItemReject429: 0.10, Request503: 0.02}
		case "overload":
			rate = float64(events) / clean.Seconds() / 3
			f.first = estest.Faults{AcceptRate: rate}
		case "storm":
			// A cluster that refuses everything for a while (a node
			// restarting, a full write queue) and then comes back with a
			// third of the capacity: the pace sinks to its floor during
			// the refusal and must climb back within seconds.
			rate = float64(events) / clean.Seconds() / 3
			f = drainFaults{first: estest.Faults{ItemReject429: 1}, then: estest.Faults{AcceptRate: rate}, after: b.o.drainRefusal}
			what = strings.Replace(what, "first R", "first "+b.o.drainRefusal.String(), 1)
		}
		r, err := b.drainOnce(ctx, pr.name, what, events, f, nil)
		if err != nil {
			return nil, nil, err
		}
		r.AcceptRate, r.Refusal = rate, f.after
		if pr.name == "clean" {
			clean = r.Elapsed
		}
		runs = append(runs, r)
		fmt.Fprintf(b.log, "drain %-8s %d events in %.1f s; stored %d, 201 %d, 409 %d, 429 %d, 503 %d, peak RSS %d MiB\n", pr.name, events,
			r.Elapsed.Seconds(), r.Stored, r.Created, r.Conflicts, r.Rejected, r.Failed503, r.PeakRSS>>20)
	}
	// The CPU runs drain a backlog of their own, larger: paying off a
	// backlog costs a fixed warm-up (the output's buffers and the heap
	// touched for the first time) and then a cost per event, and a
	// backlog of a few seconds' drain shows the latter.
	if b.o.drainCPUEvents != events {
		if err := os.RemoveAll(saved); err != nil {
			return nil, nil, err
		}
		if events, saved, err = b.savedBacklog(ctx, "drain-cpu-saved", b.o.drainCPUEvents, b.o.drainSize, lumberload.ShapeClassic); err != nil {
			return nil, nil, err
		}
	}
	cpu, err := b.drainCPU(ctx, saved, events, b.o.rounds)
	if err != nil {
		return nil, nil, err
	}
	return runs, cpu, nil
}

// drainOnce starts logpond over the restored stores with its output
// pointed at a fresh estest server with faults f, and waits until the
// server holds every event of the backlog. check, when not nil, is asked
// about the server's documents once logpond has stopped, before the
// server goes: an error from it fails the run.
func (b *bench) drainOnce(ctx context.Context, name, what string, events int64, f drainFaults, check func(*estest.Server) error) (drainRun, error) {
	r := drainRun{Profile: name, What: what, Events: events}
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		return r, err
	}
	defer srv.Close()
	srv.SetFaults(f.first)
	cfg, err := b.config("drain-"+name, srv.URL())
	if err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	start := time.Now()
	if f.after > 0 {
		// SetFaults starts the token bucket full, as a cluster that comes
		// back has empty write queues.
		t := time.AfterFunc(f.after, func() { srv.SetFaults(f.then) })
		defer t.Stop()
	}
	p, _, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	var n int
	r.Stall, r.StallAt, n, err = waitStored(ctx, srv.Count, int(events), start, time.Now().Add(b.o.drainLimit))
	if err != nil {
		p.Stop()
		return r, fmt.Errorf("%s: %d of %d events delivered after %s", name, n, events, time.Since(start).Round(time.Second))
	}
	r.Elapsed = time.Since(start)
	r.PeakRSS, r.CPU = p.PeakRSS(), p.CPU()
	if err := p.Stop(); err != nil {
		return r, fmt.Errorf("%s: stop: %w\n%s", name, err, p.Output())
	}
	st := srv.Stats()
	r.Stored, r.Created, r.Conflicts = srv.Count(), st.Created, st.Conflicts409
	r.Rejected, r.Failed503, r.Requests = st.Rejected429, st.Failed503Requests, st.BulkRequests
	if r.Stored != int(events) || r.Created != events {
		return r, fmt.Errorf("%s: %d documents stored, %d created, for %d events: not exactly once", name, r.Stored, r.Created, events)
	}
	if check != nil {
		if err := check(srv); err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
	}
	return r, nil
}

// savedBacklog builds a backlog of n events of size bytes and a shape in
// fresh stores with the output off, and keeps a copy of both stores in
// the directory name on the ledger's file system, for runs that each
// drain the same backlog (restoreStores). It returns the events the
// ledger holds and the copy's directory, which the caller removes.
func (b *bench) savedBacklog(ctx context.Context, name string, n int64, size int, shape lumberload.Shape) (int64, string, error) {
	if err := b.fresh(true); err != nil {
		return 0, "", err
	}
	events, err := b.fillEvents(ctx, n, size, shape)
	if err != nil {
		return 0, "", err
	}
	saved := filepath.Join(b.lfs.dir, name)
	if err := copyStores(b.journalDir(), b.ledgerDir(), saved); err != nil {
		return 0, "", err
	}
	return events, saved, nil
}

// fillEvents runs logpond without output and loads it with exactly n
// events of size bytes and a shape (so that backlogs of different shapes
// hold as many events); it stops logpond (whose final flush moves the
// journal into the ledger) and returns the events the ledger holds.
func (b *bench) fillEvents(ctx context.Context, n int64, size int, shape lumberload.Shape) (int64, error) {
	cfgPath, err := b.config("drain-fill", "")
	if err != nil {
		return 0, err
	}
	p, admin, err := b.logpond(cfgPath)
	if err != nil {
		return 0, err
	}
	res, err := loadEvents(ctx, p.Addr(), admin, n, size, shape, true)
	if stopErr := p.Stop(); stopErr != nil {
		return 0, fmt.Errorf("stop after filling: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return 0, fmt.Errorf("fill the backlog: %w", err)
	}
	// The load generator's count, not logpond's metric: logpond counts a
	// batch just after writing its ACK, so a scrape right after the last
	// ACK can miss it.
	if res.Events < n {
		return 0, fmt.Errorf("only %d of %d events acknowledged", res.Events, n)
	}
	// The backlog is what the stopped logpond stored, counted in its
	// ledger (a batch stored but not acknowledged would be in it too).
	got, err := ledgerEvents(b.ledgerDir())
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(b.log, "drain: backlog of %d %s events of %d B (%d acknowledged by the load generator)\n", got, shape, size, res.Events)
	return got, nil
}

// ledgerEvents counts the events of every record in the ledger in dir,
// records of either version (a compressed one is verified, not
// decompressed: its header holds the count).
func ledgerEvents(dir string) (int64, error) {
	r, err := ledger.NewDirReader(dir, 1, ledger.InspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("count the backlog: %w", err)
	}
	defer r.Close()
	var n int64
	for r.Next() {
		h, err := record.Verify(r.Record())
		if err != nil {
			return 0, fmt.Errorf("count the backlog: LSN %d: %w", r.LSN(), err)
		}
		n += int64(h.Count)
	}
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("count the backlog: %w", err)
	}
	return n, nil
}

// copyStores copies the journal and ledger directories under dst.
func copyStores(journal, ledger, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, d := range []string{journal, ledger} {
		if out, err := exec.Command("cp", "-a", d, filepath.Join(dst, filepath.Base(d))).CombinedOutput(); err != nil {
			return fmt.Errorf("copy %s: %v: %s", d, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// restoreStores copies the saved stores back into place (both must be
// absent).
func restoreStores(saved, journal, ledger string) error {
	for _, d := range []string{journal, ledger} {
		if out, err := exec.Command("cp", "-a", filepath.Join(saved, filepath.Base(d)), d).CombinedOutput(); err != nil {
			return fmt.Errorf("restore %s: %v: %s", d, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// drainMarkdown renders the drain section.
func drainMarkdown(runs []drainRun, cpu []drainCPURun, o options, measured string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Drain: a backlog into a cluster that pushes back\n\n")
	if len(runs) == 0 {
		return b.String()
	}
	p("A backlog of %d events of %d B, built first with the output off, drained into an in-process `estest` server once per profile from copies of the same stores (default output settings: `workers = 4`, `concurrency = \"adaptive\"`, `flush_bytes = \"1MiB\"`, `retry_initial_interval = \"2s\"`). Time runs from logpond's start until the server holds every event; every profile must store each event exactly once (201 once per event, no document missing).\n\n", runs[0].Events, o.drainSize)
	p("%s", measured)
	p("| profile | what | drain s | × clean | ideal s | × ideal | 429 items | 429 per delivered | 503 requests | requests | 409 | peak RSS MiB | formula MiB |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	clean := runs[0].Elapsed
	for _, r := range runs {
		ideal, vsIdeal := "–", "–"
		what := r.What
		if r.AcceptRate > 0 {
			id := r.Refusal.Seconds() + float64(r.Events)/r.AcceptRate
			ideal, vsIdeal = fmt.Sprintf("%.1f", id), fmt.Sprintf("%.2f×", r.Elapsed.Seconds()/id)
			what = strings.Replace(what, "C items/s", fmt.Sprintf("C = %.0f items/s", r.AcceptRate), 1)
		}
		p("| %s | %s | %.1f | %.2f× | %s | %s | %d | %.3f | %d | %d | %d | %s | %s |\n", r.Profile, what, r.Elapsed.Seconds(),
			r.Elapsed.Seconds()/clean.Seconds(), ideal, vsIdeal, r.Rejected, float64(r.Rejected)/float64(r.Events), r.Failed503, r.Requests, r.Conflicts, mib(r.PeakRSS), mib(r.Formula))
	}
	p("\nThe ideal time is n/C for overload (the backlog of n events at the server's rate) and R + n/C for storm (R: the time every item was refused). Goals: random ≤ 1.5× clean; overload ≤ 1.1× ideal with ≤ 0.1 rejected items per delivered event; storm ≤ 1.2× ideal. C is a third of the clean run's rate.\n\n")
	p("%s", drainCPUMarkdown(cpu, o.drainSize))
	return b.String()
}

// waitStored waits until count() (the server's documents) reaches want.
// It returns the longest the count stood still after its first rise
// (not logpond's start before it) and the count it stood at; err when
// ctx ends or limit passes first, with the count reached.
func waitStored(ctx context.Context, count func() int, want int, start, limit time.Time) (stall time.Duration, stallAt, n int, err error) {
	lastCount, lastChange := 0, start
	for {
		n = count()
		if n != lastCount {
			now := time.Now()
			if d := now.Sub(lastChange); lastCount > 0 && d > stall {
				stall, stallAt = d, lastCount
			}
			lastCount, lastChange = n, now
		}
		if n >= want {
			return stall, stallAt, n, nil
		}
		if err := ctx.Err(); err != nil {
			return stall, stallAt, n, err
		}
		if time.Now().After(limit) {
			return stall, stallAt, n, errors.New("time limit passed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

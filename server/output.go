package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/logpond/logpond/output/processors"
	"sync"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
)

// drain is one output's run over one ledger (an Elasticsearch or a
// Lumberjack output), as the server drives and watches it. Every method
// but Run is safe to call while Run runs.
type drain interface {
	// Run drains the ledger from the output's cursor until ctx ends, and
	// persists the cursor on its way out.
	Run(ctx context.Context) error
	// Waiting says why the output is held back by its destination ("" when
	// it is not).
	Waiting() string
	// LedgerUnreadable says why the output waits for the ledger's device
	// ("" when it does not).
	LedgerUnreadable() string
	// Misconfigured says why the output sends nothing until its
	// configuration changes ("" when it is fine).
	Misconfigured() string
	// Stats are the output's totals since its Run began, in the
	// Elasticsearch output's terms (a Lumberjack output counts batches as
	// requests).
	Stats() elasticsearch.Stats
	// Gauges is the state of its running drain.
	Gauges() elasticsearch.Gauges
}

// outputRunner runs one configured output over the ledger in use. A drain
// runs once and reads one ledger, so a failed ledger stops it (it persists
// its cursor as far as it can) before the ledger is closed, and the
// reopened ledger gets a new drain, which resumes from the persisted
// cursor. Records it sends again keep their document ids: Elasticsearch
// stores them once. Its Stats add up across restarts.
//
// Each output also has a dead-letter store, which lives on the
// ledger's device: opened with the first drain, at Open, or when the
// ledger could not be opened then, with the ledger. The Server closes it.
type outputRunner struct {
	name string // the output's name, which is also its cursor's
	typ  string // "elasticsearch" or "lumberjack"
	key  string // its table in the configuration, for messages
	conf conf.NamedOutput
	// chain is the processor chain the output runs on every event it
	// drains, nil for none; it counts per processor.
	chain *processors.Chain
	// newDrain makes a drain over l; d is the output's dead-letter store
	// (nil for an output without one).
	newDrain func(l *ledger.Ledger, d *dlq.Store) (drain, error)
	// openDeadLetters opens the dead-letter store; nil for an output that
	// has none.
	openDeadLetters func() (*dlq.Store, error)
	// deadLetterMaxBytes is the dead-letter store's bound (0 without one).
	deadLetterMaxBytes int64
	// maxLag is the output's max_lag in bytes (0: none).
	maxLag int64
	// creds are an Elasticsearch output's credentials, which Reload
	// replaces (nil for a Lumberjack output).
	creds *elasticsearch.Credentials
	// oldest is the lag probes' last read of the ledger for this output
	// (lag.go).
	oldest oldestProbe
	// failed receives the error of a drain that stopped by itself (the
	// dead-letter store failing, …), not because it was told to, or that
	// could not be made: the server stops. Shared by every output.
	failed chan<- error

	mu       sync.Mutex // guards the fields below
	dlq      *dlq.Store // nil until opened
	ready    drain      // made by prepare over readyFor, run by the first start over it
	readyFor *ledger.Ledger
	cur      *runningOutput      // nil while stopped
	before   elasticsearch.Stats // totals of the drains that ran before cur
	closed   bool                // stopped for good: start does nothing
}

// runningOutput is one drain's Run.
type runningOutput struct {
	d      drain
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result; read after done
	// reported: err went to outputRunner.failed (the drain stopped by itself).
	reported bool
}

// prepare opens the dead-letter store and makes the drain over l that the
// first start runs, so that Open reports what fails there. Its errors
// start with "server:".
func (out *outputRunner) prepare(l *ledger.Ledger) error {
	out.mu.Lock()
	defer out.mu.Unlock()
	if err := out.openDeadLettersLocked(); err != nil {
		return err
	}
	d, err := out.newDrain(l, out.dlq)
	if err != nil {
		return fmt.Errorf("server: %s: %w", out.key, err)
	}
	out.ready, out.readyFor = d, l
	return nil
}

// openDeadLettersLocked opens the dead-letter store unless it is open or
// the output has none.
func (out *outputRunner) openDeadLettersLocked() error {
	if out.dlq != nil || out.openDeadLetters == nil {
		return nil
	}
	d, err := out.openDeadLetters()
	if err != nil {
		return err
	}
	out.dlq = d
	return nil
}

// deadLetters is the dead-letter store, nil until it is open (or when the
// output has none).
func (out *outputRunner) deadLetters() *dlq.Store {
	out.mu.Lock()
	defer out.mu.Unlock()
	return out.dlq
}

// start runs a drain over l, unless one runs or the runner was closed. It
// returns an error only when the dead-letter store, not open yet, cannot
// be opened (the ledger's device failing). Making the drain was checked
// at Open, so making another for a reopened ledger does not fail; if it
// did, the error goes to failed.
func (out *outputRunner) start(l *ledger.Ledger) error {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.closed || out.cur != nil {
		return nil
	}
	if err := out.openDeadLettersLocked(); err != nil {
		return err
	}
	d := out.ready
	if d == nil || out.readyFor != l {
		var err error
		if d, err = out.newDrain(l, out.dlq); err != nil {
			select {
			case out.failed <- fmt.Errorf("server: %s over the reopened ledger: %w", out.key, err):
			default:
			}
			return nil
		}
	}
	out.ready, out.readyFor = nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningOutput{d: d, cancel: cancel, done: make(chan struct{})}
	out.cur = r
	go func() {
		defer close(r.done)
		r.err = d.Run(ctx)
		if r.err != nil && ctx.Err() == nil {
			r.reported = true
			select {
			case out.failed <- fmt.Errorf("%s: %w", out.key, r.err):
			default: // the server is stopping on an earlier failure
			}
		}
	}()
	return nil
}

// stop stops the running drain, if any, and waits for it. It returns the
// error its Run returned, unless that went to failed already (or to a
// concurrent stop).
func (out *outputRunner) stop() error {
	out.mu.Lock()
	r := out.cur
	out.mu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur != r {
		return nil // a concurrent stop accounted for it
	}
	out.before = addStats(out.before, r.d.Stats())
	out.cur = nil
	if r.reported {
		return nil
	}
	return r.err
}

// close stops the runner for good (start does nothing after it) and
// returns the last drain's error, like stop.
func (out *outputRunner) close() error {
	out.mu.Lock()
	out.closed = true
	out.mu.Unlock()
	return out.stop()
}

// Stats are the output's totals since Open, across restarts; CursorLSN is
// the last persisted cursor.
func (out *outputRunner) Stats() elasticsearch.Stats {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		return out.before
	}
	return addStats(out.before, out.cur.d.Stats())
}

// onRunning calls f with the running drain and returns its result; zero
// while stopped.
func onRunning[T any](out *outputRunner, f func(drain) T) T {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		var zero T
		return zero
	}
	return f(out.cur.d)
}

// Gauges is the running drain's Gauges (zero while stopped).
func (out *outputRunner) Gauges() elasticsearch.Gauges {
	return onRunning(out, func(d drain) elasticsearch.Gauges { return d.Gauges() })
}

// Waiting is the running drain's Waiting ("" while stopped).
func (out *outputRunner) Waiting() string {
	return onRunning(out, func(d drain) string { return d.Waiting() })
}

// LedgerUnreadable is the running drain's LedgerUnreadable ("" while
// stopped).
func (out *outputRunner) LedgerUnreadable() string {
	return onRunning(out, func(d drain) string { return d.LedgerUnreadable() })
}

// Misconfigured is the running drain's Misconfigured ("" while stopped).
func (out *outputRunner) Misconfigured() string {
	return onRunning(out, func(d drain) string { return d.Misconfigured() })
}

// addStats adds b's counters to a's; the cursor is the further of the
// two (a restarted drain reports the cursor it started from).
func addStats(a, b elasticsearch.Stats) elasticsearch.Stats {
	a.Requests += b.Requests
	a.FailedRequests += b.FailedRequests
	a.Refused += b.Refused
	a.BytesSent += b.BytesSent
	a.Indexed += b.Indexed
	a.Conflicts += b.Conflicts
	a.Retried += b.Retried
	a.DeadLettered += b.DeadLettered
	a.Outages += b.Outages
	a.Resent += b.Resent
	a.Delivered += b.Delivered
	a.DamagedRanges += b.DamagedRanges
	a.DamagedRecords += b.DamagedRecords
	a.LedgerReadErrors += b.LedgerReadErrors
	a.SkippedRecords += b.SkippedRecords
	a.SkippedEvents += b.SkippedEvents
	a.RoutedDataStream += b.RoutedDataStream
	a.RoutedIndex += b.RoutedIndex
	a.RoutedFallback += b.RoutedFallback
	a.RoutedDeadLetter += b.RoutedDeadLetter
	a.Reconnects += b.Reconnects
	a.EventsWithoutID += b.EventsWithoutID
	a.ClosedUnacked += b.ClosedUnacked
	a.SkippedRanges = append(a.SkippedRanges, b.SkippedRanges...)
	if n := len(a.SkippedRanges); n > maxSkippedRanges {
		a.SkippedRanges = a.SkippedRanges[n-maxSkippedRanges:]
	}
	if b.CursorLSN > a.CursorLSN {
		a.CursorLSN = b.CursorLSN
	}
	return a
}

// routedTargets is an Elasticsearch output's events by where it sent
// them, keyed by the target label of logpond_output_routed_events_total.
func routedTargets(st elasticsearch.Stats) map[string]int64 {
	return map[string]int64{
		"data_stream":    st.RoutedDataStream,
		"index":          st.RoutedIndex,
		"fallback_index": st.RoutedFallback,
		"dead_letter":    st.RoutedDeadLetter,
	}
}

// maxSkippedRanges is how many of an output's latest skipped ranges GET /
// shows (every one is logged).
const maxSkippedRanges = 10

// outputSet is every configured output's runner: what reads the ledger in
// use, stopped before a failed ledger closes and restarted over the
// reopened one.
type outputSet []*outputRunner

// start starts every output over l; the first error (a dead-letter store
// that cannot be opened) stops the others again.
func (set outputSet) start(l *ledger.Ledger) error {
	for i, out := range set {
		if err := out.start(l); err != nil {
			for _, o := range set[:i] {
				o.stop()
			}
			return err
		}
	}
	return nil
}

// stop stops every output, in parallel (each persists its cursor), and
// returns their errors joined.
func (set outputSet) stop() error {
	return set.each(func(o *outputRunner) error { return o.stop() })
}

// close stops every output for good.
func (set outputSet) close() error {
	return set.each(func(o *outputRunner) error { return o.close() })
}

// each runs f on every output at once and joins the errors, each named
// after its output.
func (set outputSet) each(f func(*outputRunner) error) error {
	errs := make([]error, len(set))
	var wg sync.WaitGroup
	for i, o := range set {
		wg.Go(func() {
			if err := f(o); err != nil {
				errs[i] = fmt.Errorf("%s: %w", o.key, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// byName is the output named name, nil when none is.
func (set outputSet) byName(name string) *outputRunner {
	for _, o := range set {
		if o.name == name {
			return o
		}
	}
	return nil
}

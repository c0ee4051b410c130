package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
)

// outputRunner runs the Elasticsearch output over the ledger in use. An Output
// runs once and reads one ledger, so a failed ledger stops it (it persists
// its cursor as far as it can) before the ledger is closed, and the
// reopened ledger gets a new Output, which resumes from the persisted
// cursor. Records it sends again keep their document ids: Elasticsearch
// stores them once. Its Stats add up across restarts.
//
// It also opens the output's dead-letter store, which lives on the
// ledger's device: with the first Output, at Open, or when the ledger
// could not be opened then, with the ledger. The Server closes it.
type outputRunner struct {
	opts elasticsearch.Options
	// openDeadLetters opens the dead-letter store.
	openDeadLetters func() (*dlq.Store, error)
	// failed receives the error of an Output that stopped by itself (the
	// dead-letter store failing, …), not because it was told to, or that
	// could not be made: the server stops.
	failed chan error

	mu       sync.Mutex            // guards the fields below
	dlq      *dlq.Store            // nil until opened
	ready    *elasticsearch.Output // made by prepare over readyFor, run by the first start over it
	readyFor *ledger.Ledger
	cur      *runningOutput      // nil while stopped
	before   elasticsearch.Stats // totals of the Outputs that ran before cur
	closed   bool                // stopped for good: start does nothing
}

// runningOutput is one Output's Run.
type runningOutput struct {
	o      *elasticsearch.Output
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result; read after done
	// reported: err went to outputRunner.failed (the Output stopped by itself).
	reported bool
}

// newOutputRunner checks opts (it contacts nobody before start).
func newOutputRunner(opts elasticsearch.Options, openDeadLetters func() (*dlq.Store, error)) (*outputRunner, error) {
	if err := elasticsearch.CheckOptions(opts); err != nil {
		return nil, err
	}
	return &outputRunner{opts: opts, openDeadLetters: openDeadLetters, failed: make(chan error, 1)}, nil
}

// prepare opens the dead-letter store and makes the Output over l that
// the first start runs, so that Open reports what fails there. Its errors
// start with "server:".
func (out *outputRunner) prepare(l *ledger.Ledger) error {
	out.mu.Lock()
	defer out.mu.Unlock()
	if err := out.openDeadLettersLocked(); err != nil {
		return err
	}
	o, err := elasticsearch.New(l, out.opts)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	out.ready, out.readyFor = o, l
	return nil
}

// openDeadLettersLocked opens the dead-letter store unless it is open.
func (out *outputRunner) openDeadLettersLocked() error {
	if out.dlq != nil {
		return nil
	}
	d, err := out.openDeadLetters()
	if err != nil {
		return err
	}
	out.dlq, out.opts.DeadLetters = d, d
	return nil
}

// deadLetters is the dead-letter store, nil until it is open.
func (out *outputRunner) deadLetters() *dlq.Store {
	out.mu.Lock()
	defer out.mu.Unlock()
	return out.dlq
}

// start runs an Output over l, unless one runs or the runner was closed.
// It returns an error only when the dead-letter store, not open yet,
// cannot be opened (the ledger's device failing). New checked the options
// at Open, so making another Output for a reopened ledger does not fail;
// if it did, the error goes to failed.
func (out *outputRunner) start(l *ledger.Ledger) error {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.closed || out.cur != nil {
		return nil
	}
	if err := out.openDeadLettersLocked(); err != nil {
		return err
	}
	o := out.ready
	if o == nil || out.readyFor != l {
		var err error
		if o, err = elasticsearch.New(l, out.opts); err != nil {
			select {
			case out.failed <- fmt.Errorf("server: elasticsearch output over the reopened ledger: %w", err):
			default:
			}
			return nil
		}
	}
	out.ready, out.readyFor = nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningOutput{o: o, cancel: cancel, done: make(chan struct{})}
	out.cur = r
	go func() {
		defer close(r.done)
		r.err = o.Run(ctx)
		if r.err != nil && ctx.Err() == nil {
			r.reported = true
			select {
			case out.failed <- r.err:
			default: // the server is stopping on an earlier failure
			}
		}
	}()
	return nil
}

// stop stops the running Output, if any, and waits for it. It returns the
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
	out.before = addStats(out.before, r.o.Stats())
	out.cur = nil
	if r.reported {
		return nil
	}
	return r.err
}

// close stops the runner for good (start does nothing after it) and
// returns the last Output's error, like stop.
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
	return addStats(out.before, out.cur.o.Stats())
}

// Gauges is the running Output's Gauges (zero while stopped).
func (out *outputRunner) Gauges() elasticsearch.Gauges {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		return elasticsearch.Gauges{}
	}
	return out.cur.o.Gauges()
}

// current is the running Output, nil while stopped.
func (out *outputRunner) current() *elasticsearch.Output {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		return nil
	}
	return out.cur.o
}

// Waiting is the running Output's Waiting ("" while stopped).
func (out *outputRunner) Waiting() string {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		return ""
	}
	return out.cur.o.Waiting()
}

// LedgerUnreadable is the running Output's LedgerUnreadable ("" while
// stopped).
func (out *outputRunner) LedgerUnreadable() string {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.cur == nil {
		return ""
	}
	return out.cur.o.LedgerUnreadable()
}

// addStats adds b's counters to a's; the cursor is b's, when it has one
// (a restarted Output reports 0 until it persists its cursor).
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
	if b.CursorLSN > a.CursorLSN {
		a.CursorLSN = b.CursorLSN
	}
	return a
}

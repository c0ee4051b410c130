package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/elasticsearch"
)

// drain runs the Elasticsearch output over the ledger in use. An Output
// runs once and reads one ledger, so a failed ledger stops it (it persists
// its cursor as far as it can) before the ledger is closed, and the
// reopened ledger gets a new Output, which resumes from the persisted
// cursor. Records it sends again keep their document ids: Elasticsearch
// stores them once. Its Stats add up across restarts.
type drain struct {
	opts elasticsearch.Options
	// failed receives the error of an Output that stopped by itself (the
	// dead-letter store failing, …), not because it was told to, or that
	// could not be made: the server stops.
	failed chan error

	mu       sync.Mutex            // guards the fields below
	ready    *elasticsearch.Output // made by Open over readyFor, run by the first start over it
	readyFor *ledger.Ledger
	cur      *outputRun          // nil while stopped
	before   elasticsearch.Stats // totals of the Outputs that ran before cur
	closed   bool                // stopped for good: start does nothing
}

// outputRun is one Output's Run.
type outputRun struct {
	o      *elasticsearch.Output
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result; read after done
	// reported: err went to drain.failed (the Output stopped by itself).
	reported bool
}

// newDrain prepares the output over l (it contacts nobody before start).
func newDrain(l *ledger.Ledger, opts elasticsearch.Options) (*drain, error) {
	o, err := elasticsearch.New(l, opts)
	if err != nil {
		return nil, err
	}
	return &drain{opts: opts, failed: make(chan error, 1), ready: o, readyFor: l}, nil
}

// start runs an Output over l, unless one runs or the drain was closed.
// New checked the options at Open, so making another Output for a
// reopened ledger does not fail; if it did, the error goes to failed.
func (d *drain) start(l *ledger.Ledger) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.cur != nil {
		return
	}
	o := d.ready
	if o == nil || d.readyFor != l {
		var err error
		if o, err = elasticsearch.New(l, d.opts); err != nil {
			select {
			case d.failed <- fmt.Errorf("server: elasticsearch output over the reopened ledger: %w", err):
			default:
			}
			return
		}
	}
	d.ready, d.readyFor = nil, nil
	ctx, cancel := context.WithCancel(context.Background())
	r := &outputRun{o: o, cancel: cancel, done: make(chan struct{})}
	d.cur = r
	go func() {
		defer close(r.done)
		r.err = o.Run(ctx)
		if r.err != nil && ctx.Err() == nil {
			r.reported = true
			select {
			case d.failed <- r.err:
			default: // the server is stopping on an earlier failure
			}
		}
	}()
}

// stop stops the running Output, if any, and waits for it. It returns the
// error its Run returned, unless that went to failed already (or to a
// concurrent stop).
func (d *drain) stop() error {
	d.mu.Lock()
	r := d.cur
	d.mu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != r {
		return nil // a concurrent stop accounted for it
	}
	d.before = addStats(d.before, r.o.Stats())
	d.cur = nil
	if r.reported {
		return nil
	}
	return r.err
}

// close stops the drain for good (start does nothing after it) and
// returns the last Output's error, like stop.
func (d *drain) close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return d.stop()
}

// Stats are the output's totals since Open, across restarts; CursorLSN is
// the last persisted cursor.
func (d *drain) Stats() elasticsearch.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return d.before
	}
	return addStats(d.before, d.cur.o.Stats())
}

// Gauges is the running Output's Gauges (zero while stopped).
func (d *drain) Gauges() elasticsearch.Gauges {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return elasticsearch.Gauges{}
	}
	return d.cur.o.Gauges()
}

// current is the running Output, nil while stopped.
func (d *drain) current() *elasticsearch.Output {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return nil
	}
	return d.cur.o
}

// Waiting is the running Output's Waiting ("" while stopped).
func (d *drain) Waiting() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return ""
	}
	return d.cur.o.Waiting()
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
	if b.CursorLSN > a.CursorLSN {
		a.CursorLSN = b.CursorLSN
	}
	return a
}

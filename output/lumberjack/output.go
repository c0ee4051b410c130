package lumberjack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/internal/drain"
)

// Output forwards the events of a ledger, from its cursor, to Lumberjack
// v2 servers. Run it once at a time; the methods reading its state are
// safe for concurrent use with Run.
//
// Promise: the cursor is persisted only at an LSN up to which every event
// was ACKed by a host (at least once: a window that fails is sent again,
// perhaps to another host, so a host may get an event twice). Each event
// carries the document id the Elasticsearch output derives for it
// (package eventid), unless it has its own @metadata._id.
type Output struct {
	opts     Options
	ledger   *ledger.Ledger
	log      *slog.Logger
	idPrefix string
	hosts    *hostSet

	stats         counters
	inFlight      atomic.Int64
	saidWithoutID atomic.Bool // the event without id was logged
	// saidTooLargeForID: an event forwarded without its id, which would
	// have taken it past a receiver's max_event_bytes, was logged.
	saidTooLargeForID atomic.Bool
	live              atomic.Pointer[drain.Tracker] // the running drain's tracker, for Gauges
	// acks counts the windows ACKed whole: a receiver that ACKed one
	// since it refused a window takes other events (isolate.go).
	acks atomic.Int64
	// isolating says which refused window a sender is isolating, for
	// Waiting; nil when none.
	isolating atomic.Pointer[string]
	// deadLog logs the dead letters as they are written.
	deadLog *drain.DeadLetterLog

	// src passes damaged and skipped ranges of the ledger and retries
	// its failing reads, counting them.
	src *drain.Source
	// cursor persists the output's cursor at the tracker's done LSN.
	cursor *drain.Cursor
}

// ErrCursorNotSaved: Run could not persist its final cursor (the ledger's
// device full, …). Nothing is lost: the next Run sends the events after
// the persisted cursor again, under the same ids.
var ErrCursorNotSaved = errors.New("lumberjack: the final cursor could not be persisted")

// New prepares an Output over l. It contacts nobody until Run.
func New(l *ledger.Ledger, opts Options) (*Output, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TLS != nil && opts.CurrentTLS == nil {
		t := opts.TLS.Clone()
		opts.CurrentTLS = func() *tls.Config { return t }
	}
	opts.Hosts = append([]string(nil), opts.Hosts...)
	prefix, err := eventid.Prefix(l.StreamID())
	if err != nil {
		return nil, fmt.Errorf("lumberjack: output %q: %w", opts.Name, err)
	}
	log := opts.Logger.With("output", opts.Name)
	return &Output{opts: opts, ledger: l, log: log, idPrefix: prefix, hosts: newHostSet(&opts, log),
		cursor: drain.NewCursor(l, opts.Cursor, log, "forwarded"), deadLog: drain.NewDeadLetterLog(log),
		src: drain.NewSource(drain.SourceOptions{Ledger: l, Log: log, UnreadableAfter: opts.UnreadableAfter, Sent: "forwarded", Sending: "forwarding", Chain: opts.Chain})}, nil
}

// Run forwards the ledger's events until ctx ends, then returns nil; or
// until a failure retrying cannot fix (reading the ledger fails other
// than by its device's read errors), which it returns. On return no
// window is in flight and the cursor is persisted as far as events are
// ACKed. Hosts failing are never such a failure: Run retries them for
// ever (see Waiting).
func (o *Output) Run(ctx context.Context) error {
	cursor, err := o.ledger.Cursor(o.opts.Cursor)
	if err != nil {
		return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
	}
	o.log.Info("forwarding the ledger", "cursor", o.opts.Cursor, "from_lsn", cursor+1, "hosts", o.opts.Hosts,
		"loadbalance", o.opts.LoadBalance, "workers", o.opts.Workers, "tls", o.opts.CurrentTLS != nil)
	tr := drain.NewTracker(cursor)
	o.live.Store(tr)
	defer o.live.Store(nil)
	senders := o.opts.Workers * len(o.opts.Hosts)
	// One batch queued: a sender that finishes finds the next one ready;
	// more read-ahead would only hold memory.
	queue := make(chan *batch, 1)
	// A batch enters the retry queue only from the sender holding it, and
	// a sender takes a new window only while the queue holds fewer than
	// senders (sender.run): the batches held by senders and queued for a
	// retry are never more than 2 × senders, so a send on it never
	// blocks.
	retry := make(chan *batch, 2*senders)
	workers := []func(context.Context) error{func(ctx context.Context) error { return o.read(ctx, cursor+1, tr, queue) }}
	for _, h := range o.hosts.hosts {
		for range o.opts.Workers {
			s := &sender{o: o, h: h, tr: tr, queue: queue, retry: retry, senders: senders}
			workers = append(workers, s.run)
		}
	}
	// The final persist, once every sender stopped: what was ACKed
	// before the stop.
	done, runErr := drain.Run(ctx, o.cursor, tr, cursor, ErrCursorNotSaved, workers...)
	o.log.Info("forwarding stopped", "cursor_lsn", done, "err", runErr)
	return runErr
}

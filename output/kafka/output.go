package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/internal/drain"
)

// Output produces the events of a ledger, from its cursor, to Kafka. Run
// it once at a time; the methods reading its state are safe for
// concurrent use with Run.
//
// Promise: the cursor is persisted only at an LSN up to which every event
// is in Kafka (in a committed transaction, with ExactlyOnce) or in the
// output's dead letters. With ExactlyOnce, an event is in Kafka once for
// read_committed consumers, through crashes and restarts (doc.go).
type Output struct {
	opts     Options
	ledger   *ledger.Ledger
	log      *slog.Logger
	idPrefix string
	txnID    string

	stats   counters
	live    atomic.Pointer[drain.Tracker] // the running drain's tracker, for Gauges
	waiting atomic.Pointer[string]        // why the output waits for Kafka; nil when it does not

	deadLog *drain.DeadLetterLog
	src     *drain.Source
	cursor  *drain.Cursor
}

// ErrCursorNotSaved: Run could not persist its final cursor. Nothing is
// lost: with ExactlyOnce the next Run reads its position from Kafka;
// without, it sends the events after the persisted cursor again, under
// the same ids.
var ErrCursorNotSaved = errors.New("kafka: the final cursor could not be persisted")

// New prepares an Output over l. It contacts nobody until Run.
func New(l *ledger.Ledger, opts Options) (*Output, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.DeadLetters == nil {
		return nil, fmt.Errorf("kafka: output %q: no dead-letter store", opts.Name)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TLS != nil && opts.CurrentTLS == nil {
		t := opts.TLS.Clone()
		opts.CurrentTLS = func() *tls.Config { return t }
	}
	if opts.ClientID == "" {
		opts.ClientID = "logpond"
	}
	opts.Hosts = append([]string(nil), opts.Hosts...)
	prefix, err := eventid.Prefix(l.StreamID())
	if err != nil {
		return nil, fmt.Errorf("kafka: output %q: %w", opts.Name, err)
	}
	txnID := opts.TransactionalID
	if txnID == "" {
		txnID = "logpond-" + prefix + "-" + opts.Name
	}
	log := opts.Logger.With("output", opts.Name)
	return &Output{opts: opts, ledger: l, log: log, idPrefix: prefix, txnID: txnID,
		cursor: drain.NewCursor(l, opts.Cursor, log, "produced"), deadLog: drain.NewDeadLetterLog(log),
		src: drain.NewSource(drain.SourceOptions{Ledger: l, Log: log, UnreadableAfter: opts.UnreadableAfter, Sent: "produced", Sending: "producing", Chain: opts.Chain})}, nil
}

// TransactionalID is the id of the output's transactions, and of the
// consumer group its position is committed under.
func (o *Output) TransactionalID() string { return o.txnID }

// Run produces the ledger's events until ctx ends, then returns nil; or
// until a failure retrying cannot fix (reading the ledger fails other
// than by its device's read errors, the dead-letter store fails), which
// it returns. On return no batch is in flight and the cursor is persisted
// as far as events are in Kafka. Kafka failing is never such a failure:
// Run retries for ever (see Waiting).
func (o *Output) Run(ctx context.Context) error {
	cursor, err := o.ledger.Cursor(o.opts.Cursor)
	if err != nil {
		return fmt.Errorf("kafka: output %q: %w", o.opts.Name, err)
	}
	mode := "at least once (idempotent producer)"
	if o.opts.ExactlyOnce {
		mode = "exactly once (transactions)"
	}
	o.log.Info("producing the ledger to kafka", "cursor", o.opts.Cursor, "from_lsn", cursor+1, "hosts", o.opts.Hosts,
		"delivery", mode, "transactional_id", o.txnID, "tls", o.opts.CurrentTLS != nil)
	if !o.opts.ExactlyOnce {
		o.log.Warn("exactly_once is off: a batch that fails is produced again, so consumers may read an event twice (each copy carries the same " + IDHeader + " header)")
	}
	tr := drain.NewTracker(cursor)
	o.live.Store(tr)
	defer o.live.Store(nil)
	// One batch queued: the sender finds the next one ready when it
	// ends a transaction; more read-ahead would only hold memory.
	queue := make(chan *batch, 1)
	s := &sender{o: o, tr: tr}
	for _, h := range o.opts.Headers {
		s.static = append(s.static, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	// The cursor file is persisted every second, as for the other
	// outputs: with ExactlyOnce the position in Kafka is what counts, and
	// the file only saves rereading what it already passed.
	done, runErr := drain.Run(ctx, o.cursor, tr, cursor, ErrCursorNotSaved,
		func(ctx context.Context) error { defer s.close(); return s.run(ctx, queue) },
		func(ctx context.Context) error { return o.read(ctx, cursor+1, tr, queue) })
	o.log.Info("producing stopped", "cursor_lsn", done, "err", runErr)
	return runErr
}

// Package server assembles logpond: it owns the data directories (locked),
// opens the ledger and the journal in recovery order, runs the Beats input,
// the flusher between the stores, the Elasticsearch output and the admin
// endpoint (metrics, health), and stops everything in order. OpenDrain
// and Drain run it without the Beats input until every output has sent
// what the stores hold, to retire an instance (drain.go).
//
// Recovery order (docs/design.md, §8): the ledger opens first and repairs its
// tail, asking which LSNs the journal still holds; the journal opens next,
// repairs its tail and continues its LSNs after the ledger's last; the
// flusher then replays every journal record after the ledger's last LSN. A
// journal that starts beyond the ledger's last LSN + 1 means records are in
// neither store, and so does damage ending the open ledger segment that the
// journal no longer holds: the server refuses to start, before any port is
// bound, with one message naming the lost LSNs and the `ledgerctl
// accept-loss` command that accepts the loss. Journal damage to records the
// ledger already holds loses nothing: the journal sets it aside, logs it at
// ERROR and opens (journal.Options.Settled). Journal damage past the
// ledger's last LSN (acknowledged records in neither store) is refused
// before any port is bound, with one message naming the lost records and
// the `ledgerctl accept-loss` command that accepts the loss; met by the
// flusher while running, it stops records at the damage without stopping
// logpond (flusher.go).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/internal/ackwatch"
	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/tlsfiles"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
)

// Server is an opened logpond instance. Open, then Run, then Close.
type Server struct {
	cfg    *conf.Config
	log    *slog.Logger
	locks  []*dirlock.Lock // journal, ledger; released by Close
	stores *stores         // the journal and the ledger in use
	beats  *input.Beats
	// outputs are the enabled outputs (with their dead letters), by name.
	outputs outputSet
	// outputFailed receives the error of an output that stopped by itself.
	outputFailed chan error
	// metrics is the Prometheus collector of /metrics.
	metrics *metrics
	// acks watches acknowledgement and journal fsync latency; the output
	// gives way to acknowledgements while they are slowed.
	acks *ackwatch.Watch
	// journalDamage says why records stopped moving to the ledger: the
	// flusher met journal damage (nil: it did not).
	journalDamage atomic.Pointer[string]
	// journalUnreadable says why records wait in the journal: its device
	// fails the flusher's reads ("" or nil: it does not).
	journalUnreadable atomic.Pointer[string]
	// ledgerUnheld says why the failed ledger stays closed for the run:
	// the flusher refused to reopen it over acknowledged records in
	// neither store (nil: it did not).
	ledgerUnheld atomic.Pointer[string]
	// bootLSN is the journal's last LSN when it was opened, before the
	// input started: batches still open there are void (batches.go).
	bootLSN uint64
	// admin serves /metrics and health while Run runs; adminDone closes
	// when its goroutine ends.
	adminLn   net.Listener
	admin     *http.Server
	adminDone chan struct{}
	started   time.Time // when Run (or Drain) started
	// draining: opened by OpenDrain, to be run by Drain. The Beats
	// listener is never bound; /readyz says "draining".
	draining bool
	// created are the directories Open created, removed again when it
	// fails.
	created []string
	// tlsSources are the TLS configurations built from files (the
	// input's, the outputs'), which Reload reads again.
	tlsSources []namedTLS
}

// namedTLS is a TLS configuration built from files, with the key of the
// configuration that names them.
type namedTLS struct {
	key string
	src *tlsfiles.Source
}

// Open prepares the journal and ledger directories (creating each if its
// parent exists), locks both, and warns when they share a device; it
// opens the stores, then binds the admin and Beats listeners. On error
// nothing stays locked or bound, and the directories this Open created
// are removed again.
func Open(cfg *conf.Config, log *slog.Logger) (*Server, error) {
	return open(cfg, log, false)
}

// open is Open, or OpenDrain with drain: then the Beats listener is not
// bound (its TLS files are not even read).
func open(cfg *conf.Config, log *slog.Logger, drain bool) (_ *Server, err error) {
	// A configuration built in code rather than loaded gets the same
	// checks as a file.
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, acks: ackwatch.New(ackwatch.DefaultSlack), draining: drain}
	defer func() {
		if err != nil {
			s.removeCreated() // closes what was opened
		}
	}()
	s.metrics = newMetrics(s)
	s.stores = &stores{cfg: cfg, log: log, observeGroup: s.observeGroup, ledgerOpened: s.metrics.ledgerOpened}
	if err := s.lockDirs(); err != nil {
		return nil, err
	}
	if err := s.stores.open(); err != nil {
		return nil, err
	}
	s.bootLSN = s.stores.journal().LastLSN()
	var tlsCfg *tls.Config
	if !drain {
		src, err := beatsTLS(cfg)
		if err != nil {
			return nil, err
		}
		if src != nil {
			tlsCfg = src.ServerConfig()
			s.tlsSources = append(s.tlsSources, namedTLS{key: "input.beats.tls", src: src})
		}
	}
	if err := s.openOutputs(); err != nil {
		return nil, err
	}
	if err := s.listenAdmin(); err != nil {
		return nil, err
	}
	if drain {
		return s, nil
	}
	if err := s.listenBeats(tlsCfg); err != nil {
		return nil, err
	}
	return s, nil
}

// checkConfig returns ConfigChecks' problems as one error.
func checkConfig(cfg *conf.Config) error {
	ps := ConfigChecks(cfg)
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Key + ": " + p.Msg
	}
	return fmt.Errorf("server: configuration: %s", strings.Join(msgs, "; "))
}

// observeGroup is told of every journal group commit.
func (s *Server) observeGroup(records int, bytes int64, fsync time.Duration) {
	s.metrics.observeGroup(records, bytes, fsync)
	s.acks.Fsynced(fsync)
}

// journal is the journal in use (nil once closed).
func (s *Server) journal() *journal.Journal { return s.stores.journal() }

// ledger is the ledger in use (nil once closed).
func (s *Server) ledger() *ledger.Ledger { return s.stores.ledger() }

// beatsTLS is the Beats input's TLS configuration, read again from its
// files on Reload; nil without a certificate.
func beatsTLS(cfg *conf.Config) (*tlsfiles.Source, error) {
	t := cfg.Input.Beats.TLS
	if t.Cert == "" {
		return nil, nil
	}
	return tlsfiles.New(func() (*tls.Config, error) {
		c, err := input.TLSConfig(t.Cert, t.Key, t.ClientCA, t.ClientAuth)
		if err != nil {
			return nil, fmt.Errorf("server: input.beats.tls: %w", err)
		}
		return c, nil
	}, nonEmpty(t.Cert, t.Key, t.ClientCA)...)
}

// nonEmpty are the paths that are set.
func nonEmpty(paths ...string) []string {
	return slices.DeleteFunc(paths, func(p string) bool { return p == "" })
}

// listenBeats binds the Beats input; its appends go to the journal in use.
func (s *Server) listenBeats(tlsCfg *tls.Config) error {
	opts := beatsOptions(s.cfg)
	opts.TLS, opts.Logger = tlsCfg, s.log
	opts.Acked = func(latency time.Duration, events int) {
		s.metrics.ack.Observe(latency.Seconds())
		s.acks.Acked(latency, events)
	}
	b, err := input.ListenBeats(opts, s.stores)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.beats = b
	return nil
}

// deadLetterDir is where the Elasticsearch output named name keeps dead
// letters: inside the ledger directory, so on the ledger's device and
// under its lock (docs/design.md, §7). The output named "elasticsearch"
// (the [output.elasticsearch] table) keeps the directory it always had.
func deadLetterDir(ledgerDir, name string) string { return dlq.Dir(ledgerDir, name) }

// openOutputs prepares every configured output (none contacts anybody
// before Run) and the Elasticsearch outputs' dead-letter stores.
func (s *Server) openOutputs() error {
	outs := s.cfg.Outputs()
	if len(outs) == 0 {
		s.log.Warn("no output is enabled: nothing drains the ledger; ingest stops when it reaches ledger.max_bytes")
	}
	s.outputFailed = make(chan error, max(len(outs), 1))
	for _, o := range outs {
		out, err := s.newOutputRunner(o)
		if err != nil {
			return err
		}
		s.outputs = append(s.outputs, out)
	}
	s.stores.readers = s.outputs
	l := s.ledger()
	if l == nil {
		// The ledger's device fails: the dead-letter stores there open
		// with the ledger, later.
		return nil
	}
	s.reportOrphanCursors(l)
	for _, out := range s.outputs {
		if err := out.prepare(l); err != nil {
			if !deviceFailure(err) {
				return err
			}
			// The dead-letter store is on the ledger's device: the
			// ledger waits with it, as when it cannot be opened itself.
			s.stores.deferLedger(err)
			return nil
		}
	}
	return nil
}

// deadLetters is the dead-letter store of the output named name, nil when
// no such Elasticsearch output is enabled or its store is not open yet.
func (s *Server) deadLetters(name string) *dlq.Store {
	if o := s.outputs.byName(name); o != nil {
		return o.deadLetters()
	}
	return nil
}

// Run runs the pipeline until ctx is done, then stops it in order: the
// journal finishes its in-flight appends and closes, the flusher moves
// everything durable into the ledger and syncs it, and the ledger closes.
// It returns nil on a requested stop.
func (s *Server) Run(ctx context.Context) error {
	if s.draining {
		return errors.New("server: opened by OpenDrain: run it with Drain")
	}
	p := s.startPipeline()
	runErr, oerr, _ := s.await(ctx, p, nil)
	return s.stopPipeline(p, runErr, oerr)
}

// await waits until ctx ends, the flusher fails or an output stops by
// itself (each failure logged, and returned for stopPipeline), or, with
// tick, the next tick (ticked true, nothing failed).
func (s *Server) await(ctx context.Context, p *pipeline, tick <-chan time.Time) (runErr, oerr error, ticked bool) {
	select {
	case <-ctx.Done():
	case runErr = <-p.flusherDone:
		s.log.Error("flusher failed", "err", runErr)
	case oerr = <-p.outputFailed:
		s.log.Error("an output failed: stopping", "err", oerr)
	case <-tick:
		ticked = true
	}
	return runErr, oerr, ticked
}

// pipeline is what Run started: every goroutine with its way to stop and
// its end.
type pipeline struct {
	flusher     *flusher
	stopFlusher context.CancelFunc
	flusherDone chan error // the flusher's run result
	beatsDone   chan error // the input's Serve result
	// stopWatchers stops the summary and the TLS files' watch;
	// summaryDone closes when both ended.
	stopWatchers context.CancelFunc
	summaryDone  chan struct{}
	// outputFailed receives the error of an output that stopped by
	// itself.
	outputFailed <-chan error
	// beforeLedgerClose, when set, is called by stopPipeline once the
	// outputs have persisted their last cursors and the final flush is
	// done, while the ledger is still open (Drain reads what is left).
	beforeLedgerClose func()
}

// startPipeline starts the admin endpoint, the output, the input, the
// flusher and the summary. (Each Elasticsearch output checks its cluster
// itself, as its Run starts.)
func (s *Server) startPipeline() *pipeline {
	c := s.cfg
	p := &pipeline{flusherDone: make(chan error, 1), beatsDone: make(chan error, 1),
		summaryDone: make(chan struct{})}
	s.started = time.Now()
	s.startAdmin()
	p.outputFailed = s.outputFailed
	if l := s.ledger(); l != nil {
		s.outputs.start(l) // prepared at Open: cannot fail
	}
	if s.beats != nil {
		go func() { p.beatsDone <- s.beats.Serve() }()
		s.log.Info("beats input listening", "addr", s.beats.Addr().String())
	} else {
		p.beatsDone <- nil // draining: no input to serve
	}
	p.flusher = newFlusher(flusher{flusherStores: s.stores,
		interval: time.Duration(c.Ledger.FlushInterval), log: s.log, fileRecords: s.metrics.fileRecords,
		journalDamage: s.metrics.journalDamage, acceptLoss: acceptLossCommand(c.Journal.Dir, c.Ledger.Dir), journalDir: c.Journal.Dir,
		damaged: func(why string) { s.journalDamage.Store(&why) }, bat: newBatches(s.bootLSN, holdLimit(time.Duration(c.Input.Beats.BatchTimeout)), s.log),
		reopenRefusals: s.metrics.ledgerReopenRefused, ledgerUnheld: func(why string) { s.ledgerUnheld.Store(&why) },
		reads: journalReads{unreadable: func(why string) { s.journalUnreadable.Store(&why) }, failures: s.metrics.journalReadErrors.Inc}})
	fctx, stopFlusher := context.WithCancel(context.Background())
	p.stopFlusher = stopFlusher
	go func() { p.flusherDone <- p.flusher.run(fctx) }()

	// The summary reads the components: it stops before those do.
	sctx, stopWatchers := context.WithCancel(context.Background())
	p.stopWatchers = stopWatchers
	go func() {
		defer close(p.summaryDone)
		var wg sync.WaitGroup
		wg.Go(func() { s.watchTLSFiles(sctx, tlsFilesCheckInterval) })
		if every := time.Duration(c.Log.SummaryInterval); every > 0 {
			s.summarize(sctx, every)
		}
		wg.Wait()
	}()
	return p
}

// stopPipeline stops what startPipeline started, in order, and closes the
// stores; runErr is the flusher's failure and oerr the output's, if either
// ended Run.
func (s *Server) stopPipeline(p *pipeline, runErr, oerr error) error {
	start := time.Now()
	p.stopWatchers()
	<-p.summaryDone
	// The admin endpoint reads the components: it stops before they do.
	s.stopAdmin()
	// The output stops first, so that its cursor is persisted while the
	// ledger is still open; closing the runner also keeps the flusher from
	// starting another Output over a ledger it reopens meanwhile.
	if cerr := s.outputs.close(); cerr != nil {
		if !hasOtherError(cerr, cursorsNotSaved...) {
			// Its device is full, say: a restart resends the events after
			// the persisted cursor under the same ids, so the stop is
			// not a failure.
			s.log.Warn("an output stopped without persisting its last cursor; the next start resends from the persisted one", "err", cerr)
			cerr = nil
		}
		oerr = errors.Join(oerr, cerr)
	}
	// Stop order: stop accepting and reading (batches already read finish
	// their appends and are acknowledged), then no more appends, then the
	// flusher's last pass, so that every acknowledged record is in the
	// ledger when we exit.
	var berr error
	if s.beats != nil {
		berr = s.beats.Close()
	}
	if err := <-p.beatsDone; err != nil && berr == nil {
		berr = err
	}
	s.beats = nil
	jerr := s.stores.closeJournalAtStop()
	p.stopFlusher()
	if runErr == nil {
		runErr = <-p.flusherDone
	}
	// The final flush never waits for space: a full ledger leaves the
	// rest in the journal, replayed at the next start.
	var ferr error
	if runErr == nil {
		ferr = p.flusher.finish()
	}
	if p.beforeLedgerClose != nil {
		p.beforeLedgerClose()
	}
	derr := s.closeDeadLetters()
	lerr := s.stores.closeLedgerAtStop()
	s.outputs = nil
	s.log.Info("pipeline stopped", "took", time.Since(start).Round(time.Millisecond).String())
	return errors.Join(runErr, oerr, berr, jerr, ferr, derr, lerr)
}

// Close closes the stores if Run did not, and releases the directory
// locks. It is safe to call more than once.
func (s *Server) Close() error {
	var errs []error
	if s.admin == nil && s.adminLn != nil {
		errs = append(errs, s.adminLn.Close()) // Run never served on it
		s.adminLn = nil
	}
	if s.beats != nil {
		errs = append(errs, s.beats.Close())
		s.beats = nil
	}
	if s.stores != nil {
		errs = append(errs, s.stores.close())
	}
	errs = append(errs, s.closeDeadLetters())
	s.outputs = nil
	for _, l := range s.locks {
		errs = append(errs, l.Release())
	}
	s.locks = nil
	return errors.Join(errs...)
}

// closeDeadLetters closes every output's dead-letter store that is open.
func (s *Server) closeDeadLetters() error {
	var errs []error
	for _, o := range s.outputs {
		if d := o.deadLetters(); d != nil {
			errs = append(errs, d.Close())
		}
	}
	return errors.Join(errs...)
}

// hasOtherError reports whether err holds an error that is none of
// targets: through wraps and every part of a join, down to the errors that
// wrap nothing.
func hasOtherError(err error, targets ...error) bool {
	for _, t := range targets {
		if err == t {
			return false
		}
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), func(e error) bool { return hasOtherError(e, targets...) })
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			return hasOtherError(inner, targets...)
		}
	}
	return !slices.ContainsFunc(targets, func(t error) bool { return errors.Is(err, t) })
}

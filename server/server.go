// Package server assembles logpond: it owns the data directories (locked),
// opens the ledger and the journal in recovery order, runs the Beats input,
// the flusher between the stores, the Elasticsearch output and the admin
// endpoint (metrics, health), and stops everything in order.
//
// Recovery order (docs/design.md, §8): the ledger opens first and repairs its
// tail, asking which LSNs the journal still holds; the journal opens next,
// repairs its tail and continues its LSNs after the ledger's last; the
// flusher then replays every journal record after the ledger's last LSN. A
// journal that starts beyond the ledger's last LSN + 1 means records are in
// neither store: the server refuses to start. Journal damage to records the
// ledger already holds loses nothing: the journal sets it aside, logs it at
// ERROR and opens (journal.Options.Settled).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/internal/ackwatch"
	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/sprintf"
)

// Server is an opened logpond instance. Open, then Run, then Close.
type Server struct {
	cfg   *conf.Config
	log   *slog.Logger
	locks []*dirlock.Lock // journal, ledger; released by Close
	// jptr is the journal in use. The flusher replaces it when the
	// journal failed (poisoned: ENOSPC, EIO) and a fresh open succeeds;
	// everyone else reads it through jrnl.
	jptr atomic.Pointer[journal.Journal]
	// lptr is the ledger in use. The flusher replaces it when the ledger
	// failed (poisoned: ENOSPC, EIO) and a fresh open succeeds; a failed
	// ledger stays in it, closed, until then. Everyone else reads it
	// through ledg.
	lptr    atomic.Pointer[ledger.Ledger]
	beats   *input.Beats
	out     *drain     // the Elasticsearch output; nil when output.elasticsearch.enabled = false
	dlq     *dlq.Store // the Elasticsearch output's dead letters
	metrics *metrics
	// acks watches acknowledgement and journal fsync latency; the output
	// gives way to acknowledgements while they are slowed.
	acks *ackwatch.Watch
	// bootLSN is the journal's last LSN when it was opened, before the
	// input started: batches still open there are void (batches.go).
	bootLSN uint64
	// admin serves /metrics and health while Run runs; adminDone closes
	// when its goroutine ends.
	adminLn   net.Listener
	admin     *http.Server
	adminDone chan struct{}
	started   time.Time // when Run started
	// created are the directories Open created, removed again when it
	// fails.
	created []string
}

// Open prepares the journal and ledger directories (creating each if its
// parent exists), locks both, and warns when they share a device; it
// opens the stores, then binds the admin and Beats listeners. On error
// nothing stays locked or bound, and the directories this Open created
// are removed again.
func Open(cfg *conf.Config, log *slog.Logger) (_ *Server, err error) {
	// A configuration built in code rather than loaded gets the same
	// checks as a file.
	if ps := ConfigChecks(cfg); len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.Key + ": " + p.Msg
		}
		return nil, fmt.Errorf("server: configuration: %s", strings.Join(msgs, "; "))
	}
	s := &Server{cfg: cfg, log: log, acks: ackwatch.New(ackwatch.DefaultSlack)}
	defer func() {
		if err != nil {
			s.removeCreated()
		}
	}()
	s.metrics = newMetrics(s)
	dirs := []struct{ key, dir string }{
		{"journal.dir", cfg.Journal.Dir},
		{"ledger.dir", cfg.Ledger.Dir},
	}
	var devs []uint64
	for _, d := range dirs {
		abs, err := s.prepareDir(d.key, d.dir)
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := dirlock.Acquire(abs)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("server: %s: %w", d.key, err)
		}
		s.locks = append(s.locks, l)
		var st unix.Stat_t
		if err := unix.Stat(abs, &st); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: stat %s %s: %w", d.key, abs, err)
		}
		devs = append(devs, st.Dev)
	}
	if devs[0] == devs[1] {
		// Loud on purpose: with one device, ledger catch-up I/O and page
		// cache pressure land on the disk every acknowledgement fsyncs to.
		log.Warn("JOURNAL AND LEDGER SHARE A DEVICE: ledger I/O will slow acknowledgements; put journal.dir and ledger.dir on different devices for production",
			"journal.dir", cfg.Journal.Dir, "ledger.dir", cfg.Ledger.Dir,
			"device", fmt.Sprintf("%d:%d", unix.Major(devs[0]), unix.Minor(devs[0])))
	}
	if err := s.openStores(); err != nil {
		s.Close()
		return nil, err
	}
	b := cfg.Input.Beats
	limits := lumberjack.DefaultLimits()
	limits.MaxWindow, limits.MaxEventBytes, limits.MaxBatchBytes = b.MaxWindow, int(b.MaxEventBytes), int64(b.MaxBatchBytes)
	var tlsCfg *tls.Config
	if t := b.TLS; t.Cert != "" {
		var err error
		if tlsCfg, err = input.TLSConfig(t.Cert, t.Key, t.ClientCA, t.ClientAuth); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: input.beats.tls: %w", err)
		}
	}
	if err := s.openOutput(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.listenAdmin(); err != nil {
		s.Close()
		return nil, err
	}
	s.beats, err = input.ListenBeats(input.BeatsOptions{
		TLS:    tlsCfg,
		Listen: b.Listen, MaxConnections: b.MaxConnections,
		IdleTimeout: time.Duration(b.IdleTimeout), BatchTimeout: time.Duration(b.BatchTimeout), Keepalive: time.Duration(b.Keepalive),
		MaxInflightBytes: int64(b.MaxInflightBytes),
		MaxRecordBytes:   MaxRecordBytes(cfg),
		Limits:           limits,
		Logger:           log,
		Acked: func(latency time.Duration, events int) {
			s.metrics.ack.Observe(latency.Seconds())
			s.acks.Acked(latency, events)
		},
	}, journalAppender{s})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// openStores opens the ledger, then the journal, in recovery order.
func (s *Server) openStores() error {
	start := time.Now()
	c := s.cfg
	jfirst, jexists, err := journal.FirstLSNOnDisk(c.Journal.Dir)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	l, err := ledger.Open(c.Ledger.Dir, ledger.Options{
		SegmentBytes: int64(c.Ledger.SegmentBytes),
		MaxBytes:     int64(c.Ledger.MaxBytes),
		Retention:    time.Duration(c.Ledger.Retention),
		DirectIO:     c.Ledger.DirectIO,
		// The journal can replay lsn if it has not released it.
		Covered: func(lsn uint64) bool { return jexists && jfirst <= lsn },
		Logger:  s.log,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.lptr.Store(l)
	s.metrics.ledgerOpened(l)
	ledgerLast := l.LastLSN()
	if !jexists && ledgerLast > 0 {
		s.log.Warn("journal directory is empty or new while the ledger holds data: LSNs continue after the ledger's last, none is reused",
			"journal.dir", c.Journal.Dir, "ledger_last_lsn", ledgerLast)
	}
	j, err := s.openJournal(ledgerLast)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.jptr.Store(j)
	s.bootLSN = j.LastLSN()
	// The journal must hold everything after the ledger's last LSN. Its
	// first LSN (its last + 1 when it holds no record) beyond ledgerLast+1
	// means records are in neither store: lost ledger writes whose journal
	// copies were already released, or a journal from elsewhere.
	jFirst, jLast := j.FirstLSN(), j.LastLSN()
	if jFirst > ledgerLast+1 {
		return fmt.Errorf("server: the journal starts at LSN %d but the ledger ends at LSN %d: records %d–%d are in neither store; refusing to start (inspect with `ledgerctl -journal %s -ledger %s segments`)",
			jFirst, ledgerLast, ledgerLast+1, jFirst-1, c.Journal.Dir, c.Ledger.Dir)
	}
	s.log.Info("stores recovered", "took", time.Since(start).Round(time.Millisecond).String(),
		"stream_id", l.StreamID(), "ledger_last_lsn", ledgerLast,
		"journal_first_lsn", jFirst, "journal_last_lsn", jLast, "to_replay", jLast-min(jLast, ledgerLast))
	return nil
}

// openJournal opens the journal; its LSNs continue after startAfter (the
// ledger's last) or its own last, whichever is larger.
func (s *Server) openJournal(startAfter uint64) (*journal.Journal, error) {
	return journal.Open(s.cfg.Journal.Dir, s.journalOptions(startAfter))
}

// journalOptions are the journal's options from the configuration, for a
// ledger whose last LSN is startAfter.
func (s *Server) journalOptions(startAfter uint64) journal.Options {
	c := s.cfg.Journal
	return journal.Options{
		SegmentBytes:  int64(c.SegmentBytes),
		MaxBytes:      int64(c.MaxBytes),
		MaxGroupWait:  time.Duration(c.MaxGroupWait),
		MaxGroupBytes: int64(c.MaxGroupBytes),
		SpareSegments: c.SpareSegments,
		StartAfter:    startAfter,
		// The ledger holds every record up to its last LSN: damage to
		// their journal copies loses nothing, and must not stop logpond.
		Settled: startAfter,
		// The flusher's normal path: recent records in memory, so it
		// rarely reads the journal's files (it is woken as they fill).
		TailBytes: s.cfg.JournalTailBytes(),
		Logger:    s.log,
		ObserveGroup: func(records int, bytes int64, fsync time.Duration) {
			s.metrics.observeGroup(records, bytes, fsync)
			s.acks.Fsynced(fsync)
		},
	}
}

// reopenJournal replaces the failed (and closed) journal by a fresh
// instance of its directory, which re-reads and repairs its tail and cuts
// what the failed one wrote but never fsynced (journal.Reopen: after a
// failed write or fsync only a fresh instance resumes). Only the flusher
// calls it, after moving everything the failed journal made durable.
func (s *Server) reopenJournal() error {
	j, err := s.jrnl().Reopen(s.journalOptions(s.ledg().LastLSN()))
	if err != nil {
		return err
	}
	s.jptr.Store(j)
	return nil
}

// jrnl is the journal in use (nil once closed).
func (s *Server) jrnl() *journal.Journal { return s.jptr.Load() }

// closeLedger stops what reads the failed ledger in use (the output, which
// also persists its cursor there), then closes it. Only the flusher calls
// it. The order matters: an Output must not read, or persist its cursor
// into, a closed ledger.
func (s *Server) closeLedger() {
	if s.out != nil {
		if err := s.out.stop(); err != nil {
			// Typically the cursor could not be persisted on the full
			// device: the next Output resends from the older cursor, and
			// the document ids keep Elasticsearch from storing twice.
			s.log.Warn("elasticsearch output stopped for the failed ledger with an error", "err", err)
		}
	}
	s.ledg().Close() // returns the failure the flusher logged
}

// reopenLedger replaces the failed (and closed) ledger by a fresh open of
// its directory, which cuts what the failed instance never synced (the
// journal still holds it), and restarts the output over it from its
// persisted cursor. Only the flusher calls it.
func (s *Server) reopenLedger() error {
	// A device that is still full would take the reopened ledger's first
	// write and fail it again: the output would restart, resend from its
	// cursor and stop again at every attempt. Wait for room first.
	if err := enoughRoom(s.cfg.Ledger.Dir, minLedgerFree); err != nil {
		return err
	}
	j := s.jrnl()
	// The journal in use holds every record from its FirstLSN on; the
	// flusher releases it only up to what the ledger synced.
	l, err := s.ledg().Reopen(func(lsn uint64) bool { return lsn >= j.FirstLSN() })
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.lptr.Store(l)
	s.metrics.ledgerOpened(l)
	if s.out != nil {
		s.out.start(l)
	}
	return nil
}

// minLedgerFree is the free space a failed ledger's device needs before
// the ledger is reopened: one flush step of the flusher.
const minLedgerFree = flushSyncBytes

// enoughRoom returns an error unless the file system holding dir has at
// least need bytes free for unprivileged writers.
func enoughRoom(dir string, need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("server: free space of %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		// The same words every time: the reopener logs a changed error
		// at Warn, a repeated one at Debug.
		return fmt.Errorf("server: less than %d MiB free on the ledger's device (%s); waiting for space", need>>20, dir)
	}
	return nil
}

// ledg is the ledger in use (nil once closed).
func (s *Server) ledg() *ledger.Ledger { return s.lptr.Load() }

// journalAppender gives the input whichever journal is in use, so that a
// reopened journal takes appends without restarting the input.
type journalAppender struct{ s *Server }

func (a journalAppender) Submit(ctx context.Context, rec []byte) (input.Durable, error) {
	p, err := a.s.jrnl().Submit(ctx, rec)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return p, nil
}

// deadLetterDir is where the Elasticsearch output keeps dead letters:
// inside the ledger directory, so on the ledger's device and under its
// lock (docs/design.md, §7).
func deadLetterDir(ledgerDir string) string { return dlq.Dir(ledgerDir, "elasticsearch") }

// elasticsearchCursor names the Elasticsearch output's ledger cursor.
const elasticsearchCursor = "elasticsearch"

// openOutput prepares the Elasticsearch output (it contacts nobody before
// Run).
func (s *Server) openOutput() error {
	c := s.cfg.Output.Elasticsearch
	if !c.Enabled {
		s.log.Warn("output.elasticsearch.enabled = false: nothing drains the ledger; ingest stops when it reaches ledger.max_bytes")
		return nil
	}
	index, err := sprintf.Compile(c.Index)
	if err != nil {
		return fmt.Errorf("server: output.elasticsearch.index: %w", err)
	}
	var pipeline *sprintf.Format
	if c.Pipeline != "" {
		if pipeline, err = sprintf.Compile(c.Pipeline); err != nil {
			return fmt.Errorf("server: output.elasticsearch.pipeline: %w", err)
		}
	}
	var ca []byte
	if c.TLS.CA != "" {
		if ca, err = os.ReadFile(c.TLS.CA); err != nil {
			return fmt.Errorf("server: output.elasticsearch.tls.ca: %w", err)
		}
	}
	dir := deadLetterDir(s.cfg.Ledger.Dir)
	// dlq.Open creates its own directory (and fsyncs its parent) when the
	// parent exists: prepare only <ledger.dir>/dlq.
	if _, err := s.prepareDir("output.elasticsearch dead-letter store", filepath.Dir(dir)); err != nil {
		return err
	}
	// A dead-letter file must hold the largest event the input accepts
	// (plus 1MiB for the entry's other fields); conf checked that four such
	// files fit in dead_letter_max_bytes.
	segment := max(min(int64(64<<20), int64(c.DeadLetterMaxBytes)/4), int64(s.cfg.Input.Beats.MaxEventBytes)+1<<20)
	s.dlq, err = dlq.Open(dir, dlq.Options{MaxBytes: int64(c.DeadLetterMaxBytes), SegmentBytes: segment,
		MaxAge: time.Duration(c.DeadLetterMaxAge), Logger: s.log})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.out, err = newDrain(s.ledg(), elasticsearch.Options{
		Hosts: c.Hosts, Username: c.Username, Password: elasticsearch.NewSecret(c.Password), APIKey: elasticsearch.NewSecret(c.APIKey),
		CACert: ca, InsecureSkipVerify: c.TLS.VerificationMode == "none",
		Index: index, FallbackIndex: c.FallbackIndex, Pipeline: pipeline,
		DerivedIDs: c.DocumentID == "auto",
		Workers:    c.Workers, FixedConcurrency: c.Concurrency == "fixed", Local: s.acks, FlushBytes: int(c.FlushBytes), FlushInterval: time.Duration(c.FlushInterval),
		MaxRequestBytes: int(c.MaxRequestBytes), Gzip: c.Compression == "gzip", Timeout: time.Duration(c.Timeout),
		RetryInitial: time.Duration(c.RetryInitialInterval), RetryMax: time.Duration(c.RetryMaxInterval),
		Cursor: elasticsearchCursor, DeadLetters: s.dlq, Logger: s.log,
		Observer: esObserver{s.metrics},
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// prepareDir is the package's prepareDir, remembering the directories it
// creates for removeCreated.
func (s *Server) prepareDir(key, dir string) (string, error) {
	abs, created, err := prepareDir(key, dir)
	if created {
		s.created = append(s.created, abs)
	}
	return abs, err
}

// removeCreated closes what a failed Open opened and removes the
// directories it created, newest first, so that a failed start leaves
// nothing behind (they hold only what this Open wrote: nothing was
// acknowledged into them).
func (s *Server) removeCreated() {
	s.Close()
	for i := len(s.created) - 1; i >= 0; i-- {
		if err := os.RemoveAll(s.created[i]); err != nil {
			s.log.Warn("removing a directory the failed start created", "dir", s.created[i], "err", err)
		}
	}
	s.created = nil
}

// prepareDir returns the absolute form of dir, creating dir when its parent
// exists (created says so). A missing parent is an error rather than a
// MkdirAll, so a typo in the configuration does not silently create a tree
// somewhere else.
func prepareDir(key, dir string) (abs string, created bool, err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("server: %s %q: %w", key, dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err == nil && !st.IsDir():
		return "", false, fmt.Errorf("server: %s %s is not a directory: point %s at a directory", key, abs, key)
	case err == nil:
		return abs, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("server: %s %s: %w", key, abs, err)
	}
	parent := filepath.Dir(abs)
	if _, err := os.Stat(parent); err != nil {
		return "", false, fmt.Errorf("server: %s %s: parent directory %s does not exist: create it, or fix %s", key, abs, parent, key)
	}
	if err := os.Mkdir(abs, 0o750); err != nil {
		return "", false, fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	// fsync the parent so the new directory's entry survives a power cut
	// before anything inside it is relied on.
	if err := fsutil.SyncDir(parent); err != nil {
		return abs, true, fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	return abs, true, nil
}

// Run runs the pipeline until ctx is done, then stops it in order: the
// journal finishes its in-flight appends and closes, the flusher moves
// everything durable into the ledger and syncs it, and the ledger closes.
// It returns nil on a requested stop.
func (s *Server) Run(ctx context.Context) error {
	c := s.cfg
	s.started = time.Now()
	s.startAdmin()
	// outputFailed stays nil (never ready) when the output is disabled.
	var outputFailed <-chan error
	if s.out != nil {
		outputFailed = s.out.failed
		s.out.start(s.ledg())
	}
	beatsDone := make(chan error, 1)
	go func() { beatsDone <- s.beats.Serve() }()
	s.log.Info("beats input listening", "addr", s.beats.Addr().String())
	f := newFlusher(flusher{journal: s.jrnl, reopenJournal: s.reopenJournal,
		ledger: s.ledg, closeLedger: s.closeLedger, reopenLedger: s.reopenLedger,
		interval: time.Duration(c.Ledger.FlushInterval), log: s.log, fileRecords: s.metrics.fileRecords,
		bat: newBatches(s.bootLSN, holdLimit(time.Duration(c.Input.Beats.BatchTimeout)), s.log)})
	fctx, stopFlusher := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.run(fctx) }()

	// The summary reads the components, and the start-up check of
	// Elasticsearch uses the output's client: both stop before those do.
	sctx, stopSummary := context.WithCancel(context.Background())
	summaryDone := make(chan struct{})
	go func() {
		defer close(summaryDone)
		if every := time.Duration(c.Log.SummaryInterval); every > 0 {
			s.summarize(sctx, every)
		}
	}()
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		if s.out == nil {
			return
		}
		if o := s.out.current(); o != nil {
			s.pingElasticsearch(sctx, o)
		}
	}()

	var runErr, oerr error
	select {
	case <-ctx.Done():
	case runErr = <-done:
		s.log.Error("flusher failed", "err", runErr)
	case oerr = <-outputFailed:
		s.log.Error("elasticsearch output failed: stopping", "err", oerr)
	}
	start := time.Now()
	stopSummary()
	<-summaryDone
	<-pingDone
	// The admin endpoint reads the components: it stops before they do.
	s.stopAdmin()
	// The output stops first, so that its cursor is persisted while the
	// ledger is still open; closing the drain also keeps the flusher from
	// starting another Output over a ledger it reopens meanwhile.
	if s.out != nil {
		cerr := s.out.close()
		if cerr != nil && !hasOtherError(cerr, elasticsearch.ErrCursorNotSaved) {
			// Its device is full, say: a restart resends the events after
			// the persisted cursor under the same ids, so the stop is
			// not a failure.
			s.log.Warn("elasticsearch output stopped without persisting its last cursor; the next start resends from the persisted one", "err", cerr)
			cerr = nil
		}
		oerr = errors.Join(oerr, cerr)
	}
	// Stop order: stop accepting and reading (batches already read finish
	// their appends and are acknowledged), then no more appends, then the
	// flusher's last pass, so that every acknowledged record is in the
	// ledger when we exit.
	berr := s.beats.Close()
	if err := <-beatsDone; err != nil && berr == nil {
		berr = err
	}
	s.beats = nil
	j := s.jrnl()
	jerr := j.Close()
	if errors.Is(jerr, journal.ErrClosed) || j.Err() != nil {
		// The flusher closed a failed journal it could not reopen yet, or
		// it is still failed (waiting for a failed ledger): the failure was
		// logged, and everything it acknowledged is durable in it for the
		// final flush or the next start.
		jerr = nil
	}
	stopFlusher()
	if runErr == nil {
		runErr = <-done
	}
	// The final flush never waits for space: a full ledger leaves the
	// rest in the journal, replayed at the next start.
	var ferr error
	if runErr == nil {
		ferr = f.finish()
	}
	var derr error
	if s.dlq != nil {
		derr = s.dlq.Close()
	}
	l := s.ledg()
	lerr := l.Close()
	if l.Err() != nil {
		// A failed ledger (closed by the flusher already, or failing in
		// the final flush) does not fail the stop: it was logged, and the
		// journal keeps what the ledger lacks for the next start.
		lerr = nil
	}
	s.jptr.Store(nil)
	s.lptr.Store(nil)
	s.dlq, s.out = nil, nil
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
	if j := s.jptr.Swap(nil); j != nil {
		errs = append(errs, j.Close())
	}
	if s.dlq != nil {
		errs = append(errs, s.dlq.Close())
		s.dlq = nil
	}
	if l := s.lptr.Swap(nil); l != nil {
		errs = append(errs, l.Close())
	}
	for _, l := range s.locks {
		errs = append(errs, l.Release())
	}
	s.locks = nil
	return errors.Join(errs...)
}

// hasOtherError reports whether err holds an error that is not target:
// err itself when it is not target, or any part of a join.
func hasOtherError(err, target error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasOtherError(e, target) {
				return true
			}
		}
		return false
	}
	return !errors.Is(err, target)
}

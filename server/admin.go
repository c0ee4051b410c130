package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
)

// backpressureReasons are the wait states logpond reports, in the order
// a backlog travels upstream: a stalled output (Elasticsearch failing,
// or the ledger's device failing its reads) fills the ledger, a full (or
// failed) ledger stops the flusher, and so does a journal whose device
// fails its reads; a full journal stops acknowledgements, and then the
// input's budget runs out.
var backpressureReasons = []string{"elasticsearch", "lumberjack", "dead_letters_full", "ledger_unreadable", "ledger_full", "ledger_failed", "journal_unreadable", "journal_full", "input_budget"}

// outputReasons are the backpressure reasons that belong to one output:
// its destination (named by the output's type), its dead-letter store,
// the ledger's device failing its reads.
var outputReasons = []string{"elasticsearch", "lumberjack", "dead_letters_full", "ledger_unreadable"}

// state is a snapshot of every component, for /metrics and the health
// endpoints.
type state struct {
	// draining: the Server runs Drain (OpenDrain): no Beats input, on
	// purpose.
	draining     bool
	input        *input.BeatsStats
	inputFailed  error  // the Beats input stopped accepting connections for good
	inputWaiting string // why the Beats input accepts nothing right now
	violations   map[string]int64
	journalBytes int64
	journalLast  uint64
	journalErr   error // the journal failed (poisoned)
	ledgerErr    error // the ledger failed (poisoned), or could not be opened, until it is (re)opened
	// ledgerOpenFailures counts attempts to open the ledger its device
	// failed.
	ledgerOpenFailures int64
	ledgerBytes        int64
	ledgerLast         uint64
	compression        compressionState
	cursors            map[string]uint64
	outputs            []outputState     // each enabled output, in name order
	waiting            map[string]string // backpressure reason → what the component says (reasons of no output)
}

// outputState is one output's part of a state.
type outputState struct {
	out    *outputRunner
	stats  elasticsearch.Stats
	gauges elasticsearch.Gauges
	// waiting maps the output's backpressure reasons (outputReasons) to
	// what it says.
	waiting map[string]string
	// misconfigured says why it sends nothing until its configuration
	// changes.
	misconfigured   string
	deadLetterBytes int64
}

// waitingFor is what the output waits for, "" when it does not: its
// destination, its dead-letter store or the ledger's device.
func (o outputState) waitingFor() string {
	return firstOf(o.waiting[o.out.typ], o.waiting["dead_letters_full"], o.waiting["ledger_unreadable"])
}

// snapshot reads the components' counters. It runs only while Run owns
// them (the admin server is stopped before they close).
func (s *Server) snapshot() state {
	st := state{waiting: map[string]string{}, draining: s.draining}
	if s.beats != nil {
		in := s.beats.Stats()
		st.input = &in
		st.inputFailed, st.inputWaiting = s.beats.Err(), s.beats.Waiting()
		st.violations = s.beats.Violations()
		if in.BudgetWaiters > 0 {
			st.waiting["input_budget"] = fmt.Sprintf("%d connections wait for input.beats.max_inflight_bytes (%d of %d bytes held)", in.BudgetWaiters, in.InflightBytes, in.MaxInflightBytes)
		}
	}
	if why := s.journalDamage.Load(); why != nil {
		st.waiting["journal_damaged"] = *why
	}
	if why := s.journalUnreadable.Load(); why != nil {
		st.waiting["journal_unreadable"] = *why
	}
	if j := s.journal(); j != nil {
		st.journalBytes, st.journalLast = j.UsedBytes(), j.LastLSN()
		st.journalErr = j.Err()
		st.waiting["journal_full"] = j.Waiting()
	}
	st.ledgerOpenFailures = s.stores.openFailures.Load()
	if p := s.stores.ledgerPending(); p != nil {
		st.ledgerErr = p.err
		st.waiting["ledger_failed"] = fmt.Sprintf("the ledger could not be opened since %s, its device failing: %v; records wait in the journal, which acknowledges until it is full, until logpond has opened the ledger",
			p.since.Format(time.RFC3339), p.err)
	} else if l := s.ledger(); l != nil {
		st.ledgerBytes, st.ledgerLast = l.UsedBytes(), l.LastLSN()
		st.cursors = l.Cursors()
		if st.ledgerErr = l.Err(); st.ledgerErr != nil {
			st.waiting["ledger_failed"] = "ledger failed: " + st.ledgerErr.Error() + "; records wait in the journal until logpond has reopened the ledger (free space on its device if it is full)"
		} else {
			st.waiting["ledger_full"] = l.Waiting()
		}
	}
	if why := s.ledgerUnheld.Load(); why != nil {
		// The failed ledger will not be reopened in this run: that, and
		// what to do, says more than its failure.
		st.ledgerErr = errors.New(*why)
		st.waiting["ledger_failed"] = *why
	}
	st.compression = s.compression()
	var first uint64 // the ledger's oldest record
	if l := s.ledger(); l != nil && st.ledgerErr == nil {
		first = l.FirstLSN()
	}
	for _, out := range s.outputs {
		o := outputState{out: out, stats: out.Stats(), gauges: out.Gauges(), misconfigured: out.Misconfigured(),
			waiting: map[string]string{out.typ: out.Waiting(), "ledger_unreadable": out.LedgerUnreadable()}}
		// Records retention deleted ahead of the output (max_lag) count
		// as skipped from then on, not only once it reads on to them:
		// its destination may be down for long.
		if done := max(st.cursors[out.name], o.gauges.DoneLSN, o.gauges.ReadLSN); first > done+1 {
			o.stats.SkippedRecords += int64(first - 1 - done)
		}
		if d := out.deadLetters(); d != nil {
			o.deadLetterBytes = d.UsedBytes()
			o.waiting["dead_letters_full"] = d.Waiting()
		}
		st.outputs = append(st.outputs, o)
		// The ledger's device failing an output's reads is the ledger's
		// state too.
		if st.waiting["ledger_unreadable"] == "" {
			st.waiting["ledger_unreadable"] = o.waiting["ledger_unreadable"]
		}
	}
	return st
}

// listenAdmin binds [admin] listen (at Open, so that a taken port stops
// start-up with a clear error); Run serves on it.
func (s *Server) listenAdmin() error {
	addr := s.cfg.Admin.Listen
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: admin.listen %s: %w", addr, err)
	}
	s.adminLn = ln
	return nil
}

// BeatsAddr is the address the Beats input listens on, nil when it does
// not listen (a Server opened by OpenDrain, or stopped).
func (s *Server) BeatsAddr() net.Addr {
	if s.beats == nil {
		return nil
	}
	return s.beats.Addr()
}

// AdminAddr is the admin endpoint's address, nil when admin.listen is "".
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// adminLimits bound what one client of the admin endpoint can hold: its
// clients are probes and scrapers that send a small request and read an
// answer of at most a few MiB (/metrics), so a connection that sends
// slowly, reads slowly or idles is closed rather than kept. A variable
// only so that tests can shorten it.
var adminLimits = struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
}{
	readHeader:     5 * time.Second,
	read:           10 * time.Second,
	write:          30 * time.Second, // no handler streams or runs long (pprof, when on, has its own)
	idle:           60 * time.Second, // longer than usual scrape and probe intervals: their connections are reused
	maxHeaderBytes: 16 << 10,
}

// startAdmin serves / (NodeInfo), /metrics, /livez (and its alias
// /healthz), /readyz and POST /api/dlq/purge on the admin listener.
func (s *Server) startAdmin() {
	if s.adminLn == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}))
	mux.HandleFunc("GET /livez", s.livez)
	mux.HandleFunc("GET /healthz", s.livez)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /{$}", s.serveNodeInfo)
	mux.Handle("POST /api/dlq/purge", dlqPurgeHandler{s: s})
	mux.HandleFunc("POST /api/cursors/delete", s.deleteCursor)
	l := adminLimits
	paths := "/ /metrics /livez /healthz /readyz /api/dlq/purge /api/cursors/delete"
	if s.cfg.Admin.Pprof {
		mountPprof(mux)
		l.write = pprofWriteTimeout
		paths += " /debug/pprof/"
	}
	s.admin = &http.Server{Handler: mux, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read,
		WriteTimeout: l.write, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
	s.adminDone = make(chan struct{})
	ln := s.adminLn
	go func() {
		defer close(s.adminDone)
		if err := s.admin.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("admin endpoint stopped", "err", err)
		}
	}()
	s.log.Info("admin listening", "addr", ln.Addr().String(), "paths", paths)
}

// stopAdmin stops the admin endpoint and waits for its goroutine.
func (s *Server) stopAdmin() {
	if s.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.admin.Shutdown(ctx); err != nil {
		s.admin.Close()
	}
	<-s.adminDone
	s.admin, s.adminLn = nil, nil
}

// livez answers 200 while the process serves: nothing in it stopped
// that only a restart brings back. Waiting is alive: a failed (poisoned)
// journal or ledger is reopened by logpond itself once its device has
// room, and restarting then would only replay the journal into a full
// disk; that is /readyz's business. /healthz is the same check.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	if why := s.snapshot().notAlive(); len(why) > 0 {
		http.Error(w, strings.Join(why, "\n"), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// notAlive lists the stopped stages that only a restart brings back. (A
// failed flusher or output ends Run, and the process, by itself.)
func (st state) notAlive() []string {
	var why []string
	if st.inputFailed != nil {
		why = append(why, "the Beats input stopped accepting connections: "+st.inputFailed.Error())
	}
	return why
}

// readyz answers 200 while new batches are accepted and acknowledged
// without waiting on a full or failed store; otherwise 503 with the
// reasons, so a load balancer can send Beats elsewhere. A draining
// logpond (OpenDrain) is never ready: it accepts no Beats connections.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if why := s.snapshot().notReady(); len(why) > 0 {
		http.Error(w, strings.Join(why, "\n"), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// notReady lists why new batches are not accepted and acknowledged right
// away. A failed ledger counts: batches are still acknowledged, but into a
// journal that only fills until the ledger is back, and Beats sent
// elsewhere meanwhile keep that headroom. So does a store whose device
// fails its reads: what is acknowledged waits until it reads again.
func (st state) notReady() []string {
	var why []string
	if st.draining {
		why = append(why, drainingReason)
	}
	for _, r := range []string{"journal_damaged", "ledger_failed", "ledger_unreadable", "journal_unreadable", "journal_full", "input_budget"} {
		if m := st.waiting[r]; m != "" {
			why = append(why, r+": "+m)
		}
	}
	if st.journalErr != nil {
		why = append(why, "journal failed: "+st.journalErr.Error())
	}
	for _, o := range st.outputs {
		if o.misconfigured != "" {
			why = append(why, o.out.key+" misconfigured: "+o.misconfigured)
		}
	}
	switch {
	case st.input == nil && st.draining:
		// drainingReason says why.
	case st.input == nil:
		why = append(why, "the Beats input is not running")
	case st.inputFailed != nil:
		why = append(why, "the Beats input stopped accepting connections: "+st.inputFailed.Error())
	case st.inputWaiting != "":
		why = append(why, st.inputWaiting)
	}
	return why
}

// slogPrinter routes promhttp's errors to the server's log.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("metrics", "err", fmt.Sprint(v...)) }

// PurgeRequestHeader must be on a POST /api/dlq/purge request, with any
// value (ledgerctl sends "ledgerctl"). A web page cannot add it to a
// cross-site request without the browser asking first, which the admin
// endpoint never allows, so a page a browser on this host shows cannot
// purge dead letters.
const PurgeRequestHeader = "X-Requested-By"

// DLQPurged is the answer of POST /api/dlq/purge: what was deleted.
type DLQPurged struct {
	Output  string `json:"output"`
	Dir     string `json:"dir"`
	Files   int    `json:"files"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
}

// dlqPurgeHandler serves POST
// /api/dlq/purge?through=ID|TIME[&output=NAME][&dir=DIR]: the dead-letter
// store of a running Elasticsearch output, which this process holds the
// lock of, deletes the whole files of entries up to and including the
// entry ID (FILE:OFFSET, as ledgerctl dlq list prints it), or that all
// failed at or before TIME (RFC 3339). The store does it under its own
// lock, between Appends, so it never races the output's writes. Without
// output, the store is the one dir names, else the only Elasticsearch
// output's; dir, when given, must be the chosen store's directory: a
// ledgerctl pointed at another store is refused rather than purging this
// one.
type dlqPurgeHandler struct{ s *Server }

// purgeTarget picks the output whose dead letters a purge request means;
// it returns the HTTP status and message of a request that names none.
func (h dlqPurgeHandler) purgeTarget(q url.Values) (*outputRunner, int, string) {
	var withDLQ outputSet
	for _, o := range h.s.outputs {
		if o.openDeadLetters != nil {
			withDLQ = append(withDLQ, o)
		}
	}
	name := q.Get("output")
	if name == "" {
		if d := q.Get("dir"); d != "" {
			for _, o := range withDLQ {
				if sameDir(d, deadLetterDir(h.s.cfg.Ledger.Dir, o.name)) {
					name = o.name
				}
			}
		}
	}
	if name == "" && len(withDLQ) == 1 {
		name = withDLQ[0].name
	}
	switch o := withDLQ.byName(name); {
	case len(withDLQ) == 0:
		return nil, http.StatusConflict, "dlq purge: this logpond runs no Elasticsearch output, so it holds no dead-letter store (ledgerctl purges it directly)"
	case name == "":
		return nil, http.StatusBadRequest, "dlq purge: say which output's dead letters: output=NAME, one of " + withDLQ.names()
	case o == nil:
		return nil, http.StatusNotFound, fmt.Sprintf("dlq purge: no Elasticsearch output named %q runs here (outputs with dead letters: %s); ledgerctl purges the store of an output that is not running directly", name, withDLQ.names())
	default:
		return o, 0, ""
	}
}

func (h dlqPurgeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(PurgeRequestHeader) == "" {
		http.Error(w, "dlq purge: send the header "+PurgeRequestHeader+" (ledgerctl dlq purge does)", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	out, status, msg := h.purgeTarget(q)
	if out == nil {
		http.Error(w, msg, status)
		return
	}
	store := out.deadLetters()
	if store == nil {
		http.Error(w, "dlq purge: the ledger's device failed and the dead-letter store of "+out.key+" is not open yet", http.StatusConflict)
		return
	}
	dir := deadLetterDir(h.s.cfg.Ledger.Dir, out.name)
	if d := q.Get("dir"); d != "" && !sameDir(d, dir) {
		http.Error(w, fmt.Sprintf("dlq purge: the dead-letter store of %s is %s, not %s", out.key, dir, d), http.StatusConflict)
		return
	}
	through := q.Get("through")
	var (
		p   dlq.Purged
		err error
	)
	if pos, perr := dlq.ParsePos(through); perr == nil {
		p, err = store.Purge(pos)
	} else if t, terr := time.Parse(time.RFC3339Nano, through); terr == nil {
		p, err = store.PurgeFailedBefore(t)
	} else {
		http.Error(w, fmt.Sprintf("dlq purge: through=%q: want a dead letter's id (FILE:OFFSET, as ledgerctl dlq list prints it) or a time (RFC 3339, e.g. 2026-12-02T15:04:05Z)", through), http.StatusBadRequest)
		return
	}
	h.s.log.Info("admin: dead letters purged on request", "output", out.name, "through", through, "files", p.Files, "entries", p.Entries, "bytes", p.Bytes,
		"remote", r.RemoteAddr, "err", err)
	switch {
	case errors.Is(err, dlq.ErrNoEntry):
		http.Error(w, "dlq purge: "+err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "dlq purge: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(DLQPurged{Output: out.name, Dir: dir, Files: p.Files, Entries: p.Entries, Bytes: p.Bytes})
}

// sameDir says whether a and b are the same directory.
func sameDir(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}

// CursorDeleted is the answer of POST /api/cursors/delete: the cursor
// deleted and where it stood.
type CursorDeleted struct {
	Name      string `json:"name"`
	CursorLSN uint64 `json:"cursor_lsn"`
}

// deleteCursor serves POST /api/cursors/delete?name=NAME[&dir=DIR]: the
// running ledger forgets the cursor of an output that is no longer
// configured, so that it no longer holds segments back (retention deletes
// them at its next pass); dir, when given, must be this ledger's
// directory. The cursor of a configured output is refused: it is in use,
// and would be made again at once, from the oldest record.
func (s *Server) deleteCursor(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(PurgeRequestHeader) == "" {
		http.Error(w, "cursors delete: send the header "+PurgeRequestHeader+" (ledgerctl cursors delete does)", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	name := q.Get("name")
	if d := q.Get("dir"); d != "" && !sameDir(d, s.cfg.Ledger.Dir) {
		http.Error(w, fmt.Sprintf("cursors delete: this logpond's ledger is %s, not %s", s.cfg.Ledger.Dir, d), http.StatusConflict)
		return
	}
	if o := s.outputs.byName(name); o != nil {
		http.Error(w, fmt.Sprintf("cursors delete: %q is the cursor of %s, which this logpond runs: remove the output from the configuration and restart logpond first", name, o.key), http.StatusConflict)
		return
	}
	l := s.ledger()
	if l == nil || l.Err() != nil {
		http.Error(w, "cursors delete: the ledger is not open (its device failing); try again once it is", http.StatusServiceUnavailable)
		return
	}
	lsn, ok := l.Cursors()[name]
	if !ok {
		http.Error(w, fmt.Sprintf("cursors delete: the ledger has no cursor named %q", name), http.StatusNotFound)
		return
	}
	if err := l.DeleteCursor(name); err != nil {
		http.Error(w, "cursors delete: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.log.Info("admin: cursor of an output no longer configured deleted on request: it no longer holds the ledger", "cursor", name, "cursor_lsn", lsn, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(CursorDeleted{Name: name, CursorLSN: lsn})
}

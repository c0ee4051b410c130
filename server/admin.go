package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/output/elasticsearch"
)

// backpressureReasons are the wait states logpond reports, in the order
// a backlog travels upstream: a stalled output fills the ledger, a full
// (or failed) ledger stops the flusher, a full journal stops
// acknowledgements, and then the input's budget runs out.
var backpressureReasons = []string{"elasticsearch", "dead_letters_full", "ledger_full", "ledger_failed", "journal_full", "input_budget"}

// state is a snapshot of every component, for /metrics and the health
// endpoints.
type state struct {
	input           *input.BeatsStats
	violations      map[string]int64
	journalBytes    int64
	journalLast     uint64
	journalErr      error // the journal failed (poisoned)
	ledgerErr       error // the ledger failed (poisoned), until it is reopened
	ledgerBytes     int64
	ledgerLast      uint64
	cursors         map[string]uint64
	output          *elasticsearch.Stats
	deadLetterBytes int64
	waiting         map[string]string // backpressure reason → what the component says
}

// snapshot reads the components' counters. It runs only while Run owns
// them (the admin server is stopped before they close).
func (s *Server) snapshot() state {
	st := state{waiting: map[string]string{}}
	if s.beats != nil {
		in := s.beats.Stats()
		st.input = &in
		st.violations = s.beats.Violations()
		if in.BudgetWaiters > 0 {
			st.waiting["input_budget"] = fmt.Sprintf("%d connections wait for input.beats.max_inflight_bytes (%d of %d bytes held)", in.BudgetWaiters, in.InflightBytes, in.MaxInflightBytes)
		}
	}
	if j := s.jrnl(); j != nil {
		st.journalBytes, st.journalLast = j.UsedBytes(), j.LastLSN()
		st.journalErr = j.Err()
		st.waiting["journal_full"] = j.Waiting()
	}
	if l := s.ledg(); l != nil {
		st.ledgerBytes, st.ledgerLast = l.UsedBytes(), l.LastLSN()
		st.cursors = l.Cursors()
		if st.ledgerErr = l.Err(); st.ledgerErr != nil {
			st.waiting["ledger_failed"] = "ledger failed: " + st.ledgerErr.Error() + "; records wait in the journal until logpond has reopened the ledger (free space on its device if it is full)"
		} else {
			st.waiting["ledger_full"] = l.Waiting()
		}
	}
	if s.out != nil {
		o := s.out.Stats()
		st.output = &o
		st.waiting["elasticsearch"] = s.out.Waiting()
	}
	if s.dlq != nil {
		st.deadLetterBytes = s.dlq.UsedBytes()
		st.waiting["dead_letters_full"] = s.dlq.Waiting()
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

// BeatsAddr is the address the Beats input listens on.
func (s *Server) BeatsAddr() net.Addr { return s.beats.Addr() }

// AdminAddr is the admin endpoint's address, nil when admin.listen is "".
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// startAdmin serves /metrics, /healthz and /readyz on the admin listener.
func (s *Server) startAdmin() {
	if s.adminLn == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	s.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.adminDone = make(chan struct{})
	ln := s.adminLn
	go func() {
		defer close(s.adminDone)
		if err := s.admin.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("admin endpoint stopped", "err", err)
		}
	}()
	s.log.Info("admin listening", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
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

// healthz answers 200 while the process can do its job: 503 while the
// journal is failed (poisoned: nothing is acknowledged until the flusher
// has reopened it, see flusher.recover).
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	st := s.snapshot()
	if st.journalErr != nil {
		http.Error(w, "journal failed: "+st.journalErr.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 while new batches are acknowledged without waiting on
// a full store; otherwise 503 with the backpressure reasons, so a load
// balancer can send Beats elsewhere. A failed ledger counts: batches are
// still acknowledged, but into a journal that only fills until the ledger
// is back, and Beats sent elsewhere meanwhile keep that headroom.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st := s.snapshot()
	var why []string
	for _, r := range []string{"ledger_failed", "journal_full", "input_budget"} {
		if m := st.waiting[r]; m != "" {
			why = append(why, r+": "+m)
		}
	}
	if st.journalErr != nil {
		why = append(why, "journal failed: "+st.journalErr.Error())
	}
	if st.input == nil {
		why = append(why, "the Beats input is not running")
	}
	if len(why) > 0 {
		http.Error(w, strings.Join(why, "\n"), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// slogPrinter routes promhttp's errors to the server's log.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("metrics", "err", fmt.Sprint(v...)) }

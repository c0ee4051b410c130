package server

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// totals are the counters the summary line reports the growth of.
type totals struct {
	eventsIn, eventsOut, dead, retried, failedRequests, violations int64
}

func (st state) totals() totals {
	var t totals
	if st.input != nil {
		t.eventsIn = st.input.Events
	}
	for _, n := range st.violations {
		t.violations += n
	}
	if o := st.output; o != nil {
		t.eventsOut, t.dead, t.retried, t.failedRequests = o.Delivered, o.DeadLettered, o.Retried, o.FailedRequests
	}
	return t
}

// summarize logs one INFO line "pipeline summary" every interval until ctx
// ends: what grew in the interval (events acknowledged to Beats, events
// the output finished, dead letters, items retried, requests failed whole,
// connections closed for violations), and where things stand (the
// output's lag in events and age, the stores' fill, open connections, the
// stages waiting). Run owns it and stops it before the components close.
func (s *Server) summarize(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last totals // the counters start at 0 with the process: the first line covers the start too
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := s.snapshot()
		now := st.totals()
		args := []any{"interval", every.String(),
			"events_in", now.eventsIn - last.eventsIn, "events_out", now.eventsOut - last.eventsOut}
		if s.output != nil {
			lg := s.outputLag(st)
			args = append(args, "events_dead", now.dead-last.dead, "items_retried", now.retried-last.retried,
				"requests_failed", now.failedRequests-last.failedRequests,
				"lag_events", lg.events, "lag_age", time.Duration(lg.oldestSeconds()*float64(time.Second)).Round(time.Second).String())
		}
		args = append(args, "violations", now.violations-last.violations,
			"journal_fill", percent(st.journalBytes, int64(s.cfg.Journal.MaxBytes)),
			"ledger_fill", percent(st.ledgerBytes, int64(s.cfg.Ledger.MaxBytes)))
		if st.input != nil {
			args = append(args, "connections", st.input.Connections)
		}
		var waiting []string
		for _, r := range backpressureReasons {
			if st.waiting[r] != "" {
				waiting = append(waiting, r)
			}
		}
		if len(waiting) > 0 {
			args = append(args, "waiting", strings.Join(waiting, ","))
		}
		s.log.Info("pipeline summary", args...)
		last = now
	}
}

// percent formats used/limit as a percentage.
func percent(used, limit int64) string {
	return fmt.Sprintf("%.1f%%", 100*ratio(used, limit))
}

package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// totals are the counters the summary line reports the growth of.
type totals struct {
	eventsIn, eventsOut, dead, retried, failedRequests, violations int64
	out                                                            map[string]int64 // events delivered, by output
}

func (st state) totals() totals {
	t := totals{out: map[string]int64{}}
	if st.input != nil {
		t.eventsIn = st.input.Events
	}
	for _, n := range st.violations {
		t.violations += n
	}
	for _, o := range st.outputs {
		t.eventsOut += o.stats.Delivered
		t.out[o.out.name] = o.stats.Delivered
		t.dead += o.stats.DeadLettered
		t.retried += o.stats.Retried
		t.failedRequests += o.stats.FailedRequests
	}
	return t
}

// summarize logs one INFO line "pipeline summary" every interval until ctx
// ends: what grew in the interval (events acknowledged to Beats, events
// the output finished, dead letters, items retried, requests failed whole,
// connections closed for violations), and where things stand (the
// output's lag in events and age, the stores' fill, the ledger's
// compression ratio since the start, open connections, the stages
// waiting). Run owns it and stops it before the components close.
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
		if len(st.outputs) > 0 {
			args = append(args, "events_dead", now.dead-last.dead, "items_retried", now.retried-last.retried,
				"requests_failed", now.failedRequests-last.failedRequests)
		}
		// One group per output: what it finished, its lag, its skips.
		for _, o := range st.outputs {
			lg := s.outputLag(st, o)
			part := []any{"events_out", o.stats.Delivered - last.out[o.out.name], "lag_events", lg.events,
				"lag_age", time.Duration(lg.oldestSeconds() * float64(time.Second)).Round(time.Second).String()}
			if o.stats.SkippedRecords > 0 {
				part = append(part, "skipped_records_total", o.stats.SkippedRecords)
			}
			if o.misconfigured != "" {
				part = append(part, "misconfigured", true)
			}
			args = append(args, slog.Group("output."+o.out.name, part...))
		}
		args = append(args, "violations", now.violations-last.violations,
			"journal_fill", percent(st.journalBytes, int64(s.cfg.Journal.MaxBytes)),
			"ledger_fill", percent(st.ledgerBytes, int64(s.cfg.Ledger.MaxBytes)),
			// Stored over raw bytes since the start (1 uncompressed):
			// what the ledger's outage budget is multiplied by.
			"ledger_ratio", fmt.Sprintf("%.3f", st.compression.ratio()))
		if st.input != nil {
			args = append(args, "connections", st.input.Connections)
		}
		var waiting []string
		for _, r := range backpressureReasons {
			if st.waiting[r] != "" {
				waiting = append(waiting, r)
			}
		}
		for _, o := range st.outputs {
			for _, r := range outputReasons {
				if r != "ledger_unreadable" && o.waiting[r] != "" {
					waiting = append(waiting, r+":"+o.out.name)
				}
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

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/logpond/logpond/conf"
)

// drainingReason is what /readyz (and GET /'s not_ready) says first while
// a drain runs.
const drainingReason = "draining: this logpond is being retired (logpond -drain): it accepts no Beats connections and sends what its ledger holds to its outputs"

// drainCheckInterval is how often Drain looks whether it is done: the
// look reads a few counters under the ledger's lock, and the outputs
// persist their cursors about once a second anyway, so a quarter of a
// second adds little to a drain's end.
const drainCheckInterval = 250 * time.Millisecond

// drainProgressInterval is how often Drain logs what is left: often
// enough for an operator watching a retirement, rarely enough for the log.
const drainProgressInterval = 5 * time.Second

// DrainLeft is what a drain has left to do: the acknowledged records the
// ledger still lacks, and what each configured output has not delivered.
type DrainLeft struct {
	// Done: every record the journal had acknowledged when the Server was
	// opened is in the ledger, and every configured output's persisted
	// cursor is at the ledger's last record. Nothing is left on this
	// instance's disks that a destination has not acknowledged (stored,
	// or dead-lettered in the output's dead-letter store).
	Done bool
	// LedgerLastLSN is the ledger's last durable record.
	LedgerLastLSN uint64
	// JournalRecords counts the acknowledged journal records not yet in
	// the ledger (the flusher moves them first; journal damage stops
	// them).
	JournalRecords uint64
	// LedgerError says why the ledger is not available ("" when it is):
	// it could not be opened, or failed and is being reopened. Nothing
	// can be measured meanwhile.
	LedgerError string
	// Outputs are the configured outputs, in configuration order.
	Outputs []OutputLeft
}

// OutputLeft is what one output has not delivered.
type OutputLeft struct {
	Name string
	Type string // "elasticsearch" or "lumberjack"
	// CursorLSN is the output's persisted cursor: every record up to it
	// is acknowledged by its destination (or dead-lettered).
	CursorLSN uint64
	// Records counts the ledger records after the cursor; Bytes are their
	// bytes in the ledger (as stored, compressed or not); Events estimates
	// their events (known for the records the output has read, at the
	// mean per record read for the others), -1 before the output read any
	// record to estimate from.
	Records uint64
	Bytes   int64
	Events  int64
	// DeadLetters counts the dead letters the output's store holds, and
	// DeadLetterBytes their files' bytes, on the ledger's device: events
	// the destination refused for good, counted as done by the cursor
	// but delivered nowhere. A drain that leaves some is done, yet its
	// directories still hold events: re-drive or export them first.
	DeadLetters, DeadLetterBytes int64
	// LastError is the latest reason the output was held back during the
	// drain (its destination failing, its configuration wrong, its
	// dead-letter store full, the ledger's device failing its reads); ""
	// when none was seen.
	LastError string
}

// OpenDrain opens cfg's stores and outputs as Open does (the ledger and
// journal recover, the journal's acknowledged tail is replayed into the
// ledger once Drain runs), and binds the admin listener, but never binds
// the Beats listener: connections to its address are refused. Run it with
// Drain, then Close it. It refuses a configuration without any enabled
// output: nothing would take what the ledger holds.
func OpenDrain(cfg *conf.Config, log *slog.Logger) (*Server, error) {
	if len(cfg.Outputs()) == 0 {
		return nil, errors.New("server: drain: no output is enabled: nothing would send what the ledger holds; enable the outputs the events go to")
	}
	return open(cfg, log, true)
}

// Drain runs a Server opened by OpenDrain: the flusher moves the
// journal's acknowledged records into the ledger and every configured
// output sends the ledger from its cursor, until the drain is done
// (DrainLeft.Done) or ctx ends, whichever comes first; then it stops
// everything in order, as Run does (each output persists its cursor, the
// stores close), so nothing is lost: a later drain or a normal start
// resumes from the cursors. While it runs, /readyz answers 503 with
// "draining" among its reasons, /livez 200, and GET / reports mode
// "drain"; it logs what is left every few seconds. It returns what was
// left when the outputs had stopped (Done when nothing was), and an error
// when a component failed (the flusher, an output that stopped by itself)
// or the stop did; a drain that only ran out of time or was cancelled
// returns no error, and Done false.
func (s *Server) Drain(ctx context.Context) (DrainLeft, error) {
	if !s.draining {
		return DrainLeft{}, errors.New("server: Drain needs a Server opened by OpenDrain")
	}
	p := s.startPipeline()
	// The latest reason each output was held back, for what is left:
	// once the outputs stop, they no longer say.
	lastErr := map[string]string{}
	s.noteOutputErrors(lastErr)
	left := s.drainLeft(lastErr)
	s.log.Info("draining: no Beats input; the outputs send what the ledger holds until every cursor is at its end",
		left.LogArgs()...)
	check := time.NewTicker(drainCheckInterval)
	defer check.Stop()
	logged := time.Now()
	var runErr, oerr error
	for !left.Done {
		var ticked bool
		if runErr, oerr, ticked = s.await(ctx, p, check.C); !ticked {
			break
		}
		s.noteOutputErrors(lastErr)
		left = s.drainLeft(lastErr)
		if !left.Done && time.Since(logged) >= drainProgressInterval {
			s.log.Info("draining", left.LogArgs()...)
			logged = time.Now()
		}
	}
	// What is left is measured again once every output has persisted its
	// last cursor, before the ledger closes.
	p.beforeLedgerClose = func() {
		running := left
		left = s.drainLeft(lastErr)
		left.keepEstimates(running)
	}
	err := s.stopPipeline(p, runErr, oerr)
	return left, err
}

// noteOutputErrors records in last the reason each output is held back
// now, if any.
func (s *Server) noteOutputErrors(last map[string]string) {
	for _, o := range s.outputs {
		why := firstOf(o.Misconfigured(), o.Waiting(), o.LedgerUnreadable())
		if why == "" {
			if d := o.deadLetters(); d != nil {
				why = d.Waiting()
			}
		}
		if why != "" {
			last[o.name] = why
		}
	}
}

// drainLeft measures what the drain has left; lastErr holds each output's
// latest reason to be held back.
func (s *Server) drainLeft(lastErr map[string]string) DrainLeft {
	var left DrainLeft
	l := s.ledger()
	switch p := s.stores.ledgerPending(); {
	case p != nil:
		left.LedgerError = fmt.Sprintf("the ledger could not be opened: %v", p.err)
	case l == nil:
		left.LedgerError = "the ledger is closed"
	case l.Err() != nil:
		left.LedgerError = fmt.Sprintf("the ledger failed: %v", l.Err())
	}
	var cursors map[string]uint64
	if left.LedgerError == "" {
		left.LedgerLastLSN = l.LastLSN()
		cursors = l.Cursors()
	}
	// The journal's LSNs continue the ledger's, and nothing is appended
	// to it while draining: the ledger holds every acknowledged record
	// once its last LSN reaches the journal's at open.
	if s.bootLSN > left.LedgerLastLSN {
		left.JournalRecords = s.bootLSN - left.LedgerLastLSN
	}
	left.Done = left.LedgerError == "" && left.JournalRecords == 0
	for _, o := range s.outputs {
		ol := OutputLeft{Name: o.name, Type: o.typ, CursorLSN: cursors[o.name], LastError: lastErr[o.name]}
		if left.LedgerError == "" && ol.CursorLSN < left.LedgerLastLSN {
			ol.Records = left.LedgerLastLSN - ol.CursorLSN
			ol.Bytes = l.BytesAfter(ol.CursorLSN)
			ol.Events = -1
			if g := o.Gauges(); g.Running && g.EventsPerRecord > 0 {
				ol.Events = eventsLeft(g, max(g.ReadLSN, g.DoneLSN), left.LedgerLastLSN)
			}
		}
		if d := o.deadLetters(); d != nil {
			ol.DeadLetters, ol.DeadLetterBytes = d.Entries(), d.UsedBytes()
		}
		if left.LedgerError != "" || ol.Records > 0 {
			left.Done = false
		}
		left.Outputs = append(left.Outputs, ol)
	}
	return left
}

// keepEstimates takes the events estimated while the outputs ran (in
// running) for the outputs whose cursor has not moved since: stopped, an
// output no longer knows the events of the records it had read, and
// would count one per record.
func (left *DrainLeft) keepEstimates(running DrainLeft) {
	for i := range left.Outputs {
		o := &left.Outputs[i]
		for _, r := range running.Outputs {
			if r.Name == o.Name && r.CursorLSN == o.CursorLSN && r.Records == o.Records && r.Events > o.Events {
				o.Events = r.Events
			}
		}
	}
}

// DeadLetters counts the dead letters every output's store holds.
func (left DrainLeft) DeadLetters() int64 {
	var n int64
	for _, o := range left.Outputs {
		n += o.DeadLetters
	}
	return n
}

// LogArgs are left's log/slog attributes: the ledger's end, the
// journal's records it lacks, the ledger's error if any, and one group
// per output (output.NAME: cursor_lsn, events_left when estimated, records_left, bytes_left,
// dead_letters and dead_letter_bytes when it holds some, last_error).
func (left DrainLeft) LogArgs() []any {
	args := []any{"ledger_last_lsn", left.LedgerLastLSN, "journal_records_left", left.JournalRecords}
	if left.LedgerError != "" {
		args = append(args, "ledger_error", left.LedgerError)
	}
	for _, o := range left.Outputs {
		part := []any{"cursor_lsn", o.CursorLSN}
		if o.Events >= 0 {
			part = append(part, "events_left", o.Events)
		}
		part = append(part, "records_left", o.Records, "bytes_left", o.Bytes)
		if o.DeadLetters > 0 {
			part = append(part, "dead_letters", o.DeadLetters, "dead_letter_bytes", o.DeadLetterBytes)
		}
		if o.LastError != "" {
			part = append(part, "last_error", o.LastError)
		}
		args = append(args, slog.Group("output."+o.Name, part...))
	}
	return args
}

package main

import (
	"errors"
	"fmt"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// cmdAcceptLoss accepts, with logpond stopped, the loss of acknowledged
// records in neither store, so that logpond starts again. First the
// ledger's: records at its end that the journal no longer holds (damage
// ending the open segment, or a journal that starts after the ledger's
// last LSN + 1): ledger.SealOpenSegment seals the open segment as it is
// and starts a new one where the journal goes on (ledgerloss.go). Then
// the journal's: records damaged past the ledger's last LSN:
// journal.AcceptLoss keeps every intact record and puts an empty record
// in each lost LSN's place. It prints exactly which LSNs are lost. With
// --dry-run it only says what it would do.
func cmdAcceptLoss(e *env, args []string) int {
	fs, asJSON := newFlags(e, "accept-loss", "accept-loss [--dry-run] (logpond stopped; needs -journal and -ledger, or -config)")
	dry := fs.Bool("dry-run", false, "only report what would be lost; change nothing")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if e.journalDir == "" || e.ledgerDir == "" {
		e.errorf("accept-loss needs both stores: -config FILE, or -journal DIR and -ledger DIR")
		return exitUsage
	}
	if !*dry {
		// As the stores' owner only: it creates the lock files, rewrites
		// journal generations and starts a ledger segment.
		if err := checkOwner(e.commandLine(append([]string{"accept-loss"}, args...)...), e.journalDir, e.ledgerDir); err != nil {
			e.errorf("accept-loss: %v", err)
			return exitFailed
		}
		for _, dir := range []string{e.journalDir, e.ledgerDir} {
			lock, err := dirlock.Acquire(dir)
			var locked *dirlock.LockedError
			if errors.As(err, &locked) {
				e.errorf("accept-loss: logpond is running on %s (%s): stop it first (systemctl stop logpond)", dir, holder(locked))
				return exitFailed
			}
			if err != nil {
				e.errorf("accept-loss: %v", permissionOr(dir, err))
				return exitFailed
			}
			defer lock.Release()
		}
	}
	lp, err := planLedgerLoss(e)
	if err != nil {
		e.errorf("accept-loss: %v", permissionOr(e.ledgerDir, err))
		return exitFailed
	}
	if lp != nil && !*dry {
		if err := ledger.SealOpenSegment(e.ledgerDir, lp.Next); err != nil {
			e.errorf("accept-loss: %v", permissionOr(e.ledgerDir, err))
			return exitFailed
		}
	}
	settled, err := ledgerLastLSN(e)
	if err != nil {
		e.errorf("accept-loss: %v", permissionOr(e.ledgerDir, err))
		return exitFailed
	}
	if lp != nil {
		// The ledger's last LSN once its open segment is sealed.
		settled = lp.Next - 1
	}
	var rep *journal.LossReport
	if *dry {
		rep, err = journal.FindLoss(e.journalDir, settled)
	} else {
		rep, err = journal.AcceptLoss(e.journalDir, settled)
	}
	if err != nil {
		e.errorf("accept-loss: %v", permissionOr(e.journalDir, err))
		if rep != nil && len(rep.Rewritten) > 0 {
			e.errorf("accept-loss: rewritten before the failure: %v (originals in %v); run accept-loss again", rep.Rewritten, rep.SetAside)
		}
		return exitFailed
	}
	if *asJSON {
		writeJSON(e.stdout, acceptLossJSON(rep, lp, *dry))
		return exitOK
	}
	w := e.stdout
	if lp == nil && len(rep.Lost) == 0 && rep.Tail == nil && rep.Held == 0 {
		fmt.Fprintf(w, "no ledger records the journal no longer holds, and no journal damage after the ledger's last LSN %d: nothing to accept\n", settled)
		return exitOK
	}
	if lp != nil {
		printLedgerLoss(e, lp, *dry)
	}
	lost, would := "lost", ""
	if *dry {
		lost, would = "would be lost", "would be "
	}
	if len(rep.Lost) > 0 {
		fmt.Fprintf(w, "journal records after the ledger's last LSN %d that do not verify: acknowledged, in neither store, %s:\n", settled, lost)
		for _, s := range rep.Lost {
			fmt.Fprintf(w, "  %s\n", s)
		}
		events := "unknown (their bytes do not verify)"
		if n := rep.LostEvents(); n >= 0 {
			events = fmt.Sprint(n)
		}
		fmt.Fprintf(w, "%s in all: records: %d, events: %s; every other record is kept and reaches the ledger and the output\n", lost, rep.LostRecords(), events)
	}
	if rep.Held > 0 {
		fmt.Fprintf(w, "%d damaged records at or below LSN %d %sreplaced too: the ledger holds them, nothing is lost\n", rep.Held, settled, would)
	}
	if t := rep.Tail; t != nil {
		fmt.Fprintf(w, "the newest journal file ends in a torn write from LSN %d (%s at offset %d, %d bytes: %s): %scut, as every start cuts one; no later write follows it, so by the journal's recovery rule it was never acknowledged; how many records it held is unknown\n",
			t.FirstLSN, t.File, t.Offset, t.Bytes, t.Reason, would)
	}
	if *dry {
		fmt.Fprintln(w, "dry run: nothing changed; run accept-loss without --dry-run, with logpond stopped, to accept the loss")
		return exitOK
	}
	for i, f := range rep.Rewritten {
		fmt.Fprintf(w, "rewritten: %s (the damaged original is kept in %s)\n", f, rep.SetAside[i])
	}
	fmt.Fprintln(w, "accepted: logpond starts again")
	return exitOK
}

// ledgerLastLSN is the ledger's last LSN as its Open finds it: the last
// valid record of its newest segment (0 for an empty ledger).
func ledgerLastLSN(e *env) (uint64, error) {
	segs, err := ledger.Segments(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil {
		return 0, err
	}
	if len(segs) == 0 {
		return 0, nil
	}
	return segs[len(segs)-1].LastLSN, nil
}

// lostJSON is a lost range in accept-loss's --json output, of the journal
// or the ledger.
type lostJSON struct {
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	FirstLSN uint64 `json:"first_lsn"`
	LastLSN  uint64 `json:"last_lsn"`
	Records  uint64 `json:"records"`
	Events   *int   `json:"events"` // null: unknown
	Reason   string `json:"reason"`
}

// acceptLossJSON is the --json form of a report.
func acceptLossJSON(rep *journal.LossReport, lp *ledgerLoss, dry bool) any {
	type tail struct {
		File     string `json:"file"`
		Offset   int64  `json:"offset"`
		Bytes    int64  `json:"bytes"`
		FirstLSN uint64 `json:"first_lsn"`
		Reason   string `json:"reason"`
	}
	out := struct {
		DryRun bool `json:"dry_run"`
		// Ledger is the ledger's part (null: nothing lost there).
		Ledger        any        `json:"ledger"`
		LedgerLastLSN uint64     `json:"ledger_last_lsn"`
		Lost          []lostJSON `json:"lost"`
		LostRecords   uint64     `json:"lost_records"`
		LostEvents    *int       `json:"lost_events"` // null: unknown
		HeldByLedger  uint64     `json:"held_by_ledger"`
		TornTail      *tail      `json:"torn_tail"`
		Rewritten     []string   `json:"rewritten"`
		SetAside      []string   `json:"set_aside"`
	}{DryRun: dry, Ledger: ledgerLossJSON(lp), LedgerLastLSN: rep.Settled, Lost: []lostJSON{}, LostRecords: rep.LostRecords(), HeldByLedger: rep.Held,
		Rewritten: append([]string{}, rep.Rewritten...), SetAside: append([]string{}, rep.SetAside...)}
	known := func(n int) *int {
		if n < 0 {
			return nil
		}
		return &n
	}
	for _, s := range rep.Lost {
		out.Lost = append(out.Lost, lostJSON{s.File, s.Offset, s.FirstLSN, s.LastLSN, s.Records(), known(s.Events), s.Reason})
	}
	out.LostEvents = known(rep.LostEvents())
	if t := rep.Tail; t != nil {
		out.TornTail = &tail{t.File, t.Offset, t.Bytes, t.FirstLSN, t.Reason}
	}
	return out
}

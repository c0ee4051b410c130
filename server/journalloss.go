package server

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/logpond/logpond/internal/dirowner"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// acceptLossCommand is the command that accepts the loss of acknowledged
// records in neither store: journal records damaged past the ledger's last
// LSN, or ledger records at the end of the ledger that the journal no
// longer holds (docs/operations.md). It runs as the ledger's owner (sudo -u
// USER), the user logpond runs as: ledgerctl refuses to write stores as
// another user, whose files logpond could not open.
func acceptLossCommand(journalDir, ledgerDir string) string {
	abs := func(d string) string {
		if a, err := filepath.Abs(d); err == nil {
			return a
		}
		return d
	}
	cmd := fmt.Sprintf("ledgerctl -journal %s -ledger %s accept-loss", dirowner.Quote(abs(journalDir)), dirowner.Quote(abs(ledgerDir)))
	if o, err := dirowner.Of(ledgerDir); err == nil {
		cmd = o.Command(cmd)
	}
	return cmd
}

// journalLossError turns the journal's refusal to open over damage past
// the ledger's last LSN (a *journal.CorruptionError) into the one message
// an operator needs: which records are gone (file, offset, LSNs, events)
// and the command that accepts the loss. It still wraps the
// *journal.CorruptionError. Other errors are returned as they are.
func journalLossError(err error, journalDir, ledgerDir string, ledgerLast uint64) error {
	var ce *journal.CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	what := fmt.Sprintf("LSN %d in %s at offset %d: %v", ce.LSN, ce.File, ce.Offset, ce.Err)
	if rep, ferr := journal.FindLoss(journalDir, ledgerLast); ferr == nil && len(rep.Lost) > 0 {
		what = rep.Summary()
	}
	return &lossError{err: ce, msg: fmt.Sprintf("journal damage past the ledger's last LSN %d: acknowledged records in neither store are lost: %s; "+
		"refusing to start, since no record after them could reach the ledger. With logpond stopped, accept the loss with `%s` "+
		"(it keeps every other record; see docs/operations.md, \"Journal damage past the ledger\"), then start logpond",
		ledgerLast, what, acceptLossCommand(journalDir, ledgerDir))}
}

// ledgerLossError turns the ledger's refusal to open over damage at the
// end of its open segment that the journal no longer holds (a
// *ledger.CorruptionError) into the one message an operator needs: which
// records are gone and the command that accepts the loss. jfirst and
// jexists are the journal's first LSN and whether a journal exists. It
// still wraps the *ledger.CorruptionError. Other errors are returned as
// they are.
func ledgerLossError(err error, journalDir, ledgerDir string, jfirst uint64, jexists bool) error {
	var ce *ledger.CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	lost := fmt.Sprintf("LSNs from %d on (the journal holds none of them: how many records is unknown)", ce.LSN)
	if jexists && jfirst > ce.LSN {
		lost = fmt.Sprintf("LSNs %d–%d (%s, events unknown)", ce.LSN, jfirst-1, records(jfirst-ce.LSN))
	}
	return &lossError{err: ce, msg: fmt.Sprintf("ledger damage at the end of its open segment %s at offset %d (%v): acknowledged records the journal no longer holds are lost: %s; "+
		"refusing to start, since the ledger cannot go on after them. With logpond stopped, accept the loss with `%s` "+
		"(it seals the damaged segment as it is and keeps every other record; see docs/operations.md, \"Ledger records the journal no longer holds\"), then start logpond",
		ce.Segment, ce.Offset, ce.Err, lost, acceptLossCommand(journalDir, ledgerDir))}
}

// gapError is the refusal to start when the journal starts after the
// ledger's last LSN + 1: records in neither store, with the command that
// accepts their loss.
func gapError(journalDir, ledgerDir string, jfirst, ledgerLast uint64) error {
	return fmt.Errorf("the journal starts at LSN %d but the ledger ends at LSN %d: acknowledged records %d–%d (%s, events unknown) are in neither store "+
		"(the ledger's last writes are gone from its disk, or the journal directory is from elsewhere); refusing to start. "+
		"Check that -config names this logpond's directories (`ledgerctl -journal %s -ledger %s segments`); if they are, accept the loss, with logpond stopped, "+
		"with `%s` (it keeps every other record; see docs/operations.md, \"Ledger records the journal no longer holds\"), then start logpond",
		jfirst, ledgerLast, ledgerLast+1, jfirst-1, records(jfirst-ledgerLast-1), journalDir, ledgerDir, acceptLossCommand(journalDir, ledgerDir))
}

// records says "1 record" or "n records".
func records(n uint64) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}

// lossError is a loss message around the store's error.
type lossError struct {
	err error
	msg string
}

func (e *lossError) Error() string { return e.msg }
func (e *lossError) Unwrap() error { return e.err }

package server

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/logpond/logpond/journal"
)

// acceptLossCommand is the command that accepts the loss of journal
// records damaged past the ledger's last LSN (docs/operations.md).
func acceptLossCommand(journalDir, ledgerDir string) string {
	abs := func(d string) string {
		if a, err := filepath.Abs(d); err == nil {
			return a
		}
		return d
	}
	return fmt.Sprintf("ledgerctl -journal %s -ledger %s accept-loss", abs(journalDir), abs(ledgerDir))
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
	return &lossError{ce: ce, msg: fmt.Sprintf("journal damage past the ledger's last LSN %d: acknowledged records in neither store are lost: %s; "+
		"refusing to start, since no record after them could reach the ledger. With logpond stopped, accept the loss with `%s` "+
		"(it keeps every other record; see docs/operations.md, \"Journal damage past the ledger\"), then start logpond",
		ledgerLast, what, acceptLossCommand(journalDir, ledgerDir))}
}

// lossError is journalLossError's message around the journal's error.
type lossError struct {
	ce  *journal.CorruptionError
	msg string
}

func (e *lossError) Error() string { return e.msg }
func (e *lossError) Unwrap() error { return e.ce }

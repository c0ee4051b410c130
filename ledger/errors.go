package ledger

import (
	"errors"
	"fmt"
	"path/filepath"
)

var (
	// ErrClosed is returned by operations on a closed ledger.
	ErrClosed = errors.New("ledger: closed")
	// ErrPoisoned is returned after a write or fdatasync failed; it wraps
	// the cause. Close and reopen to resume.
	ErrPoisoned = errors.New("ledger: poisoned by an earlier write or fdatasync failure; close and reopen")
	// ErrFull is returned by Append when the record does not fit within
	// Options.MaxBytes even after every drained segment was deleted. The
	// ledger stays usable: the caller syncs what it appended (so that
	// outputs can read it, pass it and let it go) and tries again later.
	ErrFull = errors.New("ledger: full")
)

// CorruptionError reports damage in a segment: the segment file, the byte
// offset where reading stopped, and the LSN expected there.
type CorruptionError struct {
	Segment string
	Offset  int64
	LSN     uint64
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("ledger: corrupt segment %s at offset %d (expected LSN %d): %v; inspect with `ledgerctl -ledger %s verify`",
		e.Segment, e.Offset, e.LSN, e.Err, filepath.Dir(e.Segment))
}

// Unwrap returns the kind of damage.
func (e *CorruptionError) Unwrap() error { return e.Err }

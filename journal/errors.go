package journal

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by operations on a closed journal.
	ErrClosed = errors.New("journal: closed")
	// ErrPoisoned is returned by every Append after a write or fsync
	// failed; it wraps the failure. Close and reopen to resume.
	ErrPoisoned = errors.New("journal: poisoned by an earlier write or fsync failure; close and reopen")
	// ErrTooLarge is returned by Append for a record that can never fit
	// in journal.max_bytes.
	ErrTooLarge = errors.New("journal: record larger than the journal can hold")
)

// Kinds of entry damage found while scanning a segment.
var (
	errPrefix     = errors.New("torn or invalid length prefix")
	errPastEnd    = errors.New("entry runs past the end of the file")
	errFrameShort = errors.New("entry too short for a frame")
	errFrameCRC   = errors.New("frame checksum mismatch")
	errFrameGroup = errors.New("group after LSN")
	errLSN        = errors.New("unexpected LSN")
	errEarlyEnd   = errors.New("closed generation ends before its last LSN")
)

// CorruptionError reports damage to records the journal had acknowledged, or
// that it cannot safely classify as a torn tail. It names the file and the
// byte offset of the damaged entry's length prefix.
type CorruptionError struct {
	File   string
	Offset int64
	LSN    uint64 // the LSN expected at Offset
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("journal: corrupt entry in %s at offset %d (LSN %d): %v; logpond will not start over acknowledged data it cannot read: inspect with `ledgerctl -journal %s verify`",
		e.File, e.Offset, e.LSN, e.Err, journalDirOf(e.File))
}

// Unwrap returns the kind of damage.
func (e *CorruptionError) Unwrap() error { return e.Err }

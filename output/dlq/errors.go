package dlq

import (
	"errors"
	"fmt"

	"github.com/logpond/logpond/internal/framelog"
)

var (
	// ErrClosed is returned by operations on a closed Store, and by an
	// Append that was waiting when Close was called.
	ErrClosed = errors.New("dlq: closed")
	// ErrPoisoned is returned by every Append after a write, fdatasync or
	// directory fsync failed; it wraps that first failure. The failed
	// write's entries may or may not be on disk, and no retry could tell:
	// Close the Store and Open it again (which cuts a torn tail) to resume.
	ErrPoisoned = errors.New("dlq: poisoned by an earlier write or sync failure; close and reopen")
	// ErrTooLarge is returned by Append for an entry whose frame can never
	// fit in a file (Options.SegmentBytes). Nothing of that Append's slice
	// was written.
	ErrTooLarge = errors.New("dlq: entry larger than a dead-letter file")
	// ErrNoEntry is wrapped by the error of a Purge given a Pos that names
	// no entry of the store (a file it never had, an offset where no entry
	// begins).
	ErrNoEntry = errors.New("no such dead letter")
)

// CorruptionError reports damage in a dead-letter file: bytes that were
// synced, or were followed by a later write, and do not decode. Open and
// Scan return it; they never skip or repair such damage.
type CorruptionError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset in File where decoding stopped
	Err    error  // what was wrong there
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("dlq: corrupt dead-letter file %s at offset %d: %v; the entries before it can still be listed (dlq.Scan); to start, move the file out of the directory",
		e.File, e.Offset, e.Err)
}

// Unwrap returns the kind of damage.
func (e *CorruptionError) Unwrap() error { return e.Err }

// corruption is the CorruptionError for damage a scan of a dead-letter file
// found.
func corruption(ce *framelog.CorruptionError) *CorruptionError {
	err := ce.Err
	if ce.Kind == framelog.LaterWritten {
		err = fmt.Errorf("%w, and a good frame of a later write follows at offset %d", ce.Err, ce.Later.Off)
	}
	return &CorruptionError{File: ce.File, Offset: ce.Offset, Err: err}
}

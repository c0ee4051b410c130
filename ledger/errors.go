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

// UnsyncedError is Reopen's refusal to reopen a failed ledger whose
// failed instance appended records after its last successful Sync
// (FirstLSN..LastLSN) that the journal no longer holds
// (Options.Covered(FirstLSN) is false). No fdatasync of them succeeded,
// so their only copy is bytes nothing proves are on disk, or bytes never
// written at all: cutting them would lose them for good and leave LSNs
// the journal cannot continue after, and keeping them would count as
// durable what may not be. Reopen changes nothing and returns this; the
// journal cannot get the records back, so trying again cannot help. A
// fresh Open (a restart) applies Open's rule to the same bytes, as after a
// crash: it keeps the records that still verify, and refuses over the
// rest, which [SealOpenSegment] (ledgerctl accept-loss) accepts.
type UnsyncedError struct {
	Segment  string // the open segment
	Offset   int64  // where its synced records end: what follows was never synced
	FirstLSN uint64 // the first LSN appended after the last successful Sync
	LastLSN  uint64 // the last LSN the failed instance appended
}

func (e *UnsyncedError) Error() string {
	return fmt.Sprintf("ledger: reopen: LSNs %d–%d were appended to %s after its last successful sync (its synced records end at offset %d), no fdatasync of them succeeded, "+
		"and the journal no longer holds LSN %d: they can neither be cut (nothing could replay them) nor kept (nothing proves they are on disk)",
		e.FirstLSN, e.LastLSN, e.Segment, e.Offset, e.FirstLSN)
}

// ReadError reports that reading a segment, or opening it or its index
// for reading, failed: the device answered an error (EIO, …) instead of
// bytes. It says nothing about the data: the same read may succeed when
// tried again (a device fault that passes), and a [Reader] that stopped
// at one retries the read at the next call to Next.
type ReadError struct {
	Segment string // the segment, or its index file
	Offset  int64  // where the read began; -1 when opening failed
	Err     error
}

func (e *ReadError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("ledger: open %s: %v", e.Segment, e.Err)
	}
	return fmt.Sprintf("ledger: read %s at %d: %v", e.Segment, e.Offset, e.Err)
}

// Unwrap returns the device's error.
func (e *ReadError) Unwrap() error { return e.Err }

// Damage is a damaged range of a sealed segment that a reader passed: the
// bytes [Start, End) of Segment, from the end of the last valid frame
// before it to the start of the next valid frame (or the end of the file).
// The records FirstLSN..LastLSN it held are lost: their frames or bytes do
// not check, so nothing of them can be trusted (a record is checked whole,
// by its CRC). A range with no records (LastLSN < FirstLSN) is garbage
// where padding belonged.
type Damage struct {
	Segment    string
	Start, End int64
	FirstLSN   uint64
	LastLSN    uint64
	Reason     string
}

// Records is the number of records lost in the range.
func (d Damage) Records() uint64 {
	if d.LastLSN < d.FirstLSN {
		return 0
	}
	return d.LastLSN - d.FirstLSN + 1
}

// String describes the range for logs and tools.
func (d Damage) String() string {
	lsns := "no records"
	if d.Records() > 0 {
		lsns = fmt.Sprintf("LSNs %d-%d (%d records)", d.FirstLSN, d.LastLSN, d.Records())
	}
	return fmt.Sprintf("%s bytes %d-%d: %s lost: %s", d.Segment, d.Start, d.End, lsns, d.Reason)
}

package framelog

import "fmt"

// Kind says why bytes that do not verify are damage rather than a torn
// tail.
type Kind int

const (
	// Sealed: the file is not the one the log appends to; it was synced
	// whole before a later file began, so nothing in it is torn.
	Sealed Kind = iota + 1
	// LaterWritten: a frame of a later write follows the bytes, so the
	// write holding them had been synced.
	LaterWritten
)

func (k Kind) String() string {
	switch k {
	case Sealed:
		return "sealed"
	case LaterWritten:
		return "later write follows"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// CorruptionError is damage a Scanner found: bytes that were synced, or
// were followed by a later write, and do not verify. Each store reports it
// as its own error type, with what an operator can do about it.
type CorruptionError struct {
	File   string // path of the damaged file
	Offset int64  // where the frame expected there should start
	Pos    uint64 // the position that frame should carry
	Kind   Kind
	// Later is the frame of a later write that follows the damage, when
	// Kind is LaterWritten.
	Later Frame
	Err   error // why the bytes at Offset are not that frame
}

func (e *CorruptionError) Error() string {
	if e.Kind == LaterWritten {
		return fmt.Sprintf("corrupt frame in %s at offset %d (position %d): %v; a later write follows at offset %d",
			e.File, e.Offset, e.Pos, e.Err, e.Later.Off)
	}
	return fmt.Sprintf("corrupt frame in %s at offset %d (position %d): %v", e.File, e.Offset, e.Pos, e.Err)
}

// Unwrap returns why the bytes are not a frame.
func (e *CorruptionError) Unwrap() error { return e.Err }

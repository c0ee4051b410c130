package framelog

import (
	"errors"
	"fmt"
)

// Frame is a frame that verified on its own.
type Frame struct {
	Off  int64 // file offset of its first byte
	Size int64 // the bytes it takes in the file
	// Pos is its place in the log, in the store's own numbering (an LSN,
	// a file offset); Write is the Pos at which the write holding it
	// began. A frame whose Write is greater than a position P was written
	// after the write holding P had been synced.
	Pos, Write uint64
	// Payload is what the format wants its scan's callers to see of the
	// frame (the journal's record). It aliases the Source: valid until
	// the Source is read again.
	Payload []byte
}

// Format is what a store tells a Scanner about its frames.
type Format interface {
	// MinSize is the size of the smallest frame: a search for a later
	// write stops where fewer bytes remain.
	MinSize() int64
	// Frame verifies the bytes at off as one frame on their own, not
	// knowing what precedes them: lengths within the file, every
	// checksum, the payload. It returns the frame, or reason when the
	// bytes are not a frame (ErrShrank from src counts as one), or err
	// when src failed to read. after is a filter for the search of a
	// damaged tail: a frame with Pos ≤ after is of no interest there, and
	// a format may report one as no frame before computing its checksums;
	// a scan passes 0.
	Frame(src Source, off int64, after uint64) (f Frame, reason, err error)
	// Follows checks that f may come where the scan is: f carries the
	// position want, after prev (the zero Frame before the first frame).
	// A non-nil error is why f does not: damage at f.Off.
	Follows(prev, f Frame, want uint64) error
	// Next is the position the frame after f must carry.
	Next(f Frame) uint64
	// End is why a file that ends where position want should start is
	// damaged, when the scan knows (Scan.Last) that it holds every
	// position up to last.
	End(want, last uint64) error
}

// Scan says what a Scanner reads.
type Scan struct {
	File  string // the file's path, for errors
	Start int64  // offset of the first frame
	Want  uint64 // position the first frame must carry
	// Last, when not 0, is the last position the file holds: the scan
	// ends there, whatever bytes follow, and a file that ends before it
	// is damaged (Format.End).
	Last uint64
	// Tail marks the file a log appends to, where a torn tail may end
	// the frames: bytes that do not verify there are a torn tail unless a
	// later write follows them. In any other file they are damage (the
	// file was synced whole before a later file began).
	Tail bool
	// Prev is the frame before Start, when the scan starts after frames it
	// does not read (the zero Frame: none); the first frame must follow it.
	Prev Frame
}

// Tear is a torn tail: where the last frames of a file end in bytes that
// never were synced (Scanner.Torn).
type Tear struct {
	Offset int64  // where the torn tail begins
	Pos    uint64 // the position expected there
	Reason error  // why the bytes at Offset are not the frame expected
}

// Scanner reads the frames of one file in order, verifying each, and
// applies the recovery rule (package doc) where a frame does not verify.
// It is not safe for concurrent use.
type Scanner struct {
	src    Source
	format Format
	scan   Scan

	off     int64  // where the next frame starts
	want    uint64 // the position it must carry
	prev    Frame  // the frame Next moved to, zero before the first
	retried int64  // damage offset already read again once, -1 for none

	torn *Tear
	err  error
}

// NewScanner returns a Scanner of the frames of src from scan.Start.
func NewScanner(src Source, format Format, scan Scan) *Scanner {
	return &Scanner{src: src, format: format, scan: scan, off: scan.Start, want: scan.Want, prev: scan.Prev, retried: -1}
}

// Next advances to the next frame. It returns false at the clean end of the
// file (or of its positions, Scan.Last), at a torn tail (Torn), or at
// damage or a read error (Err).
func (s *Scanner) Next() bool {
	if s.err != nil || s.torn != nil || (s.scan.Last != 0 && s.want > s.scan.Last) {
		return false
	}
	for {
		if s.off >= s.src.Size() {
			if s.scan.Last != 0 {
				s.err = &CorruptionError{File: s.scan.File, Offset: s.off, Pos: s.want, Kind: Sealed, Err: s.format.End(s.want, s.scan.Last)}
			}
			return false
		}
		f, reason, err := s.format.Frame(s.src, s.off, 0)
		if err != nil {
			s.err = fmt.Errorf("read %s at %d: %w", s.scan.File, s.off, err)
			return false
		}
		if reason == nil {
			reason = s.format.Follows(s.prev, f, s.want)
		}
		if reason == nil {
			s.prev, s.off, s.want = f, s.off+f.Size, s.format.Next(f)
			return true
		}
		if !s.stop(reason) {
			return false
		}
	}
}

// stop applies the recovery rule to the bytes at s.off, which are not the
// frame expected, for reason. It returns true when the scan reads them
// again (see below), false when it stops at a tear or at damage.
func (s *Scanner) stop(reason error) bool {
	damage := &CorruptionError{File: s.scan.File, Offset: s.off, Pos: s.want, Kind: Sealed, Err: reason}
	if !s.scan.Tail {
		s.err = damage
		return false
	}
	later, found, err := LaterWrite(s.src, s.format, s.off, s.want)
	if err != nil {
		s.err = fmt.Errorf("read %s: %w", s.scan.File, err)
		return false
	}
	if !found {
		s.torn = &Tear{Offset: s.off, Pos: s.want, Reason: reason}
		return false
	}
	if s.retried != s.off && s.src.Reread() {
		// A reader may have caught a write of a running store half
		// copied into the page cache. The later write began only after
		// that write had completed and been synced, so reading the same
		// bytes again now shows them whole, unless they are damaged.
		s.retried = s.off
		return true
	}
	damage.Kind, damage.Later = LaterWritten, later
	s.err = damage
	return false
}

// LaterWrite looks beyond the bytes at off, where position want should
// have started, for a frame of a later write: the first frame that
// verifies on its own and whose Write is greater than want. Frames of the
// write that off lies in (Write ≤ want) may follow it: a torn write can
// keep its later pages and lose earlier ones; the search goes on past
// them. A Source that shrinks ends the search without a find.
func LaterWrite(src Source, format Format, off int64, want uint64) (Frame, bool, error) {
	return search(src, format, off+1, want, func(f Frame) bool { return f.Write > want })
}

// Find looks from offset from on for the first frame that verifies on its
// own and carries position pos, going past the frames that carry others.
func Find(src Source, format Format, from int64, pos uint64) (Frame, bool, error) {
	return search(src, format, from, pos-1, func(f Frame) bool { return f.Pos == pos })
}

// Resume looks from offset from on for the first frame that verifies on
// its own and carries a position above after (and at most last, when last
// is not 0): where a scan can go on past damage at an earlier offset.
func Resume(src Source, format Format, from int64, after, last uint64) (Frame, bool, error) {
	return search(src, format, from, after, func(f Frame) bool { return last == 0 || f.Pos <= last })
}

// search tries every offset from from on for a frame that verifies on its
// own, with Pos above after, and that match accepts; it goes past frames
// that do not match.
func search(src Source, format Format, from int64, after uint64, match func(Frame) bool) (Frame, bool, error) {
	size, minSize := src.Size(), format.MinSize()
	for o := from; size-o >= minSize; o++ {
		f, reason, err := format.Frame(src, o, after)
		if err != nil {
			return Frame{}, false, err
		}
		if errors.Is(reason, ErrShrank) {
			return Frame{}, false, nil
		}
		if reason != nil {
			continue
		}
		if match(f) {
			return f, true, nil
		}
		o += f.Size - 1
	}
	return Frame{}, false, nil
}

// Frame is the frame Next moved to.
func (s *Scanner) Frame() Frame { return s.prev }

// Offset is where the next frame starts: after Next returned false, the end
// of the frames that verified (where a torn tail or damage begins).
func (s *Scanner) Offset() int64 { return s.off }

// Want is the position the next frame must carry.
func (s *Scanner) Want() uint64 { return s.want }

// Torn is the torn tail Next stopped at, or nil.
func (s *Scanner) Torn() *Tear { return s.torn }

// Err is what stopped Next other than a clean end or a torn tail: a
// *CorruptionError at damage, or a read error.
func (s *Scanner) Err() error { return s.err }

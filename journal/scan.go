package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/logpond/logpond/internal/framelog"
)

// entries is the journal's segment format as a framelog.Format: a frame is
// one tidwall entry (a uvarint length and a journal frame, frame.go); its
// position is its LSN and its write the frame's group field, the lowest
// LSN not yet fsynced when it was written (doc.go).
type entries struct{}

func (entries) MinSize() int64 { return 1 + minFrame }

// Frame parses and verifies the tidwall entry at off. In the search of a
// damaged tail (after > 0), an entry whose LSN cannot be a later one (at or
// below after, or beyond what the file could hold after it) is no frame,
// before any checksum is computed, so that zero-filled or random bytes, and
// a recycled file's stale entries, cost little.
func (entries) Frame(src framelog.Source, off int64, after uint64) (framelog.Frame, error, error) {
	rest := src.Size() - off
	b, err := src.At(off, int(min(rest, binary.MaxVarintLen64)))
	if err != nil {
		return framelog.Frame{}, nil, err
	}
	size, n := binary.Uvarint(b)
	if n <= 0 {
		return framelog.Frame{}, errPrefix, nil
	}
	if size > math.MaxInt32 || size > uint64(rest-int64(n)) {
		return framelog.Frame{}, fmt.Errorf("%w: %d bytes declared, %d left", errPastEnd, size, rest-int64(n)), nil
	}
	if after > 0 {
		if size < minFrame {
			return framelog.Frame{}, errFrameShort, nil
		}
		if b, err = src.At(off, n+frameHeader); err != nil {
			return framelog.Frame{}, nil, err
		}
		lsn := binary.LittleEndian.Uint64(b[n+offFrameLSN:])
		if lsn <= after || lsn > after+uint64(src.Size())/minFrame+1 {
			return framelog.Frame{}, errLSN, nil
		}
	}
	if b, err = src.At(off, n+int(size)); err != nil {
		return framelog.Frame{}, nil, err
	}
	f, err := parseFrame(b[n:])
	if err != nil {
		return framelog.Frame{}, err, nil
	}
	return framelog.Frame{Off: off, Size: int64(n) + int64(size), Pos: f.lsn, Write: f.group, Payload: f.rec}, nil, nil
}

// Follows checks that an entry carries the LSN of its position and a group
// no older than the entry before it.
func (entries) Follows(prev, f framelog.Frame, want uint64) error {
	if f.Pos != want {
		return fmt.Errorf("%w: entry says %d, position says %d", errLSN, f.Pos, want)
	}
	if f.Write < prev.Write {
		return fmt.Errorf("%w: group %d after group %d", errFrameGroup, f.Write, prev.Write)
	}
	return nil
}

func (entries) Next(f framelog.Frame) uint64 { return f.Pos + 1 }

// End is the damage of a closed generation's data ending before its last
// LSN: it was fsynced whole before the next generation began, so the
// records it lacks are missing, not unwritten.
func (entries) End(want, last uint64) error {
	return fmt.Errorf("%w: the file ends where LSN %d should start, but the generation holds every LSN up to %d (the next generation's base): LSNs %d–%d are missing",
		errEarlyEnd, want, last, want, last)
}

// newScanner returns a scanner of the entries in a segment's data, the first
// carrying firstLSN. lastLSN, when not 0, is the last LSN the segment holds
// (a closed generation's: the next generation's base): the scan ends
// cleanly there, whatever follows; a recycled segment (recycle.go) keeps
// stale bytes after the last entry written into it. newest marks the newest
// generation, where a torn tail ends the entries (doc.go, Recovery); in
// any other, entries that do not verify are damage.
func newScanner(path string, data []byte, firstLSN, lastLSN uint64, newest bool) *framelog.Scanner {
	return framelog.NewScanner(framelog.Bytes(data), entries{}, framelog.Scan{File: path, Want: firstLSN, Last: lastLSN, Tail: newest})
}

// corruption is the CorruptionError for damage a scan of a segment found.
func corruption(ce *framelog.CorruptionError) *CorruptionError {
	err := ce.Err
	if ce.Kind == framelog.LaterWritten {
		err = fmt.Errorf("%w; a later write group follows (LSN %d at offset %d), so this entry had been fsynced and acknowledged", ce.Err, ce.Later.Pos, ce.Later.Off)
	}
	return &CorruptionError{File: ce.File, Offset: ce.Offset, LSN: ce.Pos, Err: err}
}

// stopped is what ended a scan of the segment data at path: a torn tail (in
// the newest generation) as the *Repair that cuts it, or the damage as a
// *CorruptionError. Both are nil at a clean end.
func stopped(path string, sc *framelog.Scanner, size int) (*Repair, error) {
	if t := sc.Torn(); t != nil {
		return &Repair{File: path, Offset: t.Offset, Bytes: int64(size) - t.Offset, FirstLSN: t.Pos, Reason: t.Reason.Error()}, nil
	}
	var ce *framelog.CorruptionError
	if err := sc.Err(); errors.As(err, &ce) {
		return nil, corruption(ce)
	} else if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return nil, nil
}

// laterGroupAfter looks beyond a damaged entry at off in a segment's data
// (where LSN want should have started) for an entry of a later write group
// (framelog.LaterWrite): proof that want had been fsynced. It returns that
// entry and its offset.
func laterGroupAfter(data []byte, off int, want uint64) (frame, int, bool) {
	f, found, _ := framelog.LaterWrite(framelog.Bytes(data), entries{}, int64(off), want) // memory: no read error
	if !found {
		return frame{}, 0, false
	}
	return frame{lsn: f.Pos, group: f.Write, rec: f.Payload}, int(f.Off), true
}

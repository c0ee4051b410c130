package journal

import (
	"encoding/binary"
	"fmt"
	"math"
)

// scanner walks the entries of one segment held in memory. It knows the LSN
// the next entry must carry, so every entry checks its own position.
type scanner struct {
	data    []byte
	off     int
	nextLSN uint64
	lastLSN uint64 // the generation's last LSN when known (closed generations), else 0
	group   uint64 // group of the last entry read
	cur     frame
	err     error // damage at off; nil at a clean end
}

// newScanner scans data, whose first entry must carry firstLSN. lastLSN,
// when not 0, is the last LSN the segment holds (a closed generation's:
// the next generation's base): the scan ends cleanly there, whatever
// follows. A recycled segment (recycle.go) keeps stale bytes after the
// last entry written into it.
func newScanner(data []byte, firstLSN, lastLSN uint64) *scanner {
	return &scanner{data: data, nextLSN: firstLSN, lastLSN: lastLSN}
}

// next advances to the next entry. It returns false at the end of the data
// or of the generation's LSNs, or at the first damage, which err then
// describes (offset s.off). A closed generation's data ending before its
// last LSN is damage (errEarlyEnd): it was fsynced whole before the next
// generation began, so the records it lacks are missing, not unwritten.
func (s *scanner) next() bool {
	if s.err != nil || (s.lastLSN != 0 && s.nextLSN > s.lastLSN) {
		return false
	}
	if s.off >= len(s.data) {
		if s.lastLSN != 0 {
			s.err = fmt.Errorf("%w: the file ends where LSN %d should start, but the generation holds every LSN up to %d (the next generation's base): LSNs %d–%d are missing",
				errEarlyEnd, s.nextLSN, s.lastLSN, s.nextLSN, s.lastLSN)
		}
		return false
	}
	f, n, err := entryAt(s.data[s.off:])
	if err == nil && f.lsn != s.nextLSN {
		err = fmt.Errorf("%w: entry says %d, position says %d", errLSN, f.lsn, s.nextLSN)
	}
	if err == nil && f.group < s.group {
		err = fmt.Errorf("%w: group %d after group %d", errFrameGroup, f.group, s.group)
	}
	if err != nil {
		s.err = err
		return false
	}
	s.cur = f
	s.off += n
	s.nextLSN++
	s.group = f.group
	return true
}

// entryAt parses the tidwall entry (uvarint length, frame) at the start of
// b, returning the frame and the entry's total size.
func entryAt(b []byte) (frame, int, error) {
	size, n := binary.Uvarint(b)
	if n <= 0 {
		return frame{}, 0, errPrefix
	}
	if size > math.MaxInt32 || size > uint64(len(b)-n) {
		return frame{}, 0, fmt.Errorf("%w: %d bytes declared, %d left", errPastEnd, size, len(b)-n)
	}
	f, err := parseFrame(b[n : n+int(size)])
	if err != nil {
		return frame{}, 0, err
	}
	return f, n + int(size), nil
}

// laterGroupAfter looks beyond a damaged entry at off (which should have
// carried LSN want) for any valid entry. It reports the first one it finds
// whose group field is later than want (group > want): proof that want had
// been fsynced, since an entry's group is the lowest LSN not yet fsynced
// when it was written (doc.go). Candidate offsets are filtered by
// the LSN window an entry there could carry before any checksum is computed,
// so zero-filled or random bytes cost little.
func laterGroupAfter(data []byte, off int, want uint64) (frame, int, bool) {
	maxLSN := want + uint64(len(data)-off)/minFrame + 1
	for q := off + 1; q < len(data); q++ {
		size, n := binary.Uvarint(data[q:])
		if n <= 0 || size < minFrame || size > uint64(len(data)-q-n) {
			continue
		}
		lsn := binary.LittleEndian.Uint64(data[q+n+offFrameLSN:])
		if lsn <= want || lsn > maxLSN {
			continue
		}
		f, err := parseFrame(data[q+n : q+n+int(size)])
		if err != nil {
			continue
		}
		if f.group > want {
			return f, q, true
		}
	}
	return frame{}, 0, false
}

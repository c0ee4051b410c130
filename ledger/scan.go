package ledger

import (
	"fmt"
	"os"

	"github.com/logpond/logpond/record"
)

// readChunk is the size of one catch-up read: large, so that a reader far
// behind costs few system calls.
const readChunk = 1 << 20

// segScanner reads the frames of one segment file in order, with aligned
// reads into an aligned window, applying the skip rule of doc.go.
//
// Window invariant: buf[0] is at file offset fileOff, a block boundary, and
// buf[start:end] holds the bytes not yet consumed.
type segScanner struct {
	f       *os.File
	path    string
	buf     []byte
	fileOff int64
	start   int
	end     int
	eof     bool

	next  uint64 // LSN the next frame must carry
	limit uint64 // stop before LSNs above this; 0 = no limit

	lsn    uint64
	rec    []byte        // aliases buf: valid until the next call to next
	hdr    record.Header // what rec says of itself, verified
	recOff int64         // file offset of the current frame

	damage *CorruptionError // set when scanning stopped at damage
	ioErr  error
	read   int64 // bytes read into the window so far (consumed by the scan)

	// reads, when set, is the Reader's way to its segment: through the
	// ledger's shared read cache (cache.go); nil reads the file directly.
	reads *segReads
	// deviceUntil: reads of bytes before this offset go to the device,
	// never to the cache: bytes read again after a failed read, or to
	// judge damage, must be what the device holds now.
	deviceUntil int64

	// resync: at damage, find the next valid frame instead of stopping
	// and report what was passed in skipped (readers that pass damage).
	resync bool
	// maxLSN is the last LSN to look for: a sealed segment's last, or the
	// open segment's last synced (within); 0 = unknown.
	maxLSN  uint64
	goodEnd int64 // file offset just past the last valid frame (or the start)
	// size bounds the search for the next valid frame: the file size, read
	// when a resync starts, or, when set by within, where the records up
	// to maxLSN end.
	size    int64
	skipped *Damage // set when nextFrame stopped at a damaged range it passed

	// shrinkNext: the window grew for a large frame and nextFrame has
	// since returned one that a read chunk holds many times over; the
	// next fill puts the window back into a read chunk. (Shrinking at
	// every fill would allocate twice per frame in a run of large ones.)
	shrinkNext bool
}

// newSegScanner scans f from the frame at offset from, which must carry
// firstLSN (0 and the segment's first LSN, or an index entry).
func newSegScanner(f *os.File, path string, firstLSN uint64, from int64) *segScanner {
	s := &segScanner{f: f, path: path, buf: alignedBuffer(readChunk), next: firstLSN}
	s.fileOff = alignDown(from)
	s.start = int(from - s.fileOff)
	s.goodEnd = from
	return s
}

// withResync makes the scanner pass damage: nextFrame then stops at each
// damaged range with skipped set, positioned at the next valid frame.
// maxLSN is the segment's last LSN (a sealed segment: the next segment's
// first LSN - 1).
func (s *segScanner) withResync(maxLSN uint64) *segScanner {
	s.resync, s.maxLSN = true, maxLSN
	return s
}

// within bounds what a resyncing scanner passes to the records up to
// maxLSN, which end within the first size bytes of the file. For the open
// segment these are its synced records (LastLSN, and where the last Sync
// left the segment): a write in progress after them is then neither taken
// for the next valid frame nor passed as damage. The bounds grow as the
// ledger does.
func (s *segScanner) within(maxLSN uint64, size int64) {
	s.maxLSN, s.size = maxLSN, size
}

// takeSkipped returns and clears the damaged range nextFrame stopped at.
func (s *segScanner) takeSkipped() *Damage {
	d := s.skipped
	s.skipped = nil
	return d
}

// pos is the file offset of buf[start].
func (s *segScanner) pos() int64 { return s.fileOff + int64(s.start) }

// fill makes buf[start:end] hold at least n bytes, or reaches EOF. It
// returns false on an I/O error.
func (s *segScanner) fill(n int) bool {
	if s.shrinkNext {
		s.shrinkNext = false
		s.shrink(n)
	}
	for s.end-s.start < n && !s.eof {
		if s.end == len(s.buf) || len(s.buf)-s.end < BlockSize {
			// Compact: keep the block holding start, so alignment holds.
			a := int(alignDown(int64(min(s.start, s.end))))
			if a == 0 && s.end == len(s.buf) {
				grown := alignedBuffer(len(s.buf)*2 + n)
				copy(grown, s.buf[:s.end])
				s.buf = grown
			} else {
				copy(s.buf, s.buf[a:s.end])
				s.fileOff += int64(a)
				s.start -= a
				s.end -= a
				if len(s.buf)-s.end < n-(s.end-s.start) {
					grown := alignedBuffer(len(s.buf) + n)
					copy(grown, s.buf[:s.end])
					s.buf = grown
				}
			}
		}
		want := int(alignDown(int64(len(s.buf) - s.end)))
		got, err := s.readAt(s.buf[s.end:s.end+want], s.fileOff+int64(s.end))
		if err != nil {
			s.ioErr = &ReadError{Segment: s.path, Offset: s.fileOff + int64(s.end), Err: err}
			return false
		}
		s.end += got
		s.read += int64(got)
		if got < want {
			s.eof = true
		}
	}
	return true
}

// readAt reads buf at off: straight from the file, or, for a Reader,
// through the shared cache unless the bytes must come from the device.
func (s *segScanner) readAt(buf []byte, off int64) (int, error) {
	switch {
	case s.reads == nil:
		return readAt(s.f, buf, off)
	case off < s.deviceUntil:
		return s.reads.device(s.f, buf, off)
	}
	return s.reads.read(s.f, buf, off)
}

// fromDevice makes the scan read again, from the device, from the end of
// the last valid frame to past at, where it met what looks like damage,
// when those bytes may have come from the shared cache: only the device's
// bytes are judged. It returns false when they came from the device
// already (the damage stands).
func (s *segScanner) fromDevice(at int64) bool {
	if s.reads == nil || s.reads.l.cache == nil || at < s.deviceUntil {
		return false
	}
	s.deviceUntil = alignWindow(at) + 2*cacheWindow
	s.fileOff = alignDown(s.goodEnd)
	s.start = int(s.goodEnd - s.fileOff)
	s.end, s.eof = 0, false
	return true
}

// shrink puts the window back into a buffer of readChunk bytes when it
// grew for a frame larger than that and what it still holds, with the n
// bytes fill wants, fits: that much memory stays only while such frames
// come, as with the writer's buffer. The record returned last, which
// aliases the window, must no longer be in use (fill, and a Reader that
// has caught up, are called only after it).
func (s *segScanner) shrink(n int) {
	if len(s.buf) <= readChunk {
		return
	}
	a := int(alignDown(int64(min(s.start, s.end))))
	if s.end-a+n > readChunk {
		return
	}
	buf := alignedBuffer(readChunk)
	copy(buf, s.buf[a:s.end])
	s.buf, s.rec, s.hdr = buf, nil, record.Header{}
	s.fileOff += int64(a)
	s.start -= a
	s.end -= a
}

// nextFrame advances to the next frame. It returns false at the end of the
// segment, at the LSN limit, at damage (s.damage) or on an I/O error.
func (s *segScanner) nextFrame() bool {
	for {
		if s.damage != nil || s.ioErr != nil || s.skipped != nil || (s.limit > 0 && s.next > s.limit) {
			return false
		}
		if !s.fill(frameHeader) {
			return false
		}
		if s.start >= s.end {
			if s.resync && s.maxLSN > 0 && s.next <= s.maxLSN {
				if s.fromDevice(s.pos()) {
					continue
				}
				// The file ends (in zeros) before the segment's last
				// record: the rest of its records are gone.
				s.skipped = &Damage{Segment: s.path, Start: s.goodEnd, End: s.pos(), FirstLSN: s.next, LastLSN: s.maxLSN,
					Reason: fmt.Sprintf("the segment ends at LSN %d, before its last record (LSN %d: the next segment begins at %d): records are missing", s.next-1, s.maxLSN, s.maxLSN+1)}
				s.next = s.maxLSN + 1
			}
			return false // clean end of file
		}
		lsn, rec, hdr, need, err := parseFrame(s.buf[s.start:s.end])
		if err == nil && need > 0 {
			have := s.end - s.start
			if !s.fill(have + need) {
				return false
			}
			if s.end-s.start >= have+need {
				continue
			}
			err = fmt.Errorf("%w: the file ends inside the frame", errHeader) // torn
		}
		if err == nil && lsn != s.next {
			err = fmt.Errorf("%w: frame says %d, expected %d", errLSN, lsn, s.next)
		}
		if err == nil {
			s.lsn, s.rec, s.hdr, s.recOff = lsn, rec, hdr, s.pos()
			s.start += int(frameSize(len(rec)))
			s.shrinkNext = len(s.buf) > readChunk && frameSize(len(rec)) <= readChunk/4
			s.goodEnd = s.pos()
			s.next++
			return true
		}
		if !s.skip(err) {
			return false
		}
	}
}

// skip handles an unusable frame at pos(): zero padding or the torn end of
// a write. It moves to the next block boundary, where the next write began;
// unless the skipped bytes were all zero, a valid frame with exactly the
// next LSN must be there (or the file must end), else it is damage.
func (s *segScanner) skip(cause error) bool {
	at := s.pos()
	boundary := alignDown(at) + BlockSize
	if !s.fill(int(boundary - at)) {
		return false
	}
	skipped := s.buf[s.start:min(s.end, s.start+int(boundary-at))]
	zeros := allZero(skipped)
	s.start += len(skipped)
	if zeros {
		return true // padding: whatever follows is judged on its own
	}
	if s.start >= s.end && !s.fill(1) {
		return false
	}
	if s.start >= s.end {
		return s.fail(&CorruptionError{Segment: s.path, Offset: at, LSN: s.next, Err: fmt.Errorf("torn end of segment: %w", cause)})
	}
	if !s.fill(frameHeader) {
		return false
	}
	if lsn, ok := peekHeader(s.buf[s.start:s.end]); !ok || lsn != s.next {
		// Bytes were lost: a hole must be followed by the very next LSN.
		return s.fail(&CorruptionError{Segment: s.path, Offset: at, LSN: s.next, Err: fmt.Errorf("%w (%v)", errGap, cause)})
	}
	return true
}

// fail stops the scan at damage d, or, when resyncing, passes it: the
// scanner moves to the next valid frame and reports the range in between
// (skipped). It returns false either way (nextFrame stops).
func (s *segScanner) fail(d *CorruptionError) bool {
	if s.fromDevice(d.Offset) {
		return true // judged again on the device's bytes
	}
	if !s.resync {
		s.damage = d
		return false
	}
	s.resyncFrom(d)
	return false
}

// resyncFrom looks for the next valid frame after the last good one, byte
// by byte: a frame whose header checks (CRC), whose LSN is the expected one
// or later (up to maxLSN when known) and whose record checks too (its own
// CRC). Two independent checksums make a false match practically
// impossible. The range from the end of the last good frame to that frame
// (or to the end of the file) is the damage: its records are lost.
func (s *segScanner) resyncFrom(d *CorruptionError) {
	if s.size == 0 {
		st, err := s.f.Stat()
		if err != nil {
			s.ioErr = fmt.Errorf("ledger: stat %s: %w", s.path, err)
			return
		}
		s.size = st.Size()
	}
	from := s.goodEnd
	s.fileOff = alignDown(from)
	s.start = int(from - s.fileOff)
	s.end, s.eof = 0, false
	// The search reads what the device holds, never cached copies.
	s.deviceUntil = max(s.deviceUntil, s.size)
	// The search starts at the end of the last good frame itself: a frame
	// there that checks whole but carries a later LSN is the next one (the
	// records between are missing); one with the expected LSN cannot be
	// there, or it would not have failed.
	for s.pos() < s.size {
		if !s.fill(frameHeader) {
			return
		}
		if s.end-s.start < frameHeader {
			s.start = s.end
			break
		}
		b := s.buf[s.start:s.end]
		if lsn, ok := peekHeader(b); ok && lsn >= s.next && (s.maxLSN == 0 || lsn <= s.maxLSN) {
			n := frameSize(int(le.Uint32(b[offFrameLen:])))
			if s.pos()+n <= s.size {
				if !s.fill(int(n)) {
					return
				}
				if int64(s.end-s.start) >= n {
					if _, err := record.Verify(s.buf[s.start+frameHeader : s.start+int(n)]); err == nil {
						s.skipped = &Damage{Segment: s.path, Start: from, End: s.pos(), FirstLSN: s.next, LastLSN: lsn - 1, Reason: d.Err.Error()}
						s.next = lsn
						return
					}
				}
			}
		}
		s.start++
	}
	// No valid frame follows: the damage runs to the end of the file.
	last := s.next - 1
	if s.maxLSN >= s.next {
		last = s.maxLSN
	}
	s.skipped = &Damage{Segment: s.path, Start: from, End: s.pos(), FirstLSN: s.next, LastLSN: last, Reason: d.Err.Error()}
	s.next = last + 1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// refresh drops the bytes read ahead of the current position, so that the
// next fill reads them from the file again (a reader following the open
// segment must not parse a stale copy of a block the writer has since
// written). The block holding the position is re-read from its start.
func (s *segScanner) refresh() {
	pos := s.pos()
	s.fileOff = alignDown(pos)
	s.start = int(pos - s.fileOff)
	s.end = 0
	s.eof = false
}

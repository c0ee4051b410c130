package ledger

import (
	"errors"
	"fmt"
	"os"
)

// errUnreadable is the reason of a damaged range whose bytes the device
// would not return.
var errUnreadable = errors.New("the device failed every read of these bytes (passed as unreadable)")

// PassUnreadable makes a Reader that stopped at a [*ReadError] in a sealed
// segment pass the bytes its device will not return, as it passes damage
// with SkipDamage (which it needs): the next call to Next stops at a
// [Damage] from the end of the last record read to the next record that
// can be read and checks, and goes on from there. The records in between
// are lost to the Reader: call it only when the caller has decided that
// the bytes stay unreadable (the output's rule is in docs/design.md, §7).
//
// It passes nothing unless the device answers reads elsewhere, so that a
// device that fails as a whole (a fault that passes) never makes records
// look lost: bytes of the same segment after the unreadable ones must
// read, or, when none does up to the segment's end, the first block of
// the next segment. Otherwise, and when the Reader did not stop reading a
// sealed segment's bytes (the open segment, which only Open repairs, or
// opening a file), it returns an error and changes nothing: the read is
// retried at the next Next. It reports whether it passed a range: it
// passes nothing when the bytes read again (Next reads them), nor the
// first time readable bytes precede the unreadable ones in the read that
// failed (Next reads those in small reads and stops right before the
// unreadable bytes; call it again then).
func (r *Reader) PassUnreadable() (bool, error) {
	var re *ReadError
	s := r.sc
	switch {
	case !errors.As(r.err, &re):
		return false, fmt.Errorf("ledger: PassUnreadable: the Reader did not stop at a read error (err: %v)", r.err)
	case s == nil || re.Offset < 0:
		return false, fmt.Errorf("%w; the file cannot be opened: nothing to pass", re)
	case !r.skipDamage || r.inOpenSegment():
		return false, fmt.Errorf("%w; in the open segment, which readers cannot pass (only opening the ledger repairs it)", re)
	}
	st, err := s.f.Stat()
	if err != nil {
		return false, &ReadError{Segment: s.path, Offset: -1, Err: err}
	}
	// Only the device can say what it will not return: no cached copy
	// answers for it up to the segment's end, and the probes below read
	// it with O_DIRECT whatever the ledger's mode.
	probe, err := r.l.openDevice(s.path, s.f)
	if err != nil {
		return false, fmt.Errorf("%w; the device cannot be asked without the page cache (%v), which could answer for it: unreadable bytes are never passed in this mode, the read is retried", re, err)
	}
	if probe != s.f {
		defer probe.Close()
	}
	size := st.Size()
	from := s.goodEnd
	s.deviceUntil = max(s.deviceUntil, size)
	bad, readable := unreadableRun(probe, alignDown(from), size)
	if bad < 0 || (bad > alignDown(from) && r.wide == nil) {
		// Every block reads now, or blocks before the unreadable one
		// do: read them again, those before it in small reads (a large
		// read fails whole), and stop right before it.
		if bad >= 0 {
			r.wide, s.buf = s.buf, alignedBuffer(BlockSize)
		}
		r.err, s.ioErr = nil, nil
		s.refresh()
		return false, nil
	}
	if readable >= size {
		// Nothing of the segment reads after the damage: the device
		// must read elsewhere, and the rest of the segment is lost.
		if err := r.nextSegmentReads(); err != nil {
			return false, fmt.Errorf("%w; the next segment does not read either (%v): the device fails as a whole", re, err)
		}
		if r.wide != nil {
			s.buf, r.wide = r.wide, nil
		}
		s.skipped = &Damage{Segment: s.path, Start: from, End: size, FirstLSN: s.next, LastLSN: s.maxLSN, Reason: errUnreadable.Error()}
		s.next = s.maxLSN + 1
		s.fileOff = alignDown(size)
		s.start = int(size - s.fileOff)
		s.end, s.eof, s.ioErr = s.start, false, nil
		r.err = nil
		return true, nil
	}
	// Look for the next valid frame from the first readable block, block
	// by block (a small window), so that an unreadable block further on
	// fails only its own read; skip each unreadable run met on the way.
	big := s.buf
	if r.wide != nil {
		big = r.wide
	}
	r.wide = nil
	s.buf = alignedBuffer(BlockSize)
	for {
		s.goodEnd, s.ioErr, s.skipped = readable, nil, nil
		s.resyncFrom(&CorruptionError{Segment: s.path, Offset: bad, LSN: s.next, Err: errUnreadable})
		var again *ReadError
		if s.ioErr == nil || !errors.As(s.ioErr, &again) || again.Offset < 0 {
			break
		}
		if _, readable = unreadableRun(probe, alignDown(again.Offset), size); readable >= size {
			// The rest does not read: the damage runs to the end.
			s.ioErr = nil
			s.skipped = &Damage{Segment: s.path, Start: readable, End: size, FirstLSN: s.next, LastLSN: s.maxLSN}
			s.next = s.maxLSN + 1
			s.fileOff = alignDown(size)
			s.start = int(size - s.fileOff)
			s.end, s.eof = s.start, false
			break
		}
	}
	if s.ioErr != nil {
		// Not the device's answer (stat failed): start over next time.
		err := s.ioErr
		s.buf, s.goodEnd, s.ioErr, s.skipped = big, from, nil, nil
		s.refresh()
		return false, err
	}
	s.skipped.Start, s.skipped.Reason = from, errUnreadable.Error()
	// Back to large reads, keeping the window.
	if len(big) >= s.end {
		copy(big, s.buf[:s.end])
		s.buf = big
	}
	r.err = nil
	return true, nil
}

// unreadableRun looks, block by block from off (a block boundary), for
// the first block of f the device fails to read, and then for the first
// block after it that reads: it returns both offsets, bad = -1 when every
// block up to size reads, and readable = size when none after bad does.
func unreadableRun(f *os.File, off, size int64) (bad, readable int64) {
	block := alignedBuffer(BlockSize)
	bad = -1
	for ; off < size; off += BlockSize {
		_, err := readAt(f, block, off)
		switch {
		case err != nil && bad < 0:
			bad = off
		case err == nil && bad >= 0:
			return bad, off
		}
	}
	if bad < 0 {
		return -1, size
	}
	return bad, size
}

// openDevice returns a descriptor of the segment at path that reads the
// device itself, not the page cache: f, the Reader's own, when the ledger
// uses O_DIRECT (and f is not nil), else a new one opened with O_DIRECT
// (the caller closes it). With ledger.direct_io = false the page cache
// could answer for a device that fails as a whole, and bytes would be
// passed as unreadable while nothing reads; where O_DIRECT cannot be used
// (the file system refuses it), it returns an error and nothing is passed.
func (l *Ledger) openDevice(path string, f *os.File) (*os.File, error) {
	if l.opts.DirectIO && f != nil {
		return f, nil
	}
	if l.opts.hooks.openDevice != nil {
		return l.opts.hooks.openDevice(path)
	}
	return openSegmentFile(path, os.O_RDONLY, true)
}

// nextSegmentReads reads the first block of the segment after the one the
// Reader reads: the device answers there.
func (r *Reader) nextSegmentReads() error {
	_, segs := r.l.snapshot()
	for _, s := range segs {
		if s.first <= r.segFirst {
			continue
		}
		f, err := r.l.openDevice(s.path, nil)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = readAt(f, alignedBuffer(BlockSize), 0)
		return err
	}
	return errors.New("no segment follows")
}

// inOpenSegment reports whether the Reader stands in the ledger's open
// segment now (a segment sealed since it was opened is sealed).
func (r *Reader) inOpenSegment() bool {
	_, segs := r.l.snapshot()
	return len(segs) == 0 || segs[len(segs)-1].first == r.segFirst
}

package ledger

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/logpond/logpond/record"
)

// Append buffers the record rec (encoded by package record) as LSN lsn.
// LSNs must be consecutive; the first record of an empty ledger may carry
// any LSN. Nothing is durable until Sync returns. A record never spans
// segments: one that does not fit in the open segment starts the next.
// With Options.Compression, a version 1 record is stored compressed
// (version 2) when that makes it smaller; a version 2 record (compressed
// by the input) is stored as it is. rec is not kept either way. Either
// verifies rec: an invalid record is refused with an error, and the
// ledger stays usable.
//
// Append never waits. When rec would take the ledger past MaxBytes, it
// first deletes segments every cursor has passed, even those Retention
// would still keep (new records win over drained ones), and when that is
// not enough it returns [ErrFull] and buffers nothing. The caller must
// then Sync what it appended before trying again: outputs read only
// synced records, so a writer that waited for space while holding
// unsynced ones would wait for a cursor that can never pass them.
func (l *Ledger) Append(lsn uint64, rec []byte) error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.f != nil && lsn != l.last+1 {
		return fmt.Errorf("ledger: append LSN %d, expected %d", lsn, l.last+1)
	}
	raw := len(rec)
	if l.opts.Compression.Enabled() || (len(rec) > 0 && rec[0] == record.VersionCompressed) {
		var err error
		if rec, raw, err = l.compress(rec); err != nil {
			return fmt.Errorf("ledger: append LSN %d: %w", lsn, err)
		}
	}
	size := frameSize(len(rec))
	if err := l.makeRoom(alignUp(size)); err != nil {
		return err
	}
	used := l.writeOff + alignUp(int64(l.bufLen))
	switch {
	case l.f == nil:
		if err := l.startSegment(lsn); err != nil {
			return l.poison(err)
		}
	case used > 0 && l.writeOff+int64(l.bufLen)+size > l.opts.SegmentBytes:
		if err := l.seal(); err != nil {
			return l.poison(err)
		}
		if err := l.startSegment(lsn); err != nil {
			return l.poison(err)
		}
	}
	if int64(l.bufLen)+size > int64(len(l.buf)) {
		if l.bufLen > 0 {
			if err := l.writeBuffered(); err != nil {
				return l.poison(err)
			}
		}
		if size > int64(len(l.buf)) {
			l.buf = alignedBuffer(int(size))
		}
	}
	if l.bufLen == 0 {
		l.bufFirst = lsn
	}
	putFrame(l.buf[l.bufLen:], lsn, rec)
	l.bufLen += int(size)
	l.last = lsn
	if l.events >= 0 {
		l.events += recordEvents(rec)
	}
	l.openBytes.Store(l.writeOff + int64(l.bufLen))
	l.rawBytes.Add(int64(raw))
	l.storedBytes.Add(int64(len(rec)))
	return nil
}

// compress returns rec as the ledger stores it, and its uncompressed
// size: compressed with Options.Compression, or as it is when it is
// compressed already. The result is valid until the next call. It runs
// on the writer goroutine (the flusher), off the acknowledgement path:
// clients were acknowledged when the journal had the record.
func (l *Ledger) compress(rec []byte) ([]byte, int, error) {
	if len(rec) > 0 && rec[0] == record.VersionCompressed {
		// Already compressed (by the input, before the journal):
		// stored as it is, verified for its sizes (a CRC over the
		// compressed bytes, which are few).
		h, err := record.Verify(rec)
		if err != nil {
			return nil, 0, err
		}
		return rec, h.Raw, nil
	}
	if l.zc == nil {
		zc, err := record.NewCompressor(l.opts.Compression)
		if err != nil {
			return nil, 0, err
		}
		l.zc = zc
	}
	z, err := l.zc.Compress(l.zbuf[:0], rec)
	if err != nil {
		return nil, 0, err
	}
	// A compressed record is at most as large as the record, which the
	// writer buffer holds already; keeping the largest one's buffer
	// costs no more than that.
	l.zbuf = z
	return z, len(rec), nil
}

// CompressionStats is what compression did to the records appended since
// the ledger was opened.
type CompressionStats struct {
	// Compression is Options.Compression: the zero value when Append
	// stores records as given.
	Compression record.Compression
	// RawBytes is the records' size uncompressed (record version 1).
	RawBytes int64
	// StoredBytes is their size as stored; StoredBytes/RawBytes is the
	// compression ratio (frames and block padding not included).
	StoredBytes int64
}

// Ratio is StoredBytes/RawBytes, or 1 before any record was appended.
func (s CompressionStats) Ratio() float64 {
	if s.RawBytes == 0 {
		return 1
	}
	return float64(s.StoredBytes) / float64(s.RawBytes)
}

// Compression reports what compression did to the records appended since
// Open (Reopen starts again from zero). Safe for concurrent use.
func (l *Ledger) Compression() CompressionStats {
	return CompressionStats{Compression: l.opts.Compression, RawBytes: l.rawBytes.Load(), StoredBytes: l.storedBytes.Load()}
}

// Sync makes every appended record durable: it writes the buffer, then
// fdatasyncs the open segment, then, if a segment file was created since the
// last Sync, fsyncs the directory. Only then does LastLSN advance.
func (l *Ledger) Sync() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.f == nil {
		return nil
	}
	if l.bufLen > 0 {
		if err := l.writeBuffered(); err != nil {
			return l.poison(err)
		}
	}
	if err := l.datasync(l.f); err != nil {
		return l.poison(fmt.Errorf("ledger: fdatasync %s: %w", l.f.Name(), err))
	}
	if l.dirDirty {
		if err := l.syncDir(l.dir); err != nil {
			return l.poison(fmt.Errorf("ledger: %w", err))
		}
		l.dirDirty = false
	}
	l.mu.Lock()
	l.durable = l.last
	seg := &l.segs[len(l.segs)-1]
	seg.size, seg.index = l.writeOff, l.index
	close(l.advanced)
	l.advanced = make(chan struct{})
	l.mu.Unlock()
	return nil
}

// writeBuffered writes the buffered frames, zero-padded to whole blocks, at
// the next block boundary. The next write starts after the padding, so
// these bytes are never written again once synced.
func (l *Ledger) writeBuffered() error {
	n := int(alignUp(int64(l.bufLen)))
	clear(l.buf[l.bufLen:n])
	l.index = addIndexEntry(l.index, l.bufFirst, l.writeOff)
	write := writeAt
	if l.opts.hooks.writeAt != nil {
		write = l.opts.hooks.writeAt
	}
	if err := write(l.f, l.buf[:n], l.writeOff); err != nil {
		return fmt.Errorf("ledger: write %s at %d: %w", l.f.Name(), l.writeOff, err)
	}
	l.writeOff += int64(n)
	l.bufLen = 0
	l.openBytes.Store(l.writeOff)
	if len(l.buf) > writeBuffer {
		// Grown for a record larger than the buffer: that much memory
		// stays only while such records come.
		l.buf = alignedBuffer(writeBuffer)
	}
	return nil
}

// seal writes and fdatasyncs the open segment and closes it. Its records
// are durable now, but LastLSN advances only at the next Sync, which also
// makes the next segment's directory entry durable.
func (l *Ledger) seal() error {
	if l.bufLen > 0 {
		if err := l.writeBuffered(); err != nil {
			return err
		}
	}
	if err := l.datasync(l.f); err != nil {
		return fmt.Errorf("ledger: fdatasync %s: %w", l.f.Name(), err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("ledger: close %s: %w", l.f.Name(), err)
	}
	// The index is a hint (rebuilt when missing), so a failure to write it
	// is logged, not fatal. The segment's path is the file's name: l.segs
	// is read here only under l.mu, as retention cuts it concurrently.
	if err := l.writeIndex(l.f.Name(), l.index); err != nil {
		l.log.Warn("ledger: cannot write segment index; readers will rebuild it", "err", err)
	}
	l.mu.Lock()
	sealed := &l.segs[len(l.segs)-1]
	sealed.size, sealed.index = l.writeOff, nil // its index is on disk now
	sealed.events = l.events
	l.mu.Unlock()
	l.f = nil
	return nil
}

// startSegment creates the segment whose first record is first.
func (l *Ledger) startSegment(first uint64) error {
	path := filepath.Join(l.dir, segmentName(first))
	f, err := openSegmentFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, l.opts.DirectIO)
	if err != nil {
		return fmt.Errorf("ledger: create segment: %w", err)
	}
	l.f, l.writeOff, l.dirDirty, l.index, l.events = f, 0, true, nil, 0
	l.openBytes.Store(0)
	l.mu.Lock()
	l.segs = append(l.segs, segment{first: first, path: path, events: -1})
	l.mu.Unlock()
	return nil
}

// Err returns the write or fdatasync failure that poisoned the ledger, or
// nil. It stays set after Close. A poisoned ledger stores nothing more;
// what it synced stays readable until it is closed, and [Ledger.Reopen]
// resumes. Safe for concurrent use.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.poisoned
}

func (l *Ledger) usable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.poisoned != nil:
		return fmt.Errorf("%w: %w", ErrPoisoned, l.poisoned)
	}
	return nil
}

// poison makes a write or fdatasync failure sticky: a failed fdatasync may
// have dropped the dirty data, and no retry can make it durable
// (docs/design.md, §3). Only a fresh Open, which re-reads the tail from
// disk, resumes.
func (l *Ledger) poison(err error) error {
	l.mu.Lock()
	if l.poisoned == nil {
		l.poisoned = err
	}
	l.mu.Unlock()
	l.log.Error("ledger poisoned: nothing more is stored until it is reopened", "err", err)
	return fmt.Errorf("%w: %w", ErrPoisoned, err)
}

// Close closes the open segment. Records appended since the last Sync are
// not written: the journal still holds them. Close returns the sticky
// failure, if any; a second Close returns ErrClosed.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	poisoned := l.poisoned
	l.mu.Unlock()
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	if l.zc != nil {
		// Close belongs to the writer, as Append does: no Append runs.
		if zerr := l.zc.Close(); zerr != nil && err == nil {
			err = fmt.Errorf("ledger: close compressor: %w", zerr)
		}
		l.zc = nil
	}
	if poisoned != nil {
		return poisoned
	}
	return err
}

// recordEvents is the event count in the header of rec, a record of
// package record (a u32 at offset 8 in both versions), read without
// decoding it: the writer counts the events of each segment so that a
// segment deleted before an output read it is reported with its events.
// The flusher gives the writer records it verified; 0 for one too short
// to have a header.
func recordEvents(rec []byte) int64 {
	const offCount = 8
	if len(rec) < record.HeaderSize {
		return 0
	}
	return int64(le.Uint32(rec[offCount:]))
}

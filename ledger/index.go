package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
)

// Sparse index of a sealed segment: DIR/<first LSN>.idx, so that opening a
// large ledger and seeking to an LSN reads one index and part of one
// segment, not the whole ledger. An index is a hint: a missing or damaged
// one is rebuilt by scanning the segment.
//
//	offset  size      field
//	0       4         magic "LPIX"
//	4       4         count
//	8       16×count  entries: LSN (u64), offset of that LSN's frame (u64)
//	end-4   4         CRC-32C of everything before it
const (
	indexSuffix   = ".idx"
	indexMagic    = "LPIX"
	indexInterval = 256 << 10 // bytes of segment between entries
)

type indexEntry struct {
	lsn uint64
	off int64
}

func indexPath(segPath string) string {
	return strings.TrimSuffix(segPath, segmentSuffix) + indexSuffix
}

func encodeIndex(entries []indexEntry) []byte {
	b := make([]byte, 0, 8+16*len(entries)+4)
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint64(b, e.lsn)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.off))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var errIndex = errors.New("damaged index")

func decodeIndex(b []byte) ([]indexEntry, error) {
	if len(b) < 12 || string(b[:4]) != indexMagic {
		return nil, errIndex
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if len(b) != 8+16*n+4 || crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errIndex
	}
	entries := make([]indexEntry, n)
	for i := range entries {
		p := b[8+16*i:]
		entries[i] = indexEntry{lsn: binary.LittleEndian.Uint64(p), off: int64(binary.LittleEndian.Uint64(p[8:]))}
	}
	return entries, nil
}

// writeIndex stores a sealed segment's index. Neither the file nor its
// directory entry is fsynced, on purpose: the index is a CRC-checked hint,
// so one lost, empty or torn after a crash fails decodeIndex and is
// rebuilt by a scan. An fsync here would also commit the file system's
// whole journal at every seal, an I/O stall the writer does not need
// (and one that hid the missing fdatasyncs of TestPowerLoss's control).
func (l *Ledger) writeIndex(segPath string, entries []indexEntry) error {
	return replaceFile(indexPath(segPath), encodeIndex(entries), nil)
}

// loadIndex returns a sealed segment's index, rebuilding (and persisting)
// it by a scan when it is missing or damaged.
func (l *Ledger) loadIndex(s segment) ([]indexEntry, error) {
	b, err := os.ReadFile(indexPath(s.path))
	if err == nil {
		if entries, derr := decodeIndex(b); derr == nil {
			return entries, nil
		}
		l.log.Warn("ledger: damaged segment index, rebuilding it", "index", indexPath(s.path))
	} else if !errors.Is(err, os.ErrNotExist) {
		// The index is a hint: one the device will not return is
		// rebuilt from the segment, like a damaged one.
		l.log.Warn("ledger: cannot read a segment index, rebuilding it", "index", indexPath(s.path), "err", err)
	}
	f, err := openSegmentFile(s.path, os.O_RDONLY, l.opts.DirectIO)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	var entries []indexEntry
	// Damage is passed: the index holds the valid frames, and readers
	// meet (and report) the damage when they read past it.
	sc := newSegScanner(f, s.path, s.first, 0).withResync(0)
	for {
		for sc.nextFrame() {
			entries = addIndexEntry(entries, sc.lsn, sc.recOff)
		}
		if sc.takeSkipped() == nil {
			break
		}
	}
	if sc.ioErr != nil {
		return nil, sc.ioErr
	}
	if err := l.writeIndex(s.path, entries); err != nil {
		l.log.Warn("ledger: cannot persist rebuilt index", "err", err)
	}
	return entries, nil
}

// addIndexEntry adds (lsn, off) when it is far enough from the last entry.
func addIndexEntry(entries []indexEntry, lsn uint64, off int64) []indexEntry {
	if len(entries) == 0 || off-entries[len(entries)-1].off >= indexInterval {
		entries = append(entries, indexEntry{lsn: lsn, off: off})
	}
	return entries
}

// seekPoint returns the last entry at or before lsn.
func seekPoint(entries []indexEntry, lsn uint64) (indexEntry, bool) {
	var best indexEntry
	found := false
	for _, e := range entries {
		if e.lsn > lsn {
			break
		}
		best, found = e, true
	}
	return best, found
}

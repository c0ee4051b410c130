package dlq

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Purged is what a purge deleted.
type Purged struct {
	Files   int   // whole files deleted
	Entries int   // the entries they held
	Bytes   int64 // their size
}

// Purge removes the entries up to and including the one at upTo (a Pos
// from Scan or a Reader), once they have been re-driven, to free space. It
// works on whole files: it deletes every file whose entries are all at or
// before upTo, oldest first, and keeps a file that holds any later entry,
// so entries after upTo are never lost and some at or before it may stay
// (a later Purge takes them). When upTo is the last entry of the open file,
// that file goes too: Purge first starts a new, empty file, because the
// newest file is never deleted without a successor (its name carries the
// sequence, so a Pos kept from before can never name a newer file).
//
// The deletions are made durable (directory fsync) before Purge returns,
// so purged entries do not come back after a power cut to be re-driven
// twice. An Append waiting for space then looks again. A Pos in a file
// already deleted purges nothing more and is not an error; a Pos that names
// no entry of this store is one that wraps ErrNoEntry. A Reader in another
// process keeps reading a file it has open. Safe for concurrent use; it
// waits for a write in progress. A failed create or sync poisons the store,
// as in Append. It returns what it deleted, also on error.
func (s *Store) Purge(upTo Pos) (Purged, error) {
	seq, ok := parseFileName(filepath.Base(upTo.File))
	if !ok {
		return Purged{}, fmt.Errorf("dlq: purge: %w: %q is not a dead-letter file name", ErrNoEntry, upTo.File)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	files, err := s.filesForPurge()
	if err != nil {
		return Purged{}, err
	}
	if seq >= s.nextSeq {
		return Purged{}, fmt.Errorf("dlq: purge: %w: %s never had a file %s", ErrNoEntry, s.dir, fileName(seq))
	}
	if len(files) == 0 || seq < files[0].seq {
		return Purged{}, nil // purged before
	}
	i := 0
	for i < len(files) && files[i].seq < seq {
		i++
	}
	if i == len(files) || files[i].seq != seq {
		return Purged{}, fmt.Errorf("dlq: purge: %w: %s has no file %s", ErrNoEntry, s.dir, fileName(seq))
	}
	whole, err := checkPos(files[i], upTo.Offset)
	if err != nil {
		return Purged{}, err
	}
	n := i
	if whole {
		n = i + 1
	}
	p, err := s.dropOldest(n)
	if p.Files > 0 {
		s.log.Info("dlq: purged re-driven entries", "dir", s.dir, "files", p.Files, "entries", p.Entries, "bytes", p.Bytes,
			"up_to_file", filepath.Base(upTo.File), "up_to_offset", upTo.Offset)
	}
	return p, err
}

// PurgeFailedBefore removes the entries that were dead-lettered (Entry.Failed)
// at or before t, in whole files, oldest first: it deletes the files whose
// every entry failed at or before t, and stops at the first file holding a
// later one, so that what stays is always a contiguous newest part of the
// store. The open file goes too when all its entries qualify (Purge starts
// a new one first); an open file without entries stays. It reads no file:
// a Store keeps each file's newest failure time. Durability, waking of
// waiting Appends, concurrency and poisoning are as for Purge.
func (s *Store) PurgeFailedBefore(t time.Time) (Purged, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	p, err := s.purgeFailedBeforeLocked(t)
	if p.Files > 0 {
		s.log.Info("dlq: purged entries that failed at or before a time", "dir", s.dir, "files", p.Files, "entries", p.Entries, "bytes", p.Bytes,
			"failed_before", t.UTC().Format(time.RFC3339Nano))
	}
	return p, err
}

// purgeFailedBeforeLocked is PurgeFailedBefore; writeMu must be held.
func (s *Store) purgeFailedBeforeLocked(t time.Time) (Purged, error) {
	files, err := s.filesForPurge()
	if err != nil {
		return Purged{}, err
	}
	n := 0
	for n < len(files) && !files[n].newest.After(t) {
		if n == len(files)-1 && files[n].entries == 0 {
			break // the open file, empty: nothing to free
		}
		n++
	}
	return s.dropOldest(n)
}

// filesForPurge returns the files, or why the store cannot purge.
// writeMu must be held.
func (s *Store) filesForPurge() ([]fileInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return nil, err
	}
	return s.files, nil // stable: changing it needs writeMu, which is held
}

// dropOldest deletes the n oldest files, oldest first, and fsyncs the
// directory; when n is every file, it first starts a new one. writeMu must
// be held.
func (s *Store) dropOldest(n int) (Purged, error) {
	var p Purged
	if n == 0 {
		return p, nil
	}
	if n == len(s.files) {
		if err := s.rotate(); err != nil {
			return p, s.poison(err)
		}
	}
	var errs []error
	for _, fi := range s.files[:n] {
		if err := os.Remove(fi.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dlq: purge: %w", err))
			break // oldest first: never leave a gap before a kept file
		}
		p.Files++
		p.Entries += fi.entries
		p.Bytes += fi.size
	}
	if p.Files == 0 {
		return p, errors.Join(errs...)
	}
	// Purged files must not come back after a power cut: their entries
	// would be listed, and re-driven, a second time.
	if err := s.opts.hooks.syncDir(s.dir); err != nil {
		errs = append(errs, s.poison(fmt.Errorf("dlq: purge: %w", err)))
	}
	s.mu.Lock()
	s.files = s.files[p.Files:]
	s.disk -= p.Bytes
	s.wakeLocked()
	s.mu.Unlock()
	return p, errors.Join(errs...)
}

// checkPos checks that off is the offset of an entry in fi and says
// whether it is fi's last one.
func checkPos(fi fileInfo, off int64) (last bool, err error) {
	if fi.lastFrame > 0 && off == fi.lastFrame {
		return true, nil
	}
	if off < fileHeaderSize || off > fi.lastFrame {
		return false, fmt.Errorf("dlq: purge: %w: no entry at offset %d of %s", ErrNoEntry, off, fi.path)
	}
	f, err := os.Open(fi.path)
	if err != nil {
		return false, fmt.Errorf("dlq: purge: %w", err)
	}
	defer f.Close() // read-only
	h := make([]byte, frameHeaderSize)
	if _, err := f.ReadAt(h, off); err != nil {
		return false, fmt.Errorf("dlq: purge: read %s at %d: %w", fi.path, off, err)
	}
	if _, err := parseFrameHeader(h, fi.seq, off, fi.size); err != nil {
		return false, fmt.Errorf("dlq: purge: %w: no entry at offset %d of %s: %w", ErrNoEntry, off, fi.path, err)
	}
	return false, nil
}

package dlq

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

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
// no entry of this store is. A Reader in another process keeps reading a
// file it has open. Safe for concurrent use; it waits for a write in
// progress. A failed create or sync poisons the store, as in Append.
func (s *Store) Purge(upTo Pos) error {
	seq, ok := parseFileName(filepath.Base(upTo.File))
	if !ok {
		return fmt.Errorf("dlq: purge: %q is not a dead-letter file name", upTo.File)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	err := s.usableLocked()
	files := s.files // stable: changing it needs writeMu, which we hold
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if len(files) == 0 || seq < files[0].seq {
		return nil // purged before
	}
	i := 0
	for i < len(files) && files[i].seq < seq {
		i++
	}
	if i == len(files) || files[i].seq != seq {
		return fmt.Errorf("dlq: purge: %s has no file %s", s.dir, fileName(seq))
	}
	whole, err := checkPos(files[i], upTo.Offset)
	if err != nil {
		return err
	}
	drop := files[:i]
	if whole {
		drop = files[:i+1]
	}
	if len(drop) == 0 {
		return nil
	}
	if len(drop) == len(files) {
		if err := s.rotate(); err != nil {
			return s.poison(err)
		}
	}
	var freed int64
	var errs []error
	removed := 0
	for _, fi := range drop {
		if err := os.Remove(fi.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("dlq: purge: %w", err))
			break // oldest first: never leave a gap before a kept file
		}
		removed++
		freed += fi.size
	}
	if removed == 0 {
		return errors.Join(errs...)
	}
	// Purged files must not come back after a power cut: their entries
	// would be listed, and re-driven, a second time.
	if err := s.opts.hooks.syncDir(s.dir); err != nil {
		errs = append(errs, s.poison(fmt.Errorf("dlq: purge: %w", err)))
	}
	s.mu.Lock()
	s.files = s.files[removed:]
	s.disk -= freed
	s.wakeLocked()
	s.mu.Unlock()
	s.log.Info("dlq: purged re-driven entries", "dir", s.dir, "files", removed, "bytes", freed,
		"up_to_file", filepath.Base(upTo.File), "up_to_offset", upTo.Offset)
	return errors.Join(errs...)
}

// checkPos checks that off is the offset of an entry in fi and says
// whether it is fi's last one.
func checkPos(fi fileInfo, off int64) (last bool, err error) {
	if fi.lastFrame > 0 && off == fi.lastFrame {
		return true, nil
	}
	if off < fileHeaderSize || off > fi.lastFrame {
		return false, fmt.Errorf("dlq: purge: no entry at offset %d of %s", off, fi.path)
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
		return false, fmt.Errorf("dlq: purge: no entry at offset %d of %s: %w", off, fi.path, err)
	}
	return false, nil
}

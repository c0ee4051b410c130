package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Segment recycling (doc.go, "Recycled segments").
//
// A released generation's segment is not always deleted: up to
// Options.SpareSegments of them wait in the journal directory as spares,
// and a new generation overwrites one from its start instead of growing a
// new file. That takes two costs off the device the ack path waits on:
//
//   - freeing: deleting a segment frees its blocks, which a file system
//     mounted with discard trims at its next commit, and every fsync
//     queues behind the trims;
//   - allocating: an fdatasync of appends to a new file must also commit
//     the blocks allocated and the new file size (a file-system journal
//     commit); an overwrite within the file's size changes no metadata an
//     fdatasync must persist.
//
// docs/design.md (§4) has what it is measured to earn.
//
// It is the same trade as BookKeeper's journalReuseFiles, RocksDB's
// recycle_log_file_num and PostgreSQL's recycled WAL segments: the file
// keeps stale bytes of older generations after what was written into it,
// and every reader must stop before them (see doc.go for why it does).

// sparePrefix names spare segment files in the journal directory:
// "spare-" and the base of the generation it was released from.
const sparePrefix = "spare-"

// spare is a released segment file kept for a new generation to overwrite.
type spare struct {
	path string
	size int64 // bytes on disk, in the spares' share of max_bytes (Options.recordBytes), not in space.used
}

func sparePath(dir string, base uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%020d", sparePrefix, base))
}

// listSpares returns the spare files in the journal directory dir.
func listSpares(dir string) ([]spare, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var spares []spare
	for _, de := range des {
		if !de.Type().IsRegular() || !strings.HasPrefix(de.Name(), sparePrefix) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			return nil, fmt.Errorf("journal: list %s: %w", dir, err)
		}
		spares = append(spares, spare{path: filepath.Join(dir, de.Name()), size: info.Size()})
	}
	return spares, nil
}

// keepAsSpare turns released generation g, whose segment is already renamed
// aside durably (cut), into a spare, if the pool has room and the file is
// at most SegmentBytes: the spares' share of max_bytes holds SpareSegments
// of those (Options.recordBytes). Its space then leaves used. It reports
// whether it did; false with no error means the caller deletes the
// segment.
func (j *Journal) keepAsSpare(g generation) (bool, error) {
	j.mu.Lock()
	keep := len(j.space.spares) < j.space.maxSpares && g.size <= j.opts.SegmentBytes
	j.mu.Unlock()
	if !keep {
		return false, nil
	}
	// g.size is its file's size (rotate, or Open's listing): what used
	// counts for it.
	sp := spare{path: sparePath(j.dir, g.base), size: g.size}
	// A crash after the rename leaves a generation directory without a
	// segment (Open finishes the release: it removes the directory) and
	// a spare (Open takes it into the pool).
	if err := j.rename(g.releasing(), sp.path); errors.Is(err, os.ErrNotExist) {
		// No segment to keep (Release found it missing already): the
		// caller finishes the release, which frees what was counted.
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("journal: release %s: keep as spare: %w", g.dir, err)
	}
	j.mu.Lock()
	j.space.spares = append(j.space.spares, sp)
	j.mu.Unlock()
	j.freed(sp.size)
	if err := removeReleased(g); err != nil {
		return true, err
	}
	if err := j.syncDir(j.dir); err != nil {
		return true, fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	return true, nil
}

// takeSpare removes the most recently kept spare from the pool for the
// committer's next generation.
func (j *Journal) takeSpare() (spare, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.space.spares) == 0 || j.space.maxSpares == 0 {
		return spare{}, false
	}
	sp := j.space.spares[len(j.space.spares)-1]
	j.space.spares = j.space.spares[:len(j.space.spares)-1]
	return sp, true
}

// spareToDrop returns a spare the releaser should delete: one beyond the
// pool's size (recycling failed, which makes it 0). j.mu must be held.
func (j *Journal) spareToDrop() (spare, bool) {
	if len(j.space.spares) <= j.space.maxSpares {
		return spare{}, false
	}
	sp := j.space.spares[0]
	j.space.spares = j.space.spares[1:]
	return sp, true
}

// dropSpare deletes a spare, a step at a time like a released segment.
// Spares are not counted in used: this frees nothing appends wait for.
func (j *Journal) dropSpare(sp spare) error {
	err := truncateInSteps(sp.path, func(int64) error {
		select {
		case <-j.closing:
			return errReleaseStopped
		default:
			return nil
		}
	})
	if errors.Is(err, errReleaseStopped) {
		return err // still a spare file: the next Open takes it
	}
	if err == nil {
		err = os.Remove(sp.path)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// Still a spare: the releaser's retry deletes it (spareToDrop,
		// after retryFailed).
		j.mu.Lock()
		j.space.spares = append([]spare{sp}, j.space.spares...)
		j.rel.work.retrySpares = true
		j.mu.Unlock()
		return fmt.Errorf("journal: delete spare %s: %w", sp.path, err)
	}
	if err := j.syncDir(j.dir); err != nil {
		return fmt.Errorf("journal: delete spare %s: %w", sp.path, err)
	}
	return nil
}

// recoverSpares lists the spare files in the journal directory and deletes
// those the pool no longer holds (spare_segments or segment_bytes were
// lowered): only SpareSegments files of at most SegmentBytes fit the
// spares' share of max_bytes. Nothing is written yet, so deleting them at
// once delays no fsync of an append.
func (j *Journal) recoverSpares() ([]spare, error) {
	all, err := listSpares(j.dir)
	if err != nil {
		return nil, err
	}
	var kept []spare
	deleted := false
	for _, sp := range all {
		if len(kept) < j.space.maxSpares && sp.size <= j.opts.SegmentBytes {
			kept = append(kept, sp)
			continue
		}
		if err := os.Remove(sp.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("journal: delete spare %s: %w", sp.path, err)
		}
		deleted = true
	}
	if deleted {
		if err := j.syncDir(j.dir); err != nil {
			return nil, fmt.Errorf("journal: delete spares: %w", err)
		}
	}
	return kept, nil
}

// trimRecycled cuts the stale rest of the closed active file, which was
// a recycled spare, off after its size bytes of entries, and returns the
// file's size, as counted in used from now on. Every closed generation's
// file thus ends at its last entry, and its bytes are all counted in used;
// only the active file has stale bytes, in the spares' share of max_bytes
// (Options.recordBytes). When the cut fails, the file keeps them, and used
// counts them (beyond recordBytes, until the generation is released).
// Without the cut (a crash) the next Open's tail repair cuts an active
// file; readers of a closed one stop at its last LSN. So no fsync. After a
// failure the file is left to that repair.
func (j *Journal) trimRecycled(size int64) int64 {
	c := &j.commit
	capacity := c.capacity
	c.capacity = 0
	if capacity <= size || j.failure() != nil {
		return size
	}
	if err := os.Truncate(c.path, size); err != nil {
		j.log.Warn("journal: cut the unused rest of a recycled segment", "file", c.path, "err", err)
		j.mu.Lock()
		j.space.used += capacity - size
		j.mu.Unlock()
		return capacity
	}
	return size
}

// size is the bytes in the active generation's segment (0 once closed).
func (c *committer) size() int64 {
	if c.seg == nil {
		return 0
	}
	return c.seg.Size()
}

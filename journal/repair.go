package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/logpond/logpond/internal/framelog"

	"github.com/logpond/logpond/internal/fsutil"
)

// Repair describes a torn tail that Open cut from the newest generation.
type Repair struct {
	File     string // the segment file that was cut
	Offset   int64  // where the cut starts: the new file size
	Bytes    int64  // how many bytes were cut
	FirstLSN uint64 // the LSN the first cut entry should have carried
	Reason   string // what was wrong at Offset
}

// repairTail verifies every entry of generation g's segment (the newest
// generation) and cuts a torn tail, before the journal opens the
// generation. It returns the number of valid records, and a *Repair when
// it cut something. Damage that a later write group follows is a
// *CorruptionError and nothing is cut. synced (Reopen only) is the last
// LSN the failed instance made durable: everything after it is cut,
// however it reads (see Reopen).
//
// It reads the segment a chunk at a time (framelog.File), not whole: the
// segment is up to segment_bytes, and Reopen runs while logpond serves,
// within the journal's share of memory (conf.Memory's JournalRead).
func repairTail(g generation, log *slog.Logger, synced *uint64) (int, *Repair, error) {
	path := g.segment()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil // a generation whose segment was never created
	}
	if err != nil {
		return 0, nil, fmt.Errorf("journal: read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, nil, fmt.Errorf("journal: read %s: %w", path, err)
	}
	src := framelog.File(f, st.Size())
	if synced != nil {
		kept, rep, err := cutUnsynced(path, src, g.base, *synced)
		if err != nil {
			return 0, nil, err
		}
		if rep != nil {
			if err := cutFile(path, rep.Offset); err != nil {
				return kept, nil, err
			}
			log.Warn("journal: cut what was written before the failure but never fsynced (never acknowledged; in a recycled segment, also its unused rest)",
				"file", rep.File, "offset", rep.Offset, "bytes_cut", rep.Bytes, "first_lsn_cut", rep.FirstLSN, "records_kept", kept)
			return kept, rep, nil
		}
	}
	kept, rep, err := examineTail(path, src, g.base+1)
	if err != nil || rep == nil {
		return kept, nil, err
	}
	if err := cutFile(path, rep.Offset); err != nil {
		return kept, nil, err
	}
	// After a crash in a recycled segment the cut also takes the stale rest
	// of the file (doc.go): bytes_cut can be most of a segment.
	log.Warn("journal: cut torn tail (never acknowledged: no later write group follows it; in a recycled segment, also its unused rest)",
		"file", rep.File, "offset", rep.Offset, "bytes_cut", rep.Bytes, "first_lsn_cut", rep.FirstLSN,
		"records_kept", kept, "reason", rep.Reason)
	return kept, rep, nil
}

// cutFile truncates path to size and fsyncs it, so that the cut tail cannot
// reappear after another crash and be read as records.
func cutFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: repair %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("journal: repair %s: truncate to %d: %w", path, size, err)
	}
	if err := fsutil.Fsync(f); err != nil {
		return fmt.Errorf("journal: repair %s: fsync: %w", path, err)
	}
	return f.Close()
}

// examineTail decides what recovery does with a segment's bytes (doc.go,
// Recovery): keep everything (nil, nil), cut a torn tail (a *Repair), or
// refuse (a *CorruptionError). It reads src only.
func examineTail(path string, src framelog.Source, firstLSN uint64) (int, *Repair, error) {
	s := framelog.NewScanner(src, entries{}, framelog.Scan{File: path, Want: firstLSN, Tail: true})
	kept := 0
	for s.Next() {
		kept++
	}
	rep, err := stopped(path, s, int(src.Size()))
	return kept, rep, err
}

// cutUnsynced finds, in the segment src of the generation after base, the
// end of the entries up to LSN synced, and returns the records kept and
// the cut of everything after them (nil when nothing follows). When the
// entries up to synced do not all verify, it returns nil: the recovery
// rule of examineTail applies to that damage. An error is a failed read.
func cutUnsynced(path string, src framelog.Source, base, synced uint64) (int, *Repair, error) {
	keep := max(synced, base)
	s := framelog.NewScanner(src, entries{}, framelog.Scan{File: path, Want: base + 1})
	for s.Want() <= keep && s.Next() {
	}
	if s.Want() <= keep {
		var ce *framelog.CorruptionError
		if err := s.Err(); err != nil && !errors.As(err, &ce) {
			return 0, nil, fmt.Errorf("journal: %w", err)
		}
		return 0, nil, nil
	}
	if s.Offset() >= src.Size() {
		return 0, nil, nil
	}
	return int(keep - base), &Repair{File: path, Offset: s.Offset(), Bytes: src.Size() - s.Offset(), FirstLSN: keep + 1,
		Reason: "written before the journal failed, never fsynced"}, nil
}

package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/logpond/logpond/internal/framelog"

	"github.com/logpond/logpond/internal/fsutil"
)

// Damage the ledger already holds (Options.Settled).
//
// Records at or below Settled are never read from the journal again: the
// flusher starts after the ledger's last LSN. Damage among them loses
// nothing, so Open sets it aside instead of refusing to start:
//
//   - closed generations whose records are all at or below Settled are
//     released at Open, unread (their damage, if any, goes with them);
//   - the one generation holding both records at or below Settled and
//     records after it (or the newest generation, when it starts at or
//     below Settled) is scanned up to Settled. When an entry up to Settled
//     does not verify, the entries after Settled (found by their LSN
//     beyond the damage and verified as usual) are copied into a new
//     generation named after Settled, and the damaged generation's
//     directory is renamed aside, to damaged-<base>, for inspection. That
//     is logged at ERROR, with the file, the offset and the LSNs set
//     aside.
//
// A newest generation that ends before Settled in what the recovery rule
// calls a torn tail (no later write group follows the bad entry; a
// recycled file's stale rest reads the same), with no entry after Settled,
// is not damage: it is a journal that ends before the ledger. Its tail is
// cut as any torn tail (repairTail) and Open continues after the ledger.
//
// Damage that reaches past Settled (the entry for Settled+1 is missing or
// damaged, and it was acknowledged) is refused as ever, with a
// *CorruptionError.

// damagedPrefix names a generation directory set aside for damage the
// ledger held: damaged-<base>, in the journal directory. Nothing reads it;
// its bytes count toward max_bytes (aside.go) until an operator deletes it.
const damagedPrefix = "damaged-"

// salvagePrefix names the directory a salvaged generation is written in
// before it is renamed to its generation name.
const salvagePrefix = "salvage-"

// setAsideSettled checks the generation of gens that holds LSN settled
// (or the newest, when it starts at or below settled) up to settled, and
// sets its damage aside as described above. It returns whether it changed
// the directory (the caller lists the generations again).
func setAsideSettled(dir string, gens []generation, settled uint64, syncDir func(string) error, log *slog.Logger) (bool, error) {
	// A salvage a crash interrupted before its rename: never part of the
	// journal.
	left, err := filepath.Glob(filepath.Join(dir, salvagePrefix+"*"))
	if err != nil {
		return false, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	for _, p := range left {
		if err := os.RemoveAll(p); err != nil {
			return false, fmt.Errorf("journal: remove an interrupted salvage: %w", err)
		}
	}
	t := -1
	for i, g := range gens {
		if g.base < settled {
			t = i
		}
	}
	if t < 0 {
		return false, nil
	}
	g := gens[t]
	last := lastLSNOf(gens, t) // 0 for the newest
	if last != 0 && last <= settled {
		// The next generation starts at settled: g holds nothing after
		// it, and Open releases it unread, damaged or not. That is also
		// what a crash between replaceGeneration's two renames leaves.
		return false, nil
	}
	path := g.segment()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && last == 0 {
		return false, nil // a newest generation tidwall has not created yet
	}
	if err != nil {
		return false, fmt.Errorf("journal: read %s: %w", path, err)
	}
	s := newScanner(path, data, g.base+1, last, false)
	for s.Want() <= settled && s.Next() {
	}
	var ce *framelog.CorruptionError
	if !errors.As(s.Err(), &ce) || s.Want() > settled {
		// Intact up to settled (a newest generation may also just end
		// before it: the journal ends before the ledger, Open jumps).
		return false, nil
	}
	damage := corruption(ce)
	from, to, err := settledRest(path, data, int(damage.Offset), settled, last)
	if err != nil {
		return false, err
	}
	if last == 0 && from == to {
		if _, rep, err := examineTail(path, framelog.Bytes(data), g.base+1); err == nil && rep != nil {
			// Nothing after settled, and by the recovery rule the bad
			// entry is a torn tail (or a recycled file's stale rest),
			// never acknowledged: the journal just ends before the
			// ledger. repairTail cuts the tail and Open continues after
			// the ledger, as for a file that ends cleanly.
			return false, nil
		}
	}
	aside := filepath.Join(dir, damagedPrefix+fmt.Sprintf("%020d", g.base))
	for n := 1; ; n++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = filepath.Join(dir, fmt.Sprintf("%s%020d.%d", damagedPrefix, g.base, n))
	}
	if err := replaceGeneration(dir, g, settled, data[from:to], aside, syncDir); err != nil {
		return false, err
	}
	copied := uint64(0)
	if to > from {
		sc := newScanner(path, data[from:to], settled+1, 0, false)
		for sc.Next() {
			copied++
		}
	}
	log.Error("journal: damaged records the ledger already holds were set aside; nothing is lost: the ledger holds every LSN up to ledger_last_lsn",
		"file", path, "offset", damage.Offset, "first_damaged_lsn", damage.LSN, "reason", damage.Err,
		"set_aside_lsns", fmt.Sprintf("%d–%d", g.base+1, settled), "ledger_last_lsn", settled,
		"moved_to", aside, "records_kept", copied, "kept_in", filepath.Join(dir, genName(settled)))
	return true, nil
}

// settledRest finds, in the segment data of a generation damaged at offset
// off (an LSN at or below settled), the entries after settled: it returns
// the byte range [from, to) of the verified entries settled+1, … (empty
// when there are none to keep). last is the generation's last LSN, 0 for
// the newest. Damage after settled that recovery may not cut is a
// *CorruptionError.
func settledRest(path string, data []byte, off int, settled, last uint64) (int, int, error) {
	want := settled + 1
	next, found, _ := framelog.Find(framelog.Bytes(data), entries{}, int64(off+1), want) // memory: no read error
	q := int(next.Off)
	if !found {
		if last != 0 {
			// A closed generation holds every LSN up to last > settled.
			return 0, 0, &CorruptionError{File: path, Offset: int64(off), LSN: want,
				Err: fmt.Errorf("the damage reaches past the ledger's last LSN %d: no entry for LSN %d follows it, and this closed generation holds LSNs up to %d", settled, want, last)}
		}
		if f, at, later := laterGroupAfter(data, off, want); later {
			return 0, 0, &CorruptionError{File: path, Offset: int64(off), LSN: want,
				Err: fmt.Errorf("the damage reaches past the ledger's last LSN %d: no entry for LSN %d follows it, but a later write group does (LSN %d at offset %d), so LSN %d had been acknowledged", settled, want, f.lsn, at, want)}
		}
		return 0, 0, nil // nothing after settled was acknowledged
	}
	rest := data[q:]
	if last != 0 {
		s := framelog.NewScanner(framelog.Bytes(data), entries{}, framelog.Scan{File: path, Start: next.Off, Want: want, Last: last})
		for s.Next() {
		}
		if _, err := stopped(path, s, len(data)); err != nil {
			return 0, 0, err
		}
		return q, int(s.Offset()), nil
	}
	// The newest generation: what follows is judged by the recovery rule.
	_, rep, err := examineTail(path, framelog.Bytes(rest), want)
	var ce *CorruptionError
	switch {
	case errors.As(err, &ce):
		ce.Offset += int64(q)
		return 0, 0, ce
	case err != nil:
		return 0, 0, err
	case rep != nil:
		return q, q + int(rep.Offset), nil // the torn tail is left behind
	}
	return q, len(data), nil
}

// replaceGeneration writes entries (whole tidwall entries, LSNs settled+1,
// …) as a new generation after settled and then renames generation g's
// directory to aside. Each step is durable before the next. A crash
// between the two renames leaves g under its own name, followed by the new
// generation: g's last LSN is then settled (whatever its file holds after
// it), so the next Open does not scan it (setAsideSettled) but releases it
// unread, and the damage goes with it. A crash before the first rename
// leaves only the salvage directory, which the next Open removes.
func replaceGeneration(dir string, g generation, settled uint64, entries []byte, aside string, syncDir func(string) error) error {
	tmp := filepath.Join(dir, salvagePrefix+fmt.Sprintf("%020d", settled))
	if err := os.Mkdir(tmp, 0o750); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	if len(entries) > 0 {
		if err := writeSynced(filepath.Join(tmp, segmentFile), entries); err != nil {
			return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
		}
	}
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, genName(settled))); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	if err := os.Rename(g.dir, aside); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("journal: set aside %s: %w", g.dir, err)
	}
	return nil
}

// writeSynced creates the file path holding b and fsyncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := fsutil.Fsync(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

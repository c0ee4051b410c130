package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// releasingFile is the name a released generation's segment is given until
// the releaser has cut it down.
const releasingFile = "releasing"

// releaseStep is how much of a released segment one truncation frees.
// Removing a whole 64 MiB segment at once makes the file system free (and,
// mounted with discard, discard) all its blocks in one go: about 30 ms on
// the bench machine's disk, and the journal fsync running meanwhile waited
// for all of it — every release showed up as one 30–40 ms fsync at the top
// of the acknowledgement latencies. A 4 MiB step costs about 2 ms, which
// an fsync waits behind at most once.
const releaseStep = 4 << 20

// errReleaseStopped: Close interrupted a release; the next Open finishes it.
var errReleaseStopped = errors.New("journal: release interrupted by Close")

// The releaser retries what failed (a rename of Release, a cut, a spare's
// deletion) by itself, after releaseRetryMin, doubling up to
// releaseRetryMax while it keeps failing: nothing else may ever call
// Release again (a full journal makes nothing new durable, so the flusher
// moves nothing and has nothing to release).
const (
	releaseRetryMin = 100 * time.Millisecond
	releaseRetryMax = 5 * time.Second
)

// Release gives up every closed generation whose records all have LSN ≤
// upTo; the caller promises those records are in the ledger, in bytes that
// will never be rewritten (docs/design.md, §3, step 3). Before it returns,
// each such generation's segment is renamed aside, so that readers and
// listings no longer see it; the journal's releaser goroutine then cuts it
// down and deletes it (releaseLoop), and frees its space as it goes, waking
// appends that wait for space. Release never blocks the committer beyond a
// list update, nor its caller on the deletion.
//
// A generation whose rename fails stays in the journal, readable and
// counted as used, with every generation after it; Release returns the
// error. The releaser retries such renames, and what it fails to cut down
// or delete, by itself with backoff (releaseRetryMin up to
// releaseRetryMax), until Close: a failed release never keeps its space
// counted until the next Release or a restart.
func (j *Journal) Release(upTo uint64) error {
	err := j.release(upTo)
	// Also when nothing new was renamed: a failed rename waits for the
	// releaser's retry.
	j.wakeReleaser()
	return err
}

// release renames aside the segments of the closed generations whose
// records all have LSN ≤ upTo (Release) and queues them for the releaser.
// A failed rename is left for the releaser to retry (retryFailed).
func (j *Journal) release(upTo uint64) error {
	j.rel.renameMu.Lock()
	defer j.rel.renameMu.Unlock()
	j.mu.Lock()
	j.rel.work.upTo = max(j.rel.work.upTo, upTo)
	var drop []generation
	for len(j.gens) > 1 && j.gens[1].base <= upTo {
		drop = append(drop, j.gens[0])
		j.gens = j.gens[1:]
	}
	j.mu.Unlock()
	var err error
	renamed := make([]generation, 0, len(drop))
	for i, g := range drop {
		// No fsync here: a rename lost in a crash brings back a segment
		// whose records the ledger has, which the flusher skips. The
		// releaser makes it durable before it cuts the file.
		if rerr := j.rename(g.segment(), g.releasing()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			// Back at the front, with the ones after it: a generation's
			// last LSN is its successor's base, so none may be skipped.
			j.mu.Lock()
			j.gens = append(slices.Clone(drop[i:]), j.gens...)
			j.mu.Unlock()
			err = fmt.Errorf("journal: release %s: %w (it stays in the journal; the releaser retries)", g.dir, rerr)
			break
		}
		renamed = append(renamed, g)
	}
	j.mu.Lock()
	j.rel.work.renamed = append(j.rel.work.renamed, renamed...)
	switch {
	case err != nil:
		j.rel.work.retryRenames = true
	case upTo == j.rel.work.upTo:
		j.rel.work.retryRenames = false // everything asked for so far is renamed
	}
	j.mu.Unlock()
	return err
}

// releaseAtOpen releases, while Open runs, the closed generations whose
// records are all at or below upTo (the caller knows the ledger holds
// them), and makes the renames durable at once: a generation a crash
// brought back would end before its successor's base, which reads as
// damage. A failure is logged; the generations stay, and the releaser
// retries.
func (j *Journal) releaseAtOpen(upTo uint64) {
	if err := j.Release(upTo); err != nil {
		j.log.Warn("journal: cannot release generations the ledger holds; retrying", "up_to_lsn", upTo, "err", err)
	}
	j.mu.Lock()
	released := slices.Clone(j.rel.work.renamed)
	j.mu.Unlock()
	for _, g := range released {
		if err := j.syncDir(g.dir); err != nil {
			j.log.Warn("journal: cannot make a release durable; the releaser retries", "dir", g.dir, "err", err)
		}
	}
}

// wakeReleaser tells the releaser to look for work; it never blocks.
func (j *Journal) wakeReleaser() {
	select {
	case j.rel.wake <- struct{}{}:
	default: // already woken
	}
}

// releaseLoop is the releaser: it cuts down and deletes (or keeps as
// spares, recycle.go) the generations Release renamed aside, and deletes
// spares the journal no longer wants, until Close. What fails is set aside
// for a retry after a backoff (retryFailed) while the rest goes on: one
// file that cannot be freed holds up no other. A release Close interrupts
// is left as it is: the next Open finishes it.
func (j *Journal) releaseLoop() {
	defer close(j.rel.done)
	var (
		timer *time.Timer
		retry <-chan time.Time // set while a retry is scheduled
		delay time.Duration
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-j.closing:
			return
		case <-j.rel.wake:
		case <-retry:
			retry = nil
			j.retryFailed()
		}
		if !j.releaseRound() {
			return
		}
		if !j.retryPending() {
			delay = 0
			continue
		}
		if retry == nil {
			delay = min(max(2*delay, releaseRetryMin), releaseRetryMax)
			timer = time.NewTimer(delay)
			retry = timer.C
		}
	}
}

// releaseRound does all the releaser's work there is now; it returns
// false when Close interrupted it.
func (j *Journal) releaseRound() bool {
	for {
		work, what := j.nextRelease()
		if work == nil {
			return true
		}
		err := work()
		if errors.Is(err, errReleaseStopped) {
			return false
		}
		if err != nil {
			// A failed piece of work whose space is not free yet was set
			// aside (retryRelease, dropSpare) for retryFailed.
			j.log.Warn("journal: releasing a file failed; retrying later", "file", what, "err", err)
		}
	}
}

// retryPending reports whether something failed and waits for
// retryFailed.
func (j *Journal) retryPending() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.rel.work.retryGens) > 0 || j.rel.work.retrySpares || j.rel.work.retryRenames
}

// retryFailed gives what failed back to the releaser's next round: the
// generations it could not free, the spares, and the renames of a failed
// Release, which it retries here.
func (j *Journal) retryFailed() {
	j.mu.Lock()
	j.rel.work.renamed = append(j.rel.work.renamed, j.rel.work.retryGens...)
	j.rel.work.retryGens = nil
	j.rel.work.retrySpares = false
	renames, upTo := j.rel.work.retryRenames, j.rel.work.upTo
	j.mu.Unlock()
	if !renames {
		return
	}
	if err := j.release(upTo); err != nil {
		j.log.Warn("journal: releasing generations the ledger holds failed; retrying later", "up_to_lsn", upTo, "err", err)
	}
}

// nextRelease returns the releaser's next piece of work and the file it
// deletes (or keeps as a spare): the oldest released generation, else a
// spare the journal no longer wants (spareToDrop) unless deleting one
// failed and waits for its retry; nil when there is none.
func (j *Journal) nextRelease() (func() error, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.rel.work.renamed) > 0 {
		g := j.rel.work.renamed[0]
		j.rel.work.renamed = j.rel.work.renamed[1:]
		j.rel.work.cutting = true
		return func() error { return j.cut(g) }, g.releasing()
	}
	if !j.rel.work.retrySpares {
		if sp, ok := j.spareToDrop(); ok {
			j.rel.work.cutting = true
			return func() error { return j.dropSpare(sp) }, sp.path
		}
	}
	j.rel.work.cutting = false
	return nil, ""
}

// cut deletes a generation whose segment Release renamed aside, freeing
// its space (as counted in j.space.used) a step at a time.
func (j *Journal) cut(g generation) error {
	// The rename must be durable before the file is cut: after a crash a
	// cut segment under its own name would read as damage, where a
	// generation without its segment reads as an interrupted release.
	if err := j.syncDir(g.dir); err != nil {
		j.retryRelease(g)
		return fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	if kept, err := j.keepAsSpare(g); kept || err != nil {
		if !kept {
			j.retryRelease(g)
		}
		return err
	}
	left, err := j.cutDown(g.releasing(), g.size)
	if err != nil {
		if !errors.Is(err, errReleaseStopped) {
			g.size = left // what is still counted for it
			j.retryRelease(g)
		}
		return fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	// Cut down to nothing: its space is free even if the removal below
	// fails (the next Open finishes that).
	j.freed(left)
	if err := removeReleased(g); err != nil {
		return err
	}
	// Not needed for safety (a removal lost in a crash brings back records
	// the ledger already has, which the flusher skips), but it keeps the
	// space accounting true across a crash.
	if err := j.syncDir(j.dir); err != nil {
		return fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	return nil
}

// retryRelease sets released generation g, whose space is still counted,
// aside for the releaser's next retry (retryFailed).
func (j *Journal) retryRelease(g generation) {
	j.mu.Lock()
	j.rel.work.retryGens = append(j.rel.work.retryGens, g)
	j.mu.Unlock()
}

// cutDown truncates the file at path to nothing a step at a time
// (truncateInSteps), taking what each cut frees off the journal's usage,
// up to counted (what used counts for the file). It returns what of
// counted is left for the caller to free once the file is gone, and
// errReleaseStopped when Close interrupted it.
func (j *Journal) cutDown(path string, counted int64) (int64, error) {
	left := counted
	err := truncateInSteps(path, func(n int64) error {
		select {
		case <-j.closing:
			return errReleaseStopped
		default:
		}
		n = min(n, left)
		left -= n
		j.freed(n)
		return nil
	})
	return left, err
}

// freed takes n released bytes off the journal's usage and wakes appends
// waiting for space. It wakes only when someone waits: every append that
// waits on space.freed set full after the last wake-up (admit).
func (j *Journal) freed(n int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.space.used -= n
	if j.space.fullPeriod.Active() && j.space.used+j.space.aside <= j.opts.recordBytes()-j.opts.SegmentBytes {
		j.space.fullPeriod.Leave(j.log, "journal has space again: appends resume", "used_bytes", j.space.used, "max_bytes", j.opts.MaxBytes)
	}
	if !j.space.full {
		return
	}
	j.space.full = false // waiters re-check; one that still does not fit sets it again
	close(j.space.freed)
	j.space.freed = make(chan struct{})
}

// finishRelease completes, at Open, a release a crash or Close
// interrupted: the generation has no segment under its own name.
func finishRelease(g generation, syncDir func(string) error) error {
	// As in cut: the rename aside must be durable before the file is cut.
	// Close may have interrupted the release before the releaser synced
	// it, and a crash during this Open must not bring back a cut segment
	// under its own name.
	if err := syncDir(g.dir); err != nil {
		return fmt.Errorf("journal: finish releasing %s: %w", g.dir, err)
	}
	if err := truncateInSteps(g.releasing(), func(int64) error { return nil }); err != nil {
		return fmt.Errorf("journal: finish releasing %s: %w", g.dir, err)
	}
	if err := removeReleased(g); err != nil {
		return err
	}
	// Not needed for safety (see cut), but the space accounting of the
	// next Open should not see this generation again.
	if err := syncDir(filepath.Dir(g.dir)); err != nil {
		return fmt.Errorf("journal: finish releasing %s: %w", g.dir, err)
	}
	return nil
}

// removeReleased removes a released generation's cut-down segment and its
// directory.
func removeReleased(g generation) error {
	if err := os.Remove(g.releasing()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	if err := os.Remove(g.dir); err != nil {
		return fmt.Errorf("journal: release %s: %w", g.dir, err)
	}
	return nil
}

// truncateInSteps cuts the file at path down to nothing, releaseStep bytes
// at a time from its end, calling step with the bytes each cut freed (an
// error from step stops it). A missing file is already cut.
func truncateInSteps(path string, step func(int64) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	for size := st.Size(); size > 0; {
		next := max(0, size-releaseStep)
		if err := f.Truncate(next); err != nil {
			f.Close()
			return err
		}
		if err := step(size - next); err != nil {
			f.Close()
			return err
		}
		size = next
	}
	return f.Close()
}

package journal

import (
	"fmt"
	"sync"
	"time"
)

// The ack path is a two-stage pipeline of goroutines owned by the journal:
//
//   - the committer gathers queued appends into a group, frames it and
//     writes it with one segment Write (into the page cache), then
//     hands the group to the syncer and gathers the next one;
//   - the syncer takes everything written so far, fsyncs the segment once,
//     and only then completes those appends, in LSN order.
//
// So the next group is written while the previous one's fsync runs, instead
// of waiting for it (docs/design.md, §4, "Group commit", says what that
// earns). An fsync covers every byte written before it started, so a
// record is acknowledged only after an fsync that began after its write
// returned.
//
// Ordering rules that keep recovery and rotation sound:
//   - each entry's group field is the lowest LSN not yet fsynced when it was
//     written (doc.go): an entry written after LSN L's fsync returned says
//     group > L, which is what proves at recovery that L was acknowledged;
//   - the committer rotates to a new generation, and closes the files, only
//     once the syncer has completed everything written to the old one;
//   - a failure in either stage poisons the journal; records written but not
//     yet fsynced are then failed, never acknowledged.

// pipeline is what the committer hands the syncer. mu guards it; cond is
// broadcast on every change (both sides wait on it).
type pipeline struct {
	mu      sync.Mutex
	cond    *sync.Cond
	written []*request // written, waiting for an fsync; LSNs first, first+1, …
	spare   []*request // the syncer's last batch, reused for written
	first   uint64
	bytes   int64      // bytes of written (entry sizes)
	seg     segmentLog // the segment written was written to
	syncing bool       // the syncer is fsyncing or completing a batch
	done    bool       // the committer has exited: the syncer stops when idle
}

// commitLoop is the committer: the only goroutine that writes. It starts
// the syncer and, once Close has been called and everything queued is
// written, stops it after its last fsync and closes the files.
func (j *Journal) commitLoop() {
	defer close(j.stopped)
	syncerDone := make(chan struct{})
	go func() {
		defer close(syncerDone)
		j.syncLoop()
	}()
	defer func() {
		j.pipe.mu.Lock()
		j.pipe.done = true
		j.pipe.cond.Broadcast()
		j.pipe.mu.Unlock()
		<-syncerDone
		size := j.commit.size()
		j.closeSegment()
		j.trimRecycled(size)
	}()
	var group []*request
	for {
		select {
		case r := <-j.queue:
			group = j.gather(append(group[:0], r), false, j.room())
			j.write(group)
		case <-j.closing:
			// Everything queued before Close is still written. Like the
			// case above, a group always starts with one request taken
			// whatever room() says: room() may be zero or less while one
			// big record waits for the syncer (minRound), and a group
			// gathered with no room would be empty, ending the loop with
			// requests still queued.
			for {
				limit := j.room()
				select {
				case r := <-j.queue:
					group = j.gather(append(group[:0], r), true, limit)
					j.write(group)
				default:
					return
				}
			}
		}
	}
}

// room waits until the bytes written but not yet taken by the syncer are
// below MaxGroupBytes, or fewer than minRound records were written, and
// returns how many more bytes the next group may take (a group always
// takes at least one record).
// This bounds both the bytes one fsync covers and, with the queue, the
// requests held in memory.
func (j *Journal) room() int64 {
	p := &j.pipe
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.bytes >= j.opts.MaxGroupBytes && len(p.written) >= minRound {
		p.cond.Wait()
	}
	return j.opts.MaxGroupBytes - p.bytes
}

// minRound is how many records one fsync round may always take, whatever
// their size: with records as big as MaxGroupBytes (a Beats batch of 2048
// 1 KiB events is 2 MiB), a round of one would fsync each record alone,
// with no group commit at all.
const minRound = 2

// gather adds queued requests to group until the queue is empty (and, with
// MaxGroupWait, until the wait is over) or the group holds limit bytes.
// While an fsync runs, appends pile up in the queue, so a busy journal
// writes big groups without any timer.
func (j *Journal) gather(group []*request, closing bool, limit int64) []*request {
	var bytes int64
	for _, r := range group {
		bytes += r.size
	}
	var timeout <-chan time.Time
	for bytes < limit {
		select {
		case r := <-j.queue:
			group = append(group, r)
			bytes += r.size
			continue
		default:
		}
		if j.opts.MaxGroupWait <= 0 || closing || len(group) == 0 {
			break
		}
		if timeout == nil {
			t := time.NewTimer(j.opts.MaxGroupWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case r := <-j.queue:
			group = append(group, r)
			bytes += r.size
			continue
		case <-timeout:
		case <-j.closing:
		}
		break
	}
	return group
}

// write frames and writes one group and hands it to the syncer; it rotates
// to a new generation when the group does not fit the active one, or when
// the active one is full after it.
func (j *Journal) write(group []*request) {
	if err := j.failure(); err != nil {
		j.fail(group, fmt.Errorf("%w: %w", ErrPoisoned, err))
		return
	}
	var bytes int64
	for _, r := range group {
		bytes += r.size
	}
	if size := j.commit.seg.Size(); size > 0 && size+bytes > j.opts.SegmentBytes {
		if err := j.rotateWhenSynced(); err != nil {
			j.fail(group, err)
			return
		}
	}
	c := &j.commit
	first := c.last + 1
	// Everything up to durable was fsynced before this write: recovery
	// relies on group > L meaning "written after L was acknowledged".
	oldest := j.durable.Load() + 1
	c.frames = c.frames[:0]
	for i, r := range group {
		sealFrame(r.frame, first+uint64(i), oldest)
		c.frames = append(c.frames, r.frame)
	}
	err := c.seg.Write(c.frames)
	clear(c.frames)
	if err != nil {
		err = j.poison(fmt.Errorf("journal: write group of %d records at LSN %d: %w", len(group), first, err))
		j.fail(group, err)
		return
	}
	c.last += uint64(len(group))
	p := &j.pipe
	p.mu.Lock()
	if len(p.written) == 0 {
		p.first, p.seg = first, c.seg
	}
	p.written = append(p.written, group...)
	p.bytes += bytes
	p.cond.Broadcast()
	p.mu.Unlock()
	if c.seg.Size() >= j.opts.SegmentBytes {
		// Rotate as soon as the generation is full, so that at rest the
		// active generation is below SegmentBytes (see admit).
		// A failure here poisoned the journal (and was logged there): the
		// next write fails its group.
		_ = j.rotateWhenSynced()
	}
}

// rotateWhenSynced waits until the syncer has completed everything
// written to the active generation, then rotates. Rotation closes the
// active log, which the syncer must be done with. Errors come wrapped in
// ErrPoisoned: a failed rotation poisons the journal.
func (j *Journal) rotateWhenSynced() error {
	j.waitSynced()
	if err := j.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrPoisoned, err)
	}
	if err := j.rotate(j.commit.last); err != nil {
		return j.poison(err)
	}
	return nil
}

// waitSynced waits until the syncer is idle with nothing written left.
func (j *Journal) waitSynced() {
	p := &j.pipe
	p.mu.Lock()
	for len(p.written) > 0 || p.syncing {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// syncLoop is the syncer: it fsyncs what the committer wrote and completes
// those appends. It exits when the committer is done and nothing is left.
func (j *Journal) syncLoop() {
	p := &j.pipe
	for {
		p.mu.Lock()
		for len(p.written) == 0 && !p.done {
			p.cond.Wait()
		}
		if len(p.written) == 0 {
			p.mu.Unlock()
			return
		}
		batch, first, bytes, seg := p.written, p.first, p.bytes, p.seg
		p.written, p.bytes, p.syncing = p.spare[:0], 0, true
		p.cond.Broadcast() // room for the committer
		p.mu.Unlock()

		j.syncBatch(seg, first, batch, bytes)

		clear(batch)
		p.mu.Lock()
		p.spare, p.syncing = batch[:0], false
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// syncBatch fsyncs seg and completes batch, whose records (LSNs first, …)
// were all written before the fsync starts.
func (j *Journal) syncBatch(seg segmentLog, first uint64, batch []*request, bytes int64) {
	if err := j.failure(); err != nil {
		// Written after, or together with, a failure: the instance is
		// discarded, so these are never acknowledged.
		j.fail(batch, fmt.Errorf("%w: %w", ErrPoisoned, err))
		return
	}
	// The batch's one fsync. Nobody in it is told "done" before it
	// returns: an acknowledged event must survive a power cut.
	syncStart := time.Now()
	if err := seg.Sync(); err != nil {
		err = j.poison(fmt.Errorf("journal: fsync %d records at LSN %d: %w", len(batch), first, err))
		j.fail(batch, err)
		return
	}
	if j.opts.ObserveGroup != nil {
		j.opts.ObserveGroup(len(batch), bytes, time.Since(syncStart))
	}
	last := first + uint64(len(batch)) - 1
	if j.tail.limit > 0 {
		// Before durable moves: Recent may then rely on "durable but not
		// cached" meaning "read the files".
		recs := make([][]byte, len(batch))
		for i, r := range batch {
			recs[i] = r.kept
		}
		j.tail.add(first, recs)
	}
	j.durable.Store(last)
	for i, r := range batch {
		r.lsn = first + uint64(i)
		r.done <- nil
	}
}

// poison makes a write or fsync failure sticky (the first one wins) and
// returns the error to fail requests with. The segment is never written
// again (tidwall's in-memory tail already includes the failed group); the
// committer closes it when it exits.
func (j *Journal) poison(err error) error {
	j.mu.Lock()
	first := j.poisoned == nil
	if first {
		j.poisoned = err
		j.failed.Store(true)
	}
	j.mu.Unlock()
	if first {
		j.log.Error("journal poisoned: nothing more is acknowledged until it is reopened", "err", err)
	}
	return fmt.Errorf("%w: %w", ErrPoisoned, err)
}

// failure is Err for the committer and the syncer, which ask once per
// group: an atomic load while the journal is healthy, instead of the mutex
// every Append's admit also takes.
func (j *Journal) failure() error {
	if !j.failed.Load() {
		return nil
	}
	return j.Err()
}

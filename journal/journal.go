package journal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/record"
)

// Options configure a journal; they mirror the [journal] section of the
// configuration.
type Options struct {
	// SegmentBytes is the size at which the committer starts a new
	// generation (the unit of front truncation).
	SegmentBytes int64
	// MaxBytes bounds the journal's bytes on disk; Append waits above it.
	// SpareSegments × SegmentBytes of it are the spares' (recordBytes); the
	// rest, at least 2 × SegmentBytes, holds records.
	MaxBytes int64
	// MaxGroupWait is how long the committer waits for more appends before
	// writing a group; 0 writes as soon as the queue is empty.
	MaxGroupWait time.Duration
	// MaxGroupBytes caps the bytes written but not yet being fsynced: the
	// committer stops writing at it until the syncer takes them, so one
	// fsync covers at most about this much (a round always takes at least
	// two records, however big: see minRound).
	MaxGroupBytes int64
	// StartAfter is the ledger's last LSN: the journal's LSNs continue after
	// the larger of it and the journal's own last LSN, so a fresh or
	// replaced journal never reuses an LSN the ledger holds.
	StartAfter uint64
	// Settled is an LSN whose records, and all before it, the caller holds
	// durably elsewhere (the ledger's last LSN); 0 for none. They are never
	// read from the journal again, so Open releases the closed generations
	// wholly at or below it, and damage to records at or below it does not
	// stop Open: the damaged generation is set aside (renamed to
	// damaged-<base>), its records after Settled are kept in a new
	// generation, and that is logged at ERROR (salvage.go). Damage past
	// Settled is refused as without it.
	Settled uint64
	// TailBytes bounds the copies of recent records kept in memory for
	// the flusher (Recent); 0 keeps none. They are the journal's only
	// in-memory copy of what it wrote: tidwall's copy of the active
	// segment is dropped after every write (tidwall.go).
	TailBytes int64
	// SpareSegments is how many released segment files the journal keeps
	// for new generations to overwrite instead of deleting them
	// (recycle.go); 0 deletes every released segment. MaxBytes sets
	// SpareSegments × SegmentBytes aside for them: MaxBytes must be at
	// least (2 + SpareSegments) × SegmentBytes.
	SpareSegments int
	// Logger receives repairs, full/space transitions and failures.
	Logger *slog.Logger
	// ObserveGroup, when set, is called by the syncer after each fsync,
	// before the appenders it made durable are told: the number of records
	// it covered, their bytes, and how long the fsync took. It runs on the
	// ack path: it must be quick and must not block (metrics only).
	ObserveGroup func(records int, bytes int64, fsync time.Duration)

	// hooks lets tests inject faults and observe fsyncs, per instance.
	hooks hooks
}

// hooks are the per-instance seams for tests; zero values mean "the real
// thing".
type hooks struct {
	wrapLog func(segmentLog) segmentLog
	syncDir func(string) error
	rename  func(oldpath, newpath string) error // the renames of releases (Release, keepAsSpare)
	segment segmentOptions                      // workarounds left out (benchmarks)
}

// queueLength bounds the appends waiting for the committer; an Append that
// finds it full waits (its context bounds the wait).
const queueLength = 4096

// Journal is an open journal. All methods are safe for concurrent use.
//
// Its state is grouped by owner: the committer goroutine's (commit), what
// the committer hands the syncer (pipe), the releaser goroutine's (rel),
// and what they and the callers share under mu (gens, space, and the
// releaser's work list).
type Journal struct {
	dir     string
	opts    Options
	log     *slog.Logger
	syncDir func(string) error
	rename  func(oldpath, newpath string) error
	repair  *Repair

	queue   chan *request // appends → committer, bounded
	closing chan struct{} // closed by Close: committer finishes queued work
	stopped chan struct{} // closed when the committer and the syncer have exited
	once    sync.Once

	durable atomic.Uint64 // last LSN whose group is fsynced
	failed  atomic.Bool   // poisoned is set (read without mu on the ack path)
	tail    tailCache

	commit committer // owned by the committer goroutine (and by open before it starts)
	pipe   pipeline  // committer → syncer: written, not yet fsynced
	rel    releaser  // the releaser goroutine's signals; its work list is under mu

	mu sync.Mutex // guards the fields below, and rel.work
	// gens are the generations, oldest first; the last is active. The
	// committer appends (rotation), Release drops from the front.
	gens     []generation
	space    space
	poisoned error // sticky write/fsync failure
	closed   bool
}

// committer is the state only the committer goroutine touches (and open,
// before it starts it).
type committer struct {
	seg    segmentLog // the active generation's segment
	base   uint64     // LSN before the active generation's first record
	last   uint64     // last LSN written
	frames [][]byte   // the group being written, reused
	buffer []byte     // the segment's write buffer, from the closed generation to the next (segmentOptions.buffer)
	// capacity is the size of the active generation's file when it was a
	// recycled spare (0 for a new file): its bytes beyond the segment's
	// Size are stale, in the spares' share of max_bytes (recordBytes).
	capacity int64
	path     string // the active generation's segment file
}

// space is the journal's space accounting, guarded by Journal.mu.
type space struct {
	used  int64         // bytes of records on disk plus bytes reserved by admitted appends (≤ recordBytes)
	freed chan struct{} // closed and replaced whenever space is freed while an append waits
	full  bool          // an append is waiting for space (Waiting)
	// fullPeriod: "journal full" was logged and "space again" not yet. The
	// releaser frees a segment a step at a time and each step lets a few
	// waiting appends in, so full flips many times a second under steady
	// backpressure; the log says only when it began and when a whole
	// segment's worth of space is free again.
	fullPeriod waitlog.Episode
	spares     []spare // released segments kept to be overwritten (recycle.go)
	maxSpares  int     // Options.SpareSegments; 0 once recycling failed
	// aside is the bytes of the damaged-<base> directories kept for
	// inspection (aside.go): on the journal's device, so they take their
	// share of max_bytes from the records'. asideAt is when it was last
	// measured.
	aside   int64
	asideAt time.Time
}

// releaser is the releaser goroutine's (release.go): how it is woken and
// how it tells it exited, and its work list, guarded by Journal.mu.
type releaser struct {
	wake chan struct{} // wakes the releaser (capacity 1)
	done chan struct{} // closed when the releaser has exited
	// renameMu serializes Release calls: one that fails puts generations
	// back at the front of gens, which another must not have moved past.
	renameMu sync.Mutex
	work     releaseWork // guarded by Journal.mu
}

// releaseWork is what Release handed the releaser and what it failed to
// do.
type releaseWork struct {
	renamed []generation // released, renamed aside, not yet cut down (releaseLoop)
	// What the releaser failed to do, waiting for its retry (retryFailed):
	// generations not freed, a spare not deleted, renames of a Release.
	retryGens    []generation
	retrySpares  bool
	retryRenames bool
	upTo         uint64 // the highest LSN Release was asked to release up to
	cutting      bool   // the releaser is cutting one down
}

type request struct {
	frame []byte // the entry around a copy of the record, built by the caller's goroutine (newFrame)
	kept  []byte // the frame's record, for the tail cache
	size  int64  // bytes the entry takes on disk
	lsn   uint64
	done  chan error // buffered: the committer never blocks on a caller
	err   error      // the outcome, once Wait has taken it from done
}

// Open opens (creating if needed) the journal in dir: it verifies and
// repairs the newest generation's tail (see doc.go), opens it for writing,
// and starts the committer and the releaser.
func Open(dir string, opts Options) (*Journal, error) { return open(dir, opts, nil) }

// Reopen opens a fresh instance of j's directory with opts, after j failed
// ([Journal.Err]) and was closed: after a failed write or fsync only a
// fresh instance resumes. When j's Close is still running, Reopen first
// waits until every goroutine of j has exited, so that none of them touches
// the files of the new instance.
//
// Unlike Open, Reopen keeps nothing after j's last durable LSN (its
// LastLSN), however intact it reads back: those records were written but
// no fsync of them succeeded, and a failed fsync may drop dirty pages or
// mark them clean, so that what reads back from the page cache is no proof
// they are on disk. They were never acknowledged; Reopen cuts them (and
// fsyncs the cut), so that they are neither read nor counted in LastLSN.
func (j *Journal) Reopen(opts Options) (*Journal, error) {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if !closed {
		return nil, fmt.Errorf("journal: reopen %s: close the failed instance first", j.dir)
	}
	// Close has begun: once the committer and the syncer have exited,
	// durable is final; once the releaser has, nothing of j renames or
	// cuts files under the new instance.
	<-j.stopped
	<-j.rel.done
	synced := j.durable.Load()
	return open(j.dir, opts, &synced)
}

// open opens the journal in dir: it recovers the directory, opens the
// active generation for writing, and starts the goroutines. synced is nil
// for Open; for Reopen, the last LSN the failed instance made durable.
func open(dir string, opts Options, synced *uint64) (*Journal, error) {
	j, err := newJournal(dir, opts)
	if err != nil {
		return nil, err
	}
	gens, kept, err := j.recover(synced)
	if err != nil {
		return nil, err
	}
	if err := j.openWriter(gens, kept); err != nil {
		return nil, err
	}
	j.start()
	return j, nil
}

// newJournal checks opts and returns a journal on dir that is not open
// yet.
func newJournal(dir string, opts Options) (*Journal, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Journal{
		dir: dir, opts: opts, log: opts.Logger,
		syncDir: opts.hooks.syncDir,
		rename:  opts.hooks.rename,
		queue:   make(chan *request, queueLength),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
		rel:     releaser{wake: make(chan struct{}, 1), done: make(chan struct{})},
		space:   space{freed: make(chan struct{}), maxSpares: max(opts.SpareSegments, 0)},
		tail:    tailCache{limit: opts.TailBytes, filling: make(chan struct{}, 1)},
	}
	j.pipe.cond = sync.NewCond(&j.pipe.mu)
	if j.syncDir == nil {
		j.syncDir = fsutil.SyncDir
	}
	if j.rename == nil {
		j.rename = os.Rename
	}
	return j, nil
}

// check reports what makes o unusable.
func (o Options) check() error {
	if o.SegmentBytes <= 0 || o.MaxGroupBytes <= 0 {
		return fmt.Errorf("journal: segment and group sizes must be positive")
	}
	if o.recordBytes() < 2*o.SegmentBytes {
		// Generations are dropped whole: with room for fewer than two, the
		// active one could fill the records' share with nothing closed to
		// release.
		return fmt.Errorf("journal: max bytes %d must be at least (2 + spare segments %d) × segment bytes %d",
			o.MaxBytes, max(o.SpareSegments, 0), o.SegmentBytes)
	}
	return nil
}

// recordBytes is the share of MaxBytes for records: space.used stays at or
// below it. The rest, SpareSegments × SegmentBytes, holds the spare files
// and the stale rest of a recycled active file, which space.used does not
// count: at most SpareSegments files of at most SegmentBytes each
// (keepAsSpare), one of which the active generation may be overwriting.
func (o Options) recordBytes() int64 {
	return o.MaxBytes - int64(max(o.SpareSegments, 0))*o.SegmentBytes
}

// recover lists the journal's generations and spares, finishing what a
// crash interrupted and setting aside damage the ledger makes harmless
// (Settled), and repairs the newest generation's tail. It returns the
// generations, oldest first, and how many entries the newest holds.
func (j *Journal) recover(synced *uint64) ([]generation, uint64, error) {
	if err := os.MkdirAll(j.dir, 0o750); err != nil {
		return nil, 0, fmt.Errorf("journal: %w", err)
	}
	gens, err := scanGenerations(j.dir, j.syncDir)
	if err != nil {
		return nil, 0, err
	}
	if j.opts.Settled > 0 {
		changed, err := setAsideSettled(j.dir, gens, j.opts.Settled, j.syncDir, j.log)
		if err != nil {
			return nil, 0, err
		}
		if changed {
			if gens, err = scanGenerations(j.dir, j.syncDir); err != nil {
				return nil, 0, err
			}
		}
	}
	if synced == nil {
		// Damage past Settled in a closed generation: refused now, not
		// met by the flusher later (acceptloss.go).
		if err := checkBacklog(gens, j.opts.Settled); err != nil {
			return nil, 0, err
		}
	}
	if j.space.spares, err = j.recoverSpares(); err != nil {
		return nil, 0, err
	}
	if len(gens) == 0 {
		g, err := createGeneration(j.dir, j.opts.StartAfter, j.syncDir)
		if err != nil {
			return nil, 0, err
		}
		gens = []generation{g}
		j.log.Info("journal: created", "dir", j.dir, "first_lsn", j.opts.StartAfter+1)
	}
	kept, rep, err := repairTail(gens[len(gens)-1], j.log, synced)
	if err != nil {
		return nil, 0, err
	}
	j.repair = rep
	return gens, uint64(kept), nil
}

// openWriter opens the newest of gens, holding entries entries, for
// writing, makes what it holds durable, sets up the space accounting, and
// releases what the ledger holds already.
func (j *Journal) openWriter(gens []generation, entries uint64) error {
	active := gens[len(gens)-1]
	if err := j.openActive(active, entries, nil); err != nil {
		return err
	}
	// Make everything recovered durable before it is reported as such:
	// the previous process may have died between write and fsync.
	if err := j.commit.seg.Sync(); err != nil {
		j.closeSegment()
		return fmt.Errorf("journal: open %s: %w", active.dir, err)
	}
	j.commit.last = active.base + entries
	j.gens = gens
	for _, g := range gens[:len(gens)-1] {
		j.space.used += g.size
	}
	j.space.used += j.commit.seg.Size()
	releaseUpTo := j.opts.Settled
	if j.opts.StartAfter > j.commit.last {
		// The journal ends before the ledger does (it was replaced or
		// restored from an old copy). Continuing at last+1 would reuse
		// LSNs the ledger holds; everything here is in the ledger already.
		j.log.Warn("journal: ends before the ledger; continuing after the ledger's last LSN",
			"journal_last_lsn", j.commit.last, "ledger_last_lsn", j.opts.StartAfter)
		if err := j.rotate(j.opts.StartAfter); err != nil {
			j.closeSegment()
			return err
		}
		// The generations before the jump end before the new one's base:
		// read, they would look cut short. Their records are in the ledger.
		releaseUpTo = max(releaseUpTo, j.opts.StartAfter)
	}
	if releaseUpTo > 0 {
		j.releaseAtOpen(releaseUpTo)
	}
	j.measureAside()
	j.durable.Store(j.commit.last)
	return nil
}

// start starts the committer (which starts the syncer) and the releaser.
func (j *Journal) start() {
	go j.commitLoop()
	go j.releaseLoop()
}

// openActive opens generation g, holding entries entries, for writing and
// makes its segment file's directory entry durable (opening creates the
// file when it is missing). With a spare (a new generation only, whose
// directory rotate did not fsync into the journal directory yet), g
// overwrites the spare's file instead (recycle.go); a spare that cannot be
// used is given back to be deleted, and g gets a new file.
func (j *Journal) openActive(g generation, entries uint64, sp *spare) error {
	opts := j.opts.hooks.segment
	opts.bufferCap = j.writeBufferCap()
	opts.buffer = &j.commit.buffer
	var recycle string
	if sp != nil {
		recycle = sp.path
	}
	seg, spareErr, err := openSegment(g, entries, recycle, opts, j.log)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.commit.capacity = 0
	if sp != nil {
		if spareErr != nil {
			j.log.Warn("journal: cannot recycle a spare segment; deleting spares from now on", "err", spareErr)
			j.mu.Lock()
			j.space.spares = append(j.space.spares, *sp)
			j.space.maxSpares = 0
			j.mu.Unlock()
			j.wakeReleaser()
		} else {
			j.commit.capacity = sp.size
		}
		// The rename's source directory, and g's own entry in it (rotate
		// left that fsync to here); g's directory is synced below.
		if err := j.syncDir(j.dir); err != nil {
			seg.Close()
			return fmt.Errorf("journal: open %s: %w", g.dir, err)
		}
	}
	if err := j.syncDir(g.dir); err != nil {
		seg.Close()
		return fmt.Errorf("journal: open %s: %w", g.dir, err)
	}
	j.commit.path = g.segment()
	j.commit.seg = seg
	if j.opts.hooks.wrapLog != nil {
		j.commit.seg = j.opts.hooks.wrapLog(seg)
	}
	j.commit.base = g.base
	return nil
}

// writeBufferCap is the capacity of the segment's in-memory buffer kept
// between writes (tidwall.go, forgetWritten): a group of records up to MaxGroupBytes each
// (the input's records are at most twice that), with their frames.
func (j *Journal) writeBufferCap() int {
	return int(2*j.opts.MaxGroupBytes) + 64<<10
}

// rotate closes the active generation and starts a new one after base.
// The active generation's last group was fsynced before it was
// acknowledged, so closing it loses nothing. The new generation's
// directory and segment file are made durable (journal directory and
// generation directory fsynced) before rotate returns, that is before any
// record in it can be acknowledged.
func (j *Journal) rotate(base uint64) error {
	c := &j.commit
	closedSize := c.seg.Size()
	err := c.seg.Close()
	c.seg = nil
	if err != nil {
		return fmt.Errorf("journal: close generation %d: %w", c.base, err)
	}
	closedSize = j.trimRecycled(closedSize)
	var sp *spare
	syncParent := j.syncDir
	if s, ok := j.takeSpare(); ok {
		sp = &s
		// openActive fsyncs the journal directory after the spare's
		// rename out of it, which makes the new directory durable too:
		// one fsync fewer while the pipeline waits for the rotation.
		syncParent = func(string) error { return nil }
	}
	g, err := createGeneration(j.dir, base, syncParent)
	if err != nil {
		return err
	}
	if err := j.openActive(g, 0, sp); err != nil {
		return err
	}
	j.mu.Lock()
	j.gens[len(j.gens)-1].size = closedSize
	j.gens = append(j.gens, g)
	j.mu.Unlock()
	c.last = base
	return nil
}

// Append writes rec, which must be a record encoded by package record, and
// returns its LSN once the record is durable (its group written and
// fsynced, and any new file's directory fsynced): Submit, then Wait.
// Errors: ErrClosed, ErrPoisoned (wrapping the cause), ErrTooLarge, an
// invalid record, or ctx's error.
func (j *Journal) Append(ctx context.Context, rec []byte) (uint64, error) {
	p, err := j.Submit(ctx, rec)
	if err != nil {
		return 0, err
	}
	return p.Wait()
}

// Pending is an append Submit queued; Wait tells its outcome.
type Pending struct {
	j *Journal
	r *request
}

// Submit queues rec, which must be a record encoded by package record, for
// the next group and returns without waiting for it to be written: rec is
// copied, so the caller may reuse it at once. Records submitted one after
// the other (by one goroutine, or in any happens-before order) get
// increasing LSNs in that order, so a caller can submit the records of
// one client batch back to back and wait for them together. ctx bounds
// the wait for space and for a queue slot. Errors as Append; a queued
// record is never withdrawn, its outcome comes from Wait.
func (j *Journal) Submit(ctx context.Context, rec []byte) (*Pending, error) {
	// An invalid record would be indistinguishable from disk damage at
	// recovery; refuse it here, where the caller can still be told. Any
	// version the record package reads is taken (verified, not
	// decompressed), as the journal never looks at events.
	if _, err := record.Verify(rec); err != nil {
		return nil, fmt.Errorf("journal: refusing an invalid record: %w", err)
	}
	size := entrySize(len(rec))
	if err := j.admit(ctx, size); err != nil {
		return nil, err
	}
	r := &request{frame: newFrame(rec), size: size, done: make(chan error, 1)}
	if j.tail.limit > 0 {
		// The frame's copy of rec serves the tail cache too: the
		// committer fills in only the header, and the segment's Write
		// reads the frame only until it returns, so these bytes never
		// change.
		r.kept = r.frame[frameHeader:]
	}
	select {
	case j.queue <- r:
		return &Pending{j: j, r: r}, nil
	case <-ctx.Done():
		j.unreserve(size)
		return nil, fmt.Errorf("journal: waiting for a queue slot: %w", ctx.Err())
	case <-j.closing:
		j.unreserve(size)
		return nil, ErrClosed
	}
}

// Wait returns the record's LSN once it is durable, or why it never will
// be. It may be called more than once, from one goroutine at a time.
func (p *Pending) Wait() (uint64, error) {
	if p.r.done == nil {
		return p.r.lsn, p.r.err
	}
	var err error
	select {
	case err = <-p.r.done:
	case <-p.j.stopped:
		// The committer exits only after failing or completing what it
		// took from the queue; a request it never took was not written.
		select {
		case err = <-p.r.done:
		default:
			err = ErrClosed
		}
	}
	if err != nil {
		p.r.lsn = 0
	}
	p.r.done, p.r.err = nil, err
	return p.r.lsn, err
}

// MaxRecordBytes is the largest record a journal with these options
// admits; Submit refuses a larger one with ErrTooLarge. At rest the active
// generation holds less than SegmentBytes (the committer rotates once it
// reaches it) and everything else can be released, so an entry up to
// MaxBytes − (1 + SpareSegments) × SegmentBytes always fits eventually; a
// larger one would wait forever.
func (o Options) MaxRecordBytes() int64 {
	return max(o.entryRoom()-frameHeader-uvarintLen(o.entryRoom()), 0)
}

// entryRoom is the largest entry (entrySize) the journal admits.
func (o Options) entryRoom() int64 { return o.recordBytes() - o.SegmentBytes }

// admit reserves size bytes of journal space, waiting while the journal is
// full.
func (j *Journal) admit(ctx context.Context, size int64) error {
	if size > j.opts.entryRoom() {
		return fmt.Errorf("%w: an entry of %d bytes, at most %d fit (a record of %d: journal.max_bytes − (1 + journal.spare_segments) × journal.segment_bytes − framing)",
			ErrTooLarge, size, j.opts.entryRoom(), j.opts.MaxRecordBytes())
	}
	for {
		j.mu.Lock()
		switch {
		case j.closed:
			j.mu.Unlock()
			return ErrClosed
		case j.poisoned != nil:
			err := j.poisoned
			j.mu.Unlock()
			return fmt.Errorf("%w: %w", ErrPoisoned, err)
		case j.space.used+j.space.aside+size <= j.opts.recordBytes():
			j.space.used += size
			j.mu.Unlock()
			return nil
		case j.space.aside > 0 && time.Since(j.space.asideAt) >= asideRecheck:
			// Full because of what is kept aside: an operator may have
			// deleted it since it was measured.
			j.mu.Unlock()
			j.measureAside()
			continue
		}
		j.space.full = true
		j.space.fullPeriod.Enter(j.log, slog.LevelWarn, "journal full: appends wait until the flusher moves records to the ledger (or, when aside_bytes is not 0, until the damaged-* directories kept aside are deleted)",
			"used_bytes", j.space.used, "aside_bytes", j.space.aside, "record_bytes", j.opts.recordBytes(), "max_bytes", j.opts.MaxBytes)
		freed := j.space.freed
		var recheck <-chan time.Time
		var timer *time.Timer
		if j.space.aside > 0 {
			// Nothing the journal does frees what is kept aside: look
			// again for an operator's deletion while waiting.
			timer = time.NewTimer(asideRecheck)
			recheck = timer.C
		}
		j.mu.Unlock()
		select {
		case <-freed:
		case <-recheck:
		case <-ctx.Done():
			return fmt.Errorf("journal: waiting for space: %w", ctx.Err())
		case <-j.closing:
			return ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// unreserve gives back the space admit reserved for an append that was
// never queued, waking appends that wait for space.
func (j *Journal) unreserve(size int64) { j.freed(size) }

func (j *Journal) fail(group []*request, err error) {
	for _, r := range group {
		r.done <- err
	}
}

// closeSegment closes the active generation's segment, if it is open.
func (j *Journal) closeSegment() {
	if j.commit.seg == nil {
		return
	}
	if err := j.commit.seg.Close(); err != nil {
		j.log.Warn("journal: close segment", "err", err)
	}
	j.commit.seg = nil
}

// Close stops accepting appends, commits those already queued, closes the
// files and waits for the committer and the releaser (a release it
// interrupts is finished by the next Open). It returns the sticky failure,
// if the journal was poisoned. Calling it again returns ErrClosed.
func (j *Journal) Close() error {
	err := ErrClosed
	j.once.Do(func() {
		j.mu.Lock()
		j.closed = true
		j.mu.Unlock()
		close(j.closing)
		<-j.stopped
		<-j.rel.done
		j.mu.Lock()
		err = j.poisoned
		j.mu.Unlock()
	})
	return err
}

// LastLSN is the LSN of the last durable record (or the LSN the journal
// continues after, when it holds none).
func (j *Journal) LastLSN() uint64 { return j.durable.Load() }

// FirstLSN is the LSN of the oldest record still in the journal, or
// LastLSN()+1 when it holds none.
func (j *Journal) FirstLSN() uint64 {
	last := j.durable.Load()
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, g := range j.gens {
		end := last
		if i+1 < len(j.gens) {
			end = j.gens[i+1].base
		}
		if end > g.base && (i+1 == len(j.gens) || g.size > 0) {
			return g.base + 1
		}
	}
	return last + 1
}

// Recovery reports the torn tail Open cut (or, for Reopen, what the failed
// instance wrote but never fsynced), or nil.
func (j *Journal) Recovery() *Repair { return j.repair }

// Err returns the failure that poisoned the journal, or nil. A poisoned
// journal acknowledges nothing more; what it made durable stays readable
// (LastLSN, Recent, Reader) until it is closed, and Reopen resumes. Safe
// for concurrent use.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.poisoned
}

// Waiting reports why appends wait for space, or "" when they do not:
// the journal is full (the flusher has not released space yet). A failed
// journal is Err. Safe for concurrent use.
func (j *Journal) Waiting() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.space.full {
		return "journal full: waiting for the flusher to move records to the ledger"
	}
	return ""
}

// UsedBytes is the journal's size on disk, plus the bytes of appends
// admitted but not yet written, less the stale rest of a recycled active
// file (those bytes are overwritten as the journal writes).
func (j *Journal) UsedBytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.space.used + j.space.aside
	for _, sp := range j.space.spares {
		n += sp.size
	}
	return n
}

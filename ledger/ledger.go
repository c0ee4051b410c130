package ledger

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/record"
)

// Options configure a ledger; they mirror the [ledger] configuration.
type Options struct {
	// SegmentBytes is the size at which the open segment is sealed and a new
	// one started (a multiple of BlockSize).
	SegmentBytes int64
	// MaxBytes bounds the ledger on disk; Append refuses records above it
	// with ErrFull (0: no bound). It must leave room for at least two
	// segments, and for two of the largest records the writer is given.
	MaxBytes int64
	// Retention keeps drained segments this long after every cursor passed
	// them; 0 deletes them at the next Retain. A full ledger deletes
	// drained segments sooner: new records win over drained ones.
	Retention time.Duration
	// MaxLag bounds, per cursor name, the bytes a cursor may keep on disk
	// behind it when the ledger is full (absent or 0: no bound). A full
	// ledger first deletes drained segments; when that is not enough, it
	// deletes the oldest sealed segments that only cursors further behind
	// than their MaxLag (BytesAfter) still need, as few as make room,
	// logging each at ERROR: those cursors' outputs lose the records
	// (Reader reports a [Skip]) rather than stopping ingest for every
	// output. Without it a full ledger refuses records ([ErrFull]).
	MaxLag map[string]int64
	// ReadCacheBytes bounds the memory of the read cache the ledger's
	// Readers share, so that outputs reading the same records read them
	// from the device once (O_DIRECT has no page cache): whole windows of
	// 1 MiB, least recently used first out. 0 disables it; the
	// configuration's default is [DefaultReadCacheBytes].
	ReadCacheBytes int64
	// DirectIO reads and writes segments with O_DIRECT.
	DirectIO bool
	// Compression is how Append compresses records: each record's
	// events become one block of its codec (record format version 2),
	// so the ledger holds many times the events in the same bytes. The
	// zero value stores records as given. Readers decode either version, so a
	// ledger may hold both (a change of this option applies to the
	// records appended after it).
	Compression record.Compression
	// Covered reports whether the journal still holds lsn and every record
	// after it (journal first LSN ≤ lsn). Open cuts a torn tail of the open
	// segment only when it does; nil means nothing is covered (any cut is
	// reported as corruption). A torn write can also vanish whole (the file
	// then ends cleanly at a block boundary); the ledger cannot tell that
	// from "never written": the server's check that the journal starts at
	// most at LastLSN()+1 catches it.
	Covered func(lsn uint64) bool
	// Logger receives repairs and failures.
	Logger *slog.Logger

	hooks hooks
}

// hooks are per-instance seams for tests.
type hooks struct {
	fdatasync func(*os.File) error
	// writeAt replaces the writer's writes of buffered frames (writeAt).
	writeAt func(f *os.File, buf []byte, off int64) error
	// openDevice replaces the O_DIRECT open with which a Reader asks the
	// device itself whether it reads (openDevice).
	openDevice func(path string) (*os.File, error)
	syncDir    func(string) error
	now        func() time.Time
}

// writeBuffer is the size of the writer's aligned buffer: records are
// gathered here and written with one pwrite per Sync (or per full buffer).
const writeBuffer = 1 << 20

// segment is one segment file.
type segment struct {
	first uint64 // LSN of its first record (its name)
	path  string
	// size is the bytes on disk of a sealed segment; of the open one, where
	// its synced records end (Sync keeps it with durable).
	size int64
	// events is the number of events its records hold, counted by the
	// writer (published at seal) and by the scan of the open segment at
	// Open; -1 when unknown (a segment sealed before this instance).
	events int64
	// index is the open segment's sparse index up to its synced records,
	// published by Sync, so that a Reader seeks in the open segment as in a
	// sealed one (whose index is its .idx file; nil here). Entries are only
	// ever appended: a copy of the slice stays valid.
	index []indexEntry
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

// Ledger is an open ledger. Append and Sync belong to one writer goroutine
// (the flusher); readers and the accessors may run concurrently with it.
type Ledger struct {
	dir       string
	opts      Options
	log       *slog.Logger
	stream    string
	fdatasync func(*os.File) error
	syncDir   func(string) error
	repair    *Repair

	// openBytes is the open segment's bytes (written and buffered), kept
	// by the writer and read by UsedBytes.
	openBytes atomic.Int64
	// cache is the Readers' shared read cache (nil: none); deviceRead the
	// bytes Readers read from segment files (cache.go).
	cache      *readCache
	deviceRead atomic.Int64

	// Writer state, owned by the writer goroutine.
	f        *os.File // the open segment
	writeOff int64    // where the next write starts: a block boundary
	buf      []byte   // aligned; frames not yet written
	bufLen   int
	bufFirst uint64       // LSN of the first frame in buf
	index    []indexEntry // sparse index of the open segment, written at seal
	last     uint64       // last appended LSN, buffered or not
	events   int64        // events appended to the open segment (-1: unknown)
	dirDirty bool         // a segment file was created since the last Sync
	// retainFailing is set while deleting drained segments for room fails
	// (logged once).
	retainFailing bool
	// zc compresses records (Options.Compression), made at the first
	// Append; zbuf holds the record it compressed last.
	zc   *record.Compressor
	zbuf []byte

	// rawBytes and storedBytes count the records appended since Open,
	// uncompressed and as stored (Compression).
	rawBytes, storedBytes atomic.Int64

	cursorMu sync.Mutex // serializes cursor file updates
	retainMu sync.Mutex // serializes retention (Retain, and Append when full)
	asideMu  sync.Mutex // serializes measures of the files kept aside (aside.go)

	mu        sync.Mutex // guards the fields below
	cursors   map[string]uint64
	drainedAt map[uint64]time.Time // segment first LSN → when Retain first saw it drained
	skipped   map[uint64]skipped   // ranges deleted for max_lag, by first LSN (retention.go)
	waiting   string               // why the writer waits, "" when it does not
	full      waitlog.Episode      // the ledger is full (waiting is set)
	segs      []segment            // oldest first; the last is open
	durable   uint64               // last LSN made durable by Sync
	aside     int64                // bytes of the files kept aside (aside.go)
	asideAt   time.Time            // when aside was measured
	advanced  chan struct{}
	poisoned  error
	closed    bool
}

// Repair describes a torn tail Open cut from the open segment.
type Repair struct {
	Segment  string
	Offset   int64  // where the damage began
	CutAt    int64  // the new end of the file (next write offset)
	FirstLSN uint64 // first LSN cut (the journal still had it)
	Reason   string
	// Damage is set when the cut was not a torn write but damage in the
	// middle of the segment (a media error): a complete later write
	// followed it, so the damaged bytes had been synced. The records cut
	// are replayed from the journal all the same.
	Damage bool
}

// laterWriteAfter reports whether a complete write follows the damage at
// offset off (expected LSN lsn) in the segment f: valid frames after it,
// with padding between two of them. Only the last write can be torn (each
// write starts after the previous one was fdatasynced), so damage followed
// by a later write is damage to synced bytes.
func laterWriteAfter(f *os.File, path string, off int64, lsn uint64) bool {
	sc := newSegScanner(f, path, lsn, off).withResync(0)
	end := int64(-1) // end of the previous valid frame
	for range 2 {
		for sc.nextFrame() {
			if end >= 0 && sc.recOff != end {
				return true
			}
			end = sc.recOff + frameSize(len(sc.rec))
		}
		if sc.takeSkipped() == nil {
			break
		}
	}
	return false
}

// Open opens (creating if needed) the ledger in dir, recovering the open
// segment's tail (doc.go).
func Open(dir string, opts Options) (*Ledger, error) { return open(dir, opts, nil) }

// Reopen opens a fresh instance of l's directory, with l's options but
// covered as Options.Covered (the journal has released records since l was
// opened), after l failed ([Ledger.Err]) and was closed: after a failed
// write or fdatasync only a fresh open resumes (docs/design.md, §3).
//
// Unlike Open, Reopen keeps nothing of the open segment after l's LastLSN,
// however intact it reads back: those bytes were written but no fdatasync
// of them succeeded, and a failed fdatasync may drop dirty pages and let a
// later one succeed (fsyncgate), so what reads back is no proof. They are
// cut at the block boundary after the last synced record (bytes never
// synced; synced bytes are never rewritten) and the writer appends them
// again from the journal, which still holds them: it releases only what a
// successful Sync covered. Records of a segment that was sealed (fdatasync
// succeeded) before the failure are kept. Damage in the synced bytes of
// the open segment follows the rule Open follows (doc.go), with what l
// knows besides: where its synced records end. Reopen does not probe
// O_DIRECT again: the file system is the same, and the probe needs free
// space.
//
// When covered says the journal no longer holds the first LSN l appended
// after its last Sync, Reopen changes nothing and returns an
// [*UnsyncedError]: those records were acknowledged (the journal hands on
// only what it fsynced) and are in neither store for sure, whether their
// bytes reached the file or not.
func (l *Ledger) Reopen(covered func(lsn uint64) bool) (*Ledger, error) {
	l.mu.Lock()
	closed := l.closed
	// l.last is the writer's, and the writer (the caller) has stopped.
	prior := &priorSync{lsn: l.durable, appended: l.last}
	if n := len(l.segs); n > 0 {
		prior.segFirst, prior.segBytes = l.segs[n-1].first, l.segs[n-1].size
	}
	l.mu.Unlock()
	if !closed {
		return nil, fmt.Errorf("ledger: reopen %s: close the failed instance first", l.dir)
	}
	opts := l.opts
	opts.Covered = covered
	return open(l.dir, opts, prior)
}

// priorSync is what a failed instance had made durable, for Reopen: the
// last LSN it synced, and how many bytes of its open segment (the one whose
// first LSN is segFirst) held synced records then; and the last LSN it
// appended, synced or not.
type priorSync struct {
	lsn      uint64
	segFirst uint64
	segBytes int64
	appended uint64
}

// open opens the ledger in dir. prior is nil for Open; for Reopen, what the
// failed instance had synced.
func open(dir string, opts Options, prior *priorSync) (*Ledger, error) {
	if opts.SegmentBytes <= 0 || opts.SegmentBytes%BlockSize != 0 {
		return nil, fmt.Errorf("ledger: segment bytes %d must be a positive multiple of %d", opts.SegmentBytes, BlockSize)
	}
	if opts.MaxBytes > 0 && opts.MaxBytes < 2*opts.SegmentBytes {
		return nil, fmt.Errorf("ledger: max bytes %d must be at least 2 × segment bytes %d", opts.MaxBytes, opts.SegmentBytes)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Ledger{dir: dir, opts: opts, log: opts.Logger, fdatasync: opts.hooks.fdatasync, syncDir: opts.hooks.syncDir,
		buf: alignedBuffer(writeBuffer), advanced: make(chan struct{}),
		drainedAt: map[uint64]time.Time{}, skipped: map[uint64]skipped{},
		cache: newReadCache(opts.ReadCacheBytes)}
	// The caller's map may change after Open; Reopen keeps this copy.
	l.opts.MaxLag = maps.Clone(opts.MaxLag)
	for name, n := range opts.MaxLag {
		if n < 0 {
			return nil, fmt.Errorf("ledger: max lag of cursor %q is %d bytes: use 0 (no bound) or more", name, n)
		}
	}
	if l.fdatasync == nil {
		l.fdatasync = fdatasync
	}
	if l.syncDir == nil {
		l.syncDir = fsutil.SyncDir
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if l.stream, err = l.loadStream(len(segs) > 0); err != nil {
		return nil, err
	}
	if opts.DirectIO && prior == nil {
		if err := probeDirectIO(dir); err != nil {
			return nil, err
		}
	}
	if l.cursors, err = l.loadCursors(); err != nil {
		return nil, err
	}
	if err := l.measureAside(); err != nil {
		return nil, err
	}
	l.segs = segs
	if len(segs) > 0 {
		if err := l.recoverOpenSegment(prior); err != nil {
			return nil, err
		}
		// The open segment's directory entry may never have been fsynced:
		// a crash or a failure came between its creation and the Sync that
		// fsyncs the directory. The first Sync does it, before the journal
		// releases anything this segment holds.
		l.dirDirty = true
	}
	l.durable = l.last
	l.openBytes.Store(l.writeOff)
	return l, nil
}

// listSegments returns the segments in dir, oldest first.
func listSegments(dir string) ([]segment, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: list %s: %w", dir, err)
	}
	var segs []segment
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil || len(name) != 20+len(segmentSuffix) || first == 0 {
			return nil, fmt.Errorf("ledger: %s: unexpected file %q: segment files are named <20-digit first LSN>%s", dir, name, segmentSuffix)
		}
		info, err := de.Info()
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		segs = append(segs, segment{first: first, path: filepath.Join(dir, name), size: info.Size(), events: -1})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmpUint(a.first, b.first) })
	return segs, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// loadStream reads the stream id, creating it for a new ledger. It is
// written once, atomically (temp file, fsync, rename, directory fsync), so
// that it is either absent or whole.
func (l *Ledger) loadStream(hasSegments bool) (string, error) {
	path := filepath.Join(l.dir, streamFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id, perr := uuid.Parse(strings.TrimSpace(string(b)))
		if perr != nil {
			return "", fmt.Errorf("ledger: stream id in %s: %w", path, perr)
		}
		return id.String(), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("ledger: %w", err)
	}
	if hasSegments {
		// Making up a new id would give stored events new document ids and
		// duplicate them in Elasticsearch.
		return "", fmt.Errorf("ledger: %s has segments but no %s file: restore it (document ids depend on it) rather than starting a new stream over old data", l.dir, streamFile)
	}
	id := uuid.NewString()
	if err := writeFileAtomic(path, []byte(id+"\n"), l.syncDir); err != nil {
		return "", err
	}
	l.log.Info("ledger: created", "dir", l.dir, "stream_id", id)
	return id, nil
}

// writeFileAtomic replaces path with data so that after a crash path holds
// either its old content or data, never a mix.
func writeFileAtomic(path string, data []byte, syncDir func(string) error) error {
	// The content must be durable before the rename publishes it.
	if err := replaceFile(path, data, fsutil.Fsync); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil { // the rename itself
		return fmt.Errorf("ledger: write %s: %w", path, err)
	}
	return nil
}

// replaceFile writes data aside and renames it over path, so that nobody
// reading path sees a half-written file. sync, when not nil, runs on the
// file before the rename.
func replaceFile(path string, data []byte, sync func(*os.File) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, err = f.Write(data)
	if err == nil && sync != nil {
		err = sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ledger: write %s: %w", path, err)
	}
	return nil
}

// recoverOpenSegment scans the newest segment up to the first record it
// does not keep, settles what follows with settleOpenDamage (one rule for
// Open and Reopen), and opens the segment for writing after its last
// record. prior (Reopen only) is what the failed instance had synced:
// records after it and after the segment's first LSN - 1 are not kept
// (see Reopen).
func (l *Ledger) recoverOpenSegment(prior *priorSync) error {
	seg := &l.segs[len(l.segs)-1]
	f, err := openSegmentFile(seg.path, os.O_RDWR, l.opts.DirectIO)
	if err != nil {
		return fmt.Errorf("ledger: open %s: %w", seg.path, err)
	}
	// A segment that was sealed has an index; an open one must not, or a
	// reader could seek with entries for bytes that are rewritten below.
	if err := os.Remove(indexPath(seg.path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return fmt.Errorf("ledger: remove the index of the open segment: %w", err)
	}
	keep := ^uint64(0)     // keep records up to this LSN
	syncedEnd := int64(-1) // the segment's bytes known synced; -1: unknown (Open)
	if prior != nil {
		if prior.segFirst != seg.first {
			f.Close()
			return fmt.Errorf("ledger: reopen %s: the newest segment is %s, but the failed instance was writing the one of LSN %d",
				l.dir, seg.path, prior.segFirst)
		}
		// A newest segment exists only once the one before it was sealed,
		// and sealing fdatasyncs: what precedes seg.first is synced.
		keep = max(prior.lsn, seg.first-1)
		syncedEnd = prior.segBytes
	}
	sc := newSegScanner(f, seg.path, seg.first, 0)
	var end int64 // just past the last valid frame kept
	last := seg.first - 1
	unsynced := uint64(0) // first LSN not kept for never having been synced
	l.events = 0
	for sc.nextFrame() {
		if sc.lsn > keep {
			unsynced = sc.lsn
			break
		}
		end = sc.recOff + frameSize(len(sc.rec))
		last = sc.lsn
		l.events += int64(sc.hdr.Count)
		l.index = addIndexEntry(l.index, sc.lsn, sc.recOff)
	}
	if sc.ioErr != nil {
		f.Close()
		return sc.ioErr
	}
	if prior != nil && (prior.appended > keep || seg.size > syncedEnd) && !l.covered(keep+1) {
		// Records handed to the failed instance after its last Sync, which
		// the journal no longer holds: the refusal comes before anything
		// is cut, so that a restart (Open) or ledgerctl accept-loss finds
		// the bytes as the failure left them.
		f.Close()
		return &UnsyncedError{Segment: seg.path, Offset: syncedEnd, FirstLSN: keep + 1, LastLSN: max(prior.appended, unsynced, keep+1)}
	}
	l.last = last
	l.writeOff = alignUp(end)
	stop := sc.damage
	if unsynced > 0 {
		// The write that held unsynced began at the block boundary after
		// the last synced record.
		stop = &CorruptionError{Segment: seg.path, Offset: l.writeOff, LSN: unsynced, Err: errNeverSynced}
	}
	if stop != nil {
		seal, err := l.settleOpenDamage(f, seg, stop, keep, syncedEnd)
		if err != nil {
			f.Close()
			return err
		}
		if seal {
			return l.sealDamaged(f, seg, stop, keep, syncedEnd)
		}
	}
	if seg.size > l.writeOff {
		// Bytes past the last write (a torn extension, or the cut tail) go,
		// so nothing stale can follow the next write.
		if err := f.Truncate(l.writeOff); err == nil {
			err = l.datasync(f)
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("ledger: cut %s at %d: %w", seg.path, l.writeOff, err)
		}
	}
	// The open segment's size is where its synced records end, and its
	// index theirs, as Sync keeps them: readers bound their search for the
	// next valid frame there, and seek with the index.
	seg.size, seg.index = l.writeOff, l.index
	l.f = f
	return nil
}

// errNeverSynced: records the failed instance wrote but never synced.
var errNeverSynced = errors.New("written before the ledger failed, never synced")

// covered reports whether the journal still holds lsn and every record
// after it (Options.Covered; nil covers nothing).
func (l *Ledger) covered(lsn uint64) bool { return l.opts.Covered != nil && l.opts.Covered(lsn) }

// settleOpenDamage is the rule, for Open and Reopen alike, for the open
// segment's valid records ending at stop (the offset and the first LSN not
// kept) before the file does. It cuts the segment there (l.writeOff,
// l.repair) or says that it must be sealed as it is; an error when
// neither may be done. keep and syncedEnd are what Reopen knows of the
// failed instance (the last LSN and the segment bytes it synced); for Open
// they are "everything" and -1 (unknown).
//
//   - Records never synced (stop.LSN > keep: Reopen only) are cut: the
//     journal holds them (recoverOpenSegment refused before this
//     otherwise, with an *UnsyncedError).
//   - Otherwise the bytes at stop may have been synced: Reopen knows they
//     were; Open knows it when a later complete write follows them (only
//     the last write can be torn), and cannot tell a torn last write from
//     damage. When the journal still holds stop.LSN, the segment is cut at
//     the block boundary after the damage and the records are replayed,
//     logged as damage (ERROR) when the bytes were synced, as a torn tail
//     (WARN) when not.
//   - When it does not, those records are lost. If the segment's last
//     record is known — a later complete write follows the damage, or
//     Reopen knows the last LSN synced — the segment is sealed as it is
//     and readers pass the damaged range as in any sealed segment (seal is
//     true). If it is not known, no new segment can start without risking
//     an LSN that was used: a *CorruptionError (Open refuses to start;
//     SealOpenSegment, through ledgerctl accept-loss, accepts the loss).
func (l *Ledger) settleOpenDamage(f *os.File, seg *segment, stop *CorruptionError, keep uint64, syncedEnd int64) (seal bool, err error) {
	covered := l.covered(stop.LSN)
	if stop.LSN > keep {
		// Cutting at l.writeOff, the block boundary after the last synced
		// record, cuts no synced byte. The journal holds stop.LSN: it held
		// keep+1 (recoverOpenSegment).
		l.repair = &Repair{Segment: seg.path, Offset: l.writeOff, CutAt: l.writeOff, FirstLSN: stop.LSN, Reason: errNeverSynced.Error()}
		l.log.Warn("ledger: cut records written before the failure but never synced (the journal still holds them)",
			"segment", seg.path, "cut_at", l.writeOff, "first_lsn_cut", stop.LSN)
		return false, nil
	}
	synced := syncedEnd >= 0 || laterWriteAfter(f, seg.path, stop.Offset, stop.LSN)
	if !covered {
		if synced {
			return true, nil
		}
		stop.Err = fmt.Errorf("%w; the journal no longer holds LSN %d, so these records cannot be replayed", stop.Err, stop.LSN)
		return false, stop
	}
	l.writeOff = alignUp(stop.Offset)
	l.repair = &Repair{Segment: seg.path, Offset: stop.Offset, CutAt: l.writeOff, FirstLSN: stop.LSN, Reason: stop.Err.Error(), Damage: synced}
	if synced {
		l.log.Error("ledger: damage in the middle of the open segment (synced bytes changed: a media error); the records from the damage on are cut and replayed from the journal, which still holds them",
			"segment", seg.path, "offset", stop.Offset, "cut_at", l.writeOff, "first_lsn_cut", stop.LSN, "reason", stop.Err,
			"inspect", fmt.Sprintf("check the device (dmesg, SMART); ledgerctl -ledger %s verify", l.dir))
	} else {
		l.log.Warn("ledger: cut torn tail of the open segment (the journal still holds it)",
			"segment", seg.path, "offset", stop.Offset, "cut_at", l.writeOff, "first_lsn_cut", stop.LSN, "reason", stop.Err)
	}
	return false, nil
}

// sealDamaged handles damage d in synced bytes of the open segment f whose
// records the journal no longer holds, so that they cannot be replayed,
// while the segment's last record is known (settleOpenDamage). The segment
// is sealed as it is, so that readers pass the damaged range as in any
// sealed segment (SkipDamage, Quarantine) and deliver the rest, and a new
// open segment starts after its last record.
//
// For Open (syncedEnd < 0) the last record is the last valid frame after
// the damage. For Reopen it is keep, the last LSN the failed instance
// synced, whose records end within the first syncedEnd bytes: what follows
// them was written but never synced, and is cut (no synced byte changes),
// so that no reader of the sealed segment meets a record after keep; the
// journal holds those records (recoverOpenSegment refused before this
// otherwise, with an *UnsyncedError), as for any never-synced write.
func (l *Ledger) sealDamaged(f *os.File, seg *segment, d *CorruptionError, keep uint64, syncedEnd int64) error {
	last := d.LSN - 1
	if syncedEnd < 0 {
		sc := newSegScanner(f, seg.path, d.LSN, d.Offset).withResync(0)
		for {
			for sc.nextFrame() {
				last = sc.lsn
			}
			if sc.takeSkipped() == nil {
				break
			}
		}
		if sc.ioErr != nil {
			f.Close()
			return sc.ioErr
		}
	} else {
		last = keep
		if seg.size > syncedEnd {
			err := f.Truncate(syncedEnd)
			if err == nil {
				err = l.datasync(f)
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("ledger: cut %s at %d: %w", seg.path, syncedEnd, err)
			}
			seg.size = syncedEnd
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ledger: close %s: %w", seg.path, err)
	}
	l.log.Error("ledger: damage in the middle of the open segment (synced bytes changed: a media error), and the journal no longer holds those records: the segment is sealed as it is and a new one started; the output skips the damaged range (quarantined, logged with its LSNs) and delivers every other record",
		"segment", seg.path, "offset", d.Offset, "first_damaged_lsn", d.LSN, "segment_last_lsn", last, "reason", d.Err,
		"inspect", fmt.Sprintf("check the device (dmesg, SMART); ledgerctl -ledger %s verify", l.dir))
	l.last, l.index = last, nil
	seg.events = -1 // its damaged range's events are unknown
	return l.startSegment(last + 1)
}

// StreamID is the ledger's stream id (a UUID), part of every document id.
func (l *Ledger) StreamID() string { return l.stream }

// Recovery reports the torn tail Open cut, or nil.
func (l *Ledger) Recovery() *Repair { return l.repair }

// LastLSN is the last LSN made durable by Sync (0 for an empty ledger).
func (l *Ledger) LastLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

// AppendedLSN is the last LSN appended, synced or not: the next Append
// must carry AppendedLSN()+1. It is ahead of LastLSN while appended
// records wait for Sync — for instance when an Append waiting for space
// gave up, after others of the same flush went in. Only the goroutine that
// appends may call it.
func (l *Ledger) AppendedLSN() uint64 { return l.last }

// FirstLSN is the LSN of the oldest retained record (LastLSN()+1 when the
// ledger holds none).
func (l *Ledger) FirstLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) == 0 {
		return l.durable + 1
	}
	return min(l.segs[0].first, l.durable+1)
}

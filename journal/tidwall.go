package journal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"unsafe"

	"github.com/tidwall/wal"
	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/fsutil"
)

// This file is the journal's only contact with tidwall/wal (v1.2.1), the
// journal's segment log: the rest of the journal writes the active
// generation through [segmentLog] and knows nothing of tidwall's types,
// its entry indexes or its layout. It also holds the workarounds for
// tidwall's traps, which reach unexported fields with reflect and unsafe;
// TestTidwallLayout, TestTidwallWritesIntoReplacedFile and
// TestTidwallContinuesAdoptedFile guard them, so
// that a tidwall upgrade that changes the layout fails a test instead of
// silently leaking, slowing down or writing elsewhere. docs/design.md
// (§4, "tidwall/wal workarounds") has what each one is measured to earn.

// segmentFile is the name of a generation's segment file in its directory:
// tidwall names segments by their first index, and a log opened with a
// segment size it never reaches has exactly one, starting at index 1.
const segmentFile = "00000000000000000001"

// segmentLog is the active generation's segment as the committer uses it.
// Write and Close are called by the committer only; Sync by the syncer,
// concurrently with Write (it makes durable at least everything written
// before it began).
type segmentLog interface {
	// Write appends frames, each a whole entry's contents, after the
	// segment's last entry, into the page cache. It reads them only
	// until it returns.
	Write(frames [][]byte) error
	// Sync makes everything written before it began durable.
	Sync() error
	// Close closes the segment's files, even after a failure.
	Close() error
	// Size is the bytes the segment's entries take in its file: where the
	// next Write begins.
	Size() int64
}

// segmentOptions are the workarounds openSegment applies, and what they
// need.
type segmentOptions struct {
	// bufferCap is the capacity of tidwall's in-memory copy of the segment
	// kept between writes (forgetWritten); larger buffers are dropped.
	bufferCap int
	// buffer hands that copy's buffer from a closed segment to the next
	// one, which starts with it (presize) when it is big enough: a
	// rotation then allocates nothing on the ack path.
	buffer *[]byte
	// noForget, noPresize, tidwallSync: leave a workaround out
	// (BenchmarkWorkarounds measures what each earns).
	noForget    bool
	noPresize   bool
	tidwallSync bool
	// fdatasync, when set, replaces the system call of Sync (tests: a
	// file system that shuts down while a sync runs); Sync still confirms
	// it (internal/fsutil).
	fdatasync func(*os.File) error
}

// tidwallOptions open a generation's log.
var tidwallOptions = &wal.Options{
	NoSync:           true,        // the committer fsyncs once per group
	SegmentSize:      math.MaxInt, // never cycle: one segment per generation
	SegmentCacheSize: 1,
	NoCopy:           true,
	DirPerms:         0o750,
	FilePerms:        0o640,
}

// openingDir is a scratch directory in the journal directory, where
// openUnread has tidwall create an empty log; a crash can leave it
// behind, and the next openUnread removes it.
const openingDir = "opening"

// openUnread opens generation g, whose segment holds entries entries
// (verified by repairTail), for writing after them without tidwall reading
// the segment. tidwall's Open reads a log's last segment whole into memory
// (to serve reads the journal never makes; forgetWritten would drop it at
// once): up to segment_bytes, at every start and at every Reopen, which
// runs while logpond serves. So tidwall opens an empty log in a scratch
// directory instead and is handed a descriptor of g's segment, positioned
// at its end, with its last index set to entries: the state in which
// forgetWritten leaves a log after every write. It returns nil, nil when
// tidwall's layout changed; the caller then opens the generation the
// plain way.
func openUnread(g generation, entries uint64, logger *slog.Logger) (*wal.Log, error) {
	scratch := filepath.Join(filepath.Dir(g.dir), openingDir)
	if err := os.RemoveAll(scratch); err != nil {
		return nil, err
	}
	w, err := wal.Open(scratch, tidwallOptions)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*wal.Log, error) {
		w.Close()
		os.RemoveAll(scratch)
		return nil, err
	}
	f, err := os.OpenFile(g.segment(), os.O_WRONLY, 0)
	if err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return fail(err)
	}
	created, ok := adoptSegmentFile(w, f, entries)
	if !ok {
		f.Close()
		logger.Warn("journal: cannot open the segment without tidwall reading it whole (its layout changed): opening it holds up to segment_bytes", "file", g.segment())
		return fail(nil)
	}
	if err := created.Close(); err != nil {
		logger.Warn("journal: close the scratch file tidwall created", "dir", scratch, "err", err)
	}
	if err := os.RemoveAll(scratch); err != nil {
		logger.Warn("journal: remove the scratch directory tidwall opened in", "dir", scratch, "err", err)
	}
	return w, nil
}

// tidwallSegment is a generation's tidwall log, opened for writing.
type tidwallSegment struct {
	log    *wal.Log
	sync   *os.File // the syncer's own descriptor (Sync)
	opts   segmentOptions
	logger *slog.Logger
	batch  wal.Batch
	index  uint64 // tidwall's index of the last entry
	size   int64
}

// openSegment opens generation g's segment for writing after its entries,
// of which the journal's verification counted entries: tidwall is told
// that count (openUnread), or, where it reads the segment itself, must
// count the same. When recycle names a file and g is new, the segment is that
// file, renamed over the one tidwall creates, and g writes into it from
// offset 0. spareErr, wrapping errSpareUnused, says the file could not be
// used and is still where it was; the segment is then a new file.
func openSegment(g generation, entries uint64, recycle string, opts segmentOptions, logger *slog.Logger) (seg *tidwallSegment, spareErr, err error) {
	var w *wal.Log
	if entries > 0 {
		if w, err = openUnread(g, entries, logger); err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", g.dir, err)
		}
	}
	if w == nil {
		if w, err = wal.Open(g.dir, tidwallOptions); err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", g.dir, err)
		}
	}
	s := &tidwallSegment{log: w, opts: opts, logger: logger}
	fail := func(err error) (*tidwallSegment, error, error) {
		s.Close()
		return nil, nil, err
	}
	if s.index, err = w.LastIndex(); err != nil {
		return fail(fmt.Errorf("open %s: %w", g.dir, err))
	}
	if s.index != entries {
		return fail(fmt.Errorf("open %s: tidwall reads %d entries, verification counted %d", g.dir, s.index, entries))
	}
	if recycle != "" {
		if spareErr, err = recycleInto(w, g, recycle, logger); err != nil {
			return fail(err)
		}
	}
	// tidwall keeps what it reads and writes of the segment in memory
	// (all of a segment it read itself, when openUnread could not be
	// used); the journal never reads through tidwall, so that copy goes
	// at once.
	if opts.noForget {
		// Left as tidwall has it.
	} else if !forgetWritten(w, opts.bufferCap) {
		logger.Warn("journal: cannot drop tidwall's in-memory copy of the segment (its layout changed): it holds up to segment_bytes")
	} else if s.index == 0 && !opts.noPresize {
		var reuse []byte
		if opts.buffer != nil {
			reuse, *opts.buffer = *opts.buffer, nil
		}
		presize(w, opts.bufferCap, reuse)
	}
	if recycle == "" || spareErr != nil {
		st, err := os.Stat(g.segment())
		if err != nil {
			return fail(fmt.Errorf("open %s: %w", g.dir, err))
		}
		s.size = st.Size()
	}
	if !opts.tidwallSync {
		// Opened before anything is written through tidwall's descriptor,
		// so that writeback errors reach it (Sync); for writing, so that
		// Sync confirms with a write of nothing, not a second fdatasync
		// (internal/fsutil). Nothing is ever written through it.
		if s.sync, err = os.OpenFile(g.segment(), os.O_WRONLY, 0); err != nil {
			return fail(fmt.Errorf("open %s: %w", g.dir, err))
		}
	}
	return s, spareErr, nil
}

// Write writes frames with one tidwall WriteBatch, then drops tidwall's
// in-memory copy of them (forgetWritten).
func (s *tidwallSegment) Write(frames [][]byte) error {
	s.batch.Clear()
	var bytes int64
	for i, f := range frames {
		s.batch.Write(s.index+uint64(i)+1, f)
		bytes += uvarintLen(int64(len(f))) + int64(len(f)) // tidwall's entry: uvarint length, then the bytes
	}
	if err := s.log.WriteBatch(&s.batch); err != nil {
		return err
	}
	s.index += uint64(len(frames))
	s.size += bytes
	// tidwall keeps what it wrote in memory, for reads the journal never
	// makes through it: keep one group's buffer, not the segment.
	if !s.opts.noForget {
		forgetWritten(s.log, s.opts.bufferCap)
	}
	if bytes > int64(s.opts.bufferCap) {
		s.batch = wal.Batch{} // an outsized group's buffer goes with it
	}
	return nil
}

// Size implements segmentLog.
func (s *tidwallSegment) Size() int64 { return s.size }

// Sync fdatasyncs the segment through a descriptor of its own. tidwall's
// Sync holds the log's mutex for the whole fsync, which would keep the
// committer from writing the next group; the kernel flushes a file's dirty
// pages whichever descriptor asks, and a descriptor opened before the
// writes is told of any writeback error (errseq), so this one is as good
// as tidwall's own.
//
// A successful fdatasync is then confirmed (internal/fsutil): one that
// overlapped a shutdown of the file system, or an abort of its journal,
// can return success although the segment's new size never reached the
// disk, and the syncer acknowledges every record the sync covered.
func (s *tidwallSegment) Sync() error {
	if s.sync == nil {
		if err := s.log.Sync(); err != nil {
			return err
		}
		if f, ok := tidwallFile(s.log); ok {
			return fsutil.Confirm(f)
		}
		return nil
	}
	sync := s.opts.fdatasync
	if sync == nil {
		sync = func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
	}
	if err := sync(s.sync); err != nil {
		return fmt.Errorf("fdatasync %s: %w", s.sync.Name(), err)
	}
	return fsutil.Confirm(s.sync)
}

// Close closes the segment's files. Its in-memory buffer goes to
// opts.buffer, for the next generation. tidwall's Close fsyncs the segment
// first and returns that error without closing the file, so after an I/O
// error (EIO, a shut-down file system) the descriptor would leak for the
// life of the process and the device could not be unmounted: Close then
// closes tidwall's file itself.
func (s *tidwallSegment) Close() error {
	if s.opts.buffer != nil {
		if ebuf, ok := tailBuffer(s.log); ok {
			*s.opts.buffer = ebuf.Bytes()
		}
	}
	err := s.log.Close()
	if errors.Is(err, wal.ErrClosed) {
		err = nil
	} else if err != nil {
		if f, ok := tidwallFile(s.log); !ok {
			s.logger.Error("journal: cannot close the segment file of a failed tidwall log: its layout changed")
		} else if cerr := f.Close(); cerr != nil {
			s.logger.Warn("journal: close segment after failure", "err", cerr)
		}
	}
	if s.sync != nil {
		if cerr := s.sync.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// recycleInto makes the new, empty log w of generation g write into the
// file at path: it is renamed over the empty segment file tidwall created,
// and tidwall is handed a descriptor of it (it writes from offset 0). The
// caller fsyncs both directories of the rename before anything in g can be
// acknowledged. spareErr (wrapping errSpareUnused) means nothing changed
// and the file is still at path; any other error leaves w unusable.
//
// tidwall creates a new log's segment with O_TRUNC and writes it
// sequentially through one descriptor without ever reading it back, so the
// only way to have it overwrite a recycled file is to hand it that file's
// descriptor.
func recycleInto(w *wal.Log, g generation, path string, logger *slog.Logger) (spareErr, err error) {
	// The rename below cannot be undone once tidwall's file is gone: check
	// first that tidwall can be handed another one.
	if !canReplaceSegmentFile(w) {
		return fmt.Errorf("%w: %s: tidwall's layout changed", errSpareUnused, path), nil
	}
	if err := os.Rename(path, g.segment()); err != nil {
		return fmt.Errorf("%w: %w", errSpareUnused, err), nil
	}
	f, err := os.OpenFile(g.segment(), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("recycle %s: %w", path, err)
	}
	created, ok := replaceEmptySegmentFile(w, f)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("recycle %s: tidwall refused the file", path)
	}
	if err := created.Close(); err != nil {
		logger.Warn("journal: close the segment file tidwall created", "file", g.segment(), "err", err)
	}
	return nil, nil
}

// errSpareUnused: a spare segment file could not be used and is unchanged.
var errSpareUnused = errors.New("journal: spare segment not used")

// segmentPath is the segment file of the generation in directory dir.
func segmentPath(dir string) string { return filepath.Join(dir, segmentFile) }

// replaceEmptySegmentFile makes a log that holds no entry write its
// segment through f, from f's current offset, instead of through the file
// tidwall created, and returns that file (the caller closes it). It
// reports false, changing nothing, when the log is not empty or tidwall's
// layout changed.
func replaceEmptySegmentFile(l *wal.Log, f *os.File) (*os.File, bool) {
	if !canReplaceSegmentFile(l) {
		return nil, false
	}
	old, _ := tidwallFile(l)
	v := reflect.ValueOf(l).Elem().FieldByName("sfile")
	reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Set(reflect.ValueOf(f))
	return old, true
}

// adoptSegmentFile makes a log that holds no entry continue the segment
// file f, which holds entries entries, positioned at its end: the log
// writes through f, as replaceEmptySegmentFile, and numbers its next entry
// entries+1. It returns the file tidwall created (the caller closes it),
// or false, changing nothing, when the log is not empty or tidwall's
// layout changed. The log holds no copy of f's entries, as after
// forgetWritten: it can write, not read them.
func adoptSegmentFile(l *wal.Log, f *os.File, entries uint64) (*os.File, bool) {
	last := reflect.ValueOf(l).Elem().FieldByName("lastIndex")
	if !last.IsValid() || last.Kind() != reflect.Uint64 || !canReplaceSegmentFile(l) {
		return nil, false
	}
	old, _ := replaceEmptySegmentFile(l, f)
	reflect.NewAt(last.Type(), unsafe.Pointer(last.UnsafeAddr())).Elem().SetUint(entries)
	return old, true
}

// canReplaceSegmentFile reports whether replaceEmptySegmentFile would
// succeed on l.
func canReplaceSegmentFile(l *wal.Log) bool {
	if li, err := l.LastIndex(); err != nil || li != 0 {
		return false
	}
	if ebuf, ok := tailBuffer(l); !ok || ebuf.Len() != 0 {
		return false
	}
	_, ok := tidwallFile(l)
	return ok
}

func tidwallFile(l *wal.Log) (*os.File, bool) {
	if l == nil {
		return nil, false
	}
	v := reflect.ValueOf(l).Elem().FieldByName("sfile")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*os.File]() || v.IsNil() {
		return nil, false
	}
	return (*os.File)(v.UnsafePointer()), true
}

// forgetWritten empties tidwall's in-memory copy of the log's segment,
// keeping its buffer for the next write when its capacity is at most keep,
// and reports whether it could.
//
// tidwall keeps every entry of its tail segment in memory (for its Read,
// which the journal never calls: the flusher reads the journal's own tail
// cache, or the files) and appends each batch to that copy before writing
// the batch's bytes to the file. Emptied after every write, the copy holds
// one group at a time instead of up to segment_bytes. tidwall uses the
// copy's length for nothing else: the journal opens it with a segment size
// it never reaches (it rotates generations itself), and writes go through
// the file's own offset. The entry positions (epos) go with it.
func forgetWritten(l *wal.Log, keep int) bool {
	ebuf, ok := tailBuffer(l)
	if !ok {
		return false
	}
	// tailBuffer checked that there is exactly one segment.
	epos := reflect.ValueOf(l).Elem().FieldByName("segments").Index(0).Elem().FieldByName("epos")
	if epos.Kind() != reflect.Slice {
		return false
	}
	buf := reflect.NewAt(ebuf.Type(), unsafe.Pointer(ebuf.UnsafeAddr())).Elem()
	if ebuf.Cap() <= keep {
		buf.SetLen(0)
	} else {
		buf.Set(reflect.Zero(ebuf.Type()))
	}
	reflect.NewAt(epos.Type(), unsafe.Pointer(epos.UnsafeAddr())).Elem().SetLen(0)
	return true
}

// presize gives the in-memory copy of an empty log's tail segment a capacity
// of n bytes, and reports whether it could. forgetWritten empties that copy
// after every write, so it needs to hold one group; n of them at once
// spares the appends of a group the copies of a buffer grown by append.
// reuse, when its capacity is at least n, is used instead of a new
// allocation.
func presize(l *wal.Log, n int, reuse []byte) bool {
	ebuf, ok := tailBuffer(l)
	if !ok || ebuf.Len() != 0 {
		return false
	}
	buf := reuse[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	settable := reflect.NewAt(ebuf.Type(), unsafe.Pointer(ebuf.UnsafeAddr())).Elem()
	settable.Set(reflect.ValueOf(buf))
	return true
}

// tailBuffer returns tidwall's in-memory copy of the log's only segment.
func tailBuffer(l *wal.Log) (reflect.Value, bool) {
	if l == nil {
		return reflect.Value{}, false
	}
	segs := reflect.ValueOf(l).Elem().FieldByName("segments")
	if !segs.IsValid() || segs.Kind() != reflect.Slice || segs.Len() != 1 {
		return reflect.Value{}, false
	}
	seg := segs.Index(0)
	if seg.Kind() != reflect.Pointer || seg.IsNil() {
		return reflect.Value{}, false
	}
	ebuf := seg.Elem().FieldByName("ebuf")
	if !ebuf.IsValid() || ebuf.Type() != reflect.TypeFor[[]byte]() {
		return reflect.Value{}, false
	}
	return ebuf, true
}

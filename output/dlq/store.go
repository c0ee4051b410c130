package dlq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/framelog"
	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/internal/waitlog"
)

// Entry is one event that Elasticsearch rejected for good, with why.
type Entry struct {
	Stream   string    // ledger stream id (a UUID string)
	LSN      uint64    // ledger LSN of the record holding the event
	Position uint32    // the event's position in that record
	Index    string    // the index it was meant for
	Action   string    // the bulk action, "create"
	DocID    string    // the document id used, "" when none
	Status   int       // HTTP status of the item (or of the whole request when the event was sent alone); 0 if never sent
	ErrType  string    // Elasticsearch's error type, e.g. "mapper_parsing_exception", or logpond's own reason code such as "event_too_large"
	Reason   string    // human-readable reason
	Received time.Time // the record's receive time; stored to the nanosecond, read back in UTC
	Failed   time.Time // when the event was dead-lettered; likewise
	Event    []byte    // the raw event bytes exactly as stored (possibly not valid JSON)
}

// Defaults of Options.
const (
	DefaultMaxBytes     = 1 << 30
	DefaultSegmentBytes = 64 << 20
)

// Bounds on Options.SegmentBytes: a file must hold a small entry, and a
// frame's length must fit its u32 field with room to spare.
const (
	minSegmentBytes = 1 << 10
	maxSegmentBytes = 1 << 30
)

// Options configure a Store.
type Options struct {
	// MaxBytes bounds the bytes of the store's files on disk; Append waits
	// while another entry would not fit. 0 means DefaultMaxBytes.
	MaxBytes int64
	// SegmentBytes is the size at which the open file is sealed and the
	// next one started. 0 means DefaultSegmentBytes, or MaxBytes/2 when
	// that is smaller. It must be at most MaxBytes/2: Purge deletes only
	// whole sealed files, so a full store must hold at least one besides
	// the open file. It also bounds an entry (ErrTooLarge).
	SegmentBytes int64
	// MaxAge, when more than 0, is how long entries are kept: the Store
	// deletes, from Open to Close and about every MaxAge/10 (at most a
	// minute apart), the whole files whose entries all failed
	// (Entry.Failed) more than MaxAge ago, as PurgeFailedBefore does,
	// and logs what it deleted. 0 keeps entries until they are purged.
	MaxAge time.Duration
	// Logger receives repairs, waits and failures; nil means slog.Default().
	Logger *slog.Logger

	hooks hooks
}

// hooks are per-Store seams for tests.
type hooks struct {
	openFile    func(path string, flag int) (file, error)
	syncDir     func(dir string) error
	onWait      func() // called each time an Append starts waiting for space
	now         func() time.Time
	retainEvery time.Duration // how often MaxAge is applied; 0 for the default
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxBytes < 0 || o.SegmentBytes < 0 {
		return o, fmt.Errorf("dlq: max bytes %d and segment bytes %d must not be negative", o.MaxBytes, o.SegmentBytes)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = min(DefaultSegmentBytes, o.MaxBytes/2)
	}
	if o.SegmentBytes < minSegmentBytes || o.SegmentBytes > maxSegmentBytes {
		return o, fmt.Errorf("dlq: segment bytes %d must be between %d and %d", o.SegmentBytes, minSegmentBytes, maxSegmentBytes)
	}
	if o.SegmentBytes > o.MaxBytes/2 {
		return o, fmt.Errorf("dlq: segment bytes %d must be at most half of max bytes %d: a full store frees space by deleting sealed files, and the open file stays", o.SegmentBytes, o.MaxBytes)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.hooks.openFile == nil {
		o.hooks.openFile = openOSFile
	}
	if o.hooks.syncDir == nil {
		o.hooks.syncDir = fsutil.SyncDir
	}
	if o.MaxAge < 0 {
		return o, fmt.Errorf("dlq: max age %s must not be negative", o.MaxAge)
	}
	if o.hooks.now == nil {
		o.hooks.now = time.Now
	}
	if o.hooks.retainEvery == 0 {
		o.hooks.retainEvery = min(max(o.MaxAge/10, time.Second), time.Minute)
	}
	return o, nil
}

// fileInfo is one of the store's files.
type fileInfo struct {
	seq       uint64
	path      string
	size      int64     // bytes on disk, all synced
	lastFrame int64     // offset of its last frame; 0 when it holds none
	entries   int       // entries in it
	newest    time.Time // the latest Entry.Failed in it; zero when it holds none
}

// pending is one Append's batch of frames on its way to disk.
type pending struct {
	frames []byte      // frames made by appendFrame, back to back
	sizes  []int       // the size of each frame
	failed []time.Time // each frame's Entry.Failed
	need   int64       // bytes reserved for it by admit

	// Guarded by Store.mu.
	done bool
	err  error
}

// Store is an open dead-letter store: the only writer of its directory,
// which it locks (internal/dirlock) from Open to Close. All its methods are
// safe for concurrent use.
type Store struct {
	dir      string
	opts     Options
	log      *slog.Logger
	lock     *dirlock.Lock
	recovery *Repair // what Open cut, or nil; set before Open returns
	// setAside are the damaged files Open moved aside, set before Open
	// returns.
	setAside []SetAside

	// admit is a one-slot semaphore: the Append holding it is the one that
	// waits for space and reserves it; the others queue behind it in
	// arrival order (a channel serves blocked senders first come, first
	// served), so a large Append is not starved by a stream of small ones.
	admit chan struct{}
	// closing is closed by Close, to wake Appends waiting for space and
	// stop the retention goroutine.
	closing chan struct{}
	// retained is closed when the retention goroutine (Options.MaxAge)
	// has returned; nil when there is none.
	retained chan struct{}

	// writeMu is held by the committer (the Append writing a group), by
	// Purge and by Close: one of them at a time touches the files.
	writeMu sync.Mutex
	// Guarded by writeMu.
	f       file   // the open (newest) file; nil only when there is no file
	off     int64  // its size: where the next write starts
	nextSeq uint64 // sequence number of the next file created
	wbuf    []byte // a group's frames, gathered for one write

	mu sync.Mutex
	// files is changed with both writeMu and mu held, so holding either
	// is enough to read it.
	files []fileInfo // oldest first; the last is the open one
	// Guarded by mu.
	disk     int64           // sum of files' sizes
	reserved int64           // bytes admitted but not yet written
	queue    []*pending      // admitted, waiting for a committer
	freed    chan struct{}   // closed and replaced when space may have been freed
	waiting  string          // why Append waits, "" when none does
	full     waitlog.Episode // Appends wait for space (waiting is set)
	waiters  int             // Appends inside admit
	poisoned error           // the first write or sync failure
	closed   bool
}

// Repair describes the torn write Open cut from the newest file. Nothing
// cut was ever reported durable: Append returns only after its fdatasync.
type Repair struct {
	File   string // the newest file's path
	Offset int64  // where the tear began: the file now ends here; 0 when the file (whose header was never completed) was removed
	Bytes  int64  // bytes cut
	Reason string // what was found at Offset
}

// Dir is where an output's dead letters live: <ledger.dir>/dlq/<output>,
// on the ledger's device. logpond and ledgerctl both find them there.
func Dir(ledgerDir, output string) string { return filepath.Join(ledgerDir, "dlq", output) }

// Open opens the dead-letter store in dir, creating dir if it does not
// exist (its parent must: a mistyped path should fail, not grow a tree).
// It takes dir's lock, so a second Store on dir (in this process or
// another) fails; dir must not be a directory some other store locks.
//
// Open reads every file and checks every frame (so it costs a read of up
// to MaxBytes, and holds one file's entries in memory while it reads it).
// A torn tail of the newest file is cut, durably, and logged (Recovery
// reports it). A file damaged anywhere else is set aside (doc.go): its
// entries before the damage are stored again and the file is logged at
// ERROR (SetAsideFiles reports it).
func Open(dir string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, opts: opts, log: opts.Logger, admit: make(chan struct{}, 1),
		closing: make(chan struct{}), freed: make(chan struct{}), nextSeq: 1}
	if err := s.makeDir(); err != nil {
		return nil, err
	}
	if s.lock, err = dirlock.Acquire(dir); err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	if err := s.load(); err != nil {
		if s.f != nil {
			s.f.Close()
		}
		s.lock.Release()
		return nil, err
	}
	if err := s.salvage(); err != nil {
		s.Close()
		return nil, err
	}
	if opts.MaxAge > 0 {
		s.retained = make(chan struct{})
		go s.retain()
	}
	return s, nil
}

func (s *Store) makeDir() error {
	st, err := os.Stat(s.dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("dlq: %s is not a directory", s.dir)
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("dlq: %w", err)
	}
	if err := os.Mkdir(s.dir, 0o750); err != nil {
		return fmt.Errorf("dlq: create the dead-letter directory (its parent must exist): %w", err)
	}
	// The new directory's own entry lives in its parent: without this
	// fsync a power cut could drop the directory with every file that
	// Append has since reported durable.
	if err := s.opts.hooks.syncDir(filepath.Dir(s.dir)); err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	return nil
}

// load checks every file, repairs a torn tail of the newest, and opens the
// newest for writing.
func (s *Store) load() error {
	refs, err := listFiles(s.dir)
	if err != nil {
		return err
	}
	for i, ref := range refs {
		path := filepath.Join(s.dir, ref.name)
		newest := i == len(refs)-1
		s.nextSeq = ref.seq + 1
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("dlq: %w", err)
		}
		flag := os.O_RDONLY
		if newest {
			flag = os.O_RDWR
		}
		f, err := s.opts.hooks.openFile(path, flag)
		if err != nil {
			return fmt.Errorf("dlq: open %s: %w", path, err)
		}
		info := fileInfo{seq: ref.seq, path: path, size: st.Size()}
		sc := newFileScanner(f, path, ref.seq, info.size, newest)
		var read []Entry // the file's entries, kept only in case it is damaged
		for sc.next() {
			info.lastFrame = sc.frameOff
			info.entries++
			if sc.entry.Failed.After(info.newest) {
				info.newest = sc.entry.Failed
			}
			read = append(read, sc.entry)
		}
		var ce *CorruptionError
		if sc.err != nil && errors.As(sc.err, &ce) {
			f.Close()
			if err := s.setFileAside(path, ce, read); err != nil {
				return err
			}
			continue
		}
		if sc.err != nil {
			f.Close()
			return sc.err
		}
		if !newest {
			f.Close() // read-only
			s.files = append(s.files, info)
			continue
		}
		keep, err := s.repairTail(f, &info, sc.torn)
		if err != nil {
			f.Close()
			return err
		}
		if keep {
			s.f, s.off = f, info.size
			s.files = append(s.files, info)
		}
	}
	if s.f == nil && len(s.files) > 0 {
		// The newest file was removed as never completed: the one before
		// it, sealed and synced, takes new entries again.
		last := s.files[len(s.files)-1]
		if s.f, err = s.opts.hooks.openFile(last.path, os.O_RDWR); err != nil {
			return fmt.Errorf("dlq: open %s: %w", last.path, err)
		}
		s.off = last.size
	}
	for _, fi := range s.files {
		s.disk += fi.size
	}
	return nil
}

// SetAside is a damaged dead-letter file Open moved aside: Path is its new
// name (the old one with ".damaged" appended); the Salvaged entries before
// the damage were appended to the store again (with new ids).
type SetAside struct {
	File     string // the file's name in the store
	Path     string // where it is now
	Offset   int64  // where the damage begins
	Reason   string
	Salvaged int
	salvage  []Entry
}

// setFileAside moves a damaged file out of the store, durably, and keeps
// the entries read before the damage for Open to append again: a damaged
// dead-letter file does not stop logpond, and loses only the entries from
// the damage on (they stay in the set-aside file for inspection).
func (s *Store) setFileAside(path string, ce *CorruptionError, read []Entry) error {
	aside := path + ".damaged"
	if err := os.Rename(path, aside); err != nil {
		return fmt.Errorf("dlq: set the damaged file %s aside: %w (%v)", path, err, ce)
	}
	if err := s.opts.hooks.syncDir(s.dir); err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	s.setAside = append(s.setAside, SetAside{File: filepath.Base(path), Path: aside, Offset: ce.Offset, Reason: ce.Err.Error(),
		Salvaged: len(read), salvage: read})
	return nil
}

// SetAsideFiles are the damaged files Open moved aside.
func (s *Store) SetAsideFiles() []SetAside { return s.setAside }

// salvage appends again the entries read before the damage in the files
// Open set aside, and logs each file once.
func (s *Store) salvage() error {
	for i := range s.setAside {
		a := &s.setAside[i]
		if len(a.salvage) > 0 {
			if err := s.Append(context.Background(), a.salvage); err != nil {
				return fmt.Errorf("dlq: append the %d entries before the damage in %s again: %w", len(a.salvage), a.Path, err)
			}
		}
		a.salvage = nil
		s.log.Error("dlq: damaged dead-letter file set aside; the entries before the damage were stored again (with new ids), those from the damage on are only in the set-aside file",
			"file", a.File, "moved_to", a.Path, "offset", a.Offset, "entries_salvaged", a.Salvaged, "reason", a.Reason)
	}
	return nil
}

// repairTail cuts the torn tail t of the newest file f, if any, and says
// whether f stays (false: it was removed, and closed).
func (s *Store) repairTail(f file, info *fileInfo, t *framelog.Tear) (bool, error) {
	if t == nil {
		return true, nil
	}
	s.recovery = &Repair{File: info.path, Offset: t.Offset, Bytes: info.size - t.Offset, Reason: t.Reason.Error()}
	if t.Offset == 0 {
		// A header that never completed: the file was being created and
		// holds no entry. It goes rather than being rewritten.
		f.Close()
		if err := os.Remove(info.path); err != nil {
			return false, fmt.Errorf("dlq: remove %s, whose header never completed: %w", info.path, err)
		}
		// The removal must be durable before a file with a later sequence
		// number is created, or a power cut could bring this one back
		// between two good files, where it would be damage.
		if err := s.opts.hooks.syncDir(s.dir); err != nil {
			return false, fmt.Errorf("dlq: %w", err)
		}
		s.log.Warn("dlq: removed the newest file, whose header was never completed (no entry was in it)",
			"file", info.path, "bytes", info.size, "reason", t.Reason)
		return false, nil
	}
	if err := f.Truncate(t.Offset); err != nil {
		return false, fmt.Errorf("dlq: cut %s at %d: %w", info.path, t.Offset, err)
	}
	// The cut must be durable before new frames are written after it, so
	// that after a power cut the file never holds the torn bytes again
	// behind frames that are reported durable.
	if err := f.Datasync(); err != nil {
		return false, fmt.Errorf("dlq: fdatasync %s after cutting it at %d: %w", info.path, t.Offset, err)
	}
	s.log.Warn("dlq: cut the torn tail of the newest file (a write that never completed; none of it was reported durable)",
		"file", info.path, "offset", t.Offset, "bytes_cut", info.size-t.Offset, "reason", t.Reason)
	info.size = t.Offset
	return true, nil
}

// Recovery reports the torn tail Open cut, or nil.
func (s *Store) Recovery() *Repair { return s.recovery }

// Entries is how many dead letters the store holds: every entry appended
// and not purged (a damaged file's entries count as far as they were
// read).
func (s *Store) Entries() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, fi := range s.files {
		n += int64(fi.entries)
	}
	return n
}

// UsedBytes is the bytes of the store's files on disk.
func (s *Store) UsedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disk
}

// Waiting says why Append waits, or "" when no Append waits.
func (s *Store) Waiting() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *Store) usableLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.poisoned != nil:
		return fmt.Errorf("%w: %w", ErrPoisoned, s.poisoned)
	}
	return nil
}

// poison makes a write or sync failure sticky: a failed fdatasync may have
// dropped the dirty pages, and no retry can make them durable
// (docs/design.md, §3). Only a fresh Open, which re-reads the files, resumes.
func (s *Store) poison(err error) error {
	s.mu.Lock()
	if s.poisoned == nil {
		s.poisoned = err
	}
	s.mu.Unlock()
	s.log.Error("dlq: poisoned: no more entries are stored until the store is reopened", "dir", s.dir, "err", err)
	return fmt.Errorf("%w: %w", ErrPoisoned, err)
}

// wakeLocked tells Appends waiting for space to look again.
func (s *Store) wakeLocked() {
	close(s.freed)
	s.freed = make(chan struct{})
}

// Close closes the store and releases its directory. It waits for a write
// in progress; Appends still queued or waiting for space get ErrClosed (their
// entries were not written). It returns the sticky failure, if any; a
// second Close returns ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	if s.retained != nil {
		<-s.retained
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	for _, p := range s.queue {
		s.reserved -= p.need
		p.done, p.err = true, ErrClosed
	}
	s.queue = nil
	poisoned := s.poisoned
	s.mu.Unlock()
	var err error
	if s.f != nil {
		// Everything written was fdatasynced before its Append returned;
		// closing syncs nothing more.
		if cerr := s.f.Close(); cerr != nil {
			err = fmt.Errorf("dlq: close: %w", cerr)
		}
		s.f = nil
	}
	if lerr := s.lock.Release(); err == nil && lerr != nil {
		err = fmt.Errorf("dlq: %w", lerr)
	}
	if poisoned != nil {
		return fmt.Errorf("%w: %w", ErrPoisoned, poisoned)
	}
	return err
}

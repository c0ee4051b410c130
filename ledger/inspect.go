package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// Read-only inspection of a ledger directory, for ledgerctl. Nothing here
// calls Open, takes the directory lock, cuts a tail, rebuilds an index or
// creates the cursors directory: every function only lists directories and
// reads files, so it is safe while logpond runs on the same directory.
// A running ledger appends to its newest (open) segment, and may be in the
// middle of a write there: damage at the end of the open segment is what
// Open's recovery would cut (doc.go), reported as a tail (a *Repair), not
// as an error. The caller knows whether the journal still holds it, which
// decides whether it is a write in progress or a torn tail that Open cuts
// (covered), or lost records (not covered). Damage in a sealed segment is
// always a *CorruptionError.

// InspectOptions configure the read-only inspection functions.
type InspectOptions struct {
	// DirectIO reads segments with O_DIRECT, as the ledger does, so that a
	// scan of the whole ledger does not fill the page cache. On a file
	// system that refuses O_DIRECT the files are read buffered instead.
	DirectIO bool
}

// SegmentInfo describes one segment file of a ledger as found on disk.
type SegmentInfo struct {
	Path string
	// FirstLSN is the LSN of its first record (its name).
	FirstLSN uint64
	// LastLSN is the LSN of its last record; FirstLSN-1 when it holds none
	// (only the open segment can be empty). For a sealed segment it is the
	// next segment's FirstLSN-1: records never span segments and LSNs are
	// consecutive (a DirReader checks both). The open segment is scanned.
	LastLSN uint64
	// Bytes is the file size when it was listed (or, for the open segment,
	// scanned).
	Bytes int64
	// Open marks the newest segment, the one a running ledger appends to.
	Open bool
	// Indexed says a sealed segment has a valid persisted sparse index
	// (a missing or damaged one is rebuilt by the ledger when needed).
	Indexed bool
	// Tail, for the open segment, is the damage that ends its records:
	// a write in progress while logpond runs, or what Open cuts at the
	// next start (when the journal still holds Tail.FirstLSN).
	Tail *Repair
}

// Records is the number of records in the segment.
func (s SegmentInfo) Records() uint64 { return s.LastLSN + 1 - s.FirstLSN }

// Segments lists the segments of the ledger in dir, oldest first. It reads
// the sealed segments' index files and scans the open segment (up to
// segment_bytes) to find its last record; it does not read sealed segments
// (a DirReader verifies them). A missing dir is an empty ledger.
//
// Read-only and safe on a live ledger: a torn or partial write at the end
// of the open segment is its end (SegmentInfo.Tail), not an error.
func Segments(dir string, opts InspectOptions) ([]SegmentInfo, error) {
	segs, err := listSegments(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	infos := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		info := SegmentInfo{Path: s.path, FirstLSN: s.first, Bytes: s.size, Open: i == len(segs)-1}
		if !info.Open {
			info.LastLSN = segs[i+1].first - 1
			_, info.Indexed = readIndexFile(s.path)
			infos[i] = info
			continue
		}
		f, err := openForInspect(s.path, opts.DirectIO)
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		sc := newSegScanner(f, s.path, s.first, 0)
		for sc.nextFrame() {
		}
		if st, err := f.Stat(); err == nil {
			info.Bytes = st.Size()
		}
		f.Close() // read-only
		if sc.ioErr != nil {
			return nil, sc.ioErr
		}
		info.LastLSN = sc.next - 1
		info.Tail = tailRepair(sc.damage)
		infos[i] = info
	}
	return infos, nil
}

// tailRepair describes damage at the end of the open segment as the cut
// Open would make.
func tailRepair(d *CorruptionError) *Repair {
	if d == nil {
		return nil
	}
	return &Repair{Segment: d.Segment, Offset: d.Offset, CutAt: alignUp(d.Offset), FirstLSN: d.LSN, Reason: d.Err.Error()}
}

// openForInspect opens a segment read-only, with O_DIRECT when direct is
// set and the file system accepts it.
func openForInspect(path string, direct bool) (*os.File, error) {
	if direct {
		f, err := openSegmentFile(path, os.O_RDONLY, true)
		if err == nil || !errors.Is(err, unix.EINVAL) {
			return f, err
		}
	}
	return openSegmentFile(path, os.O_RDONLY, false)
}

// readIndexFile reads a sealed segment's persisted index without
// rebuilding a missing or damaged one (that would write).
func readIndexFile(segPath string) ([]indexEntry, bool) {
	b, err := os.ReadFile(indexPath(segPath))
	if err != nil {
		return nil, false
	}
	entries, err := decodeIndex(b)
	return entries, err == nil
}

// DirReader reads the records of a ledger directory in LSN order,
// read-only:
//
//	r, err := ledger.NewDirReader(dir, from, ledger.InspectOptions{DirectIO: true})
//	...
//	defer r.Close()
//	for r.Next() {
//		use(r.LSN(), r.Record())
//	}
//	if err := r.Err(); err != nil { ... } // a *CorruptionError at damage
//
// Every frame is verified as the ledger's own readers verify it: header
// CRC, LSN, the skip rule for padding, and the record's CRC (record.Verify:
// a version 2 record is not decompressed; ledgerctl verify does that);
// and each sealed segment must end just before the next one begins. Reads
// are large and aligned (1 MiB, O_DIRECT when asked).
//
// It is safe on a live ledger: it writes nothing and takes no lock. It sees
// the segments that existed when it was made; a sealed segment deleted by
// retention before it was opened is skipped (an open one stays readable),
// and damage at the end of the open segment (a write in progress, or a torn
// tail) ends the records and is reported by Tail, not Err. It reads records
// written but not yet fdatasynced as well. Not safe for concurrent use.
type DirReader struct {
	opts InspectOptions
	segs []segment
	si   int // index in segs of the segment being read
	from uint64

	f    *os.File
	sc   *segScanner
	read int64 // bytes of the segments finished so far

	lsn    uint64
	rec    []byte
	off    int64
	damage *Damage
	tail   *Repair
	err    error

	skipDamage  bool
	recheckedAt int64 // the last offset of the open segment recheck looked at
}

// SkipDamage makes the DirReader pass damage in sealed segments, as
// [Reader.SkipDamage] does: Next also stops at each damaged range, with
// Damage set, and goes on from the next valid record. Damage at the end of
// the open segment is still its Tail; damage in its middle (a later
// complete write follows it, looked at twice, as a write in progress on a
// live ledger may look damaged once) is passed too: what Open does with it
// depends on whether the journal still holds its records (doc.go).
func (r *DirReader) SkipDamage() { r.skipDamage = true }

// Damage is the damaged range Next stopped at, or nil when it stopped at a
// record.
func (r *DirReader) Damage() *Damage { return r.damage }

// NewDirReader lists the ledger in dir and returns a DirReader that starts
// at the record with LSN from (or the oldest record, if it is older). It
// seeks with a sealed segment's persisted index when it is valid, and scans
// from the segment's start otherwise. A missing dir reads as empty.
func NewDirReader(dir string, from uint64, opts InspectOptions) (*DirReader, error) {
	segs, err := listSegments(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	r := &DirReader{opts: opts, segs: segs, from: max(from, 1), recheckedAt: -1}
	if i := segmentFor(segs, r.from); i > 0 {
		for _, s := range segs[:i] {
			r.read += s.size
		}
		r.si = i
	}
	return r, nil
}

// Next advances to the next record. It returns false at the end, at the
// damaged end of the open segment (Tail) or on an error (Err).
func (r *DirReader) Next() bool {
	r.damage = nil
	for r.err == nil && r.tail == nil && r.si < len(r.segs) {
		if r.sc == nil && !r.open() {
			continue
		}
		if r.sc.nextFrame() {
			if r.sc.lsn < r.from {
				continue
			}
			r.lsn, r.rec, r.off = r.sc.lsn, r.sc.rec, r.sc.recOff
			return true
		}
		if d := r.sc.takeSkipped(); d != nil {
			if r.si == len(r.segs)-1 && d.Records() == 0 && d.End >= r.sc.size {
				// Past damage in the middle of the open segment, nothing
				// valid follows: its end (a write in progress, or a torn
				// tail), as without the damage before.
				r.tail = &Repair{Segment: d.Segment, Offset: d.Start, CutAt: alignUp(d.Start), FirstLSN: d.FirstLSN, Reason: d.Reason}
				return false
			}
			if d.Records() > 0 && d.LastLSN < r.from {
				continue
			}
			d.FirstLSN = max(d.FirstLSN, r.from)
			r.damage, r.rec, r.off = d, nil, d.Start
			if d.Records() > 0 {
				r.lsn = d.LastLSN
			}
			return true
		}
		s, last := r.segs[r.si], r.si == len(r.segs)-1
		switch {
		case r.sc.ioErr != nil:
			r.err = r.sc.ioErr
		case r.sc.damage != nil && last && r.skipDamage && r.recheck(s.path):
			continue // read on from the damage, or past it
		case r.sc.damage != nil && last:
			r.tail = tailRepair(r.sc.damage)
		case r.sc.damage != nil:
			r.err = r.sc.damage
		case !last && r.sc.next != r.segs[r.si+1].first:
			r.err = &CorruptionError{Segment: s.path, Offset: r.sc.pos(), LSN: r.sc.next,
				Err: fmt.Errorf("the segment ends before LSN %d, but the next segment %s begins at LSN %d", r.sc.next, filepath.Base(r.segs[r.si+1].path), r.segs[r.si+1].first)}
		}
		if r.err != nil || r.tail != nil {
			return false
		}
		r.closeSegment()
		r.read += s.size
		r.si++
	}
	return false
}

// recheck looks again at damage the scanner met in the open segment, which
// on a live ledger may be a write in progress. It returns true with a new
// scanner when the damage should be read past: the bytes read whole now
// (the write completed: the scanner reads on from there), or a later
// complete write follows them, so they had been synced and changed since:
// damage in the middle of the open segment, which the scanner passes as in
// a sealed segment. Each offset is looked at once.
func (r *DirReader) recheck(path string) bool {
	d := r.sc.damage
	if d.Offset <= r.recheckedAt {
		return false
	}
	r.recheckedAt = d.Offset
	sc := newSegScanner(r.f, path, d.LSN, d.Offset)
	if sc.nextFrame() {
		r.sc = newSegScanner(r.f, path, d.LSN, d.Offset)
		return true
	}
	if sc.ioErr != nil || !laterWriteAfter(r.f, path, d.Offset, d.LSN) {
		return false
	}
	r.sc = newSegScanner(r.f, path, d.LSN, d.Offset).withResync(0)
	return true
}

// open opens segment si. It returns false when the segment was deleted
// (si then moved on) or on an error.
func (r *DirReader) open() bool {
	s, last := r.segs[r.si], r.si == len(r.segs)-1
	f, err := openForInspect(s.path, r.opts.DirectIO)
	if errors.Is(err, os.ErrNotExist) && !last {
		// Deleted by retention since the listing: every cursor was past
		// it. (The open segment is never deleted.)
		r.read += s.size
		r.si++
		return false
	}
	if err != nil {
		r.err = fmt.Errorf("ledger: %w", err)
		return false
	}
	from, fromLSN := int64(0), s.first
	if r.from > s.first && !last {
		if entries, ok := readIndexFile(s.path); ok {
			if e, ok := seekPoint(entries, r.from); ok {
				from, fromLSN = e.off, e.lsn
			}
		}
	}
	r.f = f
	r.sc = newSegScanner(f, s.path, fromLSN, from)
	if r.skipDamage && !last {
		r.sc.withResync(r.segs[r.si+1].first - 1)
	}
	return true
}

func (r *DirReader) closeSegment() {
	if r.f != nil {
		r.f.Close() // read-only: nothing to lose
	}
	r.f, r.sc = nil, nil
}

// LSN is the current record's LSN.
func (r *DirReader) LSN() uint64 { return r.lsn }

// Record is the current record, valid until the next call to Next.
func (r *DirReader) Record() []byte { return r.rec }

// Segment is the path of the segment holding the current record.
func (r *DirReader) Segment() string {
	if r.si < len(r.segs) {
		return r.segs[r.si].path
	}
	return ""
}

// Offset is the offset of the current record's frame in Segment.
func (r *DirReader) Offset() int64 { return r.off }

// BytesRead is the bytes of segment files read so far (the segments
// finished, and the current one up to the current record); for progress.
func (r *DirReader) BytesRead() int64 {
	if r.sc == nil {
		return r.read
	}
	return r.read + r.sc.pos()
}

// OpenSegment is the path of the open (newest) segment when the DirReader
// was made, "" when there was none.
func (r *DirReader) OpenSegment() string {
	if len(r.segs) == 0 {
		return ""
	}
	return r.segs[len(r.segs)-1].path
}

// Segments is the number of segments listed when the DirReader was made
// (those before the one holding from included).
func (r *DirReader) Segments() int { return len(r.segs) }

// Size is the total size of the listed segment files when they were
// listed; with BytesRead, for progress.
func (r *DirReader) Size() int64 {
	var n int64
	for _, s := range r.segs {
		n += s.size
	}
	return n
}

// Tail is the damage that ended the open segment's records, as the cut
// Open would make, or nil. Whether that is a write in progress or a torn
// tail (harmless while the journal still holds Tail.FirstLSN) or lost
// records (it does not) is for the caller to tell; see doc.go.
func (r *DirReader) Tail() *Repair { return r.tail }

// Err is the error that stopped Next: a *CorruptionError for damage, or an
// I/O error. It is nil at the end and at a damaged end of the open segment.
func (r *DirReader) Err() error { return r.err }

// Close releases the open segment file.
func (r *DirReader) Close() error {
	r.closeSegment()
	return nil
}

// CursorInfo is one cursor file of a ledger.
type CursorInfo struct {
	Name string
	Path string
	LSN  uint64 // the last LSN its output has fully done
	Err  error  // why the file cannot be read (LSN is then 0)
}

// ReadCursors reads the cursor files in DIR/cursors, sorted by name, read-only:
// unlike Open it neither creates the directory nor removes the temporary
// file of an interrupted update, so it is safe on a live ledger (cursors are
// replaced by rename, so each read sees an old or a new value, whole). A
// damaged cursor is reported in its CursorInfo.Err; the error is for a
// directory that cannot be listed. A missing directory holds no cursor.
func ReadCursors(dir string) ([]CursorInfo, error) {
	cdir := filepath.Join(dir, cursorDir)
	des, err := os.ReadDir(cdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var out []CursorInfo
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), cursorSuffix)
		if !ok {
			continue
		}
		c := CursorInfo{Name: name, Path: filepath.Join(cdir, de.Name())}
		c.LSN, c.Err = readCursor(c.Path)
		if errors.Is(c.Err, os.ErrNotExist) {
			continue // deleted since the listing
		}
		out = append(out, c)
	}
	return out, nil // os.ReadDir sorts by file name
}

// ReadStreamID returns the stream id in DIR/STREAM, read-only. For a
// ledger that has none yet, the error wraps os.ErrNotExist.
func ReadStreamID(dir string) (string, error) {
	path := filepath.Join(dir, streamFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("ledger: %w", err)
	}
	id, err := uuid.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return "", fmt.Errorf("ledger: stream id in %s: %w", path, err)
	}
	return id.String(), nil
}

package journal

import (
	"errors"
	"fmt"
	"os"

	"github.com/logpond/logpond/internal/framelog"
)

// Read-only inspection of a journal directory, for ledgerctl. Nothing here
// opens tidwall/wal (it renames files when it opens), takes the directory
// lock, finishes an interrupted release or cuts a tail: every function only
// lists directories and reads files, so it is safe while logpond runs on
// the same directory. A running journal may be appending to its newest
// generation, so what a torn or partial last write of that generation looks
// like is the end of the data, exactly as the recovery rule of doc.go
// classifies it; everything else that does not verify is damage.

// SegmentInfo describes one generation of a journal as found on disk.
type SegmentInfo struct {
	Dir  string // the generation directory
	File string // its segment file
	// Base is the LSN before the generation's first record (its name).
	Base uint64
	// FirstLSN and LastLSN are the LSNs of the first and last valid
	// records; LastLSN < FirstLSN (FirstLSN = Base+1, LastLSN = Base) when
	// the generation holds none.
	FirstLSN, LastLSN uint64
	// Records is the number of valid records, up to damage or a torn tail.
	Records int
	// Bytes is the size of the segment file when it was read.
	Bytes int64
	// Open marks the newest generation, the only one a running journal
	// writes.
	Open bool
	// Tail, for the newest generation, is the torn or partial last write
	// that ends its records: a write in progress while logpond runs, or
	// what Open cuts at the next start (it was never acknowledged).
	Tail *Repair
	// Damage is a *CorruptionError when the generation holds entries that
	// do not verify and are not a torn tail; Records counts those before it.
	Damage error
}

// Segments lists the journal in dir, oldest generation first, and reads and
// verifies every entry of every segment (frame CRC, LSN, group, record CRC)
// to count its records; damage is reported in SegmentInfo.Damage, not as
// the error, which is kept for failures to list or read. It reads the whole
// journal (at most about max_bytes), one segment in memory at a time.
//
// Read-only and safe on a live journal: it changes nothing, and a torn or
// partial write at the end of the newest generation (a write in progress)
// is that generation's end (SegmentInfo.Tail), not damage. A generation
// released while it is being listed is left out. A missing dir is an empty
// journal.
func Segments(dir string) ([]SegmentInfo, error) {
	gens, err := scanGenerations(dir, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var infos []SegmentInfo
	for i, g := range gens {
		newest := i == len(gens)-1
		info := SegmentInfo{Dir: g.dir, File: g.segment(), Base: g.base, FirstLSN: g.base + 1, LastLSN: g.base, Open: newest}
		data, err := os.ReadFile(info.File)
		if errors.Is(err, os.ErrNotExist) {
			if !newest {
				continue // released since the listing
			}
			infos = append(infos, info) // tidwall has not created it yet
			continue
		}
		if err != nil {
			return infos, fmt.Errorf("journal: read %s: %w", info.File, err)
		}
		info.Bytes = int64(len(data))
		sc := newScanner(info.File, data, g.base+1, lastLSNOf(gens, i), newest)
		for sc.Next() {
			info.Records++
		}
		info.LastLSN = g.base + uint64(info.Records)
		info.Tail, info.Damage = stopped(info.File, sc, len(data))
		infos = append(infos, info)
	}
	return infos, nil
}

// DirReader reads the records of a journal directory in LSN order, read-only:
//
//	r, err := journal.NewDirReader(dir, from)
//	...
//	for r.Next() {
//		use(r.LSN(), r.Record())
//	}
//	if err := r.Err(); err != nil { ... } // a *CorruptionError at damage
//
// Every entry is verified as Open and Reader verify it (frame CRC, LSN,
// group, record CRC). It holds one generation's segment in memory at a time
// (at most about segment_bytes).
//
// It is safe on a live journal: it never opens tidwall/wal, never takes
// the lock and writes nothing. It sees the generations that existed when it
// was made, each as long as the file was when it was read. A torn or
// partial last write of the newest generation is the end (see Tail), not
// an error; a generation released meanwhile is skipped (its records are in
// the ledger). Not safe for concurrent use.
type DirReader struct {
	gens []generation
	gi   int // index in gens of the generation being read
	from uint64

	path string
	data []byte
	sc   *framelog.Scanner
	read int64 // bytes of the generations finished so far

	prevLast uint64 // last LSN of the previous generation read, 0 before
	lsn      uint64
	rec      []byte
	off      int64 // offset of the current entry
	tail     *Repair
	err      error
}

// NewDirReader lists the journal in dir and returns a DirReader that starts
// at the record with LSN from (or the oldest record, if it is older). A
// missing dir reads as an empty journal.
func NewDirReader(dir string, from uint64) (*DirReader, error) {
	gens, err := scanGenerations(dir, nil)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	r := &DirReader{gens: gens, from: max(from, 1)}
	// Start at the newest generation whose records begin at or before
	// from: older ones hold only LSNs up to the next one's base.
	for r.gi+1 < len(gens) && gens[r.gi+1].base < r.from {
		r.read += gens[r.gi].size
		r.gi++
	}
	return r, nil
}

// Next advances to the next record. It returns false at the end, at a torn
// tail of the newest generation (Tail) or on an error (Err).
func (r *DirReader) Next() bool {
	for r.err == nil && r.tail == nil && r.gi < len(r.gens) {
		if r.sc == nil && !r.load() {
			continue
		}
		if r.sc.Next() {
			f := r.sc.Frame()
			if f.Pos < r.from {
				continue
			}
			r.lsn, r.rec, r.off = f.Pos, f.Payload, f.Off
			return true
		}
		if r.sc.Torn() != nil || r.sc.Err() != nil {
			if _, err := os.Stat(r.path); errors.Is(err, os.ErrNotExist) {
				// Released while read (cut down after a rename):
				// like a generation released since the listing.
				r.sc, r.data = nil, nil
				r.gi++
				continue
			}
			r.tail, r.err = stopped(r.path, r.sc, len(r.data))
			return false
		}
		r.finish()
	}
	return false
}

// load reads generation gi. It returns false when the generation was
// released (gi then moved on) or on an error.
func (r *DirReader) load() bool {
	g := r.gens[r.gi]
	r.path = g.segment()
	data, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		// Released since the listing (or, for the newest, not created
		// yet by tidwall): nothing to read there.
		r.gi++
		return false
	}
	if err != nil {
		r.err = fmt.Errorf("journal: read %s: %w", r.path, err)
		return false
	}
	if r.prevLast > g.base {
		r.err = &CorruptionError{File: r.path, Offset: 0, LSN: g.base + 1,
			Err: fmt.Errorf("generation %s starts after LSN %d, but the generation before it holds records up to LSN %d", genName(g.base), g.base, r.prevLast)}
		return false
	}
	r.data = data
	r.sc = newScanner(r.path, data, g.base+1, lastLSNOf(r.gens, r.gi), r.gi == len(r.gens)-1)
	return true
}

// finish moves on from a generation read to its clean end.
func (r *DirReader) finish() {
	if r.sc.Want() > r.gens[r.gi].base+1 {
		r.prevLast = r.sc.Want() - 1
	}
	r.read += int64(len(r.data))
	r.sc, r.data = nil, nil
	r.gi++
}

// LSN is the current record's LSN.
func (r *DirReader) LSN() uint64 { return r.lsn }

// Record is the current record, valid until the next call to Next.
func (r *DirReader) Record() []byte { return r.rec }

// File is the segment file holding the current record.
func (r *DirReader) File() string { return r.path }

// Offset is the offset in File of the current record's entry (its length
// prefix).
func (r *DirReader) Offset() int64 { return r.off }

// BytesRead is the bytes of segment files read so far: the generations
// finished and the current one up to the current record; for progress.
func (r *DirReader) BytesRead() int64 {
	if r.sc == nil {
		return r.read
	}
	return r.read + r.sc.Offset()
}

// Generations is the number of generations listed when the DirReader was
// made (those before the one holding from included).
func (r *DirReader) Generations() int { return len(r.gens) }

// Size is the total size of the listed generations' segment files when
// they were listed; with BytesRead, for progress.
func (r *DirReader) Size() int64 {
	var n int64
	for _, g := range r.gens {
		n += g.size
	}
	return n
}

// Tail is the torn or partial last write of the newest generation that
// ended the records, or nil: a write in progress while logpond runs, or
// what Open cuts at the next start. It was never acknowledged.
func (r *DirReader) Tail() *Repair { return r.tail }

// Err is the error that stopped Next: a *CorruptionError for damage, or a
// read error. It is nil at the end and at a torn tail.
func (r *DirReader) Err() error { return r.err }

// GenerationEnd is the last LSN the generation being read (after an error,
// the one it is in) can hold: the next generation's base, or 0 for the
// newest generation, which ends at its last record.
func (r *DirReader) GenerationEnd() uint64 {
	if r.gi >= len(r.gens) {
		return 0
	}
	return lastLSNOf(r.gens, r.gi)
}

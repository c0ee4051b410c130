package journal

import (
	"errors"
	"fmt"
	"os"

	"github.com/logpond/logpond/internal/framelog"
)

// Reader reads records from the journal's files in LSN order, from a given
// LSN up to the last LSN that was durable when the Reader was made. Every
// entry is verified (frame CRC, LSN, record CRC); damage is a
// *CorruptionError with file and offset. Use it in a Next/Record/Err loop.
// It reads the segment files in chunks of framelog.ReadChunk bytes (more
// only for an entry larger than that), so what it holds does not grow with
// segment_bytes. A Reader is not safe for concurrent use.
type Reader struct {
	next, end uint64
	gens      []generation
	gi        int
	path      string
	sc        *framelog.Scanner
	file      *os.File // the generation being read
	lsn       uint64
	rec       []byte
	err       error
}

// Reader returns a Reader of the records with LSN from..LastLSN().
func (j *Journal) Reader(from uint64) *Reader {
	end := j.durable.Load()
	j.mu.Lock()
	gens := append([]generation(nil), j.gens...)
	j.mu.Unlock()
	return &Reader{next: max(from, 1), end: end, gens: gens}
}

// Next advances to the next record; it returns false at the end or on an
// error (see Err), and then holds no file open.
func (r *Reader) Next() bool {
	if r.advance() {
		return true
	}
	r.closeFile()
	return false
}

func (r *Reader) advance() bool {
	for r.err == nil && r.next <= r.end {
		if r.sc == nil && !r.load() {
			return false
		}
		if r.sc.Next() {
			f := r.sc.Frame()
			if f.Pos < r.next {
				continue
			}
			r.lsn, r.rec = f.Pos, f.Payload
			r.next = f.Pos + 1
			return true
		}
		if r.sc.Err() != nil {
			if _, err := os.Stat(r.path); errors.Is(err, os.ErrNotExist) {
				// Released while read: the release cuts the segment
				// down after renaming it, so what was read may end
				// anywhere. Not damage.
				r.err = fmt.Errorf("journal: LSN %d was released while being read", r.sc.Want())
				return false
			}
			_, r.err = stopped(r.path, r.sc, 0)
			return false
		}
		// End of this generation's records.
		r.closeFile()
		r.sc = nil
		r.gi++
		if r.gi < len(r.gens) {
			r.next = max(r.next, r.gens[r.gi].base+1)
		}
	}
	return false
}

// load reads the generation holding r.next.
func (r *Reader) load() bool {
	for r.gi+1 < len(r.gens) && r.gens[r.gi+1].base < r.next {
		r.gi++
	}
	if r.gi >= len(r.gens) {
		r.err = fmt.Errorf("journal: LSN %d is past the last generation", r.next)
		return false
	}
	g := r.gens[r.gi]
	if r.next <= g.base {
		if r.gi == 0 {
			r.err = fmt.Errorf("journal: LSN %d was released (the oldest record is after %d)", r.next, g.base)
			return false
		}
	}
	r.path = g.segment()
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		r.err = fmt.Errorf("journal: LSN %d was released while being read", r.next)
		return false
	} else if err != nil {
		r.err = fmt.Errorf("journal: read %s: %w", r.path, err)
		return false
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		r.err = fmt.Errorf("journal: read %s: %w", r.path, err)
		return false
	}
	r.file = f
	// The active generation may hold a group being written beyond r.end;
	// the loop stops at r.end before reaching it. The file holds every
	// entry up to r.end: they were durable before the Reader was made.
	r.sc = framelog.NewScanner(framelog.File(f, st.Size()), entries{},
		framelog.Scan{File: r.path, Want: g.base + 1, Last: lastLSNOf(r.gens, r.gi)})
	return true
}

// closeFile closes the generation's file once it has been read.
func (r *Reader) closeFile() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
}

// Close releases the file of a Reader left before Next returned false.
func (r *Reader) Close() { r.closeFile() }

// LSN is the current record's LSN.
func (r *Reader) LSN() uint64 { return r.lsn }

// Record is the current record, valid until the next call to Next.
func (r *Reader) Record() []byte { return r.rec }

// Err is the error that ended iteration, or nil at a clean end.
func (r *Reader) Err() error { return r.err }

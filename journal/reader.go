package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Reader reads records from the journal's files in LSN order, from a given
// LSN up to the last LSN that was durable when the Reader was made. Every
// entry is verified (frame CRC, LSN, record CRC); damage is a
// *CorruptionError with file and offset. Use it in a Next/Record/Err loop.
// It reads the segment files in chunks of readChunk bytes (more only for
// an entry larger than that), so what it holds does not grow with
// segment_bytes. A Reader is not safe for concurrent use.
type Reader struct {
	next, end uint64
	gens      []generation
	gi        int
	path      string
	sc        *scanner
	file      *os.File // the generation being read, from fileOff
	fileOff   int64    // file offset of sc.data[0]
	eof       bool     // sc.data reaches the end of file
	buf       []byte
	lsn       uint64
	rec       []byte
	err       error
}

// readChunk is how much of a segment file a Reader reads at a time.
const readChunk = 1 << 20

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
		if !r.fill() {
			return false
		}
		if r.sc.next() {
			f := r.sc.cur
			if f.lsn < r.next {
				continue
			}
			r.lsn, r.rec = f.lsn, f.rec
			r.next = f.lsn + 1
			return true
		}
		if r.sc.err != nil {
			if _, err := os.Stat(r.path); errors.Is(err, os.ErrNotExist) {
				// Released while read: the release cuts the segment
				// down after renaming it, so what was read may end
				// anywhere. Not damage.
				r.err = fmt.Errorf("journal: LSN %d was released while being read", r.sc.nextLSN)
				return false
			}
			r.err = &CorruptionError{File: r.path, Offset: r.fileOff + int64(r.sc.off), LSN: r.sc.nextLSN, Err: r.sc.err}
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
	r.file, r.fileOff, r.eof = f, 0, false
	if cap(r.buf) < readChunk {
		r.buf = make([]byte, 0, readChunk)
	}
	// The active generation may hold a group being written beyond r.end;
	// the loop stops at r.end before reaching it.
	r.sc = newScanner(r.buf[:0], g.base+1, lastLSNOf(r.gens, r.gi))
	return true
}

// fill makes sure the scanner's data holds the whole next entry, reading
// more of the file when it does not (and the file has more): the bytes
// not yet scanned move to the front of the buffer, which grows only for
// an entry larger than it. At the end of the file the scanner sees what
// is there, and judges a short entry as it would in a whole file.
func (r *Reader) fill() bool {
	for !r.eof {
		rest := r.sc.data[r.sc.off:]
		size, n := binary.Uvarint(rest)
		need := 0 // bytes the next entry needs in rest; 0 when they are there
		switch {
		case n == 0 && len(rest) < binary.MaxVarintLen64:
			need = len(rest) + 1 // a torn or partly read length prefix
		case n > 0 && size <= math.MaxInt32 && uint64(len(rest)-n) < size:
			need = n + int(size)
		}
		if need == 0 {
			return true
		}
		if need > cap(r.buf) {
			grown := make([]byte, len(rest), need)
			copy(grown, rest)
			r.buf = grown
		} else {
			r.buf = r.buf[:copy(r.buf[:cap(r.buf)], rest)]
		}
		r.fileOff += int64(r.sc.off)
		for len(r.buf) < cap(r.buf) {
			m, err := r.file.Read(r.buf[len(r.buf):cap(r.buf)])
			r.buf = r.buf[:len(r.buf)+m]
			if err == io.EOF {
				r.eof = true
				break
			} else if err != nil {
				r.err = fmt.Errorf("journal: read %s: %w", r.path, err)
				return false
			}
		}
		r.sc.data, r.sc.off = r.buf, 0
	}
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

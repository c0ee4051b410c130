package dlq

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/logpond/logpond/internal/framelog"
)

// fileScanner reads the entries of one file in order: it checks the file
// header, then has a framelog.Scanner verify the frames and apply the
// recovery rule of doc.go where one does not decode.
type fileScanner struct {
	src    framelog.Source
	path   string
	seq    uint64
	size   int64
	newest bool // a torn tail ends the file instead of being damage
	frames *frames
	sc     *framelog.Scanner // nil until the header checked out

	started bool
	off     int64 // where the next frame starts

	frameOff int64 // offset of the frame just returned by next
	entry    Entry // its entry

	torn *framelog.Tear // where the newest file's torn tail begins, when next stopped at one
	err  error          // a *CorruptionError or a read error, when next stopped at one
}

func newFileScanner(r io.ReaderAt, path string, seq uint64, size int64, newest bool) *fileScanner {
	return &fileScanner{src: framelog.File(r, size), path: path, seq: seq, size: size, newest: newest, frames: &frames{seq: seq}}
}

// next advances to the next entry. It returns false at the clean end of the
// file, at a torn tail (s.torn) or at damage or a read error (s.err).
func (s *fileScanner) next() bool {
	if s.err != nil || s.torn != nil {
		return false
	}
	if !s.started {
		if !s.header() {
			return false
		}
		s.started, s.off = true, fileHeaderSize
		s.sc = framelog.NewScanner(s.src, s.frames, framelog.Scan{File: s.path, Start: fileHeaderSize, Want: fileHeaderSize, Tail: s.newest})
	}
	ok := s.sc.Next()
	s.off = s.sc.Offset()
	if ok {
		s.frameOff, s.entry = s.sc.Frame().Off, s.frames.entry
		return true
	}
	s.torn = s.sc.Torn()
	var ce *framelog.CorruptionError
	switch err := s.sc.Err(); {
	case errors.As(err, &ce):
		s.err = corruption(ce)
	case err != nil:
		s.err = fmt.Errorf("dlq: %w", err)
	}
	return false
}

// header checks the file header. A newest file that is shorter than its
// header, or all zeros, was being created when the writer stopped: it holds
// no entry (doc.go) and counts as a tear at offset 0.
func (s *fileScanner) header() bool {
	var err error
	if s.size < fileHeaderSize {
		err = fmt.Errorf("%w: file is %d bytes, shorter than its header", errHeader, s.size)
	} else {
		var h []byte
		if h, err = s.src.At(0, fileHeaderSize); err != nil && !errors.Is(err, framelog.ErrShrank) {
			s.err = fmt.Errorf("dlq: read %s: %w", s.path, err)
			return false
		}
		if err == nil {
			err = checkFileHeader(h, s.seq)
		}
	}
	if err == nil {
		return true
	}
	if s.newest {
		zero, rerr := s.allZero()
		if rerr != nil {
			s.err = fmt.Errorf("dlq: read %s: %w", s.path, rerr)
			return false
		}
		if s.size < fileHeaderSize || zero {
			s.torn = &framelog.Tear{Offset: 0, Reason: err}
			return false
		}
	}
	s.err = &CorruptionError{File: s.path, Offset: 0, Err: err}
	return false
}

func (s *fileScanner) allZero() (bool, error) {
	for off := int64(0); off < s.size; {
		n := int(min(framelog.ReadChunk, s.size-off))
		b, err := s.src.At(off, n)
		if errors.Is(err, framelog.ErrShrank) {
			return true, nil // cut by a Store's Open: it was a tear
		}
		if err != nil {
			return false, err
		}
		if !allZero(b) {
			return false, nil
		}
		off += int64(n)
	}
	return true, nil
}

// fileRef is a dead-letter file found in a directory.
type fileRef struct {
	seq  uint64
	name string // base name
}

// listFiles returns the dead-letter files in dir, oldest first. Files with
// other suffixes (the LOCK file) are ignored; a .dlq file with a malformed
// name is an error, so that no file is silently left out.
func listFiles(dir string) ([]fileRef, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dlq: list %s: %w", dir, err)
	}
	var files []fileRef
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		seq, ok := parseFileName(name)
		if !ok {
			return nil, fmt.Errorf("dlq: %s: unexpected file %q: dead-letter files are named <%d-digit sequence number>%s", dir, name, seqDigits, fileSuffix)
		}
		files = append(files, fileRef{seq: seq, name: name})
	}
	slices.SortFunc(files, func(a, b fileRef) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return files, nil
}

// parseFileName returns the sequence number of a dead-letter file name.
func parseFileName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, fileSuffix)
	if !ok || len(digits) != seqDigits || strings.ContainsAny(digits, "+-") {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil && seq > 0
}

// Pos is where an entry is stored: the base name of its file and the byte
// offset of its frame. Positions order entries: by file name, then offset.
// A Pos returned by Scan or a Reader is what Store.Purge takes.
type Pos struct {
	File   string
	Offset int64
}

// String is the entry's id, FILE:OFFSET, as ParsePos reads it.
func (p Pos) String() string { return p.File + ":" + strconv.FormatInt(p.Offset, 10) }

// ParsePos reads an entry's id, FILE:OFFSET (Pos.String): a dead-letter
// file's base name and a byte offset. It checks the form only, not that
// the entry exists.
func ParsePos(id string) (Pos, error) {
	file, off, ok := strings.Cut(id, ":")
	n, err := strconv.ParseInt(off, 10, 64)
	if _, named := parseFileName(file); !ok || err != nil || n < 0 || !named {
		return Pos{}, fmt.Errorf("dlq: %q is not a dead letter's id: FILE:OFFSET, a file's name and an entry's offset in it, e.g. %s:%d", id, fileName(1), fileHeaderSize)
	}
	return Pos{File: file, Offset: n}, nil
}

// Reader reads the entries of a dead-letter directory, oldest first:
//
//	r, err := dlq.NewReader(dir)
//	...
//	defer r.Close()
//	for r.Next() {
//		use(r.Pos(), r.Entry())
//	}
//	if err := r.Err(); err != nil { ... }
//
// A Reader is read-only: it takes no lock and never writes, so it is safe
// to use while a Store on the same directory runs in another process. It
// sees the files that existed when it was made, up to the sizes they had
// when it opened each; a file purged meanwhile is skipped (Purge deletes
// oldest first, and only entries that were re-driven). A torn tail of the
// newest file is the end, not an error; it may be a write the Store is
// making right now. Any other damage stops it with a *CorruptionError.
// A Reader is not safe for concurrent use.
type Reader struct {
	dir   string
	files []fileRef
	i     int // index in files of the file being read
	f     *os.File
	sc    *fileScanner
	err   error
}

// NewReader lists the files of the dead-letter directory dir.
func NewReader(dir string) (*Reader, error) {
	files, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	return &Reader{dir: dir, files: files}, nil
}

// Next advances to the next entry. It returns false at the end or on an
// error (see Err).
func (r *Reader) Next() bool {
	for r.err == nil {
		if r.sc == nil {
			if r.i == len(r.files) {
				return false
			}
			if !r.open() {
				continue
			}
		}
		if r.sc.next() {
			return true
		}
		if r.sc.err != nil {
			r.err = r.sc.err
			return false
		}
		r.closeFile()
		r.i++
	}
	return false
}

// open opens files[i]; false means it is gone (or r.err is set).
func (r *Reader) open() bool {
	ref := r.files[r.i]
	path := filepath.Join(r.dir, ref.name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		r.i++ // purged since the listing
		return false
	}
	var info os.FileInfo
	if err == nil {
		if info, err = f.Stat(); err != nil {
			f.Close()
		}
	}
	if err != nil {
		r.err = fmt.Errorf("dlq: %w", err)
		return false
	}
	r.f = f
	r.sc = newFileScanner(f, path, ref.seq, info.Size(), r.i == len(r.files)-1)
	return true
}

func (r *Reader) closeFile() {
	if r.f != nil {
		r.f.Close() // read-only: nothing to lose
		r.f, r.sc = nil, nil
	}
}

// Entry is the entry Next moved to (call it only after Next returned
// true). It belongs to the caller: its Event does not alias the Reader's
// buffers.
func (r *Reader) Entry() Entry { return r.sc.entry }

// Pos is where the entry Next moved to is stored.
func (r *Reader) Pos() Pos { return Pos{File: r.files[r.i].name, Offset: r.sc.frameOff} }

// Err is the error that stopped Next: a *CorruptionError for damage, or a
// read error. It is nil at the end.
func (r *Reader) Err() error { return r.err }

// Close releases the open file.
func (r *Reader) Close() error {
	r.closeFile()
	return nil
}

// Scan calls fn for every entry in the dead-letter directory dir, oldest
// first, with a Reader (see its promises: read-only, lock-free, a torn
// tail of the newest file is the end). It stops at the first error of fn,
// which it returns, or at damage, for which it returns a *CorruptionError
// after fn has seen every entry before it. fn owns the entries it gets.
func Scan(dir string, fn func(pos Pos, e Entry) error) error {
	r, err := NewReader(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
		if err := fn(r.Pos(), r.Entry()); err != nil {
			return err
		}
	}
	return r.Err()
}

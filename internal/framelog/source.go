package framelog

import (
	"errors"
	"io"
)

// Source is the bytes of one log file, read at any offset below Size.
type Source interface {
	// Size is the number of bytes scanned: the file's size when the scan
	// began.
	Size() int64
	// At returns the n bytes at off, which lie within Size. The slice is
	// valid until the next call. It returns ErrShrank when the file now
	// holds fewer bytes than Size said.
	At(off int64, n int) ([]byte, error)
	// Reread forgets what the Source holds of the file, so that At reads
	// the file again, and reports whether it can: bytes held in memory
	// cannot be read again.
	Reread() bool
}

// ErrShrank is returned by a Source whose file holds fewer bytes than its
// Size: a store cut the file's torn tail while it was being scanned. A
// scan counts it as bytes that are not a frame.
var ErrShrank = errors.New("file shorter than when scanning began")

// Bytes is a Source over a whole file read into memory.
func Bytes(b []byte) Source { return memory(b) }

type memory []byte

func (m memory) Size() int64 { return int64(len(m)) }

func (m memory) At(off int64, n int) ([]byte, error) { return m[off : off+int64(n)], nil }

func (m memory) Reread() bool { return false }

// ReadChunk is the size of one read of a File source: large, so that a scan
// of a large file costs few system calls, and small enough to bound a
// reader's memory (besides the largest frame it meets).
const ReadChunk = 1 << 20

// File is a Source over the first size bytes of r, read ReadChunk bytes at a
// time (more only for a frame larger than that): a scan holds one chunk,
// not the file.
func File(r io.ReaderAt, size int64) Source { return &window{r: r, size: size} }

// window caches a stretch of a file for reads at increasing offsets, with
// random access when a damaged tail is searched.
type window struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // valid bytes in buf
}

func (w *window) Size() int64 { return w.size }

func (w *window) At(off int64, n int) ([]byte, error) {
	if off >= w.base && off+int64(n) <= w.base+int64(w.n) {
		return w.buf[off-w.base:][:n], nil
	}
	want := int(min(int64(max(n, ReadChunk)), w.size-off))
	if cap(w.buf) < want {
		w.buf = make([]byte, want)
	}
	w.base, w.n = off, 0
	got, err := w.r.ReadAt(w.buf[:want], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	w.n = got
	if got < n {
		return nil, ErrShrank
	}
	return w.buf[:n], nil
}

func (w *window) Reread() bool {
	w.n = 0
	return true
}

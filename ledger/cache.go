package ledger

import (
	"container/list"
	"math"
	"os"
	"sync"
)

// cacheWindow is the unit of the shared read cache: readChunk bytes at a
// multiple of readChunk in a segment file, the scanner's read unit, so
// that a reader catching up fills whole windows.
const cacheWindow = readChunk

// DefaultReadCacheBytes is the default of Options.ReadCacheBytes: 32
// windows. Outputs draining together do not read in lockstep: each reads
// ahead of what it has delivered (its chunks and retry queue), so the
// readers drift apart by several MiB; 32 MiB keeps readers that far apart
// sharing one device read, without the memory growing with the number of
// outputs.
const DefaultReadCacheBytes = 32 * cacheWindow

// readCache holds recently read windows of segment files, shared by the
// ledger's Readers, so that outputs close together in the ledger read
// each byte from the device once (O_DIRECT bypasses the page cache). A
// window is keyed by its segment's first LSN and its offset: segment
// names are never reused within a ledger's life (LSNs only grow), and
// retention drops the windows of the segments it deletes. Least recently
// used windows go first; the total stays within the capacity. Safe for
// concurrent use.
type readCache struct {
	mu      sync.Mutex
	max     int // windows held at most
	lru     *list.List
	windows map[windowKey]*list.Element
	free    [][]byte // buffers of windows no longer cached, for reuse
}

type windowKey struct {
	seg uint64 // the segment's first LSN
	off int64  // a multiple of cacheWindow
}

// window is one cached window. Its bytes never change while it is cached
// (an update replaces the window); they are copied out under the cache's
// lock, so that its buffer can be reused once it is no longer cached.
type window struct {
	key windowKey
	buf []byte
	// n is the bytes of buf that are valid: read from the device, and
	// final (a sealed segment's, or the open segment's up to where its
	// synced records ended when they were read).
	n int
	// eof: the file ends at n (the segment was sealed when read), so a
	// read past n finds nothing on the device either.
	eof bool
}

// newReadCache returns a cache of at most bytes (rounded down to whole
// windows), or nil when that is not one window: no caching.
func newReadCache(bytes int64) *readCache {
	n := bytes / cacheWindow
	if n < 1 {
		return nil
	}
	return &readCache{max: int(min(n, math.MaxInt32)), lru: list.New(), windows: map[windowKey]*list.Element{}}
}

// copyOut copies the bytes of the window of key from offset from into dst
// when the window holds the bytes up to need (relative to its start) or
// the file ends in it, and reports how many; ok is false when it does not
// (a miss). The copy is made under the lock, so that a window's buffer is
// reused only once no Reader copies from it.
func (c *readCache) copyOut(key windowKey, dst []byte, from, need int) (n int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.windows[key]
	if !ok {
		return 0, false
	}
	w := e.Value.(*window)
	if w.n < need && !w.eof {
		return 0, false
	}
	c.lru.MoveToFront(e)
	if from >= w.n {
		return 0, true
	}
	return copy(dst, w.buf[from:w.n]), true
}

// buffer returns a window buffer: one evicted before, or a new one.
func (c *readCache) buffer() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free = c.free[:n-1]
		return b
	}
	return alignedBuffer(cacheWindow)
}

// release keeps buf, no longer cached, for reuse. At most two are kept:
// a Reader needs one at a time.
func (c *readCache) releaseLocked(buf []byte) {
	if len(c.free) < 2 {
		c.free = append(c.free, buf)
	}
}

// put caches w, replacing the window of its key unless that one holds
// more (w's buffer is then kept for reuse), and evicts the least recently
// used windows beyond the capacity.
func (c *readCache) put(w *window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.windows[w.key]; ok {
		old := e.Value.(*window)
		c.lru.MoveToFront(e)
		if old.n >= w.n && (old.eof || !w.eof) {
			c.releaseLocked(w.buf)
			return
		}
		e.Value = w
		c.releaseLocked(old.buf)
		return
	}
	c.windows[w.key] = c.lru.PushFront(w)
	for c.lru.Len() > c.max {
		e := c.lru.Back()
		c.lru.Remove(e)
		old := e.Value.(*window)
		delete(c.windows, old.key)
		c.releaseLocked(old.buf)
	}
}

// drop forgets the windows of segment seg that hold bytes between offsets
// from and to (to < 0: to the end of the file).
func (c *readCache) drop(seg uint64, from, to int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The map holds a few windows (the capacity): a walk is cheap.
	for k, e := range c.windows {
		if k.seg == seg && k.off+cacheWindow > from && (to < 0 || k.off < to) {
			c.lru.Remove(e)
			delete(c.windows, k)
		}
	}
}

func alignWindow(off int64) int64 { return off / cacheWindow * cacheWindow }

// segReads is how a Reader's scanner reads its segment: through the
// ledger's shared cache when it has one, counting the bytes read from the
// device (Ledger.DeviceBytesRead).
type segReads struct {
	l   *Ledger
	seg uint64 // the segment's first LSN
}

// stableEnd reports how much of the segment is final — every byte for a
// sealed segment (sealed), where the synced records end for the open one
// — and whether the segment is still in the ledger (retention has not
// deleted it: its windows may be cached).
func (s *segReads) stableEnd() (end int64, sealed, live bool) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	for i, sg := range s.l.segs {
		if sg.first == s.seg {
			if i == len(s.l.segs)-1 {
				return sg.size, false, true
			}
			return math.MaxInt64, true, true
		}
	}
	return math.MaxInt64, true, false
}

// device reads buf at off from the device, counting what it read, and
// forgets the cached windows those bytes lie in: a read that bypasses the
// cache is one that must see what the device holds now (a retry after a
// failed read, a check for damage), and a cached copy that may differ
// must not be served after it.
func (s *segReads) device(f *os.File, buf []byte, off int64) (int, error) {
	n, err := readAt(f, buf, off)
	s.l.deviceRead.Add(int64(n))
	if c := s.l.cache; c != nil {
		c.drop(s.seg, off, off+int64(len(buf)))
	}
	return n, err
}

// read fills buf (aligned, at the block boundary off) like readAt: fewer
// bytes only where the readable bytes end — the end of the file, or, for
// the open segment when a cached window serves the read, the end of its
// synced records, past which this reader has nothing to read yet. Windows
// it lacks are read whole from the device and cached up to their final
// bytes.
func (s *segReads) read(f *os.File, buf []byte, off int64) (int, error) {
	c := s.l.cache
	if c == nil {
		n, err := readAt(f, buf, off)
		s.l.deviceRead.Add(int64(n))
		return n, err
	}
	// Taken before any device read: bytes final then are final in what
	// the read returns.
	stable, sealed, live := s.stableEnd()
	got := 0
	for got < len(buf) {
		pos := off + int64(got)
		wOff := alignWindow(pos)
		from := int(pos - wOff)
		want := min(len(buf)-got, cacheWindow-from)
		// The bytes this read needs from the window, within those final.
		need := from + want
		if !sealed {
			need = int(min(int64(need), max(stable-wOff, int64(from)+1)))
		}
		key := windowKey{s.seg, wOff}
		if n, ok := c.copyOut(key, buf[got:got+want], from, need); ok {
			got += n
			if n < want {
				return got, nil // the file, or its final bytes, end here
			}
			continue
		}
		wbuf := c.buffer()
		n, err := readAt(f, wbuf, wOff)
		s.l.deviceRead.Add(int64(n))
		k := 0
		if err == nil && n > from {
			k = copy(buf[got:got+want], wbuf[from:n])
		}
		keep := n
		if !sealed {
			keep = int(min(int64(n), max(stable-wOff, 0)))
		}
		if err == nil && live && keep > 0 {
			c.put(&window{key: key, buf: wbuf, n: keep, eof: sealed && n < cacheWindow})
		} else {
			c.mu.Lock()
			c.releaseLocked(wbuf)
			c.mu.Unlock()
		}
		if err != nil {
			return got, err
		}
		got += k
		if k < want {
			return got, nil
		}
	}
	return got, nil
}

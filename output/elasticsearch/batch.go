package elasticsearch

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
)

// item is one event in a bulk request: its action line and its source
// line, both newline-terminated, at buf[start:end] of its batch, and what
// the source line lacks of the event as stored at kept[kept:] (see
// original.go).
type item struct {
	lsn   uint64
	pos   uint32
	tries uint16 // times the item was refused with an error other than a rejection (429)
	start int
	end   int
	kept  int
}

// batch is one bulk request: NDJSON bytes and the items they hold, in LSN
// order, and for each item what its dead letter needs besides its lines
// (kept). It belongs to one worker. Its buffers come from a bufPool and
// go back there only when the worker is done with the batch and the HTTP
// transport has closed every request body sent from it (refs counts
// both), so nothing still reads the bytes when they are overwritten: a
// transport may go on writing a body after the response came (a server
// may answer 413 early).
type batch struct {
	buf   []byte
	kept  []byte // never sent: see original.go
	items []item
	pool  *bufPool
	refs  atomic.Int32
	// tainted: a request over buf failed in the transport, which then
	// closes the body without waiting for its writer to stop copying it;
	// such a buffer is left to the GC instead of being reused.
	tainted atomic.Bool
}

// newBatch returns a batch with room for about n bytes of lines, held
// once by the caller (release it when done).
func newBatch(pool *bufPool, n, events int) *batch {
	buf, kept := pool.get(n)
	b := &batch{buf: buf, kept: kept, items: make([]item, 0, events), pool: pool}
	b.refs.Store(1)
	return b
}

// release drops one hold on b's buffers; the last gives them back to the
// pool.
func (b *batch) release() {
	if b.refs.Add(-1) == 0 && !b.tainted.Load() {
		b.pool.put(b.buf, b.kept)
	}
}

// body returns the request body for items, a subset of b.items in order:
// one over b.buf itself (holding it until the transport closes the body)
// when items are all of them, else over a new copy.
func (b *batch) body(items []item) *requestBody {
	if len(items) == len(b.items) {
		b.refs.Add(1)
		return &requestBody{Reader: bytes.NewReader(b.buf), data: b.buf, owner: b}
	}
	n := 0
	for _, it := range items {
		n += it.end - it.start
	}
	body := make([]byte, 0, n)
	for _, it := range items {
		body = append(body, b.buf[it.start:it.end]...)
	}
	return &requestBody{Reader: bytes.NewReader(body), data: body}
}

// requestBody is a bulk request's body. net/http closes a request body
// once it will not read it again (including after errors); that is when
// the batch buffer it reads from may be reused.
type requestBody struct {
	*bytes.Reader
	data   []byte // all of it, for again
	owner  *batch // nil when the body owns its bytes
	closed atomic.Bool
}

// again returns a fresh body over the same bytes, holding the batch
// buffer in its own right: net/http's GetBody, with which it resends a
// request that failed on a reused connection before anything was sent.
// It is only called during the RoundTrip, while the worker still holds
// the batch, so the buffer cannot have gone back to the pool.
func (r *requestBody) again() *requestBody {
	if r.owner != nil {
		r.owner.refs.Add(1)
	}
	return &requestBody{Reader: bytes.NewReader(r.data), data: r.data, owner: r.owner}
}

// failed marks the batch buffer as not reusable: the transport failed the
// request and may still be copying from it after closing the body.
func (r *requestBody) failed() {
	if r.owner != nil {
		r.owner.tainted.Store(true)
	}
}

// Close releases the body's hold on its batch buffer; later calls do
// nothing.
func (r *requestBody) Close() error {
	if r.closed.CompareAndSwap(false, true) && r.owner != nil {
		r.owner.release()
	}
	return nil
}

// bufPool keeps up to cap(free) pairs of batch buffers (lines, kept) for
// reuse, so that the output does not allocate (and zero, and collect) a
// FlushBytes-sized buffer per request. Buffers it cannot keep are left to
// the GC, and so is a pair of which either buffer is larger than maxKeep:
// grown for events far larger than flush_bytes, such a buffer would hold
// that memory long after the events went.
//
// It hands out buffers of at least size bytes, whatever a caller asks
// for, so that every buffer it keeps fits every later request of an
// ordinary batch: a small one (from a chunk's last few events) would
// otherwise be taken, found too small and dropped, and a full-sized one
// made in its place.
type bufPool struct {
	free    chan batchBuffers
	size    int
	maxKeep int
	reused  atomic.Int64 // buffers handed out again (tests read it)
	made    atomic.Int64 // buffers allocated (tests read it)
}

type batchBuffers struct{ buf, kept []byte }

func newBufPool(n, size, maxKeep int) *bufPool {
	return &bufPool{free: make(chan batchBuffers, n), size: size, maxKeep: maxKeep}
}

// get returns empty buffers, for lines with room for at least n bytes.
func (p *bufPool) get(n int) (buf, kept []byte) {
	select {
	case b := <-p.free:
		if cap(b.buf) >= n {
			p.reused.Add(1)
			return b.buf[:0], b.kept[:0]
		}
	default:
	}
	p.made.Add(1)
	return make([]byte, 0, max(n, p.size)), nil
}

// put offers buf and kept for reuse.
func (p *bufPool) put(buf, kept []byte) {
	if cap(buf) > p.maxKeep || cap(kept) > p.maxKeep {
		return
	}
	select {
	case p.free <- batchBuffers{buf[:0], kept[:0]}:
	default:
	}
}

// lengthTransport gives a bulk request the Content-Length and GetBody of
// its body. net/http knows both for a *bytes.Reader body but not for the
// requestBody that wraps one (which it must see, to close it): it would
// fall back to chunked encoding (more, smaller writes, and a body some
// proxies refuse), and could not resend a request that met a keep-alive
// connection the server had just closed.
type lengthTransport struct{ http.RoundTripper }

// RoundTrip sets the length on a shallow copy, as a RoundTripper must not
// change the request it is given.
func (t lengthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if b, ok := req.Body.(*requestBody); ok && req.ContentLength == 0 {
		req = req.WithContext(req.Context())
		req.ContentLength = int64(b.Len())
		if req.GetBody == nil {
			req.GetBody = func() (io.ReadCloser, error) { return b.again(), nil }
		}
	}
	return t.RoundTripper.RoundTrip(req)
}

package elasticsearch

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestBatchBufferReturnsAfterTheLastHold: a batch buffer goes back to the
// pool only when the worker has released the batch and every request body
// over it is closed, in either order; a body over a subset of the items is
// a copy and holds nothing.
func TestBatchBufferReturnsAfterTheLastHold(t *testing.T) {
	for _, bodyFirst := range []bool{false, true} {
		pool := newBufPool(2, 0, 1<<20)
		b := newBatch(pool, 64, 2)
		b.buf = append(b.buf, "ab\ncd\nef\ngh\n"...)
		b.items = append(b.items, item{start: 0, end: 6}, item{start: 6, end: 12})
		whole, part := b.body(b.items), b.body(b.items[1:])
		if part.owner != nil || part.Len() != 6 {
			t.Fatalf("a body over some items holds the batch (owner %v, %d bytes)", part.owner, part.Len())
		}
		part.Close()
		if whole.Len() != 12 {
			t.Fatalf("whole body is %d bytes", whole.Len())
		}
		if bodyFirst {
			whole.Close()
			whole.Close() // a second Close must not release twice
		} else {
			b.release()
		}
		if len(pool.free) != 0 {
			t.Fatalf("bodyFirst=%v: buffer returned while still held", bodyFirst)
		}
		if bodyFirst {
			b.release()
		} else {
			whole.Close()
		}
		if len(pool.free) != 1 {
			t.Fatalf("bodyFirst=%v: buffer not returned after the last hold", bodyFirst)
		}
		if got, _ := pool.get(32); cap(got) < 64 || len(got) != 0 || pool.reused.Load() != 1 {
			t.Fatalf("get after put: len %d cap %d reused %d", len(got), cap(got), pool.reused.Load())
		}
	}
}

// TestRequestsCarryContentLengthAndReuseBuffers: every bulk request states
// its length (no chunked encoding), plain and gzip, and batch buffers are
// reused across requests: every chunk of records here makes two requests
// or more, so a worker holds two batches at once (the one in flight and
// the next), and the pool must keep both for the drain to run on the
// buffers of its first requests.
func TestRequestsCarryContentLengthAndReuseBuffers(t *testing.T) {
	for _, gz := range []bool{false, true} {
		r := newRig(t, estest.Options{})
		for i := range 300 {
			evs := make([][]byte, 40)
			for j := range evs {
				evs[j] = filebeatEvent(40*i+j, "")
			}
			r.store(time.Now(), evs...)
		}
		run := r.start(r.options(func(o *Options) { o.Gzip, o.FlushBytes, o.Workers = gz, 4<<10, 2 }))
		waitFor(t, "every event", func() bool { return r.es.Count() == 12000 })
		run.Stop(t)
		r.checkAllStoredOnce(t)
		st := r.es.Stats()
		if st.BulkRequests < 10 || st.ChunkedRequests != 0 {
			t.Errorf("gzip=%v: %d of %d bulk requests were chunked", gz, st.ChunkedRequests, st.BulkRequests)
		}
		if n := run.Out.pool.reused.Load(); n == 0 {
			t.Errorf("gzip=%v: no batch buffer was reused over %d requests", gz, st.BulkRequests)
		}
		// Two per worker, and as many again for bodies the transport has
		// not closed yet when the worker asks for its next buffer.
		if made, most := run.Out.pool.made.Load(), int64(4*2); made > most {
			t.Errorf("gzip=%v: %d batch buffers made for %d requests (%d reused), want at most %d", gz, made, st.BulkRequests, run.Out.pool.reused.Load(), most)
		}
	}
}

// captureTransport records the request it is given.
type captureTransport struct{ req *http.Request }

func (c *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.req = req
	return nil, errors.New("captured")
}

// TestLengthTransportGivesLengthAndGetBody: a bulk request leaves with its
// Content-Length and a GetBody that returns the same bytes again, holding
// the batch buffer until that body too is closed; the caller's request is
// not changed.
func TestLengthTransportGivesLengthAndGetBody(t *testing.T) {
	pool := newBufPool(2, 0, 1<<20)
	b := newBatch(pool, 64, 1)
	b.buf = append(b.buf, "line\n"...)
	b.items = append(b.items, item{start: 0, end: 5})
	body := b.body(b.items)
	req, err := http.NewRequest("POST", "http://127.0.0.1:1/_bulk", body)
	if err != nil {
		t.Fatal(err)
	}
	var c captureTransport
	lengthTransport{&c}.RoundTrip(req)
	if req.ContentLength != 0 || req.GetBody != nil {
		t.Fatal("the caller's request was changed")
	}
	sent := c.req
	if sent.ContentLength != 5 || sent.GetBody == nil {
		t.Fatalf("sent with Content-Length %d, GetBody %v", sent.ContentLength, sent.GetBody != nil)
	}
	again, err := sent.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := io.ReadAll(again); string(data) != "line\n" {
		t.Fatalf("GetBody gave %q", data)
	}
	body.Close()
	b.release()
	if len(pool.free) != 0 {
		t.Fatal("buffer returned while GetBody's body still holds it")
	}
	again.Close()
	if len(pool.free) != 1 {
		t.Fatal("buffer not returned after the last body closed")
	}
}

// TestFailedRequestBufferIsNotReused: after the transport failed a
// request, its batch buffer is never handed out again (the transport may
// still be copying from it).
func TestFailedRequestBufferIsNotReused(t *testing.T) {
	pool := newBufPool(2, 0, 1<<20)
	b := newBatch(pool, 64, 1)
	b.buf = append(b.buf, "line\n"...)
	b.items = append(b.items, item{start: 0, end: 5})
	body := b.body(b.items)
	body.failed()
	body.Close()
	b.release()
	if len(pool.free) != 0 {
		t.Fatal("a failed request's buffer went back to the pool")
	}
}

// TestPoolDropsOutsizedBuffers: a pair of batch buffers of which either
// grew beyond the pool's bound (for an outsized event) is not kept for
// reuse; buffers within it are.
func TestPoolDropsOutsizedBuffers(t *testing.T) {
	pool := newBufPool(4, 0, 1<<10)
	pool.put(make([]byte, 0, 2<<10), nil)
	pool.put(make([]byte, 0, 512), make([]byte, 0, 2<<10))
	if len(pool.free) != 0 {
		t.Fatalf("the pool kept %d pairs of outsized buffers", len(pool.free))
	}
	pool.put(make([]byte, 0, 1<<10), make([]byte, 0, 64))
	if got, kept := pool.get(100); len(pool.free) != 0 || cap(got) != 1<<10 || cap(kept) != 64 {
		t.Fatalf("buffers within the bound were not reused: cap %d and %d", cap(got), cap(kept))
	}
}

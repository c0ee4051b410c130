package elasticsearch

import (
	"testing"
	"time"

	"github.com/logpond/logpond/output/estest"
)

// TestBatchBufferReturnsAfterTheLastHold: a batch buffer goes back to the
// pool only when the worker has released the batch and every request body
// over it is closed, in either order; a body over a subset of the items is
// a copy and holds nothing.
func TestBatchBufferReturnsAfterTheLastHold(t *testing.T) {
	for _, bodyFirst := range []bool{false, true} {
		pool := newBufPool(2)
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
		if got := pool.get(32); cap(got) < 64 || len(got) != 0 || pool.reused.Load() != 1 {
			t.Fatalf("get after put: len %d cap %d reused %d", len(got), cap(got), pool.reused.Load())
		}
	}
}

// TestRequestsCarryContentLengthAndReuseBuffers: every bulk request states
// its length (no chunked encoding), plain and gzip, and batch buffers are
// reused across requests.
func TestRequestsCarryContentLengthAndReuseBuffers(t *testing.T) {
	for _, gz := range []bool{false, true} {
		r := newRig(t, estest.Options{})
		for i := range 400 {
			r.store(time.Now(), filebeatEvent(i, ""))
		}
		run := r.start(r.options(func(o *Options) { o.Gzip, o.FlushBytes, o.Workers = gz, 4<<10, 2 }))
		waitFor(t, "every event", func() bool { return r.es.Count() == 400 })
		run.stop(t)
		r.checkAllStoredOnce(t)
		st := r.es.Stats()
		if st.BulkRequests < 10 || st.ChunkedRequests != 0 {
			t.Errorf("gzip=%v: %d of %d bulk requests were chunked", gz, st.ChunkedRequests, st.BulkRequests)
		}
		if n := run.out.pool.reused.Load(); n == 0 {
			t.Errorf("gzip=%v: no batch buffer was reused over %d requests", gz, st.BulkRequests)
		}
	}
}

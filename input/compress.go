package input

import (
	"context"
	"fmt"
	"runtime"

	"github.com/logpond/logpond/record"
)

// compressors lends the connections a bounded set of record compressors.
// Records are compressed as the input builds them, before the journal:
// the figures in docs/benchmarks.md ("Where to compress") show the
// journal then writes and fsyncs a few percent of the bytes, the flusher
// only copies, and the whole path spends less CPU per event than
// compressing later or not at all. There are as many as the Go runtime
// runs goroutines at once (GOMAXPROCS): more could never run together,
// and each holds an encoder's tables (record.CompressorMemory) and the
// largest record it compressed, so connections share them rather than
// own one each.
type compressors struct {
	level record.Compression
	free  chan *compressor // holds every idle one; len = cap when all are idle
}

// compressor is one lent compressor with its output buffer.
type compressor struct {
	c   *record.Compressor // made at its first use
	buf []byte
}

// CompressorCount is how many record compressors the input holds with
// compression on: the memory formula counts this many.
func CompressorCount() int { return runtime.GOMAXPROCS(0) }

// newCompressors returns n compressors of l; each encoder is made at its
// first use.
func newCompressors(l record.Compression, n int) *compressors {
	p := &compressors{level: l, free: make(chan *compressor, n)}
	for range n {
		p.free <- &compressor{}
	}
	return p
}

// compress compresses rec, a version 1 record, in place: the version 2
// form (never larger) is copied over rec's first bytes, and the record to
// submit is returned. A compressor is held only while compressing, never
// while the journal makes the caller wait for space. It waits for a free
// compressor until ctx ends.
func (p *compressors) compress(ctx context.Context, rec []byte) ([]byte, error) {
	var z *compressor
	select {
	case z = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { p.free <- z }()
	if z.c == nil {
		c, err := record.NewCompressor(p.level)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		z.c = c
	}
	// rec is the record the connection has just built: not verified
	// again on the acknowledgement path.
	out, err := z.c.CompressBuilt(z.buf[:0], rec)
	if err != nil {
		return nil, fmt.Errorf("input: compress a record: %w", err)
	}
	z.buf = out
	return rec[:copy(rec, out)], nil
}

// close releases every encoder. No connection may be using the pool:
// the input calls it after its handlers have returned.
func (p *compressors) close() {
	for range cap(p.free) {
		z := <-p.free
		if z.c != nil {
			z.c.Close()
		}
	}
}

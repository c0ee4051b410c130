package elasticsearch

import (
	"context"
	"io"
	"net"
)

// bodyConn is a plain (http://) connection to Elasticsearch that writes a
// bulk request's body with one write. net/http hands the connection a
// body it knows the length of as an io.LimitedReader over the request's
// Body, which hides the bytes behind it, and copies it through a 32 KiB
// buffer in as many writes. Each write costs the kernel about as much
// again as copying its bytes: on loopback or a fast link, a body sent in
// 32 KiB writes costs about 60% more CPU than in one write,
// whose bytes the kernel cuts into 64 KiB segments itself (docs/design.md,
// "Measured choices on the drain path").
//
// ReadFrom recognizes a limited reader over a requestBody and writes the
// bytes it has not sent straight from the batch buffer; it copies every
// other reader as the connection would have. The buffer's lifetime is
// the body's, as when net/http read it (requestBody.Close, failed).
type bodyConn struct{ net.Conn }

// ReadFrom is io.ReaderFrom, which net/http's connection writer looks
// for to send a body.
func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*requestBody); ok {
			return b.writeLimited(c.Conn, lr)
		}
	}
	// The connection's own ReadFrom (a *net.TCPConn splices from a
	// socket or a file, and copies anything else).
	return io.Copy(c.Conn, r)
}

// bodyDialer dials with dial and wraps each connection in a bodyConn.
func bodyDialer(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
}

// writeLimited writes to w what is left of b, up to lr's limit, in one
// write, and counts it as read from b and from lr.
func (b *requestBody) writeLimited(w io.Writer, lr *io.LimitedReader) (int64, error) {
	rest := b.data[len(b.data)-b.Len():]
	if int64(len(rest)) > lr.N {
		rest = rest[:max(lr.N, 0)]
	}
	if len(rest) == 0 {
		return 0, nil
	}
	n, err := w.Write(rest)
	if _, serr := b.Seek(int64(n), io.SeekCurrent); serr != nil && err == nil {
		err = serr
	}
	lr.N -= int64(n)
	return int64(n), err
}

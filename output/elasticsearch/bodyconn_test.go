package elasticsearch

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// writeCounter counts the writes to a connection, below bodyConn.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestBulkBodyInOneWrite: through the output's transport, a bulk body of
// 1 MiB leaves in one write after the headers, and arrives whole; a body
// that is not a bulk body is copied as before (the count sees its 32 KiB
// writes), and arrives whole too. If net/http stopped handing the
// connection the body, the first count would grow and this fails.
func TestBulkBodyInOneWrite(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(got, data) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var writes atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{c, &writes}, nil
	}
	tr := newTransport(dial, nil, nil, 1)
	defer tr.CloseIdleConnections()
	post := func(body io.Reader) int64 {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/_bulk", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(data))
		writes.Store(0)
		res, err := lengthTransport{tr}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("the server received another body: status %d", res.StatusCode)
		}
		return writes.Load()
	}
	if n := post(&requestBody{Reader: bytes.NewReader(data), data: data}); n > 2 {
		t.Errorf("a 1 MiB bulk body took %d writes, want the headers' and the body's", n)
	}
	if n := post(strings.NewReader(string(data))); n < 16 {
		t.Errorf("another body took %d writes: the count does not see net/http's copy", n)
	}
}

// TestBodyConnWritesWhatIsLeft: ReadFrom writes from where the body was
// read to, up to the limit, and counts it as read on both.
func TestBodyConnWritesWhatIsLeft(t *testing.T) {
	data := []byte(strings.Repeat("0123456789", 10))
	b := &requestBody{Reader: bytes.NewReader(data), data: data}
	if _, err := io.ReadFull(b, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	var sink bytes.Buffer
	conn := bodyConn{fakeConn{w: &sink}}
	lr := &io.LimitedReader{R: b, N: 50}
	n, err := conn.ReadFrom(lr)
	if err != nil || n != 50 || sink.String() != string(data[10:60]) {
		t.Fatalf("ReadFrom: %d, %v, wrote %q", n, err, sink.String())
	}
	if lr.N != 0 || b.Len() != 40 {
		t.Fatalf("after ReadFrom: limit %d left, body %d left; want 0 and 40", lr.N, b.Len())
	}
	if n, err := conn.ReadFrom(lr); n != 0 || err != nil {
		t.Fatalf("ReadFrom at the limit: %d, %v", n, err)
	}
	// Another reader is copied whole.
	sink.Reset()
	if n, err := conn.ReadFrom(strings.NewReader("plain")); n != 5 || err != nil || sink.String() != "plain" {
		t.Fatalf("ReadFrom of another reader: %d, %v, wrote %q", n, err, sink.String())
	}
}

// fakeConn is a connection that only writes, into w.
type fakeConn struct {
	net.Conn
	w io.Writer
}

func (c fakeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

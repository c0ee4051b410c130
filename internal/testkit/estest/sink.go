package estest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
)

// Sink is the cheapest bulk endpoint that still answers like
// Elasticsearch: it counts the actions of each bulk request as its body
// streams by and answers that each was created. It stores and checks
// nothing, so benchmarks that drain into it measure the output, not a
// server. Use [Server] to check what arrived.
type Sink struct {
	items atomic.Int64
	srv   *http.Server
	ln    net.Listener
}

// StartSink listens on 127.0.0.1 at a free port and serves until Close.
func StartSink() (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the sink's base URL.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() }

// Items is how many bulk actions the sink has acknowledged.
func (s *Sink) Items() int64 { return s.items.Load() }

// Reset sets the action count back to zero.
func (s *Sink) Reset() { s.items.Store(0) }

// Close stops the sink and its connections.
func (s *Sink) Close() error { return s.srv.Close() }

var sinkItem = []byte(`{"create":{"status":201}}`)

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	if !strings.HasSuffix(r.URL.Path, "/_bulk") {
		// The client's product check and anything else: an empty object.
		io.WriteString(w, `{}`)
		return
	}
	var body io.Reader = r.Body
	if enc := r.Header.Get("Content-Encoding"); enc == "gzip" || enc == "x-gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, `{"error":"bad gzip body","status":400}`, http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	// Every action line has a source line after it (the sink never sees
	// deletes), so the actions are half the lines.
	var buf [64 << 10]byte
	lines := 0
	for {
		k, err := body.Read(buf[:])
		lines += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			break
		}
	}
	n := lines / 2
	out := make([]byte, 0, 32+n*(len(sinkItem)+1))
	out = append(out, `{"errors":false,"items":[`...)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, sinkItem...)
	}
	out = append(out, "]}"...)
	w.Write(out)
	s.items.Add(int64(n))
}

package estest

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCompressedBodies(t *testing.T) {
	raw := []byte(nd(
		`{"create":{"_index":"z","_id":"1"}}`, `{"m":"`+strings.Repeat("compress me ", 100)+`"}`,
		`{"create":{"_index":"z","_id":"2"}}`, `{"n":2}`,
	))
	var zl bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(raw)
	zw.Close()
	for _, tc := range []struct {
		encoding string
		body     []byte
	}{
		{"gzip", gz(t, raw)},
		{"x-gzip", gz(t, raw)},
		{"deflate", zl.Bytes()},
	} {
		t.Run(tc.encoding, func(t *testing.T) {
			h := start(t, Options{})
			r := h.must(http.MethodPost, "/_bulk", tc.body, "Content-Type", "application/x-ndjson", "Content-Encoding", tc.encoding)
			if r.status != 200 || r.get("errors").Bool() || r.get("items.#").Int() != 2 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if src, ok := h.srv.Doc("z", "2"); !ok || string(src) != `{"n":2}` {
				t.Errorf("Doc = %q %v", src, ok)
			}
			st := h.srv.Stats()
			if st.GzipRequests != 1 || st.BytesReceived != int64(len(tc.body)) || st.BytesDecoded != int64(len(raw)) {
				t.Errorf("stats %+v (wire %d, raw %d)", st, len(tc.body), len(raw))
			}
		})
	}
}

func TestBadCompressedBodies(t *testing.T) {
	raw := []byte(nd(`{"create":{"_index":"z","_id":"1"}}`, `{}`))
	good := gz(t, raw)
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-6] ^= 0xff // CRC
	for _, tc := range []struct {
		name    string
		body    []byte
		errType string
	}{
		{"not gzip", raw, "parse_exception"},
		{"truncated", good[:len(good)-5], "parse_exception"},
		{"bad checksum", corrupt, "parse_exception"},
		{"empty", []byte{}, "parse_exception"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{})
			r := h.must(http.MethodPost, "/_bulk", tc.body, "Content-Type", "application/x-ndjson", "Content-Encoding", "gzip")
			if r.status != 400 || r.get("error.type").String() != tc.errType {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if h.srv.Count() != 0 {
				t.Fatal("stored from a bad body")
			}
		})
	}
}

// A small gzip body that inflates to 256 MiB is cut off at the limit: 413,
// nothing stored, and the server never holds more than the limit.
func TestGzipBomb(t *testing.T) {
	const limit = 1 << 20
	h := start(t, Options{MaxContentLength: limit})
	member := gz(t, make([]byte, 4<<20))
	bomb := bytes.Repeat(member, 64) // multistream gzip: 64 × 4 MiB of zeros
	t.Logf("bomb: %d bytes on the wire, %d MiB inflated", len(bomb), 64*4)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := h.must(http.MethodPost, "/_bulk", bomb, "Content-Type", "application/x-ndjson", "Content-Encoding", "gzip")
	runtime.ReadMemStats(&after)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %.200s", r.status, r.body)
	}
	if h.srv.Count() != 0 {
		t.Fatal("stored from a bomb")
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while serving the bomb", alloc>>10)
	if alloc > 32<<20 {
		t.Errorf("serving the bomb allocated %d MiB; the body buffer is capped at %d MiB", alloc>>20, limit>>20)
	}
	if st := h.srv.Stats(); st.TooLarge413 != 1 || st.GzipRequests != 1 {
		t.Errorf("stats %+v", st)
	}
}

// chunked hides the length, so the limit must be enforced while reading.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestContentLength413(t *testing.T) {
	const limit = 1024
	mk := func(n int) []byte {
		head := `{"create":{"_index":"big"}}` + "\n" + `{"m":"`
		tail := `"}` + "\n"
		return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	}
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at limit", limit, false, 200},
		{"at limit chunked", limit, true, 200},
		{"over by one", limit + 1, false, 413},
		{"over by one chunked", limit + 1, true, 413},
		{"far over", 1 << 20, false, 413},
		{"far over chunked", 1 << 20, true, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{MaxContentLength: limit})
			body := mk(tc.size)
			var rd io.Reader = bytes.NewReader(body)
			if tc.chunked {
				rd = chunked{rd}
			}
			req, err := http.NewRequest(http.MethodPost, h.srv.URL()+"/_bulk", rd)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-ndjson")
			res, err := h.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			checkHeaders(t, resp{status: res.StatusCode, header: res.Header, body: b})
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %.200s", res.StatusCode, tc.want, b)
			}
			wantCount := 0
			if tc.want == 200 {
				wantCount = 1
			}
			if h.srv.Count() != wantCount {
				t.Errorf("Count = %d, want %d", h.srv.Count(), wantCount)
			}
		})
	}
}

func TestReadLimited(t *testing.T) {
	for _, tc := range []struct {
		n, limit, hint int64
		tooLarge       bool
	}{
		{0, 10, 0, false},
		{10, 10, 0, false},
		{11, 10, 0, true},
		{10, 10, 10, false},
		{200 << 10, 300 << 10, -1, false},
		{300<<10 + 1, 300 << 10, -1, true},
	} {
		src := bytes.Repeat([]byte{'a'}, int(tc.n))
		b, err := readLimited(chunked{bytes.NewReader(src)}, tc.limit, tc.hint)
		if tc.tooLarge {
			if err != errTooLarge {
				t.Errorf("%+v: err %v, want errTooLarge", tc, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(b, src) || int64(cap(b)) > tc.limit+1 {
			t.Errorf("%+v: %d bytes (cap %d), %v", tc, len(b), cap(b), err)
		}
	}
}

// FuzzBulk feeds arbitrary bodies through the handler: whatever comes in,
// the answer is a 200 bulk response, a 400 error envelope or an empty 413.
func FuzzBulk(f *testing.F) {
	for _, seed := range []string{
		nd(`{"create":{"_index":"a","_id":"1"}}`, `{"x":1}`),
		nd(`{"index":{"_index":"a"}}`, `{"x":[1,{"y":null}]}`, `{"delete":{"_index":"a","_id":"1"}}`),
		nd(`{"create":{}}`, `{}`),
		"{\"create\":{\"_index\":\"a\"}}\n{\"a\":1,\"a\":2}\n",
		"\n\n{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{}\n",
		"[[[[[[\n",
	} {
		f.Add([]byte(seed))
	}
	srv, err := Start(Options{MaxContentLength: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/a/_bulk", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		w := httptest.NewRecorder()
		srv.handle(w, req)
		switch w.Code {
		case 200, 400:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("status %d with invalid JSON %q", w.Code, w.Body.Bytes())
			}
		case 413:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
		}
	})
}

// BenchmarkBulk measures the server's cost per bulk request of 1000 small
// documents over loopback HTTP.
func BenchmarkBulk(b *testing.B) {
	srv, err := Start(Options{})
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{}
	defer func() {
		srv.Close()
		tr.CloseIdleConnections()
	}()
	c := &http.Client{Transport: tr}
	var doc bytes.Buffer
	const perRequest = 1000
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		doc.Reset()
		for j := 0; j < perRequest; j++ {
			fmt.Fprintf(&doc, "{\"create\":{\"_index\":\"bench\",\"_id\":\"%d-%d\"}}\n{\"@timestamp\":\"2024-06-01T00:00:00Z\",\"message\":\"hello world %d\",\"n\":%d}\n", i, j, j, j)
		}
		b.SetBytes(int64(doc.Len()))
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/_bulk", bytes.NewReader(doc.Bytes()))
		req.Header.Set("Content-Type", "application/x-ndjson")
		res, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatal(res.Status)
		}
	}
	b.ReportMetric(float64(perRequest*b.N)/b.Elapsed().Seconds(), "docs/s")
}

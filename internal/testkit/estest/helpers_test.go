package estest

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a started server and a client whose connections are closed
// when the test ends.
type harness struct {
	t   *testing.T
	srv *Server
	c   *http.Client
}

// start starts a server with opts (Seed defaulting to the test's fixed
// seed), logs the seed, and closes everything at the end of the test.
func start(t *testing.T, opts Options) *harness {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = 20240601
	}
	t.Logf("estest seed %d", opts.Seed)
	srv, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}
	h := &harness{t: t, srv: srv, c: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		tr.CloseIdleConnections()
	})
	return h
}

// resp is an answer read in full.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) get(path string) gjson.Result { return gjson.GetBytes(r.body, path) }

// do sends a request; hdr alternates names and values.
func (h *harness) do(method, path string, body []byte, hdr ...string) (resp, error) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.srv.URL()+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := h.c.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}, nil
}

// must is do that fails the test on a transport error.
func (h *harness) must(method, path string, body []byte, hdr ...string) resp {
	h.t.Helper()
	r, err := h.do(method, path, body, hdr...)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	checkHeadersFor(h.t, r, h.srv.ver.sendsProductHeader())
	return r
}

// bulk posts an NDJSON body to path and returns the answer.
func (h *harness) bulk(path, body string, hdr ...string) resp {
	h.t.Helper()
	return h.must(http.MethodPost, path, []byte(body), append([]string{"Content-Type", "application/x-ndjson"}, hdr...)...)
}

// bulkOK posts and requires a 200 with a valid bulk response of n items.
func (h *harness) bulkOK(path, body string, n int) resp {
	h.t.Helper()
	r := h.bulk(path, body)
	if r.status != http.StatusOK {
		h.t.Fatalf("bulk: status %d, body %s", r.status, r.body)
	}
	if !gjson.ValidBytes(r.body) || !r.get("took").Exists() || !r.get("errors").IsBool() {
		h.t.Fatalf("bulk: malformed response %s", r.body)
	}
	if got := int(r.get("items.#").Int()); got != n {
		h.t.Fatalf("bulk: %d items, want %d: %s", got, n, r.body)
	}
	return r
}

// checkHeaders requires the headers every answer of a 7.14+ node carries.
func checkHeaders(t *testing.T, r resp) {
	t.Helper()
	checkHeadersFor(t, r, true)
}

// checkHeadersFor requires the headers every answer carries; product
// says whether X-Elastic-Product is among them (7.14 on) or absent.
func checkHeadersFor(t *testing.T, r resp, product bool) {
	t.Helper()
	want := ""
	if product {
		want = "Elasticsearch"
	}
	if got := r.header.Get("X-Elastic-Product"); got != want {
		t.Errorf("X-Elastic-Product = %q, want %q (status %d)", got, want, r.status)
	}
	if got := r.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q (status %d)", got, r.status)
	}
}

// nd joins lines into an NDJSON body with a final newline.
func nd(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// item returns the single action object of items[i], whatever its key.
func item(r resp, i int) (key string, v gjson.Result) {
	r.get("items." + strconv.Itoa(i)).ForEach(func(k, val gjson.Result) bool {
		key, v = k.String(), val
		return false
	})
	return key, v
}

// eventually polls cond until it holds; the test's own deadline bounds it.
// It asserts nothing about time.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

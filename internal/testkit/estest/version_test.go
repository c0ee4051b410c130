package estest

import (
	"net/http"
	"strconv"
	"testing"
)

func TestStartVersion(t *testing.T) {
	for _, v := range []string{"8", "8.1", "8.1.0.0", "x.y.z", "8.1.a", "8.-1.0", "8.1.0-SNAPSHOT", "6.8.23", " 8.1.0", "8..0"} {
		if srv, err := Start(Options{Version: v}); err == nil {
			srv.Close()
			t.Errorf("Start with Version %q: no error", v)
		}
	}
	for _, v := range []string{"7.0.0", "7.17.25", "8.19.2", "9.0.0", "10.0.0"} {
		srv, err := Start(Options{Version: v})
		if err != nil {
			t.Errorf("Start with Version %q: %v", v, err)
			continue
		}
		srv.Close()
	}
}

// X-Elastic-Product is on every answer from 7.14 on, and on none before.
func TestProductHeaderByVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{{"7.10.2", false}, {"7.13.4", false}, {"7.14.0", true}, {"7.17.25", true}, {"8.17.0", true}, {"9.0.3", true}} {
		t.Run(tc.version, func(t *testing.T) {
			h := start(t, Options{Version: tc.version})
			for _, req := range []struct{ method, path, body string }{
				{"GET", "/", ""}, {"HEAD", "/", ""}, {"GET", "/nowhere", ""}, {"GET", "/_bulk", ""},
				{"POST", "/_bulk", nd(`{"create":{"_index":"a"}}`, `{}`)},
				{"POST", "/_bulk", "garbage\n"},
			} {
				var body []byte
				if req.body != "" {
					body = []byte(req.body)
				}
				r, err := h.do(req.method, req.path, body, "Content-Type", "application/x-ndjson")
				if err != nil {
					t.Fatal(err)
				}
				if got := r.header.Get("X-Elastic-Product") == "Elasticsearch"; got != tc.want {
					t.Errorf("%s %s (%d): product header %v, want %v", req.method, req.path, r.status, got, tc.want)
				}
			}
		})
	}
}

// compatible-with=N is accepted for N == the node's major or, from 8 on,
// the previous one; anything else is refused with Elasticsearch's error.
func TestCompatibleWith(t *testing.T) {
	const vnd = "application/vnd.elasticsearch+json; compatible-with="
	const vndND = "application/vnd.elasticsearch+x-ndjson; compatible-with="
	const both = "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version"
	for _, node := range []struct {
		version string
		major   int
		lo      int // lowest accepted
	}{{"7.17.25", 7, 7}, {"8.17.0", 8, 7}, {"9.0.0", 9, 8}} {
		t.Run(node.version, func(t *testing.T) {
			h := start(t, Options{Version: node.version})
			either := "must be either version " + strconv.Itoa(node.major) + " or " + strconv.Itoa(node.lo) + ", but found "
			for n := 5; n <= 10; n++ {
				ok := n >= node.lo && n <= node.major
				ns := strconv.Itoa(n)
				// GET / with Accept only: no body, Content-Type is ignored.
				r := h.must(http.MethodGet, "/", nil, "Accept", vnd+ns, "Content-Type", vnd+"99")
				want := "Accept version " + either + ns + ". Accept=" + vnd + ns
				checkCompat(t, "GET / Accept "+ns, r, ok, want)
				// Bulk with both headers versioned alike.
				r = h.must(http.MethodPost, "/_bulk", []byte(nd(`{"create":{"_index":"a"}}`, `{}`)),
					"Accept", vnd+ns, "Content-Type", vndND+ns)
				checkCompat(t, "bulk "+ns, r, ok, want)
			}
			cur := strconv.Itoa(node.major)
			lo := strconv.Itoa(node.lo)
			body := []byte(nd(`{"create":{"_index":"a"}}`, `{}`))
			for _, tc := range []struct {
				name, accept, ct string
				ok               bool
				reason           string
			}{
				{"plain", "application/json", "application/x-ndjson", true, ""},
				{"no accept, plain json", "", "application/json", true, ""},
				{"versioned content type without accept", "", vndND + cur, false,
					both + ". Accept=null, Content-Type=" + vndND + cur},
				{"versioned accept with plain content type", vnd + cur, "application/x-ndjson", false,
					both + ". Accept=" + vnd + cur + ", Content-Type=null"},
				{"content type too new", vnd + cur, vndND + "99", false,
					"Content-Type version " + either + "99. Content-Type=" + vndND + "99"},
				{"mismatch", vnd + cur, vndND + lo, node.lo == node.major, both +
					" and the compatible versions must match. Accept=" + vnd + cur + ", Content-Type=" + vndND + lo},
			} {
				hdr := []string{"Content-Type", tc.ct}
				if tc.accept != "" {
					hdr = append(hdr, "Accept", tc.accept)
				}
				r := h.must(http.MethodPost, "/_bulk", body, hdr...)
				checkCompat(t, tc.name, r, tc.ok, tc.reason)
			}
			if got := h.srv.Stats().CompatRefused; got == 0 {
				t.Errorf("CompatRefused = 0")
			}
		})
	}
}

func checkCompat(t *testing.T, name string, r resp, ok bool, reason string) {
	t.Helper()
	if ok {
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", name, r.status, r.body)
		}
		return
	}
	if r.status != http.StatusBadRequest || r.get("status").Int() != 400 ||
		r.get("error.type").String() != "media_type_header_exception" ||
		r.get("error.reason").String() != "Invalid media-type value on headers [Content-Type, Accept]" ||
		r.get("error.root_cause.0.type").String() != "media_type_header_exception" ||
		r.get("error.caused_by.type").String() != "status_exception" ||
		r.get("error.caused_by.reason").String() != reason {
		t.Errorf("%s: %d %s\n want 400 media_type_header_exception caused by %q", name, r.status, r.body, reason)
	}
}

func TestInfoByVersion(t *testing.T) {
	for _, tc := range []struct{ version, lucene, wire, index string }{
		{"7.10.2", "8.7.0", "6.8.0", "6.0.0-beta1"},
		{"7.17.25", "8.11.3", "6.8.0", "6.0.0-beta1"},
		{"8.0.1", "9.0.0", "7.17.0", "7.0.0"},
		{"8.17.0", "9.12.0", "7.17.0", "7.0.0"},
		{"8.99.0", "9.12.2", "7.17.0", "7.0.0"},
		{"9.0.0", "10.1.0", "8.18.0", "8.0.0"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			h := start(t, Options{Version: tc.version})
			r := h.must(http.MethodGet, "/", nil)
			for path, want := range map[string]string{
				"version.number": tc.version, "version.build_flavor": "default", "version.lucene_version": tc.lucene,
				"version.minimum_wire_compatibility_version": tc.wire, "version.minimum_index_compatibility_version": tc.index,
				"tagline": "You Know, for Search",
			} {
				if got := r.get(path).String(); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
		})
	}
}

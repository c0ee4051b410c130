package server

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"testing"
)

// TestPprof checks that /debug/pprof is served on the admin endpoint only
// when admin.pprof is on.
func TestPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		root := t.TempDir()
		cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
		cfg.Admin.Listen = "127.0.0.1:0"
		cfg.Admin.Pprof = on
		r := start(t, cfg)
		base := "http://" + r.s.AdminAddr().String()
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case !on && resp.StatusCode != http.StatusNotFound:
				t.Errorf("pprof off: GET %s: %d, want 404", path, resp.StatusCode)
			case on && resp.StatusCode != http.StatusOK:
				t.Errorf("pprof on: GET %s: %d, want 200: %s", path, resp.StatusCode, body)
			case on && path == "/debug/pprof/heap" && !bytes.HasPrefix(body, []byte{0x1f, 0x8b}):
				t.Errorf("pprof on: the heap profile is not a gzipped profile: %q", body[:min(len(body), 40)])
			}
		}
		r.shutdown(t)
	}
}

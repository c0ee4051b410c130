package server

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAdminListeningLineListsEveryPath: the "admin listening" line lists
// the paths the admin endpoint serves, / (the node info) among them, and
// each one it lists is served.
func TestAdminListeningLineListsEveryPath(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Admin.Pprof = true
	r, base := startWithAdmin(t, cfg)
	line := regexp.MustCompile(`msg="admin listening".* paths="([^"]*)"`)
	var m []string
	for m == nil {
		if m = line.FindStringSubmatch(r.log.String()); m == nil {
			time.Sleep(5 * time.Millisecond) // polling; the test's timeout bounds it
		}
	}
	paths := strings.Fields(m[1])
	want := map[string]bool{"/": true, "/metrics": true, "/livez": true, "/healthz": true, "/readyz": true, "/api/dlq/purge": true, "/api/cursors/delete": true, "/debug/pprof/": true}
	for _, p := range paths {
		if !want[p] {
			t.Errorf("the line lists %s, which is not one of %v", p, want)
		}
		delete(want, p)
		// A GET of a path served only for POST is answered 405, not 404.
		res, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			t.Errorf("GET %s: %s, though the line lists it", p, res.Status)
		}
	}
	if len(want) > 0 {
		t.Errorf("the line %q lacks %v", m[0], want)
	}
}

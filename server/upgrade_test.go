package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/dlq"
)

// copyTree copies the directory src to dst (files and directories only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o750)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o640)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// releaseConfig copies the stores an earlier release wrote (a testdata
// folder holding journal and ledger) into a fresh directory and returns
// the configuration that opens them with the one [output.elasticsearch]
// of those releases, sending to esURL; ledger is more [ledger] keys.
func releaseConfig(t *testing.T, stores, esURL, ledger string) *conf.Config {
	t.Helper()
	root := t.TempDir()
	copyTree(t, stores, root)
	toml := fmt.Sprintf(`
[journal]
dir = %q
segment_bytes = "1MiB"
max_bytes = "64MiB"

[ledger]
dir = %q
segment_bytes = "1MiB"
max_bytes = "1GiB"
flush_interval = "5ms"
%s

[input.beats]
listen = "127.0.0.1:0"

[admin]
listen = ""

[output.elasticsearch]
hosts = [%q]
flush_interval = "10ms"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), ledger, esURL)
	cfg, err := conf.Parse("logpond.toml", []byte(toml), ConfigChecks)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestUpgradeDrainsOnWithoutResending: stores written by the release
// before outputs had names ([output.elasticsearch], its cursor past three
// of four records, three dead letters) are opened by this build with the
// same configuration file. The output named "elasticsearch" takes the old
// cursor and dead-letter store: Elasticsearch receives exactly the
// undelivered record's 100 events, nothing delivered before is sent
// again, and the dead letters are where they were.
func TestUpgradeDrainsOnWithoutResending(t *testing.T) {
	es := startES(t, estest.Options{Seed: 30})
	cfg := releaseConfig(t, "testdata/release-stores", es.URL(), "")
	if outs := cfg.Outputs(); len(outs) != 1 || outs[0].Name != "elasticsearch" {
		t.Fatalf("outputs %+v: want the one named elasticsearch", outs)
	}
	r := start(t, cfg)
	waitUntil(t, "the undelivered record delivered", func() bool { return r.s.legacyOutput().Stats().CursorLSN >= 4 })
	if d := r.s.deadLetters("elasticsearch"); d == nil || d.UsedBytes() == 0 {
		t.Error("the output's dead-letter store is not the old one: it holds nothing")
	}
	r.shutdown(t)

	var got []int
	for _, d := range es.Docs() {
		got = append(got, int(gjson.GetBytes(d.Source, "n").Int()))
	}
	slices.Sort(got)
	if len(got) != 100 || got[0] != 200 || got[99] != 299 {
		t.Fatalf("Elasticsearch got %d events (%v…): want exactly n = 200…299, the record the old release had not delivered", len(got), got[:min(len(got), 5)])
	}
	if st := es.Stats(); st.Conflicts409 != 0 {
		t.Errorf("%d conflicts: something delivered before was sent again", st.Conflicts409)
	}
	var dead []int
	err := dlq.Scan(dlq.Dir(cfg.Ledger.Dir, "elasticsearch"), func(_ dlq.Pos, e dlq.Entry) error {
		dead = append(dead, int(gjson.GetBytes(e.Event, "n").Int()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dead, []int{100, 101, 102}) {
		t.Errorf("dead letters in the old store: %v, want the 3 the old release wrote (n = 100, 101, 102)", dead)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestOutputOutageKeepsMemoryFlat takes the test Elasticsearch away for a
// while under load: acknowledgements go on, the backlog grows on disk, the
// process's RSS stays within a bound set by the configuration (not by the
// backlog), and everything drains once Elasticsearch is back.
func TestOutputOutageKeepsMemoryFlat(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	config := filepath.Join(root, "logpond.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
segment_bytes = "4MiB"
max_bytes = "64MiB"
max_group_bytes = "1MiB"
[ledger]
dir = %q
segment_bytes = "4MiB"
flush_interval = "10ms"
# Uncompressed: the backlog's bytes on disk, which memory must not follow,
# then grow as fast as the load can make them.
compression = "none"
[input.beats]
listen = "127.0.0.1:0"
max_inflight_bytes = "32MiB"
[output.elasticsearch]
hosts = [%q]
flush_bytes = "1MiB"
flush_interval = "20ms"
retry_initial_interval = "5ms"
retry_max_interval = "100ms"
[admin]
listen = ""
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), srv.URL()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, log := started(t, config)
	addr := beatsAddr(t, log.String())
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Go(func() {
			cl, err := lj.SyncDial(addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			msg := strings.Repeat("x", 900)
			for b := 0; ; b++ {
				select {
				case <-stop:
					return
				default:
				}
				data := make([]interface{}, 500)
				for i := range data {
					data[i] = json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"c":%d,"b":%d,"i":%d,"message":%q}`, c, b, i, msg))
				}
				n, err := cl.Send(data)
				if err != nil {
					t.Error(err)
					return
				}
				acked.Add(int64(n))
			}
		})
	}
	// The outage: sample RSS while the backlog grows, for at least 3 s and
	// until the backlog is big enough to show memory following it (a busy
	// machine takes longer to get there; that is not what is measured).
	var peak, first int64
	ledgerDir := filepath.Join(root, "ledger")
	grow := time.Now().Add(120 * time.Second)
	for i := 0; i < 30 || dirBytes(t, ledgerDir) < 32<<20; i++ {
		if time.Now().After(grow) {
			break
		}
		time.Sleep(100 * time.Millisecond)
		rss := rssBytes(t, cmd.Process.Pid)
		peak = max(peak, rss)
		if i == 5 {
			first = rss
		}
	}
	close(stop)
	wg.Wait()
	backlog := dirBytes(t, ledgerDir)
	t.Logf("outage: %d events acknowledged, ledger %d MiB, RSS after 0.6 s %d MiB, peak %d MiB", acked.Load(), backlog>>20, first>>20, peak>>20)
	if srv.Count() != 0 {
		t.Fatal("documents stored during the outage")
	}
	if backlog < 16<<20 {
		t.Fatalf("the backlog on disk is only %d MiB: the test did not load the server enough", backlog>>20)
	}
	// Bound: input budget 32 MiB + journal tail ~2 segments + output 2 ×
	// workers × flush_bytes + runtime; flat: no growth with the backlog.
	if peak > 256<<20 {
		t.Errorf("peak RSS %d MiB during the outage, bound 256 MiB", peak>>20)
	}
	if peak > first+64<<20 {
		t.Errorf("RSS grew from %d to %d MiB while the backlog grew: memory follows the backlog", first>>20, peak>>20)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for int64(srv.Count()) < acked.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events in Elasticsearch after the outage", srv.Count(), acked.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

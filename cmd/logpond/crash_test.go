package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestCrashEndToEnd is the promise, end to end, through SIGKILLs: go-lumber
// clients that resend unacknowledged batches (as Filebeat does) feed the
// real binary, which is killed at random moments while the test
// Elasticsearch rejects items (429) and whole requests (503). Afterwards
// every acknowledged event is in Elasticsearch; an event is stored at most
// once per time its client sent it; an event carrying @metadata._id is
// stored exactly once; and a last SIGTERM exits 0.
func TestCrashEndToEnd(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	srv, err := estest.Start(estest.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetFaults(estest.Faults{ItemReject429: 0.05, Request503: 0.03})
	root := t.TempDir()
	config := filepath.Join(root, "logpond.toml")
	// Small segments and short intervals so that kills land in every
	// window: journal rotations, ledger syncs, cursor writes, releases.
	if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
segment_bytes = "1MiB"
max_bytes = "64MiB"
max_group_bytes = "256KiB"
[ledger]
dir = %q
segment_bytes = "1MiB"
flush_interval = "5ms"
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
hosts = [%q]
flush_interval = "10ms"
flush_bytes = "256KiB"
retry_initial_interval = "2ms"
retry_max_interval = "50ms"
[admin]
listen = ""
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), srv.URL()), 0o644); err != nil {
		t.Fatal(err)
	}

	const clients, batchSize = 3, 100
	var mu sync.Mutex
	sends := map[string]int{}     // payload → times a client sent it
	acked := map[string]bool{}    // payload → acknowledged
	withID := map[string]bool{}   // payload → carries @metadata._id
	next := make([]int, clients)  // each client's next batch
	limit := make([]int, clients) // no batch from limit on
	for c := range limit {
		limit[c] = 1 << 30
	}
	batch := func(c, b int) []interface{} {
		evs := make([]interface{}, batchSize)
		for i := range evs {
			p := fmt.Sprintf("c%d-b%d-e%d", c, b, i)
			meta := `{"beat":"filebeat","version":"9.3.0"}`
			if i%2 == 0 {
				meta = fmt.Sprintf(`{"beat":"filebeat","version":"9.3.0","_id":%q}`, p)
				withID[p] = true
			}
			evs[i] = json.RawMessage(fmt.Sprintf(`{"@metadata":%s,"payload":%q}`, meta, p))
		}
		return evs
	}
	// send runs each client against addr until it reaches its limit or
	// the server goes away; an unacknowledged batch is sent again next
	// time (a new connection), as Filebeat does. A short pause between
	// batches keeps the number of documents the test server holds small.
	send := func(addr string) {
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				cl, err := lj.SyncDial(addr, lj.Timeout(5*time.Second))
				if err != nil {
					return
				}
				defer cl.Close()
				for {
					mu.Lock()
					b, end := next[c], limit[c]
					mu.Unlock()
					if b >= end {
						return
					}
					mu.Lock()
					data := batch(c, b)
					for i := range data {
						sends[fmt.Sprintf("c%d-b%d-e%d", c, b, i)]++
					}
					mu.Unlock()
					n, err := cl.Send(data)
					if err != nil || n != len(data) {
						return
					}
					mu.Lock()
					for i := range data {
						acked[fmt.Sprintf("c%d-b%d-e%d", c, b, i)] = true
					}
					next[c] = b + 1
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		wg.Wait()
	}
	addrOf := func(log string) string {
		m := regexp.MustCompile(`beats input listening" addr=(\S+)`).FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no listening address in the log:\n%s", log)
		}
		return m[1]
	}

	// `make soak` raises the number of kills (LOGPOND_SOAK_KILLS).
	kills := 10
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_SOAK_KILLS")); err == nil && v > 0 {
		kills = v
	}
	for k := range kills {
		cmd, log := started(t, config)
		addr := addrOf(log.String())
		sent := make(chan struct{})
		go func() { defer close(sent); send(addr) }()
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		<-sent
		mu.Lock()
		t.Logf("kill %d: %d events acknowledged, %d documents stored", k+1, len(acked), srv.Count())
		mu.Unlock()
	}
	// A last run: each client resends its unacknowledged batch, the
	// backlog drains, SIGTERM.
	mu.Lock()
	total := 0
	for c := range limit {
		limit[c] = next[c] + 1
		total += limit[c] * batchSize
	}
	mu.Unlock()
	cmd, log := started(t, config)
	send(addrOf(log.String()))
	deadline := time.Now().Add(120 * time.Second)
	for !allStored(srv, acked) {
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged events missing from Elasticsearch after the last run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}

	copies := map[string]int{}
	ids := map[string]bool{}
	for _, d := range srv.Docs() {
		key := d.Index + "/" + d.ID
		if ids[key] {
			t.Errorf("document id %s twice", key)
		}
		ids[key] = true
		copies[gjson.GetBytes(d.Source, "payload").String()]++
	}
	resent := 0
	for p := range acked {
		switch c := copies[p]; {
		case c == 0:
			t.Errorf("acknowledged event %s is not in Elasticsearch", p)
		case withID[p] && c != 1:
			t.Errorf("event %s carries @metadata._id but is stored %d times", p, c)
		case c > sends[p]:
			t.Errorf("event %s stored %d times, sent only %d times", p, c, sends[p])
		}
		resent += sends[p] - 1
	}
	if len(acked) != total {
		t.Errorf("%d events acknowledged, want %d: a client could not finish", len(acked), total)
	}
	st := srv.Stats()
	t.Logf("%d events, %d resends, %d documents, %d creates answered 409, %d item 429s, %d request 503s",
		len(acked), resent, len(ids), st.Conflicts409, st.Rejected429, st.Failed503Requests)
}

// allStored reports whether every acknowledged payload has a document.
func allStored(srv *estest.Server, acked map[string]bool) bool {
	have := map[string]bool{}
	for _, d := range srv.Docs() {
		have[gjson.GetBytes(d.Source, "payload").String()] = true
	}
	for p := range acked {
		if !have[p] {
			return false
		}
	}
	return true
}

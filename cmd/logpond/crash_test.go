package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

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
	skipLong(t)
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

	// Three clients of 100-event batches; a short pause between batches
	// keeps the number of documents the test server holds small. Every
	// other event carries its payload as @metadata._id.
	clients := newResenders(3, 100, 1<<30, 5*time.Millisecond)
	withID := func(i int) bool { return i%2 == 0 }
	clients.meta = func(p string, i int) string {
		if withID(i) {
			return fmt.Sprintf(`{"beat":"filebeat","version":"9.3.0","_id":%q}`, p)
		}
		return `{"beat":"filebeat","version":"9.3.0"}`
	}

	// `make soak` raises the number of kills (LOGPOND_SOAK_KILLS).
	kills := 10
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_SOAK_KILLS")); err == nil && v > 0 {
		kills = v
	}
	for k := range kills {
		cmd, log := started(t, config)
		addr := beatsAddr(t, log.String())
		sent := make(chan struct{})
		go func() { defer close(sent); clients.send(addr) }()
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		<-sent
		t.Logf("kill %d: %d events acknowledged, %d documents stored", k+1, len(clients.ackedPayloads()), srv.Count())
	}
	// A last run: each client resends its unacknowledged batch, the
	// backlog drains, SIGTERM.
	total := clients.endAfterNext()
	cmd, log := started(t, config)
	clients.send(beatsAddr(t, log.String()))
	acked := clients.ackedPayloads()
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

	// hasID: the payload's event carried @metadata._id (its index i, the
	// last part of "c-b-e<i>", is even).
	hasID := func(p string) bool {
		var c, b, i int
		fmt.Sscanf(p, "c%d-b%d-e%d", &c, &b, &i)
		return withID(i)
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
		case hasID(p) && c != 1:
			t.Errorf("event %s carries @metadata._id but is stored %d times", p, c)
		case c > clients.sent(p):
			t.Errorf("event %s stored %d times, sent only %d times", p, c, clients.sent(p))
		}
		resent += clients.sent(p) - 1
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

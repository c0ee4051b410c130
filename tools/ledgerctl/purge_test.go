package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/servertest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/output/dlq"
)

// agedLetters stores n dead letters in small files under <ledger>/dlq/elasticsearch,
// entry i failed i minutes after t0, and returns their ids.
func agedLetters(t *testing.T, ledgerDir string, n int) []string {
	t.Helper()
	dir := dlq.Dir(ledgerDir, "elasticsearch")
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := dlq.Open(dir, dlq.Options{SegmentBytes: 1024, MaxBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		en := deadLetter(i, fmt.Sprintf(`{"i":%d}`, i))
		en.Failed = t0.Add(time.Duration(i) * time.Minute)
		if err := s.Append(context.Background(), []dlq.Entry{en}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := dlq.Scan(dir, func(p dlq.Pos, _ dlq.Entry) error { ids = append(ids, p.String()); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

func countLetters(t *testing.T, ledgerDir string) int {
	t.Helper()
	n := 0
	if err := dlq.Scan(dlq.Dir(ledgerDir, "elasticsearch"), func(dlq.Pos, dlq.Entry) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDLQPurgeStopped: with no logpond running, ledgerctl purges itself,
// holding the store's lock, by time and by id, whole files only.
func TestDLQPurgeStopped(t *testing.T) {
	s := buildStores(t)
	const n = 30
	ids := agedLetters(t, s.ledger, n)
	fileOf := func(id string) string { f, _, _ := strings.Cut(id, ":"); return f }

	// Through entry 10's failure time: the files of entries 1..10 that hold
	// no later entry go.
	out, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "purge", "--json", "--through", t0.Add(10*time.Minute).Format(time.RFC3339))
	var p purged
	if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	kept := 10
	for kept > 0 && fileOf(ids[kept-1]) == fileOf(ids[kept]) {
		kept--
	}
	if p.By != "ledgerctl" || p.Entries != kept || p.Files == 0 || countLetters(t, s.ledger) != n-kept {
		t.Fatalf("purged %+v, want the %d entries before entry %d's file; %d left", p, kept, kept+1, countLetters(t, s.ledger))
	}
	// Through an id: up to and including it, whole files.
	out, _, code = ctl(t, "dlq", "purge", "--through", ids[n-1], "-ledger", s.ledger)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("purged %d dead letters", n-kept)) || countLetters(t, s.ledger) != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The id is gone now, which is no error; one the store never had is.
	if _, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "purge", "--through", ids[0]); code != exitOK {
		t.Fatalf("purging an id purged before: exit %d: %s", code, errOut)
	}
	if _, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "purge", "--through", "00000000000000000999.dlq:20"); code != exitFailed || !strings.Contains(errOut, "no such dead letter") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, bad := range [][]string{{}, {"--through", "last week"}, {"--through", "x.dlq:1"}} {
		if _, errOut, code := ctl(t, append([]string{"-ledger", s.ledger, "dlq", "purge"}, bad...)...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%v: exit %d: %s", bad, code, errOut)
		}
	}
	// The lock was released: the store opens.
	st, err := dlq.Open(dlq.Dir(s.ledger, "elasticsearch"), dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// No store at all: nothing to purge by time; an id is out of range.
	empty := t.TempDir()
	if _, _, code := ctl(t, "-ledger", empty, "dlq", "purge", "--through", t0.Format(time.RFC3339)); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if _, errOut, code := ctl(t, "-ledger", empty, "dlq", "purge", "--through", ids[0]); code != exitFailed || !strings.Contains(errOut, "holds no dead letters") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestDLQPurgeLockedWithoutAdmin: a store a running logpond holds is never
// written by ledgerctl; without an admin listener to ask, it refuses and
// says what to do.
func TestDLQPurgeLockedWithoutAdmin(t *testing.T) {
	s := buildStores(t)
	agedLetters(t, s.ledger, 5)
	st, err := dlq.Open(dlq.Dir(s.ledger, "elasticsearch"), dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, args := range [][]string{
		{"-ledger", s.ledger, "dlq", "purge", "--through", t0.Add(time.Hour).Format(time.RFC3339)},
	} {
		_, errOut, code := ctl(t, args...)
		if code != exitFailed || !strings.Contains(errOut, "in use by a running logpond") || !strings.Contains(errOut, "admin listener") ||
			!strings.Contains(errOut, "stop logpond") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	if n := countLetters(t, s.ledger); n != 5 {
		t.Fatalf("%d dead letters left, want 5", n)
	}
}

// TestDLQPurgeThroughRunningServer runs logpond with an Elasticsearch that
// rejects every event, so they are dead-lettered, and purges through
// ledgerctl while it runs: ledgerctl finds the store locked and asks the
// server on the admin listener named in the configuration (or --admin).
func TestDLQPurgeThroughRunningServer(t *testing.T) {
	es, err := estest.Start(estest.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, _ []byte) (int, string, string, bool) {
		return 400, "mapper_parsing_exception", "rejected by the test", true
	}})
	root := t.TempDir()
	cfg := servertest.Config(root, es.URL())
	logs := &syncbuf.Buffer{}
	srv := servertest.Run(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	}()

	sendEvents(t, srv.BeatsAddr().String(), 50)
	for countLettersIfAny(t, cfg.Ledger.Dir) < 50 {
		time.Sleep(5 * time.Millisecond) // polling; the test's timeout bounds it
	}
	admin := srv.AdminAddr().String()
	path := filepath.Join(t.TempDir(), "logpond.toml")
	toml := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[admin]\nlisten = %q\n[output.elasticsearch]\nhosts = [%q]\n",
		cfg.Journal.Dir, cfg.Ledger.Dir, admin, es.URL())
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := dlq.Scan(dlq.Dir(cfg.Ledger.Dir, "elasticsearch"), func(p dlq.Pos, _ dlq.Entry) error { ids = append(ids, p.String()); return nil }); err != nil {
		t.Fatal(err)
	}
	// An id the store does not have: logpond says so, ledgerctl exits 1.
	if _, errOut, code := ctl(t, "-config", path, "dlq", "purge", "--through", "00000000000000000999.dlq:20"); code != exitFailed || !strings.Contains(errOut, "no such dead letter") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Through the last id: everything, by the running logpond.
	out, errOut, code := ctl(t, "dlq", "purge", "--through", ids[len(ids)-1], "--json", "-config", path)
	var p purged
	if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil || p.By != "logpond" || p.Entries != 50 {
		t.Fatalf("exit %d, %+v, %v:\n%s%s", code, p, err, out, errOut)
	}
	if n := countLetters(t, cfg.Ledger.Dir); n != 0 {
		t.Fatalf("%d dead letters left", n)
	}
	// More dead letters, purged by time with --admin and no configuration.
	sendEvents(t, srv.BeatsAddr().String(), 10)
	for countLettersIfAny(t, cfg.Ledger.Dir) < 10 {
		time.Sleep(5 * time.Millisecond)
	}
	if os.Geteuid() == 0 {
		// A store another user owns (the user logpond runs as): ledgerctl
		// writes nothing in it, but the running logpond purges it.
		chownTree(t, dlq.Dir(cfg.Ledger.Dir, "elasticsearch"), otherUID)
	}
	out, errOut, code = ctl(t, "-ledger", cfg.Ledger.Dir, "dlq", "purge", "--admin", admin, "--through", time.Now().UTC().Format(time.RFC3339Nano))
	if code != exitOK || !strings.Contains(out, "purged 10 dead letters") || !strings.Contains(out, "by logpond") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	// The server goes on storing dead letters after the purges.
	sendEvents(t, srv.BeatsAddr().String(), 3)
	for countLettersIfAny(t, cfg.Ledger.Dir) < 3 {
		time.Sleep(5 * time.Millisecond)
	}
}

func countLettersIfAny(t *testing.T, ledgerDir string) int {
	t.Helper()
	if _, err := os.Stat(dlq.Dir(ledgerDir, "elasticsearch")); err != nil {
		return 0
	}
	return countLetters(t, ledgerDir)
}

// sendEvents sends n events in one batch to the Beats input at addr.
func sendEvents(t *testing.T, addr string, n int) {
	t.Helper()
	c, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var data []any
	for i := range n {
		data = append(data, json.RawMessage(fmt.Sprintf(`{"message":"event %d"}`, i)))
	}
	if got, err := c.Send(data); err != nil || got != n {
		t.Fatalf("%d of %d acknowledged: %v", got, n, err)
	}
}

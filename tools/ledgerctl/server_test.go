package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/server"
)

// addrHandler passes records on and reports the Beats input's address,
// which the server logs when Run starts listening.
type addrHandler struct {
	slog.Handler
	addr chan string
}

func (h addrHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "beats input listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h addrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return addrHandler{h.Handler.WithAttrs(as), h.addr}
}

func (h addrHandler) WithGroup(name string) slog.Handler {
	return addrHandler{h.Handler.WithGroup(name), h.addr}
}

// TestAgainstRunningServer runs a real logpond server in this process and,
// while Beats batches stream in, runs every read-only command on its live
// stores: they succeed, and the server notices nothing: every acknowledged
// event ends up in the ledger, byte for byte, and it stops cleanly.
func TestAgainstRunningServer(t *testing.T) {
	root := t.TempDir()
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 64<<10, 64<<20
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes = 64<<10, 1<<30
	cfg.Ledger.FlushInterval = conf.Duration(5 * time.Millisecond)
	cfg.Input.Beats.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = ""
	cfg.Output.Elasticsearch.Enabled = false
	logs := &syncbuf.Buffer{}
	addrs := make(chan string, 1)
	log := slog.New(addrHandler{slog.NewTextHandler(logs, nil), addrs})
	srv, err := server.Open(&cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			stop()
			<-done
		}
		srv.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	}()
	addr := <-addrs

	// A sender streams batches until told to stop, recording what was
	// acknowledged.
	var (
		mu   sync.Mutex
		sent []string
	)
	stopSending := make(chan struct{})
	sendErr := make(chan error, 1)
	client, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	send := func(batch int) error {
		var data []any
		var evs []string
		for i := range 40 {
			ev := fmt.Sprintf(`{"@metadata":{"beat":"filebeat"},"message":"batch %d line %d %s"}`, batch, i, strings.Repeat("p", i*13))
			data = append(data, json.RawMessage(ev))
			evs = append(evs, ev)
		}
		if n, err := client.Send(data); err != nil || n != len(data) {
			return fmt.Errorf("batch %d: %d acknowledged: %v", batch, n, err)
		}
		mu.Lock()
		sent = append(sent, evs...)
		mu.Unlock()
		return nil
	}
	batch := 0
	for ; batch < 20; batch++ { // something in both stores before the first look
		if err := send(batch); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for b := batch; ; b++ {
			select {
			case <-stopSending:
				sendErr <- nil
				return
			default:
			}
			if err := send(b); err != nil {
				sendErr <- err
				return
			}
		}
	}()

	dirs := []string{"-journal", cfg.Journal.Dir, "-ledger", cfg.Ledger.Dir}
	for round := range 3 {
		for _, args := range [][]string{{"segments"}, {"stat"}, {"verify"}, {"dump", "--count", "50"},
			{"dump", "--from", "5", "--count", "3", "--events"}, {"cursors"}, {"dlq", "list"}, {"segments", "--json"}, {"verify", "--json"}} {
			out, errOut, code := ctl(t, append(dirs, args...)...)
			if code != exitOK {
				t.Fatalf("round %d: ledgerctl %s: exit %d:\n%s%s", round, strings.Join(args, " "), code, out, errOut)
			}
		}
	}
	// The server still holds both directories: ledgerctl took no lock.
	for _, dir := range []string{cfg.Journal.Dir, cfg.Ledger.Dir} {
		var le *dirlock.LockedError
		if l, err := dirlock.Acquire(dir); !errors.As(err, &le) {
			l.Release()
			t.Fatalf("%s is not locked by the running server (%v)", dir, err)
		}
	}
	close(stopSending)
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	client.Close()

	// Every acknowledged event reaches the ledger while the server runs.
	mu.Lock()
	want := sent
	mu.Unlock()
	for {
		e, out, _ := testEnv(stores{ledger: cfg.Ledger.Dir}, time.Now())
		e.journalDir = ""
		if code := cmdStat(e, []string{"--json"}); code != exitOK {
			t.Fatalf("stat: exit %d", code)
		}
		var rep statReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Ledger.Events == uint64(len(want)) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling, not a deadline: the test's timeout bounds it
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	stopped = true
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	// Stopped: the stores verify, and hold exactly what was acknowledged.
	if out, _, code := ctl(t, append(dirs, "verify")...); code != exitOK || !strings.Contains(out, "verify: OK") {
		t.Fatalf("verify after stop: exit %d:\n%s", code, out)
	}
	e, out, _ := testEnv(stores{ledger: cfg.Ledger.Dir}, time.Now())
	if code := cmdDump(e, []string{"--events", "--count", "1000000"}); code != exitOK {
		t.Fatalf("dump: exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("the ledger holds %d events, %d were acknowledged", len(lines), len(want))
	}
	for i, line := range lines {
		var ev struct {
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || string(ev.Event) != want[i] {
			t.Fatalf("event %d: %s, want %s (%v)", i, line, want[i], err)
		}
	}
	t.Logf("%d events in %d batches", len(want), len(want)/40)
}

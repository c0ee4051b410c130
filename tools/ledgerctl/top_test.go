package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/servertest"
	"github.com/logpond/logpond/server"
)

// TestTop runs ledgerctl top --once against a running logpond: one table
// with a row per stage, and with --json the node info and the rates.
func TestTop(t *testing.T) {
	es, err := estest.Start(estest.Options{Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	root := t.TempDir()
	cfg := servertest.Config(root, es.URL())
	srv := servertest.Run(t, cfg, nil)
	sendEvents(t, srv.BeatsAddr().String(), 40)
	admin := srv.AdminAddr().String()

	out, _, code := ctl(t, "top", "--admin", admin, "--once", "--interval", "20ms")
	if code != exitOK {
		t.Fatalf("top exited %d", code)
	}
	if !strings.HasPrefix(out, "logpond ") || !strings.Contains(out, "STAGE") {
		t.Errorf("no header:\n%s", out)
	}
	for _, stage := range []string{"input", "journal", "ledger", "output"} {
		if !strings.Contains(out, "\n"+stage+" ") {
			t.Errorf("no row for %s:\n%s", stage, out)
		}
	}
	out, _, code = ctl(t, "top", "--admin", admin, "--once", "--interval", "20ms", "--json")
	var v struct {
		Node  server.NodeInfo `json:"node"`
		Rates topRates        `json:"rates"`
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatalf("top --json: exit %d, %v", code, err)
	}
	if v.Node.Input.EventsTotal != 40 || v.Rates.Seconds <= 0 {
		t.Errorf("top --json: %d events in, rates over %vs", v.Node.Input.EventsTotal, v.Rates.Seconds)
	}

	// Without -config or --admin: the admin listener of the installed
	// configuration.
	installed := filepath.Join(t.TempDir(), "logpond.toml")
	if err := os.WriteFile(installed, []byte(fmt.Sprintf("[admin]\nlisten = %q\n", admin)), 0o640); err != nil {
		t.Fatal(err)
	}
	e, stdout, stderr := testEnv(stores{}, time.Now())
	e.defaultConfig = installed
	if code := cmdTop(e, []string{"--once", "--interval", "20ms"}); code != exitOK || !strings.Contains(stdout.String(), "STAGE") {
		t.Fatalf("top with the installed configuration: exit %d:\n%s%s", code, stdout, stderr)
	}
}

// TestTopAdminAddress: where top looks for logpond without --admin: the
// configuration given, else the installed one, else the default address.
func TestTopAdminAddress(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
		return path
	}
	installed := write("installed.toml", "[admin]\nlisten = \"0.0.0.0:9700\"\n")
	off := write("off.toml", "[admin]\nlisten = \"\"\n")
	broken := write("broken.toml", "[admin\n")
	for _, tc := range []struct {
		name                  string
		flag, config, admin   string // --admin; -config and its [admin] listen
		defaultConfig         string
		want, wantErr, stderr string
	}{
		{name: "--admin wins", flag: "127.0.0.1:1234", config: installed, admin: "127.0.0.1:9700", defaultConfig: installed, want: "127.0.0.1:1234"},
		{name: "-config", config: "/etc/x.toml", admin: "127.0.0.1:9800", defaultConfig: installed, want: "127.0.0.1:9800"},
		{name: "-config turns it off", config: off, defaultConfig: installed, wantErr: off + " turns logpond's admin listener off"},
		{name: "the installed configuration", defaultConfig: installed, want: "0.0.0.0:9700"},
		{name: "none installed: the default address", defaultConfig: filepath.Join(dir, "missing.toml"), want: "127.0.0.1:9600"},
		{name: "installed turns it off", defaultConfig: off, wantErr: off + " turns logpond's admin listener off"},
		{name: "installed unreadable: the default address, with a note", defaultConfig: broken, want: "127.0.0.1:9600", stderr: "trying the default admin listener 127.0.0.1:9600"},
	} {
		e, _, stderr := testEnv(stores{}, time.Now())
		e.config, e.admin, e.defaultConfig = tc.config, tc.admin, tc.defaultConfig
		got, err := topAdmin(e, tc.flag)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %q, %v; want the error %q", tc.name, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		case !strings.Contains(stderr.String(), tc.stderr) || (tc.stderr == "" && stderr.Len() > 0):
			t.Errorf("%s: stderr %q, want %q", tc.name, stderr, tc.stderr)
		}
	}
}

// TestTopRefusals: top needs an admin listener that is logpond's.
func TestTopRefusals(t *testing.T) {
	off := filepath.Join(t.TempDir(), "logpond.toml")
	if err := os.WriteFile(off, []byte("[admin]\nlisten = \"\"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := ctl(t, "-config", off, "top"); code != exitUsage || !strings.Contains(errOut, "--admin") {
		t.Errorf("top with the admin listener off: exit %d, %q", code, errOut)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, errOut, code := ctl(t, "top", "--admin", addr, "--once"); code != exitFailed || !strings.Contains(errOut, addr) {
		t.Errorf("top against nothing: exit %d, %q", code, errOut)
	}
}

// TestRates: rates are per second between two answers, per output by
// name; a restart (counters going back) and an output the earlier answer
// lacks count from zero.
func TestRates(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := server.NodeInfo{Now: t0, Input: server.InputInfo{EventsTotal: 100}, Outputs: []server.OutputInfo{
		{Name: "es-a", EventsDeliveredTotal: 500}, {Name: "lj", EventsDeliveredTotal: 100}}}
	b := server.NodeInfo{Now: t0.Add(2 * time.Second), Input: server.InputInfo{EventsTotal: 300}, Outputs: []server.OutputInfo{
		{Name: "lj", EventsDeliveredTotal: 300}, {Name: "es-a", EventsDeliveredTotal: 40}, {Name: "new", EventsDeliveredTotal: 10}}}
	r := rates(a, b)
	if r.InputEvents != 100 {
		t.Errorf("input %v events/s, want 100", r.InputEvents)
	}
	for _, tc := range []struct {
		name string
		want float64
	}{{"lj", 100}, {"es-a", 20}, {"new", 5}} {
		if got := ratesOf(r, tc.name).Events; got != tc.want {
			t.Errorf("output %s: %v events/s, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTopRendersOutputs: top shows a row per output, by name, with its
// state, rate, dead-letter fill (Elasticsearch only) and lag, a row per
// cursor no output owns, and a detail line per output.
func TestTopRendersOutputs(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	node := func(at time.Time, delivered int64) server.NodeInfo {
		return server.NodeInfo{Name: "logpond", Now: at, Ready: true, Outputs: []server.OutputInfo{
			{Name: "es-main", Type: "elasticsearch", State: server.StateOK, EventsDeliveredTotal: delivered,
				PendingRecords: 12, PendingBytes: 4096, DeadLetterFillRatio: 0.25, DeadLetterBytes: 256, DeadLetterMaxBytes: 1024},
			{Name: "archive", Type: "lumberjack", State: server.StateWaiting, Waiting: "connecting to archive:5044",
				EventsDeliveredTotal: 2 * delivered, PendingRecords: 99, PendingBytes: 2 << 20},
		}, OrphanCursors: []server.CursorInfo{{Name: "old-es", CursorLSN: 3, HeldBytes: 3 << 20}}}
	}
	a, b := node(t0, 0), node(t0.Add(time.Second), 50)
	var out strings.Builder
	printTop(&out, b, rates(a, b))
	text := out.String()
	row := func(prefix string) []string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(strings.TrimPrefix(l, prefix))
			}
		}
		t.Fatalf("no row %q in:\n%s", prefix, text)
		return nil
	}
	for _, tc := range []struct {
		row  string
		want []string // the cells after the stage
	}{
		{"output es-main ", []string{"ok", "50", "0", "B", "-", "25.0%", "12", "records", "(4.0", "KiB)"}},
		{"output archive ", []string{"waiting", "100", "0", "B", "-", "-", "99", "records", "(2.0", "MiB)"}},
		{"cursor old-es ", []string{"not", "configured", "-", "-", "-", "-", "holds", "3.0", "MiB"}},
	} {
		if got := row(tc.row); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("row %q: %q, want %q", tc.row, got, tc.want)
		}
	}
	for _, want := range []string{
		"output es-main (elasticsearch): lag 0 events (12 records, 4.0 KiB)",
		"dead letters 256 B of 1.0 KiB",
		"output archive (lumberjack): lag",
		"output archive: connecting to archive:5044",
		"ledgerctl cursors delete NAME",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text[strings.Index(text, "output archive (lumberjack)"):], "dead letters") {
		t.Errorf("a Lumberjack output shows dead letters:\n%s", text)
	}
}

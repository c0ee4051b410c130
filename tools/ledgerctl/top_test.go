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

// TestRates: rates are per second between two answers, and a restart
// (counters going back) counts from zero.
func TestRates(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := server.NodeInfo{Now: t0, Input: server.InputInfo{EventsTotal: 100}, Outputs: []server.OutputInfo{{EventsDeliveredTotal: 500}}}
	b := server.NodeInfo{Now: t0.Add(2 * time.Second), Input: server.InputInfo{EventsTotal: 300}, Outputs: []server.OutputInfo{{EventsDeliveredTotal: 40}}}
	r := rates(a, b)
	if r.InputEvents != 100 || r.OutputEvents != 20 {
		t.Errorf("rates %+v, want 100 events/s in and 20 out", r)
	}
}

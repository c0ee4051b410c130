package main

import (
	"encoding/json"
	"net"
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
}

// TestTopRefusals: top needs an admin listener that is logpond's.
func TestTopRefusals(t *testing.T) {
	if _, errOut, code := ctl(t, "top"); code != exitUsage || !strings.Contains(errOut, "--admin") {
		t.Errorf("top without an admin listener: exit %d, %q", code, errOut)
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
	a := server.NodeInfo{Now: t0, Input: server.InputInfo{EventsTotal: 100}, Output: &server.OutputInfo{EventsDeliveredTotal: 500}}
	b := server.NodeInfo{Now: t0.Add(2 * time.Second), Input: server.InputInfo{EventsTotal: 300}, Output: &server.OutputInfo{EventsDeliveredTotal: 40}}
	r := rates(a, b)
	if r.InputEvents != 100 || r.OutputEvents != 20 {
		t.Errorf("rates %+v, want 100 events/s in and 20 out", r)
	}
}

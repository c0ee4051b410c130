// Package servertest runs a whole logpond server for the tests of other
// packages (tools, dashboards, alert rules). Only tests import it.
package servertest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/server"
)

// Config is a configuration for a test server: journal and ledger under
// root with 1 MiB segments, the Beats and admin listeners on 127.0.0.1
// port 0, a 5 ms ledger flush interval, and the Elasticsearch output
// sending to esURL every 10 ms (disabled when esURL is "").
func Config(root, esURL string) *conf.Config {
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 1<<20, 64<<20
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes = 1<<20, 1<<30
	cfg.Ledger.FlushInterval = conf.Duration(5 * time.Millisecond)
	cfg.Input.Beats.Listen, cfg.Admin.Listen = "127.0.0.1:0", "127.0.0.1:0"
	es := &cfg.Output.Elasticsearch
	es.Enabled, es.Hosts = esURL != "", []string{esURL}
	es.FlushInterval = conf.Duration(10 * time.Millisecond)
	return &cfg
}

// Run opens a server on cfg, logging to log (nil: nowhere), and runs it
// until the test ends; then it stops it, failing the test if Run failed,
// and closes it.
func Run(t testing.TB, cfg *conf.Config, log *slog.Logger) *server.Server {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := server.Open(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	})
	return s
}

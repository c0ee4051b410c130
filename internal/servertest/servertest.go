// Package servertest runs a whole logpond server for the tests of other
// packages (tools, dashboards, alert rules). Only tests import it.
package servertest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/server"
)

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

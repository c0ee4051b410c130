package main

import (
	"bytes"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
)

// TestMemoryLimit checks that the soft memory limit is 90% of the
// configuration's memory formula unless GOMEMLIMIT is set, that the log says which one
// applies, and that restore puts the previous limit back.
func TestMemoryLimit(t *testing.T) {
	cfg := conf.Default()
	before := debug.SetMemoryLimit(-1)
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))

	restore := applyMemoryLimit(&cfg, "", log)
	if got, want := debug.SetMemoryLimit(-1), cfg.Memory().Total()/10*9; got != want {
		t.Errorf("limit %d, want the formula's %d", got, want)
	}
	if !strings.Contains(out.String(), "memory limit from the configuration") {
		t.Errorf("log does not say the limit comes from the configuration: %s", out.String())
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after restore: limit %d, want %d", got, before)
	}

	out.Reset()
	restore = applyMemoryLimit(&cfg, "300MiB", log)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set: limit changed to %d", got)
	}
	if !strings.Contains(out.String(), "memory limit from GOMEMLIMIT") || !strings.Contains(out.String(), "300MiB") {
		t.Errorf("log does not say GOMEMLIMIT applies: %s", out.String())
	}
	restore()
}

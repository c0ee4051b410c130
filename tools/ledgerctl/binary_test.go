package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
)

// TestBinary builds ledgerctl and runs it as an operator would: help, a
// listing from the configuration file, and verify's exit status on damage.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ledgerctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runBin := func(args ...string) (string, int) {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("ledgerctl %s → %d\n%s", strings.Join(args, " "), code, out)
		return string(out), code
	}

	out, code := runBin("-h")
	for _, cmd := range []string{"segments", "stat", "dump", "verify", "cursors", "dlq list", "dlq dump", "dlq redrive"} {
		if code != exitOK || !strings.Contains(out, cmd) {
			t.Fatalf("-h: exit %d, %q not listed", code, cmd)
		}
	}
	if _, code := runBin(); code != exitUsage {
		t.Fatalf("no arguments: exit %d, want %d", code, exitUsage)
	}

	s := buildStores(t)
	config := writeConfig(t, s)
	if out, code := runBin("-config", config, "segments"); code != exitOK || !strings.Contains(out, "00000000000000000001.seg") {
		t.Fatalf("segments: exit %d", code)
	}
	if out, code := runBin("-config", config, "verify"); code != exitOK || !strings.Contains(out, "verify: OK") {
		t.Fatalf("verify: exit %d", code)
	}
	w := ledgerOffsets(t, s.ledger)[42]
	storetest.Flip(t, w.file, w.off+16+20)
	out, code = runBin("-config", config, "verify")
	if code != exitFailed || !strings.Contains(out, w.file) || !strings.Contains(out, "LSN 42") {
		t.Fatalf("verify on damage: exit %d, want %d naming %s and LSN 42", code, exitFailed, w.file)
	}
}

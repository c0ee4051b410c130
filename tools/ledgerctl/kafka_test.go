package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaOutput: ledgerctl knows a configured Kafka output: its
// dead-letter directory is selected by its name (the only output), and
// dlq redrive, which sends to Elasticsearch, refuses its dead letters
// with what to do instead.
func TestKafkaOutput(t *testing.T) {
	s := buildStores(t)
	path := filepath.Join(t.TempDir(), "logpond.toml")
	text := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[admin]\nlisten = \"\"\n[output.kafka.stream]\nhosts = [\"127.0.0.1:9\"]\ntopic = \"logs\"\n", s.journal, s.ledger)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := ctl(t, "-config", path, "dlq", "redrive")
	if code != exitUsage || !strings.Contains(errOut, "output stream is a Kafka output") || !strings.Contains(errOut, "dlq dump --output stream") {
		t.Fatalf("dlq redrive of a Kafka output's dead letters: exit %d, want %d, refusing with what to do:\n%s%s", code, exitUsage, out, errOut)
	}
	out, errOut, code = ctl(t, "-config", path, "dlq", "list")
	if code != exitOK {
		t.Fatalf("dlq list with a Kafka output: exit %d:\n%s%s", code, out, errOut)
	}
}

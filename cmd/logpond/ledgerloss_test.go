package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/estest"
	"github.com/logpond/logpond/internal/storetest"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// TestDamagedLastLedgerRecordEndToEnd: a backlog waits in the ledger (the
// output off), the journal has released all of it, and the last record of
// the open ledger segment is damaged on disk: acknowledged, and in neither
// store. logpond refuses to start, before binding any port, with one
// message naming the lost LSN and the ledgerctl command that accepts the
// loss. That command, run as printed, lets the next start succeed: every
// event but those of the damaged record reaches Elasticsearch exactly
// once, the lost record is reported as quarantined, and logpond keeps
// running.
func TestDamagedLastLedgerRecordEndToEnd(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	jdir, ldir := filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	config := func(output string) string {
		path := filepath.Join(root, "logpond.toml")
		if err := os.WriteFile(path, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
segment_bytes = "1MiB"
flush_interval = "10ms"
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
%s
[admin]
listen = ""
`, jdir, ldir, output), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	// The backlog: 20 batches of 250 events, output off.
	cmd, log := started(t, config("enabled = false"))
	m := regexp.MustCompile(`beats input listening" addr=(\S+)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no listening address in the log:\n%s", log.String())
	}
	c, err := lj.SyncDial(m[1])
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for b := range 20 {
		var data []interface{}
		for i := range 250 {
			p := fmt.Sprintf("b%d-e%d", b, i)
			all[p] = true
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"payload":%q,"pad":%q}`, p, strings.Repeat("z", 200))))
		}
		if n, err := c.Send(data); err != nil || n != len(data) {
			t.Fatalf("batch %d: acked %d: %v", b, n, err)
		}
	}
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}

	// The journal has released every record the ledger holds: it goes on
	// after the ledger's last LSN and holds none.
	segs, err := ledger.Segments(ldir, ledger.InspectOptions{})
	if err != nil || len(segs) < 2 {
		t.Fatalf("ledger: %d segments, %v", len(segs), err)
	}
	last := segs[len(segs)-1].LastLSN
	if err := os.RemoveAll(jdir); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(jdir, journal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		StartAfter: last, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage the open segment's last record: the end of its last write.
	r, err := ledger.NewDirReader(ldir, last, ledger.InspectOptions{})
	if err != nil || !r.Next() || r.LSN() != last {
		t.Fatalf("reading LSN %d: %v", last, err)
	}
	seg, off := r.Segment(), r.Offset()
	dec, err := record.Decode(r.Record())
	if err != nil {
		t.Fatal(err)
	}
	lost := map[string]bool{}
	for ev := range dec.Events() {
		lost[gjson.GetBytes(ev, "payload").String()] = true
	}
	r.Close()
	storetest.Flip(t, seg, off+16+100)
	t.Logf("damaged LSN %d (%d events), the ledger's last, in %s at offset %d", last, len(lost), seg, off)

	// Refused, before any port is bound, with one message.
	withES := config(fmt.Sprintf(`hosts = [%q]
flush_interval = "20ms"`, srv.URL()))
	out, err := exec.Command(binary, "-config", withES).CombinedOutput()
	text := string(out)
	if exitCodeOf(err) != 1 || strings.Contains(text, "listening") {
		t.Fatalf("start over the damage: %v, want exit 1 before listening:\n%s", err, text)
	}
	t.Logf("refused:\n%s", text)
	cm := regexp.MustCompile("`(ledgerctl [^`]*accept-loss)`").FindStringSubmatch(text)
	if cm == nil || !strings.Contains(text, fmt.Sprintf("LSNs %d–%d (1 record,", last, last)) || strings.Count(text, "level=ERROR") != 1 {
		t.Fatalf("the refusal does not name LSN %d and the accept-loss command in one ERROR:\n%s", last, text)
	}

	// Accept the loss exactly as the message says.
	ctl := filepath.Join(t.TempDir(), "ledgerctl")
	if b, err := exec.Command("go", "build", "-o", ctl, "../../tools/ledgerctl").CombinedOutput(); err != nil {
		t.Fatalf("go build ledgerctl: %v\n%s", err, b)
	}
	b, err := exec.Command(ctl, strings.Fields(cm[1])[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("LSNs %d–%d (1 record,", last, last)) {
		t.Fatalf("%s: %v\n%s", cm[1], err, b)
	}
	t.Logf("%s:\n%s", cm[1], b)

	cmd, log2 := startedFull(t, withES)
	want := len(all) - len(lost)
	deadline := time.Now().Add(60 * time.Second)
	for srv.Count() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("logpond is not running: %v\n%s", err, log2.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log2.String())
	}
	seen := map[string]bool{}
	for _, d := range srv.Docs() {
		p := gjson.GetBytes(d.Source, "payload").String()
		switch {
		case seen[p]:
			t.Errorf("event %s stored twice", p)
		case lost[p]:
			t.Errorf("event %s of the damaged record was sent", p)
		case !all[p]:
			t.Errorf("unexpected document %s", d.Source)
		}
		seen[p] = true
	}
	if len(seen) != want {
		t.Errorf("%d events stored, want %d:\n%s", len(seen), want, log2.String())
	}
	if text := log2.String(); !strings.Contains(text, fmt.Sprintf("first_lsn=%d last_lsn=%d", last, last)) {
		t.Errorf("the lost record is not reported as skipped damage:\n%s", text)
	}
}

package main

import (
	"encoding/json"
	"fmt"
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

// TestDamagedJournalRecordEndToEnd: a backlog waits in the journal, not
// yet in the ledger (logpond was killed before its flusher moved it), and
// one of its records is damaged on disk: acknowledged, and in neither
// store. logpond refuses to start, before binding any port, with one
// message naming the lost LSN and the ledgerctl command that accepts the
// loss. That command, run as printed, lets the next start succeed, and
// every event but those of the damaged record reaches Elasticsearch
// exactly once.
func TestDamagedJournalRecordEndToEnd(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	jdir, ldir := filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	config := func(flushInterval, output string) string {
		path := filepath.Join(root, "logpond.toml")
		if err := os.WriteFile(path, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
segment_bytes = "1MiB"
flush_interval = %q
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
%s
[admin]
listen = ""
`, jdir, ldir, flushInterval, output), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	addrOf := func(log string) string {
		m := regexp.MustCompile(`beats input listening" addr=(\S+)`).FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no listening address in the log:\n%s", log)
		}
		return m[1]
	}
	all := map[string]bool{}
	send := func(addr, tag string, batches int) {
		c, err := lj.SyncDial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for b := range batches {
			var data []interface{}
			for i := range 100 {
				p := fmt.Sprintf("%s%d-e%d", tag, b, i)
				all[p] = true
				data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"payload":%q,"pad":%q}`, p, strings.Repeat("z", 100))))
			}
			if n, err := c.Send(data); err != nil || n != len(data) {
				t.Fatalf("batch %s%d: acked %d: %v", tag, b, n, err)
			}
		}
	}

	// Some events in the ledger (the output off), then a backlog that
	// only the journal holds: the flusher waits a minute, and logpond is
	// killed before.
	cmd, log := started(t, config("10ms", "enabled = false"))
	send(addrOf(log.String()), "a", 10)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}
	cmd, log = started(t, config("1m", "enabled = false"))
	send(addrOf(log.String()), "b", 10)
	cmd.Process.Kill()
	cmd.Wait()

	segs, err := ledger.Segments(ldir, ledger.InspectOptions{})
	if err != nil || len(segs) == 0 {
		t.Fatalf("ledger: %v", err)
	}
	ledgerLast := segs[len(segs)-1].LastLSN
	r, err := journal.NewDirReader(jdir, ledgerLast+1)
	if err != nil {
		t.Fatal(err)
	}
	var backlog []uint64
	where := map[uint64][2]any{}
	recs := map[uint64][]byte{}
	for r.Next() {
		backlog = append(backlog, r.LSN())
		where[r.LSN()] = [2]any{r.File(), r.Offset()}
		recs[r.LSN()] = append([]byte(nil), r.Record()...)
	}
	if r.Err() != nil || len(backlog) < 3 {
		t.Fatalf("the journal holds %d records after the ledger's last LSN %d: %v", len(backlog), ledgerLast, r.Err())
	}
	mid := backlog[len(backlog)/2]
	dec, err := record.Decode(recs[mid])
	if err != nil {
		t.Fatal(err)
	}
	lost := map[string]bool{}
	for ev := range dec.Events() {
		lost[gjson.GetBytes(ev, "payload").String()] = true
	}
	storetest.Flip(t, where[mid][0].(string), where[mid][1].(int64)+60)
	t.Logf("damaged journal LSN %d (%d events); the ledger ends at %d", mid, len(lost), ledgerLast)

	// Refused, before any port is bound, with one message.
	withES := config("20ms", fmt.Sprintf(`hosts = [%q]
flush_interval = "20ms"`, srv.URL()))
	out, err := exec.Command(binary, "-config", withES).CombinedOutput()
	text := string(out)
	if exitCodeOf(err) != 1 || strings.Contains(text, "listening") {
		t.Fatalf("start over the damage: %v, want exit 1 before listening:\n%s", err, text)
	}
	m := regexp.MustCompile("`(ledgerctl [^`]*accept-loss)`").FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, fmt.Sprintf("LSNs %d–%d (1 record", mid, mid)) || strings.Count(text, "level=ERROR") != 1 {
		t.Fatalf("the refusal does not name LSN %d and the accept-loss command in one ERROR:\n%s", mid, text)
	}

	// Accept the loss exactly as the message says.
	ctl := filepath.Join(t.TempDir(), "ledgerctl")
	if b, err := exec.Command("go", "build", "-o", ctl, "../../tools/ledgerctl").CombinedOutput(); err != nil {
		t.Fatalf("go build ledgerctl: %v\n%s", err, b)
	}
	args := strings.Fields(m[1])[1:]
	b, err := exec.Command(ctl, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("LSNs %d–%d", mid, mid)) {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
	t.Logf("%s:\n%s", m[1], b)

	cmd, log2 := startedFull(t, withES)
	want := len(all) - len(lost)
	deadline := time.Now().Add(60 * time.Second)
	for srv.Count() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
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
}

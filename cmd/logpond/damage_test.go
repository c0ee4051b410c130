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
	"github.com/logpond/logpond/internal/syncbuf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// TestDamagedLedgerRecordEndToEnd: a backlog waits in the ledger (the
// output off), one record in the middle of a segment is damaged on disk,
// logpond starts with the output on. Each row says where the record is and
// what must happen: every event but those of the damaged record reaches
// Elasticsearch exactly once (all of them when the journal still holds the
// record and replays it), the damage is logged as an ERROR naming the
// ledgerctl command, and logpond keeps running (and stops cleanly on
// SIGTERM).
func TestDamagedLedgerRecordEndToEnd(t *testing.T) {
	cases := []struct {
		name string
		open bool // damage the open segment (else the first, sealed, one)
		// dropJournal removes the journal before the restart, so that it
		// no longer holds the damaged record.
		dropJournal bool
		lost        bool     // the damaged record's events are lost
		log         []string // more the log must say (%[1]d: the damaged LSN)
	}{
		{"sealed segment", false, false, true, []string{"first_lsn=%[1]d last_lsn=%[1]d"}},
		{"open segment, the journal still holds the record", true, false, false,
			[]string{"damage in the middle of the open segment", "first_lsn_cut=%[1]d"}},
		{"open segment, the journal no longer holds the record", true, true, true,
			[]string{"the segment is sealed as it is and a new one started", "first_damaged_lsn=%[1]d", "first_lsn=%[1]d last_lsn=%[1]d"}},
	}
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv.Reset()
			damagedRecordEndToEnd(t, srv, tc.open, tc.dropJournal, tc.lost, tc.log)
		})
	}
}

func damagedRecordEndToEnd(t *testing.T, srv *estest.Server, open, dropJournal, lostForGood bool, wantLog []string) {
	root := t.TempDir()
	ldir := filepath.Join(root, "ledger")
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
`, filepath.Join(root, "journal"), ldir, output), 0o644); err != nil {
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

	// The backlog: 40 batches of 250 events, output off.
	cmd, log := started(t, config("enabled = false"))
	c, err := lj.SyncDial(addrOf(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	for b := range 40 {
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

	// Damage one record in the middle of a segment.
	segs, err := ledger.Segments(ldir, ledger.InspectOptions{})
	if err != nil || len(segs) < 2 {
		t.Fatalf("ledger: %d segments, %v", len(segs), err)
	}
	s := segs[0]
	if open {
		s = segs[len(segs)-1]
	}
	if s.Records() < 3 {
		t.Fatalf("segment %s holds %d records: the test wants 3 or more", s.Path, s.Records())
	}
	mid := (s.FirstLSN + s.LastLSN) / 2
	r, err := ledger.NewDirReader(ldir, mid, ledger.InspectOptions{})
	if err != nil || !r.Next() || r.LSN() != mid {
		t.Fatalf("reading LSN %d: %v", mid, err)
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
	b, _ := os.ReadFile(seg)
	for i := range 4 {
		b[off+16+100+int64(i)] ^= 0xff
	}
	if err := os.WriteFile(seg, b, 0o640); err != nil {
		t.Fatal(err)
	}
	t.Logf("damaged LSN %d (%d events) in %s at offset %d", mid, len(lost), seg, off)
	if dropJournal {
		if err := os.RemoveAll(filepath.Join(root, "journal")); err != nil {
			t.Fatal(err)
		}
	}
	if !lostForGood {
		lost = map[string]bool{}
	}

	cmd, log2 := startedFull(t, config(fmt.Sprintf(`hosts = [%q]
flush_interval = "20ms"`, srv.URL())))
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
		t.Errorf("%d events stored, want %d", len(seen), want)
	}
	text := log2.String()
	if !strings.Contains(text, "level=ERROR") || !strings.Contains(text, "ledgerctl -ledger "+ldir+" verify") {
		t.Errorf("no ERROR naming the ledgerctl command:\n%s", text)
	}
	for _, w := range wantLog {
		if strings.Contains(w, "%") {
			w = fmt.Sprintf(w, mid)
		}
		if !strings.Contains(text, w) {
			t.Errorf("no %q in the log:\n%s", w, text)
		}
	}
}

// startedFull runs logpond with its whole stderr kept in the returned
// buffer, and returns once it logged that its input listens.
func startedFull(t *testing.T, config string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	var log syncbuf.Buffer
	cmd := exec.Command(binary, "-config", config)
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), "beats input listening") {
		if time.Now().After(deadline) {
			t.Fatalf("logpond did not start:\n%s", log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd, &log
}

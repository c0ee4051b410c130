package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/record"
)

// damageRig is what the end-to-end damage tests share: a logpond
// installation in a test directory, the payloads of every event it
// acknowledged, and the test Elasticsearch its output writes to.
type damageRig struct {
	t                *testing.T
	root, jdir, ldir string
	srv              *estest.Server
	all              map[string]bool // payloads of every acknowledged event
}

func newDamageRig(t *testing.T, srv *estest.Server) *damageRig {
	root := t.TempDir()
	return &damageRig{t: t, root: root, jdir: filepath.Join(root, "journal"), ldir: filepath.Join(root, "ledger"),
		srv: srv, all: map[string]bool{}}
}

// config writes the configuration, with the ledger's flush interval and
// the output section given, and returns its path.
func (r *damageRig) config(flushInterval, output string) string {
	path := filepath.Join(r.root, "logpond.toml")
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
`, r.jdir, r.ldir, flushInterval, output), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// withES is the output section that sends to the test Elasticsearch.
func (r *damageRig) withES() string {
	return fmt.Sprintf(`hosts = [%q]
flush_interval = "20ms"`, r.srv.URL())
}

// send sends batches of perBatch events, each padded with pad bytes, to
// the logpond whose log is log, and waits for each ACK. Payloads are
// <tag><batch>-e<event>.
func (r *damageRig) send(log, tag string, batches, perBatch, pad int) {
	t := r.t
	addr := beatsAddr(t, log)
	c, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for b := range batches {
		var data []interface{}
		for i := range perBatch {
			p := fmt.Sprintf("%s%d-e%d", tag, b, i)
			r.all[p] = true
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"payload":%q,"pad":%q}`, p, noise(b, i, pad))))
		}
		if n, err := c.Send(data); err != nil || n != len(data) {
			t.Fatalf("batch %s%d: acked %d: %v", tag, b, n, err)
		}
	}
}

// noise is n hex digits drawn from a generator seeded with batch and
// event: padding that compression cannot shrink much, so that the ledger
// of compressed records still spans the segments the tests damage.
func noise(batch, event, n int) string {
	rng := rand.New(rand.NewPCG(uint64(batch), uint64(event)))
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdef"[rng.IntN(16)]
	}
	return string(b)
}

// backlog runs logpond with its output off, sends it batches (send), and
// stops it with SIGTERM: the events wait in the stores.
func (r *damageRig) backlog(tag string, batches, perBatch, pad int) {
	t := r.t
	cmd, log := started(t, r.config("10ms", "enabled = false"))
	r.send(log.String(), tag, batches, perBatch, pad)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}
}

// payloads are the payloads of an encoded record's events (either
// version: the ledger stores them compressed).
func payloads(t *testing.T, rec []byte) map[string]bool {
	t.Helper()
	dz, err := record.NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	defer dz.Close()
	dec, err := dz.Decode(rec, record.MaxBlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	ps := map[string]bool{}
	for ev := range dec.Events() {
		ps[gjson.GetBytes(ev, "payload").String()] = true
	}
	return ps
}

// refusedThenAcceptLoss starts logpond with config and expects it to
// refuse, before binding any port, with one ERROR that names lost (such
// as "LSNs 7–7") as one record and the ledgerctl command that accepts the
// loss; it then runs that command exactly as printed, which must name
// lost too.
func (r *damageRig) refusedThenAcceptLoss(config, lost string) {
	t := r.t
	out, err := exec.Command(binary, "-config", config).CombinedOutput()
	text := string(out)
	if exitCodeOf(err) != 1 || strings.Contains(text, "listening") {
		t.Fatalf("start over the damage: %v, want exit 1 before listening:\n%s", err, text)
	}
	t.Logf("refused:\n%s", text)
	m := regexp.MustCompile("`(ledgerctl [^`]*accept-loss)`").FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, lost+" (1 record") || strings.Count(text, "level=ERROR") != 1 {
		t.Fatalf("the refusal does not name %s and the accept-loss command in one ERROR:\n%s", lost, text)
	}
	ctl := filepath.Join(t.TempDir(), "ledgerctl")
	if b, err := exec.Command("go", "build", "-o", ctl, "../../tools/ledgerctl").CombinedOutput(); err != nil {
		t.Fatalf("go build ledgerctl: %v\n%s", err, b)
	}
	b, err := exec.Command(ctl, strings.Fields(m[1])[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(b), lost) {
		t.Fatalf("%s: %v\n%s", m[1], err, b)
	}
	t.Logf("%s:\n%s", m[1], b)
}

// deliveredAllBut starts logpond with config and expects every
// acknowledged event but the lost ones to reach the test Elasticsearch
// exactly once, with logpond still running; it stops logpond (SIGTERM,
// exit 0) and returns its log.
func (r *damageRig) deliveredAllBut(config string, lost map[string]bool) string {
	t := r.t
	cmd, log := startedFull(t, config)
	want := len(r.all) - len(lost)
	deadline := time.Now().Add(60 * time.Second)
	for r.srv.Count() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("logpond is not running: %v\n%s", err, log.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}
	seen := map[string]bool{}
	for _, d := range r.srv.Docs() {
		p := gjson.GetBytes(d.Source, "payload").String()
		switch {
		case seen[p]:
			t.Errorf("event %s stored twice", p)
		case lost[p]:
			t.Errorf("event %s of the damaged record was sent", p)
		case !r.all[p]:
			t.Errorf("unexpected document %s", d.Source)
		}
		seen[p] = true
	}
	if len(seen) != want {
		t.Errorf("%d events stored, want %d:\n%s", len(seen), want, log.String())
	}
	return log.String()
}

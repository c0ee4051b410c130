package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// drainRig is one logpond's directories and configuration, with
// Elasticsearch outputs named after the test servers they send to.
type drainRig struct {
	t       *testing.T
	root    string
	config  string
	outputs map[string]*estest.Server
	sent    []string // payloads acknowledged to the client
}

func newDrainRig(t *testing.T, outputs map[string]*estest.Server) *drainRig {
	root := t.TempDir()
	return &drainRig{t: t, root: root, config: filepath.Join(root, "logpond.toml"), outputs: outputs}
}

// write writes the configuration: the Beats input on listen, the
// flusher every flushInterval.
func (r *drainRig) write(listen, flushInterval string) {
	r.t.Helper()
	text := fmt.Sprintf(`
[journal]
dir = %q
[ledger]
dir = %q
flush_interval = %q
[input.beats]
listen = %q
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(r.root, "journal"), filepath.Join(r.root, "ledger"), flushInterval, listen)
	for name, srv := range r.outputs {
		text += fmt.Sprintf(`
[output.elasticsearch.%s]
hosts = [%q]
flush_interval = "10ms"
retry_initial_interval = "5ms"
retry_max_interval = "100ms"
`, name, srv.URL())
	}
	if err := os.WriteFile(r.config, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// fill runs logpond normally while every destination is paused, sends
// batches of events with go-lumber's client until each is acknowledged,
// and kills logpond with SIGKILL. Its flusher runs once a minute, so the
// acknowledged records stay in the journal: the drain must move them to
// the ledger first. It returns the address the Beats input listened on.
func (r *drainRig) fill(batches, perBatch int) string {
	t := r.t
	t.Helper()
	r.write("127.0.0.1:0", "1m")
	cmd, log := startedFull(t, r.config)
	addr := beatsAddr(t, log.String())
	c, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	for b := range batches {
		var data []interface{}
		for i := range perBatch {
			p := fmt.Sprintf("drain-b%d-e%d", b, i)
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"payload":%q}`, p)))
			r.sent = append(r.sent, p)
		}
		if n, err := c.Send(data); err != nil || n != len(data) {
			t.Fatalf("batch %d: acked %d of %d: %v", b, n, len(data), err)
		}
	}
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for name, srv := range r.outputs {
		if n := srv.Count(); n != 0 {
			t.Fatalf("output %s stored %d documents while its destination was paused", name, n)
		}
	}
	return addr
}

// startDrain runs logpond -drain with args and returns once its admin
// endpoint listens, with that address and the whole stderr kept.
func (r *drainRig) startDrain(args ...string) (*exec.Cmd, *syncbuf.Buffer, string) {
	t := r.t
	t.Helper()
	cmd, log := startKept(t, append([]string{"-config", r.config, "-drain"}, args...)...)
	re := regexp.MustCompile(`admin listening" addr=(\S+)`)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return cmd, log, m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("logpond -drain did not start:\n%s", log.String())
		}
	}
}

// waitExit waits for cmd to exit (failing after a generous deadline) and
// returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, log *syncbuf.Buffer) int {
	t.Helper()
	return exitWithin(t, cmd, 2*time.Minute, log)
}

// get answers an admin GET with its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestDrainDeliversEverythingAndNamesDeadLetters: events acknowledged
// while both destinations of a fan-out were down wait in the journal of a
// killed logpond; logpond -drain, started on the same directories and with
// the Beats input configured on the address the events came in on, opens
// no Beats listener (a dial is refused), answers /readyz 503 "draining"
// and /livez 200, shows mode "drain" in GET /, and, once the destinations
// answer, delivers every event to both of them. One event that b refuses
// for good counts as delivered once it is dead-lettered, but it is still
// on the ledger's device: the drain exits 4, not 0 ("the directories can
// be deleted"), and names b's dead letters, count and bytes, in its log at
// ERROR and on stderr.
func TestDrainDeliversEverythingAndNamesDeadLetters(t *testing.T) {
	servers := map[string]*estest.Server{}
	for i, name := range []string{"a", "b"} {
		srv, err := estest.Start(estest.Options{Seed: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		servers[name] = srv
	}
	r := newDrainRig(t, servers)
	beats := r.fill(20, 50)

	r.write(beats, "10ms")
	cmd, log, admin := r.startDrain()
	if c, err := net.Dial("tcp", beats); err == nil {
		c.Close()
		t.Errorf("a dial to the Beats address %s was accepted while draining", beats)
	}
	if code, body := get(t, "http://"+admin+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz while draining: %d %q, want 503 with \"draining\"", code, body)
	}
	if code, body := get(t, "http://"+admin+"/livez"); code != http.StatusOK {
		t.Errorf("/livez while draining: %d %q, want 200", code, body)
	}
	_, body := get(t, "http://"+admin+"/")
	var info struct {
		Mode  string `json:"mode"`
		Input struct {
			State  string `json:"state"`
			Listen string `json:"listen"`
		} `json:"input"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatalf("GET /: %v:\n%s", err, body)
	}
	if info.Mode != "drain" || info.Input.State != "stopped" || info.Input.Listen != "" {
		t.Errorf("GET / while draining: mode %q, input %+v; want mode drain and the input stopped:\n%s", info.Mode, info.Input, body)
	}

	// b refuses one event for good: dead-lettered, it counts as
	// delivered.
	const refused = "drain-b3-e7"
	servers["b"].SetFaults(estest.Faults{ItemHook: func(_, _, _ string, source []byte) (int, string, string, bool) {
		if strings.Contains(string(source), refused) {
			return 400, "mapper_parsing_exception", "refused by the test", true
		}
		return 0, "", "", false
	}})
	for _, srv := range servers {
		if err := srv.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	if code := waitExit(t, cmd, log); code != exitDrainDeadLetters {
		t.Fatalf("logpond -drain exit code %d, want %d (done, dead letters remain):\n%s", code, exitDrainDeadLetters, log.String())
	}
	text := log.String()
	if !strings.Contains(text, "drain done, but dead letters remain") || strings.Contains(text, "beats input listening") {
		t.Errorf("the drain's log does not say it is done with dead letters left, or says the Beats input listened:\n%s", text)
	}
	if strings.Contains(text, "can be deleted") {
		t.Errorf("the drain says the directories can be deleted while dead letters remain:\n%s", text)
	}
	dlqBytes := dirBytes(t, filepath.Join(r.root, "ledger", "dlq", "b"))
	for _, want := range []string{
		"level=ERROR msg=\"drain done, but dead letters remain",
		"output.b.dead_letters=1 output.b.dead_letter_bytes=",
		"logpond: output b (elasticsearch): 1 dead letters (",
		"ledgerctl dlq redrive",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the drain's log and stderr:\n%s", want, text)
		}
	}
	if strings.Contains(text, "output.a.dead_letters") || strings.Contains(text, "output a (elasticsearch): 0 dead letters") {
		t.Errorf("output a, which dead-lettered nothing, is named among the dead letters:\n%s", text)
	}
	t.Logf("b's dead-letter store: %d bytes", dlqBytes)
	for name, srv := range servers {
		have := payloadCopies(srv)
		var missing []string
		for _, p := range r.sent {
			if have[p] == 0 {
				missing = append(missing, p)
			}
		}
		want := []string(nil)
		if name == "b" {
			want = []string{refused}
		}
		if !slices.Equal(missing, want) || len(have) != len(r.sent)-len(want) {
			t.Errorf("output %s: %d distinct events stored of the %d acknowledged; missing %v, want %v", name, len(have), len(r.sent), missing, want)
		}
	}
	if n := dirBytes(t, filepath.Join(r.root, "ledger", "dlq", "b")); n == 0 {
		t.Errorf("output b's dead-letter store is empty: the refused event was not dead-lettered")
	}
}

// TestDrainLeftOnTimeoutOrSignal: with its destination unreachable, a
// drain with -drain-timeout 2s exits 3 and names, on stderr and in its
// log at ERROR, the output, the records it has left and why (its last
// error); so does a drain
// stopped by SIGTERM. Nothing is lost: a drain once the destination
// answers delivers every event.
func TestDrainLeftOnTimeoutOrSignal(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	r := newDrainRig(t, map[string]*estest.Server{"a": srv})
	r.fill(4, 25)
	r.write("127.0.0.1:0", "10ms")

	// The events left are known once the output read the records: before
	// (a drain stopped at once), only the records are.
	left := regexp.MustCompile(`logpond: output a \(elasticsearch\): cursor at LSN \d+, (about 100 events in )?[1-9]\d* records \(\d+ bytes\) left`)
	cmd, log, _ := r.startDrain("-drain-timeout", "2s")
	if code := waitExit(t, cmd, log); code != 3 {
		t.Fatalf("exit code %d after -drain-timeout with the destination down, want 3:\n%s", code, log.String())
	}
	text := log.String()
	if !strings.Contains(text, "-drain-timeout 2s passed") || !left.MatchString(text) || !strings.Contains(text, "about 100 events in") || !strings.Contains(text, "left; last error: elasticsearch") ||
		!regexp.MustCompile(`level=ERROR msg="drain not finished: [^"]*" .*output\.a\.events_left=100 output\.a\.records_left=[1-9]`).MatchString(text) {
		t.Errorf("stderr does not say the timeout passed and what output a has left:\n%s", text)
	}

	cmd, log, _ = r.startDrain()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, log); code != 3 {
		t.Fatalf("exit code %d after SIGTERM during a drain, want 3:\n%s", code, log.String())
	}
	if text := log.String(); !strings.Contains(text, "stopped by a signal") || !left.MatchString(text) {
		t.Errorf("stderr does not say a signal stopped the drain and what output a has left:\n%s", text)
	}

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	cmd, log, _ = r.startDrain("-drain-timeout", "2m")
	if code := waitExit(t, cmd, log); code != 0 {
		t.Fatalf("exit code %d of the drain once the destination answers, want 0:\n%s", code, log.String())
	}
	if have := payloadCopies(srv); len(have) != len(r.sent) {
		t.Errorf("%d distinct events stored, want the %d acknowledged", len(have), len(r.sent))
	}
}

// TestDrainFlags: -drain needs -config, -drain-timeout needs -drain (exit
// 2, bad flags), and a drain with no output enabled cannot start (exit 1):
// nothing would send what the ledger holds.
func TestDrainFlags(t *testing.T) {
	config := writeConfig(t, t.TempDir()) // no output enabled
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-drain"}, 2, "-drain needs -config"},
		{[]string{"-config", config, "-drain-timeout", "1s"}, 2, "-drain-timeout goes with -drain"},
		{[]string{"-check-config", config, "-drain"}, 2, "-drain goes with -config"},
		{[]string{"-config", config, "-drain", "-drain-timeout", "-1s"}, 2, "must not be negative"},
		{[]string{"-config", config, "-drain"}, 1, "no output is enabled"},
	} {
		_, stderr, code := runBinary(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("logpond %v: exit %d, stderr:\n%s\nwant exit %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

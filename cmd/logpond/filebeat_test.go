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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/pki"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// filebeatBinary finds a Filebeat 9 to run against logpond: $LOGPOND_FILEBEAT,
// else bin/filebeat at the repository's root (what `make filebeat` builds),
// else filebeat in PATH. It returns the path and the version Filebeat
// reports, or skips the test saying why: the test needs a real Filebeat,
// which neither `go test` nor CI installs.
func filebeatBinary(t *testing.T) (path, version string) {
	t.Helper()
	path = os.Getenv("LOGPOND_FILEBEAT")
	if path == "" {
		if p, err := filepath.Abs("../../bin/filebeat"); err == nil {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path == "" {
		p, err := exec.LookPath("filebeat")
		if err != nil {
			t.Skip("no Filebeat 9: set LOGPOND_FILEBEAT to its binary, run `make filebeat`, or put filebeat in PATH")
		}
		path = p
	}
	out, err := exec.Command(path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", path, err, out)
	}
	// "filebeat version 9.3.0 (amd64), libbeat 9.3.0 [...]"
	m := regexp.MustCompile(`filebeat version (\d+)\.(\d+)\.(\d+)\S*`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s version printed no Filebeat version:\n%s", path, out)
	}
	if string(m[1]) != "9" {
		t.Skipf("%s is Filebeat %s.%s.%s; this test needs Filebeat 9", path, m[1], m[2], m[3])
	}
	return path, fmt.Sprintf("%s.%s.%s", m[1], m[2], m[3])
}

// docsByTarget lists the stored documents by the name they were written to:
// a data stream's name for a data stream's documents (estest keeps them in
// the stream's backing index, .ds-…), else the index's.
func docsByTarget(srv *estest.Server) map[string][]estest.Doc {
	out := map[string][]estest.Doc{}
	for _, d := range srv.Docs() {
		target := d.Index
		if d.DataStream != "" {
			target = d.DataStream // stored in its backing index, .ds-…
		}
		out[target] = append(out[target], d)
	}
	return out
}

// filebeatConfig is Filebeat's configuration for TestFilebeatDataStreams:
// two filestream inputs, one of whose events carry the data_stream object
// an Elastic Agent's nginx integration would give them, and
// output.logstash to logpond over TLS with a client certificate, as
// Fleet's Logstash output connects. Everything Filebeat writes stays under
// dir.
func filebeatConfig(dir, agentLog, classicLog, logpondAddr string, pki map[string]string) string {
	return fmt.Sprintf(`
filebeat.inputs:
  - type: filestream
    id: agent-nginx-access
    paths: [%q]
    prospector.scanner.check_interval: 100ms
    processors:
      - add_fields:
          target: data_stream
          fields:
            type: logs
            dataset: nginx.access
            namespace: test
  - type: filestream
    id: classic
    paths: [%q]
    prospector.scanner.check_interval: 100ms
output.logstash:
  hosts: [%q]
  timeout: 10s
  ssl.certificate_authorities: [%q]
  ssl.certificate: %q
  ssl.key: %q
  ssl.verification_mode: full
path.home: %q
path.config: %q
path.data: %q
path.logs: %q
http.enabled: false
monitoring.enabled: false
logging.metrics.enabled: false
`, agentLog, classicLog, logpondAddr, pki["ca"], pki["client.crt"], pki["client.key"], dir, dir, filepath.Join(dir, "data"), filepath.Join(dir, "logs"))
}

// writeLines writes n lines "prefix line i" plus padding to path. Filebeat
// 9's filestream identifies files by a fingerprint of their first 1024
// bytes and ignores smaller files, so the lines are long enough for any n
// used here.
func writeLines(t *testing.T, path, prefix string, n int) []string {
	t.Helper()
	var lines []string
	var b strings.Builder
	for i := range n {
		line := fmt.Sprintf("%s line %d %s", prefix, i, strings.Repeat("x", 64))
		lines = append(lines, line)
		b.WriteString(line + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestFilebeatDataStreams runs a real Filebeat 9 into logpond into the
// test Elasticsearch, connected as Fleet's Logstash output connects Elastic
// Agents (TLS, client certificate required), with data_stream = "auto": the lines of the input
// whose events carry a data_stream object (as Elastic Agent's do) land
// once each in logs-nginx.access-test with their data_stream fields; the
// lines of the classic input land once each in Filebeat's index, without
// a data_stream object; the routing metric counts both.
func TestFilebeatDataStreams(t *testing.T) {
	fb, fbVersion := filebeatBinary(t)

	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	root := t.TempDir()
	pki := agentPKI(t, t.TempDir())
	config := filepath.Join(root, "logpond.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
flush_interval = "10ms"
[input.beats]
listen = "127.0.0.1:0"
[input.beats.tls]
cert = %q
key = %q
client_ca = %q
client_auth = "required"
[output.elasticsearch]
hosts = [%q]
data_stream = "auto"
flush_interval = "20ms"
retry_initial_interval = "5ms"
retry_max_interval = "50ms"
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"),
		pki["server.crt"], pki["server.key"], pki["ca"], srv.URL()), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd, log := startedUntil(t, config, "beats input listening", "admin listening")
	input := regexp.MustCompile(`beats input listening" addr=(\S+)`).FindStringSubmatch(log)
	admin := regexp.MustCompile(`admin listening" addr=(\S+)`).FindStringSubmatch(log)
	if input == nil || admin == nil {
		t.Fatalf("no input or admin address in the log:\n%s", log)
	}

	const perInput = 200
	logs := t.TempDir()
	agentLog, classicLog := filepath.Join(logs, "nginx-access.log"), filepath.Join(logs, "classic.log")
	agentLines := writeLines(t, agentLog, "agent", perInput)
	classicLines := writeLines(t, classicLog, "classic", perInput)

	fbDir := t.TempDir()
	fbConfig := filepath.Join(fbDir, "filebeat.yml")
	if err := os.WriteFile(fbConfig, []byte(filebeatConfig(fbDir, agentLog, classicLog, input[1], pki)), 0o600); err != nil {
		t.Fatal(err)
	}
	fbLog := startFilebeat(t, fb, fbConfig)

	// Wait for every line (and no more than that: a resent batch would
	// show as a duplicate below). The deadline only bounds a failing run.
	deadline := time.Now().Add(2 * time.Minute)
	for srv.Count() < 2*perInput && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	byTarget := docsByTarget(srv)
	if srv.Count() < 2*perInput {
		t.Fatalf("%d of %d lines reached Elasticsearch, in %v\nlogpond:\n%s\nfilebeat:\n%s", srv.Count(), 2*perInput, targets(byTarget), log, fbLog())
	}

	const dataStream = "logs-nginx.access-test"
	classicIndex := "filebeat-" + fbVersion
	checkLines(t, byTarget[dataStream], agentLines, dataStream, func(t *testing.T, ev map[string]any) {
		ds, ok := ev["data_stream"].(map[string]any)
		if !ok || ds["type"] != "logs" || ds["dataset"] != "nginx.access" || ds["namespace"] != "test" {
			t.Errorf("a document in %s has data_stream %v, want type logs, dataset nginx.access, namespace test", dataStream, ev["data_stream"])
		}
		if _, ok := ev["@timestamp"]; !ok {
			t.Errorf("a document in %s has no @timestamp", dataStream)
		}
	})
	checkLines(t, byTarget[classicIndex], classicLines, classicIndex, func(t *testing.T, ev map[string]any) {
		if _, ok := ev["data_stream"]; ok {
			t.Errorf("a classic document in %s has a data_stream object: %v", classicIndex, ev["data_stream"])
		}
	})
	if len(byTarget) != 2 || t.Failed() {
		t.Errorf("documents went to %v, want only %s and %s", targets(byTarget), dataStream, classicIndex)
	}

	// The routing counter says the same, per target.
	metrics := httpGet(t, "http://"+admin[1]+"/metrics")
	for target, want := range map[string]int{"data_stream": perInput, "index": perInput} {
		if got := routed(metrics, "elasticsearch", target); got != want {
			t.Errorf("logpond_output_routed_events_total{output=elasticsearch,target=%s} = %d, want %d", target, got, want)
		}
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("logpond exit code %d", code)
	}
}

// startFilebeat runs Filebeat with config, logging to stderr, and returns
// a function that gives what it logged so far. Filebeat is stopped (SIGTERM,
// then killed) when the test ends.
func startFilebeat(t *testing.T, binary, config string) func() string {
	t.Helper()
	var out syncbuf.Buffer
	cmd := exec.Command(binary, "-e", "-c", config, "--strict.perms=false")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting filebeat: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	return out.String
}

// checkLines checks that docs hold each of lines once as their message,
// and nothing else, and runs each on every document's source.
func checkLines(t *testing.T, docs []estest.Doc, lines []string, target string, each func(*testing.T, map[string]any)) {
	t.Helper()
	seen := map[string]int{}
	for _, d := range docs {
		var ev map[string]any
		if err := json.Unmarshal(d.Source, &ev); err != nil {
			t.Fatalf("document %s in %s is not JSON: %v", d.ID, target, err)
		}
		msg, _ := ev["message"].(string)
		seen[msg]++
		if _, ok := ev["@metadata"]; ok {
			t.Errorf("document %s in %s kept @metadata", d.ID, target)
		}
		each(t, ev)
	}
	var wrong []string
	for _, l := range lines {
		if seen[l] != 1 {
			wrong = append(wrong, fmt.Sprintf("%q %d times", l, seen[l]))
		}
		delete(seen, l)
	}
	for msg, n := range seen {
		wrong = append(wrong, fmt.Sprintf("unexpected %q %d times", msg, n))
	}
	if len(wrong) > 0 {
		t.Errorf("%s: %d of %d lines are not there exactly once; the first: %s", target, len(wrong), len(lines), strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
}

func targets(byTarget map[string][]estest.Doc) map[string]int {
	out := map[string]int{}
	for k, v := range byTarget {
		out[k] = len(v)
	}
	return out
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return string(body)
}

// routed reads logpond_output_routed_events_total for one output and
// target from a Prometheus text exposition; 0 when the series is absent.
func routed(metrics, output, target string) int {
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "logpond_output_routed_events_total{") ||
			!strings.Contains(line, `output="`+output+`"`) || !strings.Contains(line, `target="`+target+`"`) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return -1
		}
		return int(n)
	}
	return 0
}

// agentPKI writes, under dir, what an Elastic Agent deployment through
// logpond uses: a CA, logpond's server certificate for 127.0.0.1 and a
// client certificate with a PKCS#8 key (the form Fleet requires), all
// signed by the CA. Paths by name: ca, server.crt, server.key, client.crt,
// client.key.
func agentPKI(t *testing.T, dir string) map[string]string {
	t.Helper()
	ca := pki.NewCA(t)
	paths := map[string]string{"ca": ca.WriteFile(t, dir)}
	paths["server.crt"], paths["server.key"] = ca.Issue(t, pki.Options{CommonName: "server", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}).WriteFiles(t, dir, "server")
	paths["client.crt"], paths["client.key"] = ca.Issue(t, pki.Options{CommonName: "client", Client: true, Key: pki.PKCS8}).WriteFiles(t, dir, "client")
	return paths
}

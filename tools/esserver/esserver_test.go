package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// binDir holds the binaries the demo tests build once; TestMain removes it.
var (
	binOnce sync.Once
	binDir  string
	binEnv  []string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Addr != "127.0.0.1:9200" || c.opts.MaxContentLength != 100<<20 || c.opts.Seed != 1 ||
		c.faults.ItemReject429 != 0 || c.faults.Request503 != 0 || c.faults.Latency != 0 ||
		c.opts.Version != estest.DefaultVersion || c.opts.DataStreamPatterns != nil {
		t.Errorf("defaults: %+v %+v", c.opts, c.faults)
	}
	c, err = parseFlags([]string{"-version", "7.17.25", "-data-streams", "app-*, logs-*-*"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Version != "7.17.25" || fmt.Sprint(c.opts.DataStreamPatterns) != "[app-* logs-*-*]" {
		t.Errorf("-version, -data-streams: %+v", c.opts)
	}
	c, err = parseFlags([]string{"-data-streams", "none"}, io.Discard)
	if err != nil || c.opts.DataStreamPatterns == nil || len(c.opts.DataStreamPatterns) != 0 {
		t.Errorf("-data-streams none: %+v %v", c.opts.DataStreamPatterns, err)
	}
	c, err = parseFlags([]string{"-listen", "127.0.0.1:0", "-latency", "5ms", "-reject429", "0.25", "-fail503", "1",
		"-max-content-length", "1KiB", "-seed", "7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Addr != "127.0.0.1:0" || c.opts.MaxContentLength != 1024 || c.opts.Seed != 7 ||
		c.faults.ItemReject429 != 0.25 || c.faults.Request503 != 1 || c.faults.Latency != 5*time.Millisecond {
		t.Errorf("set: %+v %+v", c.opts, c.faults)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-reject429", "1.5"}, "-reject429 1.5: want a probability between 0 and 1"},
		{[]string{"-fail503", "-0.1"}, "-fail503 -0.1: want a probability"},
		{[]string{"-fail503", "NaN"}, "-fail503 NaN: want a probability"},
		{[]string{"-latency", "-1s"}, "-latency -1s: must not be negative"},
		{[]string{"-max-content-length", "10MB"}, "ambiguous"},
		{[]string{"-max-content-length", "0"}, "must be more than 0"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-data-streams", "a,,b"}, "only `*` wildcards"},
		{[]string{"-data-streams", "logs-?"}, "only `*` wildcards"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
		{[]string{"-users", "logpond"}, "want NAME:PASSWORD pairs"},
		{[]string{"-tls-cert", "a.crt"}, "-tls-cert and -tls-key go together"},
		{[]string{"-tls-client-ca", "ca.pem"}, "-tls-client-ca needs them"},
		{[]string{"-tls-cert", "/nonexistent.crt", "-tls-key", "/nonexistent.key"}, "-tls-cert /nonexistent.crt / -tls-key /nonexistent.key"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(tc.args, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("%q: got %v (stderr %q), want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
	c, err = parseFlags([]string{"-users", "logpond:s3cret,admin:pw:with:colons", "-api-keys", "a2V5,b3RoZXI="}, io.Discard)
	if err != nil || c.opts.Users["logpond"] != "s3cret" || c.opts.Users["admin"] != "pw:with:colons" || len(c.opts.APIKeys) != 2 {
		t.Errorf("-users and -api-keys: %+v, %v", c.opts, err)
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestRunExitCodes(t *testing.T) {
	defer goleak.VerifyNone(t)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-reject429", "2"}, io.Discard, &stderr, nil); code != 2 {
		t.Errorf("bad flag: exit %d, want 2; stderr %q", code, stderr.String())
	}
	stderr.Reset()
	code := run(context.Background(), []string{"-listen", "0.0.0.0:0"}, io.Discard, &stderr, nil)
	if code != 1 || !strings.Contains(stderr.String(), "binds only to 127.0.0.1") {
		t.Errorf("non-loopback address: exit %d, want 1; stderr %q", code, stderr.String())
	}
	stderr.Reset()
	code = run(context.Background(), []string{"-listen", "127.0.0.1:0", "-version", "8.x"}, io.Discard, &stderr, nil)
	if code != 1 || !strings.Contains(stderr.String(), "bad Version") {
		t.Errorf("bad -version: exit %d, want 1; stderr %q", code, stderr.String())
	}
}

// TestRunSummary serves bulk requests through run, stops it as a signal
// would, and checks the summary.
func TestRunSummary(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	ready := make(chan *estest.Server, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-listen", "127.0.0.1:0", "-seed", "3"}, &stdout, &stderr,
			func(s *estest.Server) { ready <- s })
	}()
	var srv *estest.Server
	select {
	case srv = <-ready:
	case c := <-code:
		t.Fatalf("run returned %d before listening; stderr %q", c, stderr.String())
	}
	if want := `msg="esserver listening" url=` + srv.URL(); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func(body string) {
		t.Helper()
		res, err := client.Post(srv.URL()+"/_bulk", "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("bulk: %s", res.Status)
		}
	}
	post(`{"create":{"_index":"a","_id":"1"}}` + "\n{}\n" + `{"create":{"_index":"a","_id":"2"}}` + "\n{}\n" +
		`{"create":{"_index":"b","_id":"1"}}` + "\n{}\n")
	post(`{"create":{"_index":"a","_id":"1"}}` + "\n{}\n") // 409
	// A data stream document, and one refused (index op).
	post(`{"create":{"_index":"logs-x-default","_id":"1"}}` + "\n" + `{"@timestamp":1}` + "\n" +
		`{"index":{"_index":"logs-x-default","_id":"2"}}` + "\n" + `{"@timestamp":1}` + "\n")
	// What the quick start shows: the indices, and the documents.
	get := func(path string) string {
		t.Helper()
		res, err := client.Get(srv.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", path, res.Status, err)
		}
		return string(b)
	}
	if got, want := get("/_cat/indices/a,b?v&h=index,docs.count"), "index docs.count\na              2\nb              1\n"; got != want {
		t.Errorf("_cat/indices: %q, want %q", got, want)
	}
	if got := get("/_search?size=1&sort=_id:desc"); !strings.Contains(got, `"total":{"value":4,"relation":"eq"}`) || !strings.Contains(got, `"_id":"2"`) {
		t.Errorf("_search: %s", got)
	}
	// Every item rejected from now on.
	srv.SetFaults(estest.Faults{ItemReject429: 1})
	post(`{"create":{"_index":"c","_id":"1"}}` + "\n{}\n")

	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d after stop, want 0; stderr %q", c, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"esserver summary: 4 documents in 3 indices\n",
		"  index a: 2 documents\n",
		"  index b: 1 documents\n",
		"  data stream logs-x-default: 1 documents\n",
		"  requests: 6 (bulk 4, ", // and the two reads
		"  items: 7 201=4 400=1 409=1 429=1\n",
		"  refused: 1 items by data stream rules, 0 requests by compatible-with headers\n",
		"  injected: 1 items rejected 429, 0 requests failed 503\n",
		"  other: 1 conflicts 409, 0 request errors (0 too large 413), 0 dropped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), `msg="esserver stopped"`) {
		t.Errorf("stderr %q lacks the stop line", stderr.String())
	}
}

// demoBinaries builds what tools/demo.sh runs into a temporary directory
// (once per test binary) and returns the environment that points the
// script at them, with TMPDIR set to a directory of the test's own.
func demoBinaries(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: tools/demo.sh cannot run")
	}
	binOnce.Do(func() { binDir, binEnv, binErr = buildDemoBinaries() })
	if binErr != nil {
		t.Fatal(binErr)
	}
	return append([]string{"TMPDIR=" + t.TempDir()}, binEnv...)
}

// buildDemoBinaries builds logpond, esserver, beatsbench and, once it
// exists, ledgerctl; with -race when the tests run with it, so that a race
// anywhere on the demo's path fails the demo (a binary built with -race
// exits 66 after reporting one).
func buildDemoBinaries() (dir string, env []string, err error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return "", nil, err
	}
	if dir, err = os.MkdirTemp("", "esserver-demo-bin-"); err != nil {
		return "", nil, err
	}
	bins := []struct{ env, name, pkg string }{
		{"LOGPOND_BIN", "logpond", "./cmd/logpond"},
		{"ESSERVER_BIN", "esserver", "./tools/esserver"},
		{"BEATSBENCH_BIN", "beatsbench", "./tools/beatsbench"},
		{"LEDGERCTL_BIN", "ledgerctl", "./tools/ledgerctl"},
	}
	for _, b := range bins {
		out := filepath.Join(dir, b.name)
		env = append(env, b.env+"="+out)
		if _, err := os.Stat(filepath.Join(root, b.pkg)); b.name == "ledgerctl" && err != nil {
			continue // not written yet: the script prints a note instead
		}
		args := []string{"build", "-o", out}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return dir, nil, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, msg)
		}
	}
	return dir, env, nil
}

// runDemo runs tools/demo.sh with env added and returns its combined
// output and error.
func runDemo(env []string) (string, error) {
	cmd := exec.Command("bash", "../demo.sh")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDemo runs `make demo`'s script end to end, briefly: beatsbench →
// logpond → esserver, and the sink must hold every acknowledged event.
func TestDemo(t *testing.T) {
	skipLong(t)
	env := demoBinaries(t)
	out, err := runDemo(append(env, "DEMO_SECONDS=2", "DEMO_RATE=5000", "DEMO_BATCH=100"))
	t.Logf("demo output:\n%s", out)
	if err != nil {
		t.Fatalf("demo failed: %v", err)
	}
	m := regexp.MustCompile(`sink holds (\d+) documents; beatsbench had (\d+) events acknowledged`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("output lacks the sink line")
	}
	if m[1] != m[2] || m[1] == "0" {
		t.Errorf("sink holds %s documents, %s events were acknowledged", m[1], m[2])
	}
	for _, want := range []string{
		"acknowledged events=",
		"logpond stopped on SIGTERM, exit code 0",
		"esserver summary: " + m[1] + " documents in 1 indices",
		"index beatsbench-1: " + m[1] + " documents",
		"OK: the sink holds exactly as many documents as events were acknowledged",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The work directory is removed at exit.
	left, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(env[0], "TMPDIR="), "logpond-demo.*"))
	if len(left) > 0 {
		t.Errorf("work directory left behind: %v", left)
	}
}

// TestDemoPortTaken checks that a fixed port someone else listens on is
// refused with a message saying what to do.
func TestDemoPortTaken(t *testing.T) {
	env := demoBinaries(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := runDemo(append(env, "DEMO_ES_ADDR="+ln.Addr().String()))
	if err == nil {
		t.Fatalf("demo succeeded on a taken port:\n%s", out)
	}
	if want := "DEMO_ES_ADDR=" + ln.Addr().String() + ": something already listens there"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestDemoFailsWhenEventsMissing is the demo's negative control: a sink
// that rejects every item holds nothing, and the demo must say so and
// exit non-zero.
func TestDemoFailsWhenEventsMissing(t *testing.T) {
	env := demoBinaries(t)
	out, err := runDemo(append(env, "DEMO_SECONDS=1", "DEMO_RATE=2000", "DEMO_BATCH=100",
		"DEMO_REJECT429=1", "DEMO_DRAIN_TIMEOUT=0"))
	if err == nil {
		t.Fatalf("demo succeeded although the sink rejects everything:\n%s", out)
	}
	if !regexp.MustCompile(`FAIL: the sink holds 0 documents, but [1-9]\d* events were acknowledged`).MatchString(out) {
		t.Errorf("output lacks the FAIL line:\n%s", out)
	}
	if !strings.Contains(out, "logpond stopped on SIGTERM, exit code 0") {
		t.Errorf("logpond did not stop cleanly while retrying:\n%s", out)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/conftest"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
)

var binary string

// TestMain builds the real binary once: these tests run logpond as a user
// would, as a separate process receiving real signals.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "logpond-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "logpond")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeConfig(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(root, "logpond.toml")
	cfg := fmt.Sprintf(`
[journal]
dir = %q
[ledger]
dir = %q
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
enabled = false
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// started runs logpond and returns once it logged that it started, with
// its log up to there (Run logs the input's address right after "logpond
// started"); the rest of its stderr is discarded.
func started(t *testing.T, config string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, log := startedUntil(t, config, "beats input listening")
	return cmd, bytes.NewBufferString(log)
}

// beatsAddr is the Beats input's address, from the line logpond logs
// when it listens ("beats input listening" addr=...), failing t when log
// has none.
func beatsAddr(t testing.TB, log string) string {
	t.Helper()
	m := regexp.MustCompile(`beats input listening" addr=(\S+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no listening address in the log:\n%s", log)
	}
	return m[1]
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	return exitWithin(t, cmd, 10*time.Second, nil)
}

// exitWithin waits for cmd to exit and returns its exit code, failing the
// test, with log when there is one, if it has not exited within limit.
func exitWithin(t *testing.T, cmd *exec.Cmd, limit time.Duration, log fmt.Stringer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		if log != nil {
			t.Fatalf("logpond did not exit within %s:\n%s", limit, log)
		}
		t.Fatalf("logpond did not stop within %s", limit)
		return -1
	}
}

func TestStopsCleanlyOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, log := started(t, writeConfig(t, t.TempDir()))
			if !strings.Contains(log.String(), "stores recovered") {
				t.Fatalf("logpond started without recovering its stores:\n%s", log.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd); code != 0 {
				t.Fatalf("exit code %d after %v, want 0", code, sig)
			}
		})
	}
}

func TestSecondProcessRefusesLockedDirs(t *testing.T) {
	root := t.TempDir()
	config := writeConfig(t, root)
	first, _ := started(t, config)

	out, err := exec.Command(binary, "-config", config).CombinedOutput()
	if err == nil {
		t.Fatalf("second logpond started on locked directories:\n%s", out)
	}
	lockPath := filepath.Join(root, "journal", "LOCK")
	if !strings.Contains(string(out), lockPath) || !strings.Contains(string(out), fmt.Sprint(first.Process.Pid)) {
		t.Fatalf("second logpond's error does not name the lock %s and holder pid %d:\n%s", lockPath, first.Process.Pid, out)
	}

	first.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, first); code != 0 {
		t.Fatalf("first logpond exit code %d, want 0", code)
	}
	// With the first one gone, the directories are free again.
	again, _ := started(t, config)
	again.Process.Signal(syscall.SIGTERM)
	exitCode(t, again)
}

func TestBadConfigExitsWithMessage(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "bad.toml")
	os.WriteFile(path, []byte("[journal]\nsegment_size = \"1MiB\"\n"), 0o644)
	out, err := exec.Command(binary, "-config", path).CombinedOutput()
	if code := exitCodeOf(err); code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, out)
	}
	if !strings.Contains(string(out), path+":2: journal.segment_size: unknown key") {
		t.Fatalf("message does not name the file, line and key:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	out, err := exec.Command(binary).CombinedOutput()
	if code := exitCodeOf(err); code != 2 || !strings.Contains(string(out), "usage: logpond -config FILE") {
		t.Fatalf("no-argument run: exit %d, output %q; want 2 and a usage line", code, out)
	}
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestEndToEnd runs logpond as a user would, ships batches with go-lumber's
// client (what Filebeat's output.logstash uses), stops logpond with SIGTERM
// and finds every acknowledged event, byte for byte, in the ledger.
func TestEndToEnd(t *testing.T) {
	root := t.TempDir()
	cmd, log := started(t, writeConfig(t, root))
	addr := beatsAddr(t, log.String())
	c, err := lj.SyncDial(addr, lj.CompressionLevel(3))
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for b := range 5 {
		var data []interface{}
		for i := range 500 {
			ev := json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"batch %d line %d"}`, b, i))
			want = append(want, ev)
			data = append(data, ev)
		}
		if n, err := c.Send(data); err != nil || n != len(data) {
			t.Fatalf("batch %d: acked %d: %v", b, n, err)
		}
	}
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	l, err := ledger.Open(filepath.Join(root, "ledger"), ledger.Options{SegmentBytes: 256 << 20, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := l.Reader(1)
	defer r.Close()
	var got [][]byte
	for r.Next() {
		for ev := range r.Decoded().Events() {
			got = append(got, bytes.Clone(ev))
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(got) != len(want) {
		t.Fatalf("ledger holds %d events, %d were acknowledged", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs", i)
		}
	}
}

// TestEndToEndIntoElasticsearch runs the whole path: a go-lumber client,
// the logpond binary, the in-repo Elasticsearch test server. Every
// acknowledged event must arrive once, in Filebeat's index, without
// @metadata, and a restart must not write any of them again.
func TestEndToEndIntoElasticsearch(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetFaults(estest.Faults{ItemReject429: 0.05})
	root := t.TempDir()
	config := filepath.Join(root, "logpond.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
flush_interval = "10ms"
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
hosts = [%q]
flush_interval = "20ms"
retry_initial_interval = "5ms"
retry_max_interval = "50ms"
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), srv.URL()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, log := started(t, config)
	addr := beatsAddr(t, log.String())
	c, err := lj.SyncDial(addr, lj.CompressionLevel(3))
	if err != nil {
		t.Fatal(err)
	}
	const total = 2000
	for b := range total / 500 {
		var data []interface{}
		for i := range 500 {
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"batch %d line %d"}`, b, i)))
		}
		if n, err := c.Send(data); err != nil || n != len(data) {
			t.Fatalf("batch %d: acked %d: %v", b, n, err)
		}
	}
	c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for srv.Count() < total && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}
	check := func() {
		t.Helper()
		docs := srv.Docs()
		if len(docs) != total {
			t.Fatalf("%d documents, want %d:\n%s", len(docs), total, log.String())
		}
		for _, d := range docs {
			if d.Index != "filebeat-9.3.0" || !bytes.HasPrefix(d.Source, []byte(`{"message":"batch `)) {
				t.Fatalf("document %s in %s: %s", d.ID, d.Index, d.Source)
			}
		}
	}
	check()
	// A restart with the cursor wherever it was left: nothing new is written.
	cmd, log = started(t, config)
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log.String())
	}
	check()
}

// runBinary runs logpond with args and returns its stdout, stderr and exit
// code.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), exitCodeOf(err)
}

// leafKeys lists every key of the configuration as section path and key,
// walking conf.Keys, which is derived from conf.Config itself.
func leafKeys(section string) [][]string {
	var out [][]string
	for _, k := range conf.Keys(section) {
		path := k
		if section != "" {
			path = section + "." + k
		}
		if sub := conf.Keys(path); sub != nil {
			out = append(out, leafKeys(path)...)
		} else {
			out = append(out, strings.Split(path, "."))
		}
	}
	return out
}

const example = "../../conf/logpond.example.toml"

// TestCheckConfigExample: -check-config on the documented example exits 0
// and prints TOML that sets every key and loads back to the same
// configuration.
func TestCheckConfigExample(t *testing.T) {
	stdout, stderr, code := runBinary(t, "-skip-host-checks", "-check-config", example)
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("a valid configuration printed on stderr:\n%s", stderr)
	}
	want, err := conf.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	got, err := conf.Parse("check-config output", []byte(stdout))
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, stdout)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the output loads to another configuration:\n got %+v\nwant %+v\n%s", *got, *want, stdout)
	}
	var raw map[string]any
	md, err := toml.Decode(stdout, &raw)
	if err != nil {
		t.Fatal(err)
	}
	keys := leafKeys("")
	if len(keys) < 40 {
		t.Fatalf("only %d keys found by walking conf.Keys", len(keys))
	}
	for _, k := range keys {
		if !md.IsDefined(k...) {
			t.Errorf("the output does not set %s: -check-config must print every key", strings.Join(k, "."))
		}
	}
}

// TestCheckConfigFillsDefaults: a file with one key set prints every key,
// with the defaults for the others.
func TestCheckConfigFillsDefaults(t *testing.T) {
	_, stdout, stderr, code := checkConfigText(t, "[journal]\nmax_group_wait = \"2ms\"\n")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	got, err := conf.Parse("out", []byte(stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	want := conf.Default()
	want.Journal.MaxGroupWait = conf.Duration(2 * time.Millisecond)
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("got %+v, want the defaults with max_group_wait = 2ms", *got)
	}
}

// TestCheckConfigRedactsSecrets: passwords and API keys stay out of the
// output (it goes to CI logs); everything else is printed as loaded.
func TestCheckConfigRedactsSecrets(t *testing.T) {
	path, stdout, stderr, code := checkConfigText(t, "[output.elasticsearch]\nusername = \"elastic\"\npassword = \"hunter2\"\napi_key = \"c2VjcmV0OmtleQ==\"\n")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	for _, secret := range []string{"hunter2", "c2VjcmV0OmtleQ=="} {
		if strings.Contains(stdout, secret) {
			t.Errorf("the output shows the secret %q:\n%s", secret, stdout)
		}
	}
	got, err := conf.Parse("out", []byte(stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	want, err := conf.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want.Output.Elasticsearch.Password, want.Output.Elasticsearch.APIKey = "<redacted>", "<redacted>"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", *got, *want)
	}
}

// TestCheckConfigMistakes runs -check-config on every broken file of
// conf's tests: exit 1, nothing on stdout, and the error on stderr names
// the file and the key and says what conf's test expects.
func TestCheckConfigMistakes(t *testing.T) {
	for _, tc := range conftest.Mistakes {
		t.Run(tc.Name, func(t *testing.T) {
			path, stdout, stderr, code := checkConfigText(t, tc.TOML)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("an invalid configuration printed on stdout:\n%s", stdout)
			}
			if !strings.HasPrefix(stderr, "conf: "+path) {
				t.Errorf("stderr does not start with the file name:\n%s", stderr)
			}
			if tc.Key != "" && !strings.Contains(stderr, ": "+tc.Key+": ") {
				t.Errorf("stderr does not name the key %s:\n%s", tc.Key, stderr)
			}
			if !strings.Contains(stderr, tc.Want) {
				t.Errorf("stderr does not say %q:\n%s", tc.Want, stderr)
			}
		})
	}
}

// checkConfigText runs logpond -skip-host-checks -check-config on a file
// holding text and returns the file's path with what the run printed. The
// host checks are left out: the files use the default directories.
func checkConfigText(t *testing.T, text string) (path, stdout, stderr string, code int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "check.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runBinary(t, "-skip-host-checks", "-check-config", path)
	return path, stdout, stderr, code
}

func TestCheckConfigUsage(t *testing.T) {
	if _, stderr, code := runBinary(t, "-check-config", example, "-config", example); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("-check-config with -config: exit %d, stderr %q; want 2", code, stderr)
	}
	_, stderr, code := runBinary(t, "-check-config", filepath.Join(t.TempDir(), "missing.toml"))
	if code != 1 || !strings.Contains(stderr, "missing.toml") {
		t.Errorf("missing file: exit %d, stderr %q; want 1 naming the file", code, stderr)
	}
}

// TestVersion: -version prints the version, the main module and the Go
// version. Built as make builds it, in a git checkout, it prints what git
// says of the checkout: the version git describes, the revision, its
// commit time and whether tracked files were modified — in a linked
// worktree too, where the Go toolchain's own VCS stamping finds no
// checkout. Built by go build in a (primary) checkout, it prints what the
// toolchain stamped.
func TestVersion(t *testing.T) {
	stdout, stderr, code := runBinary(t, "-version")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	for _, want := range []string{"logpond ", "module: github.com/logpond/logpond", "go: " + runtime.Version()} {
		if !strings.Contains(stdout, want) {
			t.Errorf("-version does not print %q:\n%s", want, stdout)
		}
	}

	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	if err := exec.Command("git", "rev-parse", "HEAD").Run(); err != nil {
		t.Skipf("not a git checkout (%v): VCS stamping not checked", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	rev := git("rev-parse", "HEAD")
	unix, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	commitTime := time.Unix(unix, 0).UTC().Format(time.RFC3339)
	modified := git("status", "--porcelain", "--untracked-files=no") != ""

	bin := t.TempDir()
	if out, err := exec.Command("make", "-s", "-C", "../..", "logpond", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make logpond: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "logpond"), "-version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"logpond " + git("describe", "--always", "--dirty") + "\n",
		"vcs: git\n",
		"vcs.revision: " + rev + "\n",
		"vcs.time: " + commitTime + "\n",
		fmt.Sprintf("vcs.modified: %t\n", modified),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("-version of the build make makes does not print %q:\n%s", want, out)
		}
	}

	// The toolchain's stamping, where it works: a primary checkout, whose
	// .git is the repository's directory. (The test binary may be built
	// with -buildvcs=false, from GOFLAGS: build one with stamping.)
	if gitDir, common := git("rev-parse", "--path-format=absolute", "--git-dir"), git("rev-parse", "--path-format=absolute", "--git-common-dir"); gitDir != common {
		t.Logf("a linked worktree (%s): go build -buildvcs=true stamps no VCS state here, not checked", gitDir)
		return
	}
	stamped := filepath.Join(t.TempDir(), "logpond")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", stamped, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out, err = exec.Command(stamped, "-version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vcs: git\n", "vcs.revision: " + rev + "\n", "vcs.time: " + commitTime + "\n", "vcs.modified: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("-version of a go build -buildvcs=true does not print %q:\n%s", want, out)
		}
	}
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
)

// startedUntil runs logpond and returns once its log has a line holding
// each of marks, with the log up to there; the rest of stderr is
// discarded.
func startedUntil(t *testing.T, config string, marks ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "-config", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	seen := map[string]bool{}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		for _, m := range marks {
			if strings.Contains(sc.Text(), m) {
				seen[m] = true
			}
		}
		if len(seen) == len(marks) {
			go io.Copy(io.Discard, stderr) // keep the pipe drained
			return cmd, log.String()
		}
	}
	t.Fatalf("logpond exited before logging %q:\n%s", marks, log.String())
	return nil, ""
}

func stop(t *testing.T, cmd *exec.Cmd, log string) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log)
	}
}

func configFile(t *testing.T, root, body string) string {
	t.Helper()
	path := filepath.Join(root, "logpond.toml")
	text := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[admin]\nlisten = \"127.0.0.1:0\"\n", filepath.Join(root, "journal"), filepath.Join(root, "ledger")) + body
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const hostPassword = "hunter2-in-the-url"

// TestHostCredentialsNeverShown: a password written into a host URL shows
// neither in -check-config's output (the credentials are printed as
// username and a redacted password, the host without them), nor in its
// errors, nor in the log of a running logpond.
func TestHostCredentialsNeverShown(t *testing.T) {
	path, stdout, stderr, code := checkConfigText(t, "[output.elasticsearch]\nhosts = [\"https://elastic:"+hostPassword+"@es1:9200\", \"https://es2:9200\"]\n")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, hostPassword) {
		t.Errorf("-check-config shows the password:\n%s\n%s", stdout, stderr)
	}
	got, err := conf.Parse("out", []byte(stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	want, err := conf.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if es := want.Output.Elasticsearch; es.Username != "elastic" || es.Password != hostPassword || es.Hosts[0] != "https://es1:9200" {
		t.Fatalf("loaded as username %q, hosts %q", es.Username, es.Hosts)
	}
	if es := got.Output.Elasticsearch; es.Username != "elastic" || es.Password != "<redacted>" || strings.Join(es.Hosts, " ") != "https://es1:9200 https://es2:9200" {
		t.Errorf("-check-config prints username %q, password %q, hosts %q", es.Username, es.Password, es.Hosts)
	}

	for _, h := range []string{"https://elastic:" + hostPassword + "@es1:port", "ftp://elastic:" + hostPassword + "@es1", "https://elastic:" + hostPassword + "/x@es1"} {
		_, stdout, stderr, code = checkConfigText(t, fmt.Sprintf("[output.elasticsearch]\nhosts = [%q]\n", h))
		if code != 1 || !strings.Contains(stderr, "output.elasticsearch.hosts") {
			t.Errorf("%s: exit code %d:\n%s", h, code, stderr)
		}
		if strings.Contains(stdout+stderr, hostPassword) || strings.Contains(stderr, "/x@") {
			t.Errorf("%s: -check-config shows the password:\n%s", h, stderr)
		}
	}

	srv, err := estest.Start(estest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	host := strings.Replace(srv.URL(), "://", "://elastic:"+hostPassword+"@", 1)
	config := configFile(t, t.TempDir(), fmt.Sprintf("[input.beats]\nlisten = \"127.0.0.1:0\"\n[output.elasticsearch]\nhosts = [%q]\n", host))
	cmd, log := startedUntil(t, config, "draining the ledger", "beats input listening")
	stop(t, cmd, log)
	if !strings.Contains(log, srv.Addr()) {
		t.Errorf("the log does not name the host:\n%s", log)
	}
	if strings.Contains(log, hostPassword) {
		t.Errorf("the log shows the password:\n%s", log)
	}
}

// insecure sets all three insecure settings that Warnings reports but
// the Beats listener, which tests keep on 127.0.0.1.
const insecure = "[input.beats]\nlisten = \"127.0.0.1:0\"\n[output.elasticsearch]\nenabled = false\nhosts = [\"http://127.0.0.1:9\"]\nusername = \"elastic\"\npassword = \"pw\"\n[output.elasticsearch.tls]\nverification_mode = \"none\"\n"

// TestCheckConfigWarnings: insecure settings are warnings on stderr, each
// naming the file and the key; the exit code stays 0 and stdout stays the
// configuration.
func TestCheckConfigWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		keys       []string
	}{
		{"credentials over http, no verification", insecure, []string{"output.elasticsearch.tls.verification_mode", "output.elasticsearch.hosts"}},
		{"plaintext Beats on every interface", "[input.beats]\nlisten = \"0.0.0.0:5044\"\n", []string{"input.beats.listen"}},
		{"safe", "[input.beats]\nlisten = \"127.0.0.1:5044\"\n[output.elasticsearch]\nhosts = [\"https://es1:9200\"]\napi_key = \"a2V5\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, stdout, stderr, code := checkConfigText(t, tc.toml)
			if code != 0 {
				t.Fatalf("exit code %d, want 0:\n%s", code, stderr)
			}
			if _, err := conf.Parse("out", []byte(stdout)); err != nil {
				t.Fatalf("stdout does not load: %v\n%s", err, stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if stderr == "" {
				lines = nil
			}
			if len(lines) != len(tc.keys) {
				t.Fatalf("%d lines on stderr, want %d warnings:\n%s", len(lines), len(tc.keys), stderr)
			}
			for i, key := range tc.keys {
				if want := "logpond: warning: " + path + ": " + key + ": "; !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d: %q, want it to start with %q", i+1, lines[i], want)
				}
			}
		})
	}
}

// TestStartWarnings: at start, each insecure setting is logged as a WARN
// naming its key; a safe configuration logs none.
func TestStartWarnings(t *testing.T) {
	cmd, log := startedUntil(t, configFile(t, t.TempDir(), insecure), "beats input listening")
	stop(t, cmd, log)
	for _, key := range []string{"output.elasticsearch.tls.verification_mode", "output.elasticsearch.hosts"} {
		found := false
		for _, line := range strings.Split(log, "\n") {
			found = found || strings.Contains(line, "level=WARN") && strings.Contains(line, "insecure configuration") && strings.Contains(line, "key="+key)
		}
		if !found {
			t.Errorf("no WARN for %s in the log:\n%s", key, log)
		}
	}

	cmd, log = startedUntil(t, writeConfig(t, t.TempDir()), "beats input listening")
	stop(t, cmd, log)
	if strings.Contains(log, "insecure") {
		t.Errorf("a safe configuration logs a warning:\n%s", log)
	}
}

const cloudPassword = "cloud-pw-4b7d"

// TestCloudAuthNeverShown: cloud_auth's password shows neither in
// -check-config's output (cloud_auth is printed as "user:<redacted>" and
// the printed file loads), nor, taken from ${VAR}, its value at all, nor
// in the log of a running logpond.
func TestCloudAuthNeverShown(t *testing.T) {
	_, stdout, stderr, code := checkConfigText(t, "[output.elasticsearch]\nhosts = [\"https://es1:9200\"]\ncloud_auth = \"elastic:"+cloudPassword+"\"\n")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, cloudPassword) {
		t.Errorf("-check-config shows the password:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stdout, `cloud_auth = "elastic:<redacted>"`) || !strings.Contains(stdout, "# Secrets are shown as") {
		t.Errorf("-check-config does not print cloud_auth redacted:\n%s", stdout)
	}
	if _, err := conf.Parse("out", []byte(stdout)); err != nil {
		t.Errorf("the printed configuration does not load: %v\n%s", err, stdout)
	}

	t.Setenv("LP_TEST_CLOUD_AUTH", "cloud-user-9a1e:"+cloudPassword)
	_, stdout, stderr, code = checkConfigText(t, "[output.elasticsearch]\nhosts = [\"https://es1:9200\"]\ncloud_auth = \"${LP_TEST_CLOUD_AUTH}\"\n")
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, cloudPassword) || strings.Contains(stdout+stderr, "cloud-user-9a1e") {
		t.Errorf("-check-config shows the variable's value:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stdout, `cloud_auth = "${LP_TEST_CLOUD_AUTH}"`) {
		t.Errorf("-check-config does not print cloud_auth as its reference:\n%s", stdout)
	}

	srv, err := estest.Start(estest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	config := configFile(t, t.TempDir(), fmt.Sprintf("[input.beats]\nlisten = \"127.0.0.1:0\"\n[output.elasticsearch]\nhosts = [%q]\ncloud_auth = \"${LP_TEST_CLOUD_AUTH}\"\n", srv.URL()))
	cmd, log := startedUntil(t, config, "draining the ledger", "beats input listening")
	stop(t, cmd, log)
	if strings.Contains(log, cloudPassword) {
		t.Errorf("the log shows the password:\n%s", log)
	}
}

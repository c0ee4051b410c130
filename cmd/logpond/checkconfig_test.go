package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/pki"
)

// TestCheckConfigHidesEnvironmentValues: values taken from environment
// variables do not appear in -check-config's output, whichever key took
// them; the output shows their references.
func TestCheckConfigHidesEnvironmentValues(t *testing.T) {
	t.Setenv("LP_TEST_USER", "writer-9f3a")
	t.Setenv("LP_TEST_PASS", "hunter2-x")
	t.Setenv("LP_TEST_HOST", "es-7d1c.internal")
	_, stdout, stderr, code := checkConfigText(t, `[output.elasticsearch]
hosts = ["https://${LP_TEST_HOST}:9200"]
username = "${LP_TEST_USER}"
password = "${LP_TEST_PASS}"
`)
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	for _, v := range []string{"writer-9f3a", "hunter2-x", "es-7d1c"} {
		if strings.Contains(stdout+stderr, v) {
			t.Errorf("the output shows %q:\n%s\n%s", v, stdout, stderr)
		}
	}
	for _, want := range []string{`username = "${LP_TEST_USER}"`, `hosts = ["https://${LP_TEST_HOST}:9200"]`, `password = "<redacted>"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output does not say %s:\n%s", want, stdout)
		}
	}
}

// TestCheckConfigUnsetVariable: an unset variable is a problem naming the
// key and the variable.
func TestCheckConfigUnsetVariable(t *testing.T) {
	path, _, stderr, code := checkConfigText(t, "[output.elasticsearch]\napi_key = \"${LP_TEST_UNSET_KEY}\"\n")
	if code != 1 || !strings.Contains(stderr, path+":2: output.elasticsearch.api_key: environment variable LP_TEST_UNSET_KEY is not set") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// selfSignedPEM writes a throw-away self-signed CA certificate (it also
// serves as tls.ca) and its key as an EC PRIVATE KEY block, and returns
// their paths.
func selfSignedPEM(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	return pki.SelfSigned(t, pki.Options{CA: true, Key: pki.EC}).WriteFiles(t, dir, "cert")
}

// hostConfig is a configuration whose host needs all exist: directories
// under root, a certificate, free ports.
func hostConfig(root, cert, key string) string {
	return fmt.Sprintf(`[journal]
dir = %q
[ledger]
dir = %q
[input.beats]
listen = "127.0.0.1:0"
[input.beats.tls]
cert = %q
key = %q
client_ca = %q
client_auth = "required"
[output.elasticsearch.tls]
ca = %q
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), cert, key, cert, cert)
}

// TestCheckConfigHost: -check-config reports what would make logpond fail
// at start on this host — missing parents, unwritable directories, TLS
// files that are missing or do not parse, a port in use — all in one run,
// and creates nothing.
func TestCheckConfigHost(t *testing.T) {
	root := t.TempDir()
	cert, key := selfSignedPEM(t, root)
	good := hostConfig(root, cert, key)
	path, stdout, stderr := filepath.Join(root, "good.toml"), "", ""
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runBinary(t, "-check-config", path)
	if code != 0 {
		t.Fatalf("a configuration this host satisfies: exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "# Checked on this host") {
		t.Errorf("the output does not say which checks ran on this host:\n%s", stdout)
	}
	for _, d := range []string{"journal", "ledger"} {
		if _, err := os.Stat(filepath.Join(root, d)); !os.IsNotExist(err) {
			t.Errorf("-check-config created or touched %s: %v", d, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	garbage := filepath.Join(root, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(root, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	bad := strings.NewReplacer(
		filepath.Join(root, "journal"), filepath.Join(root, "missing", "journal"),
		filepath.Join(root, "ledger"), filepath.Join(readOnly, "ledger"),
		"cert = \""+cert, "cert = \""+filepath.Join(root, "nope.pem"),
		"client_ca = \""+cert, "client_ca = \""+garbage,
		"ca = \""+cert, "ca = \""+filepath.Join(root, "no-ca.pem"),
		"listen = \"127.0.0.1:0\"\n[input.beats.tls]", "listen = \""+ln.Addr().String()+"\"\n[input.beats.tls]",
	).Replace(good)
	path = filepath.Join(root, "bad.toml")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runBinary(t, "-check-config", path)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	want := []string{
		path + ":2: journal.dir: ",
		path + ":4: ledger.dir: ",
		path + ":6: input.beats.listen: cannot listen",
		path + ":8: input.beats.tls.cert: ",
		path + ":10: input.beats.tls.client_ca: " + garbage + " holds no PEM certificate",
		path + ":13: output.elasticsearch.tls.ca: ",
	}
	if os.Getuid() == 0 {
		want = slices.Delete(want, 1, 2) // root writes anywhere
	}
	at := 0
	for _, w := range want {
		i := strings.Index(stderr[at:], w)
		if i < 0 {
			t.Errorf("stderr does not say %q (after the previous problem):\n%s", w, stderr)
			continue
		}
		at += i
	}
	if _, err := os.Stat(filepath.Join(root, "missing")); !os.IsNotExist(err) {
		t.Errorf("-check-config created a directory: %v", err)
	}

	// -skip-host-checks checks the file only, and says what it left out.
	stdout, stderr, code = runBinary(t, "-skip-host-checks", "-check-config", path)
	if code != 0 || !strings.Contains(stdout, "# Not checked (-skip-host-checks)") {
		t.Errorf("-skip-host-checks: exit %d:\n%s\n%s", code, stdout, stderr)
	}
}

// loopbackListen puts both listeners of a -check-config test on a free
// loopback port: the defaults (5044 on every interface, 9600) would be
// checked by binding them, which a host running Logstash or logpond holds.
const loopbackListen = "[input.beats]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"127.0.0.1:0\"\n"

// TestCheckConfigReportsEveryProblemAtOnce: -check-config reports in one
// run every problem of a file — a key that does not decode, a problem
// across keys elsewhere, what this host lacks — except checks of a key
// with a problem: its value is about to change.
func TestCheckConfigReportsEveryProblemAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		toml    string   // ROOT: a fresh directory
		want    []string // in this order on stderr; FILE: the file
		notWant []string
	}{
		{
			name: "bad size, ledger max below two segments, missing parent",
			toml: "[journal]\ndir = \"ROOT/missing/journal\"\nsegment_bytes = \"64MB\"\n[ledger]\ndir = \"ROOT/ledger\"\nmax_bytes = \"300MiB\"\n" + loopbackListen,
			want: []string{
				"FILE:3: journal.segment_bytes: invalid size \"64MB\"",
				"FILE:6: ledger.max_bytes: 300MiB is less than 2 × ledger.segment_bytes (256MiB)",
				"FILE:2: journal.dir: ROOT/missing/journal does not exist, nor does its parent",
				"logpond: the last problem above is of this host",
			},
		},
		{
			name: "bad unit, journal max below two segments, listen port out of range",
			toml: "[journal]\ndir = \"ROOT/journal\"\nmax_bytes = \"100MiB\"\n[ledger]\ndir = \"ROOT/ledger\"\nsegment_bytes = \"1XB\"\n[admin]\nlisten = \"127.0.0.1:99999\"\n[input.beats]\nlisten = \"127.0.0.1:0\"\n",
			want: []string{
				"FILE:3: journal.max_bytes: 100MiB is less than (2 + journal.spare_segments 2) × journal.segment_bytes (64MiB)",
				"FILE:6: ledger.segment_bytes: invalid size \"1XB\"",
				"FILE:8: admin.listen: \"127.0.0.1:99999\": port \"99999\" is not a number",
			},
			notWant: []string{"cannot listen", "of this host"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "check.toml")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tc.toml, "ROOT", root)), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := runBinary(t, "-check-config", path)
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing:\n%s", code, stdout, stderr)
			}
			at := 0
			for _, w := range tc.want {
				w = strings.NewReplacer("FILE", path, "ROOT", root).Replace(w)
				i := strings.Index(stderr[at:], w)
				if i < 0 {
					t.Errorf("stderr does not say %q (after the previous problem):\n%s", w, stderr)
					continue
				}
				at += i
			}
			for _, w := range tc.notWant {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr says %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// cloudID is the Cloud ID of Elastic's documentation, whose Elasticsearch
// URL is https://cec6f261a74bf24ce33bb8811b84294f.us-east-1.aws.found.io:443.
const cloudID = "staging:dXMtZWFzdC0xLmF3cy5mb3VuZC5pbyRjZWM2ZjI2MWE3NGJmMjRjZTMzYmI4ODExYjg0Mjk0ZiRjNmMyY2E2ZDA0MjI0OWFmMGNjN2Q3YTllOTYyNTc0Mw=="

// TestCheckConfigDataStreamsAndCloud: -check-config reports every problem
// of the data stream, Elastic Cloud and client certificate keys in one
// run, each at its line, naming the key and what to change.
func TestCheckConfigDataStreamsAndCloud(t *testing.T) {
	path, stdout, stderr, code := checkConfigText(t, `[output.elasticsearch]
data_stream = true
index = "logs-%{+yyyy}"
data_stream_dataset = "nginx-access"
data_stream_namespace = "Prod"
cloud_id = "`+cloudID+`"
hosts = ["https://es1:9200"]
cloud_auth = "elastic"
[output.elasticsearch.tls]
cert = "/etc/logpond/es-client.crt"
[output.elasticsearch.siem]
data_stream = "sometimes"
data_stream_type = "events"
cloud_id = "siem:not*base64"
cloud_auth = "elastic:pw"
api_key = "a2V5"
`)
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing:\n%s", code, stdout, stderr)
	}
	want := []string{
		path + ":3: output.elasticsearch.index: index is not used when data_stream = true (every event goes to a data stream): remove it, or set data_stream = \"auto\"",
		path + ":4: output.elasticsearch.data_stream_dataset: \"nginx-access\" contains \"-\"",
		path + ":5: output.elasticsearch.data_stream_namespace: \"Prod\" has upper-case letters",
		path + ":6: output.elasticsearch.cloud_id: and hosts are both set: use one",
		path + ":8: output.elasticsearch.cloud_auth: has no \":\": write \"username:password\"",
		path + ":12: output.elasticsearch.siem.data_stream: \"sometimes\" is not a data_stream mode: use \"auto\"",
		path + ":13: output.elasticsearch.siem.data_stream_type: \"events\" is not a data stream type: use logs, metrics, traces, synthetics",
		path + ":14: output.elasticsearch.siem.cloud_id: the part after the last \":\", \"not*base64\", is not base64",
		path + ":15: output.elasticsearch.siem.cloud_auth: is set, and so is username, password or api_key",
		path + ": output.elasticsearch.tls.key: tls.cert and tls.key go together",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(stderr[at:], w)
		if i < 0 {
			t.Errorf("stderr does not say %q (after the previous problem):\n%s", w, stderr)
			continue
		}
		at += i
	}

	// A good file: cloud_id becomes the host, cloud_auth the credentials,
	// printed as set (the password redacted); ignored data stream keys
	// are a warning.
	_, stdout, stderr, code = checkConfigText(t, "[output.elasticsearch]\ncloud_id = \""+cloudID+"\"\ncloud_auth = \"elastic:pw-5e2b\"\ndata_stream = false\ndata_stream_namespace = \"prod\"\n")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, w := range []string{`cloud_id = "` + cloudID + `"`, `cloud_auth = "elastic:<redacted>"`, "data_stream = false"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout does not say %s:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, "pw-5e2b") || strings.Contains(stdout, "hosts = ") && strings.Contains(stdout, "found.io") {
		t.Errorf("stdout shows the password, or hosts beside cloud_id:\n%s", stdout)
	}
	if !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "output.elasticsearch.data_stream: false: every event goes to index, so data_stream_namespace is ignored") {
		t.Errorf("stderr has no warning about the ignored data_stream_namespace:\n%s", stderr)
	}
}

// TestCheckConfigClientCert: -check-config loads an Elasticsearch
// output's client certificate and key as a pair and names the problem.
func TestCheckConfigClientCert(t *testing.T) {
	root := t.TempDir()
	cert, key := selfSignedPEM(t, root)
	garbage := filepath.Join(root, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key string
		want            string // "" for none
	}{
		{"a good pair", cert, key, ""},
		{"garbage certificate", garbage, key, "output.elasticsearch.tls.cert: certificate " + garbage + " with key " + key + ": "},
		{"missing key", cert, filepath.Join(root, "nope.key"), "output.elasticsearch.tls.key: certificate " + cert + " with key " + filepath.Join(root, "nope.key") + ": "},
		{"swapped", key, cert, "output.elasticsearch.tls.cert: certificate " + key + " with key " + cert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := hostConfig(root, cert, key) + fmt.Sprintf("[output.elasticsearch.tls]\ncert = %q\nkey = %q\n", tc.cert, tc.key)
			text = strings.Replace(text, "[output.elasticsearch.tls]\nca = ", "[output.elasticsearch.siem.tls]\nca = ", 1)
			path := filepath.Join(t.TempDir(), "check.toml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runBinary(t, "-check-config", path)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, stderr)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, path+":") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant it to say %q", code, stderr, tc.want)
			}
		})
	}
}

// TestCheckConfigWarnsOfStoresLargerThanTheirDevice: a ledger.max_bytes
// larger than the file system that holds it is a warning of -check-config
// (exit 0) and of a start, naming the key and the sizes.
func TestCheckConfigWarnsOfStoresLargerThanTheirDevice(t *testing.T) {
	root := t.TempDir()
	cert, key := selfSignedPEM(t, root)
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	fsBytes := conf.Size(int64(st.Blocks) * st.Bsize)
	text := strings.Replace(hostConfig(root, cert, key), "[ledger]\n", fmt.Sprintf("[ledger]\nmax_bytes = %q\n", (2*fsBytes).String()), 1)
	path := filepath.Join(root, "big.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBinary(t, "-check-config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a warning):\n%s", code, stderr)
	}
	if want := "logpond: warning: " + path + ": ledger.max_bytes: "; !strings.Contains(stderr, want) || !strings.Contains(stderr, "more than the "+fsBytes.String()+" file system") {
		t.Errorf("stderr lacks %q with the file system's size:\n%s", want, stderr)
	}
	if _, stderr, _ := runBinary(t, "-skip-host-checks", "-check-config", path); strings.Contains(stderr, "ledger.max_bytes") {
		t.Errorf("-skip-host-checks looked at this host's file systems:\n%s", stderr)
	}
}

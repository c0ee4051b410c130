package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/pki"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// TestSIGHUPReloadsTheInputCertificate: SIGHUP never ends logpond. It
// reads the input's TLS certificate and key again: a certificate rotated
// in place (a new one, from another CA) is what new connections get,
// while a client connected before keeps sending on its connection. Keys
// that changed in the file and cannot change while running are named in
// the log as needing a restart, and a file that no longer loads changes
// nothing.
func TestSIGHUPReloadsTheInputCertificate(t *testing.T) {
	root := t.TempDir()
	caA, caB := pki.NewCA(t), pki.NewCA(t)
	certPath, keyPath := filepath.Join(root, "tls.crt"), filepath.Join(root, "tls.key")
	issue := func(ca *pki.CA) {
		ca.Issue(t, pki.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}).ReplaceFiles(t, certPath, keyPath)
	}
	issue(caA)
	body := fmt.Sprintf("[input.beats]\nlisten = \"127.0.0.1:0\"\n[input.beats.tls]\ncert = %q\nkey = %q\n[output.elasticsearch]\nenabled = false\n", certPath, keyPath)
	config := configFile(t, root, body)

	cmd := exec.Command(binary, "-config", config)
	log := &syncbuf.Buffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitLog := func(what string, from int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(log.String()[from:], what) {
			if time.Now().After(deadline) {
				t.Fatalf("logpond did not log %q:\n%s", what, log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	hup := func(want string) {
		t.Helper()
		from := len(log.String())
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLog(want, from)
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("logpond exited on SIGHUP (%v):\n%s", err, log.String())
		}
	}
	waitLog("beats input listening", 0)
	addr := beatsAddr(t, log.String())

	dial := func(ca *pki.CA) (*lj.SyncClient, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12})
		if err != nil {
			return nil, err
		}
		return lj.NewSyncClientWithConn(conn, lj.Timeout(10*time.Second))
	}
	send := func(c *lj.SyncClient, what string) {
		t.Helper()
		evs := []any{json.RawMessage(`{"message":"` + what + `"}`)}
		if n, err := c.Send(evs); err != nil || n != 1 {
			t.Fatalf("%s: acked %d: %v", what, n, err)
		}
	}
	before, err := dial(caA)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	send(before, "before the rotation")

	issue(caB)
	// A key that needs a restart, changed beside the certificate.
	if err := os.WriteFile(config, []byte(strings.Replace(string(mustRead(t, config)), "[output.elasticsearch]", "[journal]\nmax_group_wait = \"3ms\"\n[output.elasticsearch]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// configFile wrote [journal] already: a second table is a syntax
	// error, which the first reload must name, changing nothing.
	hup("the configuration file does not load")
	send(before, "after a failed reload")
	if c, err := dial(caB); err == nil {
		c.Close()
		t.Fatal("the rotated certificate was used after a reload that failed")
	}
	text := strings.Replace(string(mustRead(t, config)), "[journal]\nmax_group_wait = \"3ms\"\n", "", 1)
	text = strings.Replace(text, "[ledger]", "max_group_wait = \"3ms\"\n[ledger]", 1)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	from := len(log.String())
	hup("TLS files read again")
	waitLog("journal.max_group_wait", from)
	if !strings.Contains(log.String()[from:], "take effect only after a restart") {
		t.Errorf("the changed key is not said to need a restart:\n%s", log.String()[from:])
	}

	send(before, "on the connection opened before the rotation")
	after, err := dial(caB)
	if err != nil {
		t.Fatalf("a client trusting the new CA: %v\n%s", err, log.String())
	}
	defer after.Close()
	send(after, "after the rotation")
	if c, err := dial(caA); err == nil {
		c.Close()
		t.Error("a new connection still got the old certificate after the reload")
	}
	stop(t, cmd, log.String())
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package main

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logpond/logpond/internal/testkit/pki"
)

// authFront is an HTTP server in front of a test Elasticsearch that
// records the Authorization header of every request.
type authFront struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthFront(t *testing.T, tlsOn bool) *authFront {
	t.Helper()
	target, err := url.Parse(startES(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f := &authFront{}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, req.Header.Get("Authorization"))
		f.mu.Unlock()
		proxy.ServeHTTP(w, req)
	})
	if tlsOn {
		f.Server = httptest.NewTLSServer(h)
	} else {
		f.Server = httptest.NewServer(h)
	}
	t.Cleanup(f.Close)
	return f
}

// auth returns the distinct Authorization headers seen since the last
// call ("" for requests without one), and forgets them.
func (f *authFront) auth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, a := range f.seen {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	f.seen = nil
	return out
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// redriveConfig writes a logpond configuration for the stores with the
// given [output.elasticsearch] body.
func redriveConfig(t *testing.T, s stores, esBody string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logpond.toml")
	text := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[output.elasticsearch]\n%s\n", s.journal, s.ledger, esBody)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRedriveCredentialsOnlyToConfiguredHosts: the configured credentials
// go to the configured host (also when -es names it in another spelling),
// never to another -es host, which gets only credentials given for it.
func TestRedriveCredentialsOnlyToConfiguredHosts(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, oddLetters())
	configured, other := newAuthFront(t, false), newAuthFront(t, false)
	config := redriveConfig(t, s, fmt.Sprintf("hosts = [%q]\nusername = \"logpond\"\npassword = \"configured-pw\"", configured.URL))
	t.Setenv(envPassword, "")
	t.Setenv(envAPIKey, "")

	check := func(name string, f *authFront, want string, args ...string) string {
		t.Helper()
		_, errOut, code := ctl(t, append([]string{"-config", config, "dlq", "redrive"}, args...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d:\n%s", name, code, errOut)
		}
		if got := f.auth(); len(got) != 1 || got[0] != want {
			t.Errorf("%s: Authorization %q, want only %q", name, got, want)
		}
		if got := map[*authFront]*authFront{configured: other, other: configured}[f].auth(); len(got) != 0 {
			t.Errorf("%s: the other server got requests with Authorization %q", name, got)
		}
		return errOut
	}

	check("the configured hosts", configured, basic("logpond", "configured-pw"))
	check("-es naming a configured host", configured, basic("logpond", "configured-pw"), "-es", strings.ToUpper(configured.URL)+"/")
	errOut := check("-es naming another host", other, "", "-es", other.URL)
	if !strings.Contains(errOut, "not one of the hosts of output elasticsearch") || !strings.Contains(errOut, envPassword) {
		t.Errorf("no note that the configured credentials stay home:\n%s", errOut)
	}
	if strings.Contains(errOut, "configured-pw") {
		t.Errorf("stderr shows the password:\n%s", errOut)
	}

	t.Setenv(envPassword, "other-pw")
	errOut = check("-username for another host", other, basic("ops", "other-pw"), "-es", other.URL, "-username", "ops")
	if !strings.Contains(errOut, "clear text") || strings.Contains(errOut, "other-pw") {
		t.Errorf("no warning about http, or it shows the password:\n%s", errOut)
	}
	check("-username for the configured host", configured, basic("ops", "other-pw"), "-username", "ops")
	t.Setenv(envPassword, "")
	check("user info in -es", other, basic("ops", "url-pw"), "-es", strings.Replace(other.URL, "://", "://ops:url-pw@", 1))
	t.Setenv(envAPIKey, "b3RoZXI6a2V5")
	check("an API key for another host", other, "APIKey b3RoZXI6a2V5", "-es", other.URL)

	t.Setenv(envAPIKey, "")
	if _, errOut, code := ctl(t, "-config", config, "dlq", "redrive", "-es", other.URL, "-username", "ops"); code != exitUsage || !strings.Contains(errOut, envPassword) {
		t.Errorf("-username without a password: exit %d:\n%s", code, errOut)
	}
}

// TestRedriveTLSRelaxationOnlyForConfiguredHosts: verification_mode =
// "none" lets ledgerctl reach the configured host with a certificate it
// cannot verify, but not another one.
func TestRedriveTLSRelaxationOnlyForConfiguredHosts(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, oddLetters()[:1])
	configured, other := newAuthFront(t, true), newAuthFront(t, true)
	config := redriveConfig(t, s, fmt.Sprintf("hosts = [%q]\napi_key = \"Y29uZmlndXJlZDprZXk=\"\n[output.elasticsearch.tls]\nverification_mode = \"none\"", configured.URL))
	t.Setenv(envPassword, "")
	t.Setenv(envAPIKey, "")

	if out, errOut, code := ctl(t, "-config", config, "dlq", "redrive"); code != exitOK {
		t.Fatalf("configured host: exit %d:\n%s%s", code, out, errOut)
	}
	if got := configured.auth(); len(got) != 1 || got[0] != "APIKey Y29uZmlndXJlZDprZXk=" {
		t.Errorf("configured host: Authorization %q", got)
	}
	out, _, code := ctl(t, "-config", config, "dlq", "redrive", "-es", other.URL)
	if code != exitFailed || !strings.Contains(out, "certificate") {
		t.Errorf("another host with an unverifiable certificate: exit %d:\n%s", code, out)
	}
	if got := other.auth(); len(got) != 0 {
		t.Errorf("another host got requests: Authorization %q", got)
	}
	// A CA given for the run is used, even for a configured host whose
	// configuration turned verification off: this one cannot vouch for
	// the test server's self-signed certificate.
	ca := filepath.Join(t.TempDir(), "unrelated-ca.pem")
	if err := os.WriteFile(ca, pki.NewCA(t).CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = ctl(t, "-config", config, "dlq", "redrive", "-ca", ca)
	if code != exitFailed || !strings.Contains(out, "certificate") {
		t.Errorf("configured host with -ca that does not vouch for it: exit %d:\n%s", code, out)
	}
}

// TestRedrivePresentsTheClientCertificate: a configured host that requires
// a client certificate (Elasticsearch's PKI realm) gets the output's
// tls.cert; without it the re-drive fails and sends nothing.
func TestRedrivePresentsTheClientCertificate(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, oddLetters()[:1])
	target, err := url.Parse(startES(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var presented []int
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		presented = append(presented, len(req.TLS.PeerCertificates))
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, req)
	}))
	front.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	front.StartTLS()
	t.Cleanup(front.Close)

	// Self-signed: the front asks for any certificate and verifies none.
	certFile, keyFile := pki.SelfSigned(t, pki.Options{CommonName: "logpond", Client: true}).WriteFiles(t, t.TempDir(), "client")
	t.Setenv(envPassword, "")
	t.Setenv(envAPIKey, "")

	without := redriveConfig(t, s, fmt.Sprintf("hosts = [%q]\n[output.elasticsearch.tls]\nverification_mode = \"none\"", front.URL))
	if out, _, code := ctl(t, "-config", without, "dlq", "redrive"); code != exitFailed {
		t.Errorf("without a client certificate: exit %d:\n%s", code, out)
	}
	with := redriveConfig(t, s, fmt.Sprintf("hosts = [%q]\n[output.elasticsearch.tls]\nverification_mode = \"none\"\ncert = %q\nkey = %q", front.URL, certFile, keyFile))
	if out, errOut, code := ctl(t, "-config", with, "dlq", "redrive"); code != exitOK || !strings.Contains(out, "1 created") {
		t.Fatalf("with the client certificate: exit %d:\n%s%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(presented) == 0 || slices.Contains(presented, 0) {
		t.Errorf("certificates presented per request: %v", presented)
	}
}

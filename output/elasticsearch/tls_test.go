package elasticsearch

import (
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestTLS puts an https front (127.0.0.1, port 0) before the test server:
// the output must verify the certificate against tls.ca, refuse it without
// (retrying, nothing stored), and accept anything with verification off.
func TestTLS(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ca       bool
		insecure bool
		works    bool
	}{
		{"verified with ca", true, false, true},
		{"unknown authority", false, false, false},
		{"verification none", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, estest.Options{})
			target, _ := url.Parse(r.es.URL())
			front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
			front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
			front.StartTLS()
			defer front.Close()
			for i := range 10 {
				r.store(time.Now(), filebeatEvent(i, ""))
			}
			run := r.start(r.options(func(o *Options) {
				o.Hosts = []string{front.URL}
				o.InsecureSkipVerify = tc.insecure
				if tc.ca {
					o.CACert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
				}
			}))
			if tc.works {
				waitFor(t, "every event", func() bool { return r.es.Count() == 10 })
				run.Stop(t)
				r.checkAllStoredOnce(t)
				return
			}
			waitFor(t, "failed requests", func() bool { return run.Out.Stats().FailedRequests >= 3 })
			run.Stop(t)
			if r.es.Count() != 0 {
				t.Fatalf("%d documents stored through an unverified connection", r.es.Count())
			}
		})
	}
}

// TestCredentials checks the Authorization header Elasticsearch receives
// for username/password and for an API key (which wins over both).
func TestCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, user, pass, key, want string
	}{
		{"basic", "elastic", "secret", "", "Basic " + base64.StdEncoding.EncodeToString([]byte("elastic:secret"))},
		{"api key", "elastic", "secret", "a2V5aWQ6c2VjcmV0", "APIKey a2V5aWQ6c2VjcmV0"}, // Elasticsearch reads the scheme case-insensitively,
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, estest.Options{})
			target, _ := url.Parse(r.es.URL())
			proxy := httputil.NewSingleHostReverseProxy(target)
			var mu sync.Mutex
			seen := map[string]bool{}
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				mu.Lock()
				seen[req.Header.Get("Authorization")] = true
				mu.Unlock()
				proxy.ServeHTTP(w, req)
			}))
			defer front.Close()
			r.store(time.Now(), filebeatEvent(1, ""))
			run := r.start(r.options(func(o *Options) {
				o.Hosts = []string{front.URL}
				o.Username, o.Password, o.APIKey = tc.user, NewSecret(tc.pass), NewSecret(tc.key)
			}))
			waitFor(t, "the event", func() bool { return r.es.Count() == 1 })
			run.Stop(t)
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || !seen[tc.want] {
				t.Fatalf("Authorization headers %v, want only %q", seen, tc.want)
			}
		})
	}
}

package elasticsearch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	es "github.com/elastic/go-elasticsearch/v8"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/pki"
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

// TestClientCertificate puts an https front that requires a client
// certificate of its CA before the test server: with Options.ClientCert
// every event lands; without it every request fails and nothing is
// stored.
func TestClientCertificate(t *testing.T) {
	ca := pki.NewCA(t)
	clientCert := ca.Issue(t, pki.Options{CommonName: "logpond", Client: true}).TLS()
	cert := &clientCert
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"with certificate", cert},
		{"without", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, estest.Options{Version: "7.17.25"})
			target, _ := url.Parse(r.es.URL())
			front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
			front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
			front.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
			front.StartTLS()
			defer front.Close()
			for i := range 10 {
				r.store(time.Now(), filebeatEvent(i, ""))
			}
			run := r.start(r.options(func(o *Options) {
				o.Hosts = []string{front.URL}
				o.CACert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
				o.ClientCert = tc.cert
			}))
			if tc.cert != nil {
				waitFor(t, "every event", func() bool { return r.es.Count() == 10 })
				run.Stop(t)
				r.checkAllStoredOnce(t)
				return
			}
			waitFor(t, "failed requests", func() bool { return run.Out.Stats().FailedRequests >= 3 })
			run.Stop(t)
			if n := r.es.Count(); n != 0 {
				t.Fatalf("%d documents stored without a client certificate", n)
			}
		})
	}
}

// TestPlainMediaTypes: with ELASTIC_CLIENT_APIVERSIONING=true in the
// environment the client asks for the API of version 8, which 7.17
// refuses; the output still sends plain media types (JSON, and NDJSON for
// bulk bodies), so every event lands.
func TestPlainMediaTypes(t *testing.T) {
	t.Setenv("ELASTIC_CLIENT_APIVERSIONING", "true")
	r := newRig(t, estest.Options{Version: "7.17.25"})
	var mu sync.Mutex
	var vendor []string            // compatibility media types received
	bulkTypes := map[string]bool{} // Content-Type of bulk requests
	host := front(t, r.es.URL(), func(w http.ResponseWriter, req *http.Request) bool {
		accept, ctype := req.Header.Get("Accept"), req.Header.Get("Content-Type")
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(req.URL.Path, "/_bulk") {
			bulkTypes[ctype] = true
		}
		if strings.Contains(accept+ctype, "compatible-with=8") {
			// As Elasticsearch 7.17 answers it.
			vendor = append(vendor, req.Method+" "+req.URL.Path+" Accept="+accept+" Content-Type="+ctype)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"type":"media_type_header_exception","reason":"Invalid media-type value on headers [Accept, Content-Type]"},"status":400}`)
			return true
		}
		return false
	})
	// The control: a client with the same environment sends what 7.17
	// refuses, so the test sees the headers the output must not send.
	plain, err := es.NewClient(es.Config{Addresses: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := plain.Info(plain.Info.WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("the client without the output's transport got %d, want the 400 of a compatibility header", res.StatusCode)
	}
	mu.Lock()
	vendor = nil
	mu.Unlock()

	for i := range 20 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(func(o *Options) { o.Hosts = []string{host} }))
	waitFor(t, "every event", func() bool { return r.es.Count() == 20 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	mu.Lock()
	defer mu.Unlock()
	if len(vendor) > 0 {
		t.Errorf("compatibility media types sent: %q", vendor)
	}
	if len(bulkTypes) != 1 || !bulkTypes["application/x-ndjson"] {
		t.Errorf("bulk Content-Type %v, want only application/x-ndjson", bulkTypes)
	}
}

// TestCurrentTLSAppliesToNewConnections: with CurrentTLS, each new
// connection takes the configuration in place when it opens. A
// configuration that does not trust the host fails every request; once
// it is replaced by one that does (a CA bundle read again), the output
// connects and stores the events, without a restart.
func TestCurrentTLSAppliesToNewConnections(t *testing.T) {
	r := newRig(t, estest.Options{})
	target, _ := url.Parse(r.es.URL())
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	front.StartTLS()
	defer front.Close()
	for i := range 10 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	var current atomic.Pointer[tls.Config]
	current.Store(&tls.Config{MinVersion: tls.VersionTLS12}) // the system roots: not the front's
	run := r.start(r.options(func(o *Options) {
		o.Hosts = []string{front.URL}
		o.CurrentTLS = current.Load
	}))
	waitFor(t, "failed requests", func() bool { return run.Out.Stats().FailedRequests >= 3 })
	if n := r.es.Count(); n != 0 {
		t.Fatalf("%d documents stored through an unverified connection", n)
	}
	pool := x509.NewCertPool()
	pool.AddCert(front.Certificate())
	current.Store(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool})
	waitFor(t, "every event", func() bool { return r.es.Count() == 10 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
}

package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/pki"
)

// TestReloadReplacesElasticsearchCredentials: the cluster's password for
// logpond changes; requests with the old one are refused (401) and the
// events wait. Reload with the new password in the file makes the output
// deliver them, with no restart; a key that needs one is named.
func TestReloadReplacesElasticsearchCredentials(t *testing.T) {
	es := startES(t, estest.Options{Seed: 41})
	target, err := url.Parse(es.URL())
	if err != nil {
		t.Fatal(err)
	}
	// The cluster, behind a check of the password it currently accepts.
	var password atomic.Pointer[string]
	pw := "first"
	password.Store(&pw)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "logpond" || p != *password.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"type":"security_exception","reason":"unable to authenticate user [logpond]"},"status":401}`))
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go front.Serve(ln)
	defer front.Close()

	cfg := crashConfig(t.TempDir())
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts, o.Username, o.Password = true, []string{"http://" + ln.Addr().String()}, "logpond", "first"
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	r := start(t, cfg)
	defer r.shutdown(t)

	send := func(seq int) {
		t.Helper()
		if _, err := appendVia(context.Background(), r.s, crashRecord(0, seq)); err != nil {
			t.Fatal(err)
		}
	}
	send(0)
	waitUntil(t, "the first event stored", func() bool { return es.Count() == 1 })

	pw2 := "s3cond-pw"
	password.Store(&pw2)
	send(1)
	waitUntil(t, "the refusal of the old password", func() bool { return strings.Contains(r.log.String(), "401") })
	time.Sleep(100 * time.Millisecond)
	if n := es.Count(); n != 1 {
		t.Fatalf("%d events stored with a refused password", n)
	}

	next := *cfg
	nextES := next.Output.Elasticsearch
	nextES.Password = "s3cond-pw"
	next.Output.Elasticsearch = nextES
	next.Ledger.Retention = conf.Duration(time.Hour)
	r.s.Reload(&next)
	waitUntil(t, "the second event stored after the reload", func() bool { return es.Count() == 2 })
	log := r.log.String()
	for _, want := range []string{"credentials changed", "output.elasticsearch.password", "ledger.retention", "take effect only after a restart"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "s3cond-pw") {
		t.Errorf("the log shows the password")
	}
}

// TestTLSFilesWatchedForChanges: a certificate replaced on disk (renamed
// into place, as cert-manager and Kubernetes secret volumes do) is used
// for new connections after the next check, with no signal and no
// restart.
func TestTLSFilesWatchedForChanges(t *testing.T) {
	root := t.TempDir()
	caA, caB := pki.NewCA(t), pki.NewCA(t)
	certPath, keyPath := filepath.Join(root, "tls.crt"), filepath.Join(root, "tls.key")
	issue := func(ca *pki.CA) {
		ca.Issue(t, pki.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}).ReplaceFiles(t, certPath, keyPath)
	}
	issue(caA)
	cfg := pipelineConfig(t, root)
	cfg.Input.Beats.TLS.Cert, cfg.Input.Beats.TLS.Key = certPath, keyPath
	r := start(t, cfg)
	defer r.shutdown(t)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); r.s.watchTLSFiles(ctx, 5*time.Millisecond) }()
	defer func() { cancel(); <-watched }()

	handshake := func(ca *pki.CA) error {
		c, err := tls.Dial("tcp", r.s.BeatsAddr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := handshake(caA); err != nil {
		t.Fatal(err)
	}
	issue(caB)
	waitUntil(t, "the new certificate in use", func() bool { return handshake(caB) == nil })
	if !strings.Contains(r.log.String(), "TLS files changed on disk and were read again") {
		t.Errorf("the reload is not logged:\n%s", r.log.String())
	}
}

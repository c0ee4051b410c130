package input

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/pki"
)

// testPKI is a CA and, signed by it, a server certificate for 127.0.0.1
// (its key as an EC PRIVATE KEY block, the form the input must accept)
// and a client certificate; the CA and the server pair are PEM files.
type testPKI struct {
	caPool                    *x509.CertPool
	caFile, certFile, keyFile string
	clientCert                tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	dir := t.TempDir()
	ca := pki.NewCA(t)
	p := testPKI{caPool: ca.Pool(), caFile: ca.WriteFile(t, dir)}
	p.certFile, p.keyFile = ca.Issue(t, pki.Options{IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Key: pki.EC}).WriteFiles(t, dir, "server")
	p.clientCert = ca.Issue(t, pki.Options{Client: true}).TLS()
	return p
}

func sendOne(addr string, dial func(network, address string) (net.Conn, error)) error {
	c, err := lj.SyncDialWith(dial, addr, lj.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Send([]interface{}{json.RawMessage(`{"tls":true}`)})
	return err
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	tlsDial := func(cert *tls.Certificate) func(string, string) (net.Conn, error) {
		return func(network, address string) (net.Conn, error) {
			cfg := &tls.Config{RootCAs: pki.caPool}
			if cert != nil {
				cfg.Certificates = []tls.Certificate{*cert}
			}
			return tls.Dial(network, address, cfg)
		}
	}
	for _, auth := range []string{"none", "required"} {
		t.Run("client_auth="+auth, func(t *testing.T) {
			cfg, err := TLSConfig(pki.certFile, pki.keyFile, pki.caFile, auth)
			if err != nil {
				t.Fatal(err)
			}
			opts := testOptions()
			opts.TLS = cfg
			b := startBeats(t, opts, journalInput{openJournal(t)})
			addr := b.Addr().String()
			if err := sendOne(addr, tlsDial(&pki.clientCert)); err != nil {
				t.Fatalf("TLS client with a certificate: %v", err)
			}
			err = sendOne(addr, tlsDial(nil))
			if auth == "none" && err != nil {
				t.Fatalf("TLS client without a certificate: %v", err)
			}
			if auth == "required" && err == nil {
				t.Fatal("a client without a certificate was served with client_auth = required")
			}
			if err := sendOne(addr, net.Dial); err == nil {
				t.Fatal("a plain-TCP client was served by a TLS listener")
			}
		})
	}
	if _, err := TLSConfig(pki.certFile, "/nonexistent.pem", "", "none"); err == nil {
		t.Fatal("a missing key file was accepted")
	}
}

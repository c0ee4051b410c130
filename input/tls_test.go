package input

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
)

// testPKI makes a CA and, signed by it, a server certificate for
// 127.0.0.1 and a client certificate; it writes PEM files into dir.
type testPKI struct {
	caPool                    *x509.CertPool
	caFile, certFile, keyFile string
	clientCert                tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "logpond test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, server bool) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "logpond test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
		if server {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600)
		return p
	}
	p := testPKI{caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	sDER, sKey := issue(2, true)
	p.certFile = write("server.pem", "CERTIFICATE", sDER)
	sKeyDER, _ := x509.MarshalECPrivateKey(sKey)
	p.keyFile = write("server-key.pem", "EC PRIVATE KEY", sKeyDER)
	cDER, cKey := issue(3, false)
	p.clientCert = tls.Certificate{Certificate: [][]byte{cDER}, PrivateKey: cKey}
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

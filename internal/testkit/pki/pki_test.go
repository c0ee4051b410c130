package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// handshake runs a TLS handshake between server and client over an
// in-memory pipe and returns the client's and the server's errors.
func handshake(server, client *tls.Config) (clientErr, serverErr error) {
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(sc, server)
		err := s.Handshake()
		// Closing unblocks the client when the server refuses it.
		s.Close()
		done <- err
	}()
	c := tls.Client(cc, client)
	clientErr = c.Handshake()
	if clientErr == nil {
		// TLS 1.3 clients finish before the server checks their
		// certificate: a read sees the server's verdict.
		_, clientErr = c.Read(make([]byte, 1))
		if errors.Is(clientErr, io.EOF) {
			clientErr = nil
		}
	}
	c.Close()
	return clientErr, <-done
}

func TestChainVerifies(t *testing.T) {
	ca := NewCA(t)
	srv := ca.Issue(t, Options{CommonName: "server", DNSNames: []string{"logpond.test"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	cli := ca.Issue(t, Options{Client: true})
	if srv.Certificate.SerialNumber.Cmp(cli.Certificate.SerialNumber) == 0 || srv.Certificate.SerialNumber.Cmp(ca.Certificate().SerialNumber) == 0 {
		t.Errorf("serial numbers repeat: CA %v, server %v, client %v", ca.Certificate().SerialNumber, srv.Certificate.SerialNumber, cli.Certificate.SerialNumber)
	}
	for _, name := range []string{"logpond.test", "127.0.0.1"} {
		if _, err := srv.Certificate.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	if _, err := srv.Certificate.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "other.test"}); err == nil {
		t.Error("server certificate verified for a name it does not hold")
	}
	if _, err := cli.Certificate.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := cli.Certificate.Verify(x509.VerifyOptions{Roots: ca.Pool()}); err == nil {
		t.Error("a client-only certificate verified for server authentication")
	}
	if _, err := srv.Certificate.Verify(x509.VerifyOptions{Roots: NewCA(t).Pool()}); err == nil {
		t.Error("another CA vouched for the server certificate")
	}
	if p, _ := pem.Decode(ca.CertPEM()); p == nil || p.Type != "CERTIFICATE" || string(p.Bytes) != string(ca.Certificate().Raw) {
		t.Error("CertPEM is not the CA's certificate")
	}
}

func TestHandshakeRequiresTheClientCA(t *testing.T) {
	ca, other := NewCA(t), NewCA(t)
	srv := ca.Issue(t, Options{DNSNames: []string{"logpond.test"}, Server: true})
	server := &tls.Config{Certificates: []tls.Certificate{srv.TLS()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	client := func(c *Cert) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool(), ServerName: "logpond.test", Certificates: []tls.Certificate{c.TLS()}}
	}
	if cerr, serr := handshake(server, client(ca.Issue(t, Options{Client: true}))); cerr != nil || serr != nil {
		t.Fatalf("client certificate of the server's client CA: client %v, server %v", cerr, serr)
	}
	if _, serr := handshake(server, client(other.Issue(t, Options{Client: true}))); serr == nil {
		t.Fatal("the server accepted a client certificate of another CA")
	}
}

func TestKeyEncodings(t *testing.T) {
	ca := NewCA(t)
	for _, tc := range []struct {
		enc  KeyEncoding
		typ  string
		name string
	}{{PKCS8, "PRIVATE KEY", "pkcs8"}, {EC, "EC PRIVATE KEY", "ec"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := ca.Issue(t, Options{Client: true, Key: tc.enc})
			if p, _ := pem.Decode(c.KeyPEM); p == nil || p.Type != tc.typ {
				t.Fatalf("KeyPEM is not a %q block:\n%s", tc.typ, c.KeyPEM)
			}
			dir := t.TempDir()
			certPath, keyPath := c.WriteFiles(t, dir, "client")
			pair, err := tls.LoadX509KeyPair(certPath, keyPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(pair.Certificate[0]) != string(c.Certificate.Raw) {
				t.Error("the written certificate is not the issued one")
			}
			caPath := ca.WriteFile(t, dir)
			b, err := os.ReadFile(caPath)
			if err != nil || string(b) != string(ca.CertPEM()) {
				t.Errorf("CA file %s: %v", caPath, err)
			}
		})
	}
}

func TestSelfSignedAndExpired(t *testing.T) {
	s := SelfSigned(t, Options{CommonName: "self", CA: true, Key: EC})
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate)
	if _, err := s.Certificate.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("self-signed certificate against itself: %v", err)
	}
	if !s.Certificate.IsCA || s.Certificate.Subject.CommonName != "self" {
		t.Errorf("self-signed: IsCA %v, CN %q", s.Certificate.IsCA, s.Certificate.Subject.CommonName)
	}
	ca := NewCA(t)
	old := ca.Issue(t, Options{Server: true, NotAfter: time.Now().Add(-time.Minute)})
	if _, err := old.Certificate.Verify(x509.VerifyOptions{Roots: ca.Pool()}); err == nil {
		t.Error("an expired certificate verified")
	}
}

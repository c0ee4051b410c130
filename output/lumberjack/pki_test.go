package lumberjack

import (
	"crypto/x509"
	"net"
	"testing"

	"github.com/logpond/logpond/internal/testkit/pki"
)

// testPKI is a CA and two certificates it signed, as PEM files: one for
// a server at 127.0.0.1, one for a client.
type testPKI struct {
	pool                  *x509.CertPool
	ca                    string
	serverCert, serverKey string
	clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca := pki.NewCA(t)
	p := testPKI{pool: ca.Pool(), ca: ca.WriteFile(t, dir)}
	p.serverCert, p.serverKey = ca.Issue(t, pki.Options{CommonName: "server", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}).WriteFiles(t, dir, "server")
	p.clientCert, p.clientKey = ca.Issue(t, pki.Options{CommonName: "client", Client: true}).WriteFiles(t, dir, "client")
	return p
}

// Package pki makes throw-away certificate authorities and certificates
// for tests: every key is a fresh ECDSA P-256 key, every certificate is
// valid from an hour ago to a day from now unless told otherwise, and
// nothing is cached between calls, so two CAs never vouch for each
// other's certificates. Only tests import it; failures end the test
// through t.Fatal.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// validity is how far around now certificates are valid by default: the
// hour before absorbs clock skew between the test and the TLS stack, the
// day after outlasts any test.
const (
	validFrom  = -time.Hour
	validUntil = 24 * time.Hour
)

// KeyEncoding is how a private key is written as PEM.
type KeyEncoding int

const (
	// PKCS8 writes a "PRIVATE KEY" block (the form Fleet requires).
	PKCS8 KeyEncoding = iota
	// EC writes an "EC PRIVATE KEY" block (SEC 1, OpenSSL's traditional
	// form for EC keys).
	EC
)

// Options describe a certificate. The zero value is a certificate with
// no extended key usage, no names, the default validity and a PKCS#8 key.
type Options struct {
	// CommonName is the subject's common name; "logpond test" if empty.
	CommonName string
	// DNSNames and IPs are the subject alternative names a TLS client
	// verifies the server against.
	DNSNames []string
	IPs      []net.IP
	// Client adds the client-authentication extended key usage, Server
	// the server-authentication one; both may be set.
	Client, Server bool
	// CA marks the certificate as a certificate authority (basic
	// constraints, may sign certificates).
	CA bool
	// Key is how KeyPEM encodes the private key.
	Key KeyEncoding
	// NotAfter ends the validity; zero means a day from now. A time in
	// the past makes an expired certificate.
	NotAfter time.Time
}

// CA is a self-signed certificate authority whose key signs the
// certificates Issue makes. Its methods are safe for concurrent use.
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewCA returns a fresh certificate authority named "logpond test CA".
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(1, Options{CommonName: "logpond test CA", CA: true})
	cert := create(t, tmpl, tmpl, key, key)
	ca := &CA{cert: cert, key: key}
	ca.serial.Store(1)
	return ca
}

// Certificate returns the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertPEM returns the CA's certificate as a PEM "CERTIFICATE" block, the
// content of a tls.ca file.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Pool returns a new pool holding only the CA's certificate, for
// tls.Config's RootCAs or ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// WriteFile writes CertPEM to dir/ca.crt and returns the path. Two CAs
// written to one dir overwrite each other.
func (ca *CA) WriteFile(t testing.TB, dir string) string {
	t.Helper()
	return writeFile(t, filepath.Join(dir, "ca.crt"), ca.CertPEM())
}

// Issue returns a certificate for a fresh key, signed by the CA, with a
// serial number no other certificate of this CA has.
func (ca *CA) Issue(t testing.TB, o Options) *Cert {
	t.Helper()
	key := newKey(t)
	cert := create(t, template(ca.serial.Add(1), o), ca.cert, key, ca.key)
	return newCert(t, cert, key, o.Key)
}

// SelfSigned returns a certificate for a fresh key that signs itself:
// no CA vouches for it, which suits tests that only load a pair or that
// turn verification off.
func SelfSigned(t testing.TB, o Options) *Cert {
	t.Helper()
	key := newKey(t)
	tmpl := template(1, o)
	return newCert(t, create(t, tmpl, tmpl, key, key), key, o.Key)
}

// Cert is a certificate with its private key, in memory and as PEM.
type Cert struct {
	// Certificate is the parsed certificate; Certificate.Raw its DER.
	Certificate *x509.Certificate
	// Key is the certificate's private key.
	Key *ecdsa.PrivateKey
	// CertPEM is the certificate as a PEM "CERTIFICATE" block.
	CertPEM []byte
	// KeyPEM is the private key as PEM, encoded as Options.Key said.
	KeyPEM []byte
}

// TLS returns the certificate and key for tls.Config.Certificates.
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Certificate.Raw}, PrivateKey: c.Key, Leaf: c.Certificate}
}

// WriteFiles writes CertPEM to dir/name.crt and KeyPEM to dir/name.key,
// readable by the owner only, and returns their paths.
func (c *Cert) WriteFiles(t testing.TB, dir, name string) (certPath, keyPath string) {
	t.Helper()
	certPath = writeFile(t, filepath.Join(dir, name+".crt"), c.CertPEM)
	keyPath = writeFile(t, filepath.Join(dir, name+".key"), c.KeyPEM)
	return certPath, keyPath
}

// ReplaceFiles writes CertPEM and KeyPEM next to certPath and keyPath and
// renames them into place, as cert-manager's and Kubernetes' atomic
// writers replace a renewed certificate: a reader sees the old files or
// the new ones, and each new file has a new inode.
func (c *Cert) ReplaceFiles(t testing.TB, certPath, keyPath string) {
	t.Helper()
	for path, b := range map[string][]byte{certPath: c.CertPEM, keyPath: c.KeyPEM} {
		tmp := writeFile(t, path+".new", b)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("pki: generate key: %v", err)
	}
	return key
}

// template is the certificate o describes, with serial number serial.
func template(serial int64, o Options) *x509.Certificate {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: o.CommonName},
		NotBefore:    now.Add(validFrom),
		NotAfter:     now.Add(validUntil),
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if tmpl.Subject.CommonName == "" {
		tmpl.Subject.CommonName = "logpond test"
	}
	if !o.NotAfter.IsZero() {
		tmpl.NotAfter = o.NotAfter
		if !tmpl.NotBefore.Before(tmpl.NotAfter) {
			// An expired certificate still needs a validity period that
			// starts before it ends.
			tmpl.NotBefore = tmpl.NotAfter.Add(-time.Hour)
		}
	}
	if o.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if o.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if o.CA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	return tmpl
}

// create signs tmpl for key's public half with parent and signer, and
// parses the result.
func create(t testing.TB, tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatalf("pki: create certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("pki: parse certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	return cert
}

func newCert(t testing.TB, cert *x509.Certificate, key *ecdsa.PrivateKey, enc KeyEncoding) *Cert {
	t.Helper()
	var block *pem.Block
	switch enc {
	case PKCS8:
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatalf("pki: encode key as PKCS#8: %v", err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	case EC:
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatalf("pki: encode key as SEC 1: %v", err)
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	default:
		t.Fatalf("pki: unknown key encoding %d", enc)
	}
	return &Cert{
		Certificate: cert,
		Key:         key,
		CertPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		KeyPEM:      pem.EncodeToMemory(block),
	}
}

func writeFile(t testing.TB, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(fmt.Errorf("pki: write %s: %w", path, err))
	}
	return path
}

package tlsfiles

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/logpond/logpond/internal/testkit/pki"
)

// TestReloadRotatesForNewConnections: a listener with a Source answers
// with certificate A; once the files hold B (renamed into place) and
// ReloadIfChanged sees it, new handshakes get B while a connection opened
// before keeps working; a reload that fails (files that do not match)
// keeps B.
func TestReloadRotatesForNewConnections(t *testing.T) {
	dir := t.TempDir()
	caA, caB := pki.NewCA(t), pki.NewCA(t)
	write := func(ca *pki.CA) {
		ca.Issue(t, pki.Options{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true}).
			ReplaceFiles(t, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	}
	write(caA)
	src, err := New(func() (*tls.Config, error) {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
		if err != nil {
			return nil, err
		}
		return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}, nil
	}, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", src.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	dial := func(ca *pki.CA) (*tls.Conn, error) {
		return tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12})
	}
	echo := func(c *tls.Conn) error {
		if _, err := c.Write([]byte{'x'}); err != nil {
			return err
		}
		_, err := c.Read(make([]byte, 1))
		return err
	}
	old, err := dial(caA)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := echo(old); err != nil {
		t.Fatal(err)
	}

	if changed, err := src.ReloadIfChanged(); changed || err != nil {
		t.Fatalf("ReloadIfChanged with the files unchanged: %v, %v", changed, err)
	}
	write(caB)
	if changed, err := src.ReloadIfChanged(); !changed || err != nil {
		t.Fatalf("ReloadIfChanged after the files were replaced: %v, %v", changed, err)
	}
	if c, err := dial(caA); err == nil {
		c.Close()
		t.Error("a new connection still got the old certificate after Reload")
	}
	c, err := dial(caB)
	if err != nil {
		t.Fatalf("a new connection after Reload: %v", err)
	}
	c.Close()
	if err := echo(old); err != nil {
		t.Errorf("the connection opened before the reload: %v", err)
	}

	// A key that does not match its certificate: the reload fails and B stays.
	other := caA.Issue(t, pki.Options{DNSNames: []string{"localhost"}, Server: true})
	_, k := other.WriteFiles(t, dir, "other")
	if err := os.Rename(k, filepath.Join(dir, "server.key")); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); err == nil {
		t.Error("Reload of a key that does not match its certificate succeeded")
	}
	c, err = dial(caB)
	if err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
	c.Close()
	if _, err := New(func() (*tls.Config, error) { return nil, errors.New("bad") }); err == nil {
		t.Error("New with a failing build succeeded")
	}
}

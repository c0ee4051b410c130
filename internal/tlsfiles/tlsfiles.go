// Package tlsfiles keeps a TLS configuration built from PEM files, and
// builds it again from the same files on Reload, so that a rotated
// certificate, key or CA bundle (cert-manager renews them in place) is
// used by every connection opened after the reload, without a restart.
// Connections already open keep what they were set up with.
package tlsfiles

import (
	"crypto/tls"
	"sync/atomic"
)

// Source is a TLS configuration built from files. Safe for concurrent
// use: Config and ServerConfig may be called while Reload runs.
type Source struct {
	build func() (*tls.Config, error)
	cur   atomic.Pointer[tls.Config]
}

// New builds the configuration once with build, which reads the files,
// and returns its Source; build's error when it fails.
func New(build func() (*tls.Config, error)) (*Source, error) {
	s := &Source{build: build}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload builds the configuration again from the files. When that fails
// (a file half written, a key that does not match its certificate), the
// configuration in use stays, and the error says why.
func (s *Source) Reload() error {
	c, err := s.build()
	if err != nil {
		return err
	}
	s.cur.Store(c)
	return nil
}

// Config is the configuration in use, for a client's next connection.
// The caller must not change it.
func (s *Source) Config() *tls.Config { return s.cur.Load() }

// ServerConfig is a configuration for a listener that answers each new
// connection's handshake with the configuration in use at that moment.
func (s *Source) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load(), nil
		},
	}
}

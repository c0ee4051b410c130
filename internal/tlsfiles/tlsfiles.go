// Package tlsfiles keeps a TLS configuration built from PEM files, and
// builds it again from the same files on Reload, or on ReloadIfChanged
// once they changed on disk, so that a rotated certificate, key or CA
// bundle (cert-manager renews them in place, Kubernetes swaps a secret
// volume's files) is used by every connection opened after the reload,
// without a restart. Connections already open keep what they were set up
// with.
package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Source is a TLS configuration built from files. Safe for concurrent
// use: Config and ServerConfig may be called while a reload runs.
type Source struct {
	build func() (*tls.Config, error)
	files []string
	cur   atomic.Pointer[tls.Config]

	mu    sync.Mutex // serializes reloads
	stamp string     // the files' state when last built
}

// New builds the configuration once with build, which reads files, and
// returns its Source; build's error when it fails.
func New(build func() (*tls.Config, error), files ...string) (*Source, error) {
	s := &Source{build: build, files: files}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload builds the configuration again from the files. When that fails
// (a file half written, a key that does not match its certificate), the
// configuration in use stays, and the error says why.
func (s *Source) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloadLocked(stampOf(s.files))
}

// ReloadIfChanged reloads when a file changed on disk (size, time,
// inode: a new file renamed or linked into place) since the last
// build, and says whether it did. A failed reload is tried again at the
// next call even if nothing changed since: the files may have been
// caught half written.
func (s *Source) ReloadIfChanged() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := stampOf(s.files)
	if now == s.stamp {
		return false, nil
	}
	return true, s.reloadLocked(now)
}

func (s *Source) reloadLocked(stamp string) error {
	c, err := s.build()
	if err != nil {
		s.stamp = "" // try again at the next check
		return err
	}
	s.cur.Store(c)
	s.stamp = stamp
	return nil
}

// stampOf sums up the files' state on disk, following symbolic links.
func stampOf(files []string) string {
	var b []byte
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b = fmt.Appendf(b, "%s:missing;", f)
			continue
		}
		b = fmt.Appendf(b, "%s:%d:%d:%v;", f, fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	}
	return string(b)
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

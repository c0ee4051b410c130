package conf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HostChecks names what CheckHost checks, for messages that say which
// checks ran and which need the host that runs logpond.
var HostChecks = []string{
	"journal.dir and ledger.dir: each is a directory this user can write, or its parent is (logpond creates the directory itself)",
	"TLS files (input.beats.tls cert, key and client_ca; each Elasticsearch output's tls ca, cert and key; each Lumberjack and Kafka output's ssl certificate_authorities, certificate and key): readable, and they parse",
	"input.beats.listen and admin.listen: the address can be listened on (port free, address on this host)",
	"journal.max_bytes, ledger.max_bytes and the outputs' dead_letter_max_bytes, added up per file system that holds them: a warning when larger than it",
}

// CheckHost checks what the configuration needs from the machine it runs
// on and that loading the file cannot tell: the directories, the TLS files
// and the listen addresses. It changes nothing: it creates no file or
// directory, and a listen address is only bound and at once released. Its
// answers hold for this machine and the user running the check; the
// service may run as another user. The error, if any, lists every problem
// as KeyErrors ordered by line and key.
func (l *Loaded) CheckHost() error {
	return l.checkHost(nil)
}

// checkHost is CheckHost, leaving out the checks of the keys in skip.
func (l *Loaded) checkHost(skip map[string]bool) error {
	c := l.Config
	var ps []*KeyError
	bad := func(key, format string, args ...any) {
		ps = append(ps, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, d := range []struct{ key, dir string }{{"journal.dir", c.Journal.Dir}, {"ledger.dir", c.Ledger.Dir}} {
		if skip[d.key] {
			continue
		}
		if err := checkDir(d.dir); err != nil {
			bad(d.key, "%v", err)
		}
	}

	t := c.Input.Beats.TLS
	if t.Cert != "" && t.Key != "" && !skip["input.beats.tls.cert"] && !skip["input.beats.tls.key"] {
		if _, err := tls.LoadX509KeyPair(t.Cert, t.Key); err != nil {
			key := "input.beats.tls.cert"
			if errors.Is(err, os.ErrNotExist) && fileMissing(t.Key) && !fileMissing(t.Cert) {
				key = "input.beats.tls.key"
			}
			bad(key, "certificate %s with key %s: %v", t.Cert, t.Key, err)
		}
	}
	if t.ClientCA != "" && !skip["input.beats.tls.client_ca"] {
		if err := checkCA(t.ClientCA); err != nil {
			bad("input.beats.tls.client_ca", "%v", err)
		}
	}
	for _, o := range c.allOutputs() {
		if o.Elasticsearch != nil {
			t, k := o.Elasticsearch.TLS, o.Key+".tls."
			if ca, key := t.CA, k+"ca"; ca != "" && !skip[key] {
				if err := checkCA(ca); err != nil {
					bad(key, "%v", err)
				}
			}
			if t.Cert != "" && t.Key != "" && !skip[k+"cert"] && !skip[k+"key"] {
				if err := checkKeyPair(t.Cert, t.Key); err != nil {
					key := k + "cert"
					if errors.Is(err, os.ErrNotExist) && fileMissing(t.Key) && !fileMissing(t.Cert) {
						key = k + "key"
					}
					bad(key, "%v", err)
				}
			}
			continue
		}
		var ssl LumberjackSSL
		switch {
		case o.Lumberjack != nil:
			ssl = o.Lumberjack.SSL
		case o.Kafka != nil:
			ssl = o.Kafka.SSL
		}
		k := o.Key + ".ssl."
		if !ssl.Enabled {
			continue // the files are not read
		}
		if key := k + "certificate_authorities"; !skip[key] {
			for i, ca := range ssl.CertificateAuthorities {
				if err := checkCA(ca); err != nil {
					bad(key, "entry %d: %v", i+1, err)
				}
			}
		}
		if ssl.Certificate != "" && ssl.Key != "" && !skip[k+"certificate"] && !skip[k+"key"] {
			if _, err := tls.LoadX509KeyPair(ssl.Certificate, ssl.Key); err != nil {
				key := k + "certificate"
				if errors.Is(err, os.ErrNotExist) && fileMissing(ssl.Key) && !fileMissing(ssl.Certificate) {
					key = k + "key"
				}
				bad(key, "certificate %s with key %s: %v", ssl.Certificate, ssl.Key, err)
			}
		}
	}

	for _, a := range []struct{ key, addr string }{{"input.beats.listen", c.Input.Beats.Listen}, {"admin.listen", c.Admin.Listen}} {
		if skip[a.key] {
			continue
		}
		if err := checkListen(a.addr); err != nil {
			bad(a.key, "%v", err)
		}
	}

	if len(ps) == 0 {
		return nil
	}
	for _, p := range ps {
		p.File = l.name
		p.Line = keyLine(l.data, splitKey(p.Key))
	}
	sortProblems(ps)
	return joinProblems(ps)
}

// checkDir does what starting logpond needs of a store directory: dir is
// a directory this user can create files in, or it does not exist and its
// parent is one (logpond creates dir, not its parents).
func checkDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%q: %v", dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s is not a directory", abs)
	case err == nil:
		if err := unix.Access(abs, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("%s is not writable by this user (uid %d): %v; give it to the user logpond runs as", abs, os.Getuid(), err)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %v", abs, err)
	}
	parent := filepath.Dir(abs)
	st, err = os.Stat(parent)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist, nor does its parent %s: logpond creates only the directory itself; create the parent (on the device meant for this store), or fix the path", abs, parent)
	case err != nil:
		return fmt.Errorf("parent directory %s: %v", parent, err)
	case !st.IsDir():
		return fmt.Errorf("parent %s of %s is not a directory", parent, abs)
	}
	if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("%s does not exist and its parent %s is not writable by this user (uid %d), so logpond could not create it: %v; create it for the user logpond runs as", abs, parent, os.Getuid(), err)
	}
	return nil
}

// checkKeyPair loads a client certificate and its key as logpond does at
// start.
func checkKeyPair(cert, key string) error {
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return fmt.Errorf("certificate %s with key %s: %w", cert, key, err)
	}
	return nil
}

func fileMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// checkCA reads a PEM bundle as logpond does at start.
func checkCA(path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}

// checkListen binds addr and releases it at once. Port 0 (any free port)
// and "" (disabled) need no check.
func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var hint string
		if errors.Is(err, unix.EADDRINUSE) {
			hint = " (the port is in use: by another program, or by the logpond this configuration is meant to replace — then check again once it stopped, or with -skip-host-checks)"
		}
		return fmt.Errorf("cannot listen on %q: %v%s", addr, err, hint)
	}
	return ln.Close()
}

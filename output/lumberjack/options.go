package lumberjack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/logpond/logpond/output/processors"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
)

// Options configures an Output. The server fills it from its
// configuration. Name, Cursor, Hosts, Workers, BulkMaxSize, Timeout,
// BackoffInit and BackoffMax must be set (no zero defaults): CheckOptions
// names those missing or out of range.
type Options struct {
	// Name is the output's name: logs carry it as the "output" attribute
	// and errors and Waiting name it.
	Name string
	// Cursor names the output's ledger cursor.
	Cursor string
	// Hosts are the Lumberjack v2 servers, "host:port", at least one.
	Hosts []string
	// LoadBalance spreads batches over every host that answers; without
	// it, one host at a time takes every batch until it fails, and then
	// another does (failover): chosen at random, with no precedence among
	// Hosts, as Filebeat's output.logstash does.
	LoadBalance bool
	// Workers is the number of connections per host, each with one batch
	// in flight at a time.
	Workers int
	// BulkMaxSize is the most events in one batch (one Lumberjack
	// window).
	BulkMaxSize int
	// CompressionLevel is the zlib level of each window, 0 (none) to 9.
	CompressionLevel int
	// Timeout bounds connecting, writing a batch and each wait for an
	// ACK (a receiver's keepalive, an ACK of 0 events, starts a new
	// wait). A batch that times out is sent again.
	Timeout time.Duration
	// TTL, when positive, closes a connection that has been open this
	// long before its next batch and opens a new one (so that a DNS
	// name or a load balancer in front of the hosts is asked again); 0
	// keeps connections until they fail.
	TTL time.Duration
	// BackoffInit and BackoffMax bound the wait before connecting again
	// to a host that failed: it doubles with each failure in a row, from
	// BackoffInit up to BackoffMax, and starts again after an ACK.
	BackoffInit, BackoffMax time.Duration
	// TLS, when set, is the client side of TLS to every host (nil: plain
	// TCP). See TLSConfig. The Output uses a clone.
	TLS *tls.Config
	// CurrentTLS, when set, gives the TLS configuration of each new
	// connection, asked at every dial (one that is reloaded when its files
	// change: package tlsfiles), in place of TLS. It must not change the
	// configurations it returns.
	CurrentTLS func() *tls.Config
	// Chain is the processor chain run on every event before it is
	// sent (docs/configuration.md, "Processors"); nil sends events as
	// stored.
	Chain *processors.Chain
	// DeadLetters keeps the events a receiver refuses alone while it
	// takes other windows (isolate.go): each is written there, synced,
	// before it counts as done. nil: such an event is sent again for
	// ever, and the cursor waits before it.
	DeadLetters *dlq.Store
	// UnreadableAfter is how long the ledger's device must have failed
	// every read of the same sealed segment, while answering reads
	// elsewhere, before the output takes the bytes it will not return
	// for damage and passes them (ledger.Reader.PassUnreadable). Until
	// then, and for ever when it is 0, the read is retried and nothing is
	// skipped (docs/design.md, §7).
	UnreadableAfter time.Duration
	// Logger receives the output's log lines; nil for slog.Default.
	Logger *slog.Logger
}

// CheckOptions returns the error New would return for opts. It contacts
// nobody.
func CheckOptions(opts Options) error { return opts.check() }

func (opts *Options) check() error {
	var bad drain.Unset
	bad.Check("Name", opts.Name != "")
	bad.Check("Cursor", opts.Cursor != "")
	bad.Check("Hosts", len(opts.Hosts) > 0)
	bad.Check("Workers", opts.Workers >= 1)
	bad.Check("BulkMaxSize", opts.BulkMaxSize >= 1)
	bad.Check("CompressionLevel", opts.CompressionLevel >= 0 && opts.CompressionLevel <= 9)
	// go-lumber sets its deadlines at now+Timeout: 0 would fail every
	// read and write at once.
	bad.Check("Timeout", opts.Timeout > 0)
	bad.Check("TTL", opts.TTL >= 0)
	bad.Check("BackoffInit", opts.BackoffInit > 0)
	bad.Check("BackoffMax", opts.BackoffMax >= opts.BackoffInit)
	bad.Check("UnreadableAfter", opts.UnreadableAfter >= 0)
	if len(bad) > 0 {
		return fmt.Errorf("lumberjack: output %q: options unset or out of range: %s", opts.Name, strings.Join(bad, ", "))
	}
	for _, h := range opts.Hosts {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("lumberjack: output %q: host %q: want host:port", opts.Name, h)
		}
	}
	return nil
}

// TLSConfig builds the client side of TLS to Lumberjack hosts from PEM
// files. cas are the certificate authorities that sign the hosts'
// certificates (none: the system's roots). cert and key, both set or both
// empty, are the client certificate a host that requires one verifies.
// verificationMode is "full" (or ""): the chain and the host name are
// verified; "certificate": the chain only (hosts reached by an address
// their certificate does not name); "none": nothing, which lets anyone on
// the path read and alter the events. Errors name the file and what is
// wrong with it.
func TLSConfig(cas []string, cert, key, verificationMode string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cas) > 0 {
		pool := x509.NewCertPool()
		for _, f := range cas {
			pem, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("lumberjack: TLS certificate authority: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("lumberjack: TLS certificate authority %s holds no PEM certificate", f)
			}
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key != "":
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("lumberjack: TLS client certificate %s / key %s: %w", cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	case cert != "" || key != "":
		return nil, errors.New("lumberjack: TLS client certificate and key go together: set both or neither")
	}
	switch verificationMode {
	case "", "full":
	case "certificate":
		// crypto/tls verifies the chain and the name together; to verify
		// the chain alone, turn its check off and do the chain here.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true //nolint:gosec // the chain is verified below
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("lumberjack: the host sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			if err != nil {
				return fmt.Errorf("lumberjack: the host's certificate: %w", err)
			}
			return nil
		}
	case "none":
		cfg.InsecureSkipVerify = true //nolint:gosec // only when the user asks for verification_mode = none
	default:
		return nil, fmt.Errorf("lumberjack: TLS verification mode %q: use full, certificate or none", verificationMode)
	}
	return cfg, nil
}

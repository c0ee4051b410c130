package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/tlsfiles"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/kafka"
	"github.com/logpond/logpond/output/lumberjack"
)

// cursorsNotSaved are the outputs' errors for a final cursor they could
// not persist when they stopped (their device full, say). A restart
// resends what came after the persisted cursor under the same ids: not a
// failure of the stop.
var cursorsNotSaved = []error{elasticsearch.ErrCursorNotSaved, lumberjack.ErrCursorNotSaved, kafka.ErrCursorNotSaved}

// newOutputRunner checks the output's options (it contacts nobody) and
// returns its runner.
func (s *Server) newOutputRunner(o conf.NamedOutput) (*outputRunner, error) {
	out := &outputRunner{name: o.Name, typ: o.Type, key: o.Key, conf: o, failed: s.outputFailed, maxLag: o.MaxLagBytes()}
	// One chain per output for its lifetime: its counters go on across
	// the drains a failing ledger makes the output open again.
	chain, err := Chain(s.cfg, o)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	out.chain = chain
	startAt := o.StartAt()
	var newDrain func(l *ledger.Ledger, d *dlq.Store) (drain, error)
	switch o.Type {
	case conf.TypeElasticsearch:
		opts, err := elasticsearchOptions(s.cfg, o)
		if err != nil {
			return nil, err
		}
		t := o.Elasticsearch.TLS
		tlsSrc, err := tlsfiles.New(func() (*tls.Config, error) { return esTLS(o, opts.InsecureSkipVerify) }, nonEmpty(t.CA, t.Cert, t.Key)...)
		if err != nil {
			return nil, err
		}
		s.tlsSources = append(s.tlsSources, namedTLS{key: o.Key + ".tls", src: tlsSrc})
		opts.CurrentTLS = tlsSrc.Config
		out.creds = elasticsearch.NewCredentials(opts.Username, opts.Password, opts.APIKey)
		opts.Credentials = out.creds
		opts.Chain = out.chain
		opts.Local, opts.Logger, opts.Observer = s.acks, s.log, esObserver{m: s.metrics, output: o.Name}
		s.metrics.esSeries(o.Name)
		if err := elasticsearch.CheckOptions(opts); err != nil {
			return nil, fmt.Errorf("server: %s: %w", o.Key, err)
		}
		newDrain = func(l *ledger.Ledger, d *dlq.Store) (drain, error) {
			opts := opts
			opts.DeadLetters = d
			e, err := elasticsearch.New(l, opts)
			if err != nil {
				return nil, err
			}
			return esDrain{e}, nil
		}
	case conf.TypeLumberjack:
		opts, tlsSrc, err := lumberjackOptions(o)
		if err != nil {
			return nil, err
		}
		s.addSSL(o, tlsSrc)
		opts.Chain = out.chain
		opts.Logger = s.log
		if err := lumberjack.CheckOptions(opts); err != nil {
			return nil, fmt.Errorf("server: %s: %w", o.Key, err)
		}
		newDrain = func(l *ledger.Ledger, d *dlq.Store) (drain, error) {
			opts := opts
			opts.DeadLetters = d
			o, err := lumberjack.New(l, opts)
			if err != nil {
				return nil, err
			}
			return ljDrain{o}, nil
		}
	case conf.TypeKafka:
		opts, tlsSrc, err := kafkaOptions(o)
		if err != nil {
			return nil, err
		}
		s.addSSL(o, tlsSrc)
		opts.Chain = out.chain
		opts.Logger = s.log
		if err := kafka.CheckOptions(opts); err != nil {
			return nil, fmt.Errorf("server: %s: %w", o.Key, err)
		}
		newDrain = func(l *ledger.Ledger, d *dlq.Store) (drain, error) {
			opts := opts
			opts.DeadLetters = d
			k, err := kafka.New(l, opts)
			if err != nil {
				return nil, err
			}
			return kafkaDrain{k}, nil
		}
	default:
		return nil, fmt.Errorf("server: %s: outputs of type %q are not supported", o.Key, o.Type)
	}
	maxBytes, maxAge := o.DeadLetterLimits()
	out.openDeadLetters = func() (*dlq.Store, error) { return s.openDeadLetters(o, maxBytes, maxAge) }
	out.deadLetterMaxBytes = int64(maxBytes)
	out.newDrain = func(l *ledger.Ledger, d *dlq.Store) (drain, error) {
		if err := startCursor(l, o.Name, startAt, s.log); err != nil {
			return nil, err
		}
		return newDrain(l, d)
	}
	return out, nil
}

// addSSL keeps the TLS source of an output's ssl section (nil: none),
// which Reload reads again.
func (s *Server) addSSL(o conf.NamedOutput, src *tlsfiles.Source) {
	if src != nil {
		s.tlsSources = append(s.tlsSources, namedTLS{key: o.Key + ".ssl", src: src})
	}
}

// esTLS is the client side of TLS of the Elasticsearch output o, read
// from the files its tls section names (the CA bundle, the client
// certificate and key).
func esTLS(o conf.NamedOutput, insecure bool) (*tls.Config, error) {
	var ca []byte
	if path := o.Elasticsearch.TLS.CA; path != "" {
		var err error
		if ca, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("server: %s.tls.ca: %w", o.Key, err)
		}
	}
	cert, err := clientCert(o)
	if err != nil {
		return nil, err
	}
	return elasticsearch.TLSConfig(o.Key, ca, cert, insecure)
}

// clientCert loads the client certificate of the Elasticsearch output o
// (its tls.cert and tls.key), or returns nil when it has none.
func clientCert(o conf.NamedOutput) (*tls.Certificate, error) {
	t := o.Elasticsearch.TLS
	if t.Cert == "" && t.Key == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("server: %s.tls.cert and tls.key: %w", o.Key, err)
	}
	return &cert, nil
}

// startCursor places the cursor of a new output (one the ledger never had
// a cursor for) as its start_at says: "newest" at the ledger's last record,
// so that it sends only what arrives from now on; "oldest" (the default)
// is where the output's first read of its cursor puts it: before the
// oldest record the ledger still holds. An output whose cursor file was
// damaged and set aside is no new output: it starts from the oldest
// record whatever start_at says, logged at ERROR.
func startCursor(l *ledger.Ledger, name, startAt string, log *slog.Logger) error {
	if startAt != "newest" {
		return nil
	}
	if _, ok := l.Cursors()[name]; ok {
		return nil
	}
	if l.CursorSetAside(name) {
		// Not a new output: one whose cursor file was damaged. Its
		// backlog is still to be delivered; "newest" would skip it.
		log.Error("output's cursor file was damaged and set aside: it starts again from the oldest record the ledger holds, not at the newest (start_at applies only to an output that never had a cursor); events it had delivered are sent again",
			"output", name, "start_at", startAt, "first_lsn", l.FirstLSN())
		return nil
	}
	last := l.LastLSN()
	if err := l.SetCursor(name, last); err != nil {
		return fmt.Errorf("place the new output's cursor at the newest record: %w", err)
	}
	log.Info("new output starts at the newest record (start_at = \"newest\"): it sends nothing the ledger held before", "output", name, "cursor_lsn", last)
	return nil
}

// esDrain is an Elasticsearch output as a drain.
type esDrain struct{ *elasticsearch.Output }

// openDeadLetters opens the dead-letter store of the output o, bounded by
// its dead_letter_max_bytes and dead_letter_max_age.
func (s *Server) openDeadLetters(o conf.NamedOutput, maxBytes conf.Size, maxAge conf.Duration) (*dlq.Store, error) {
	dir := deadLetterDir(s.cfg.Ledger.Dir, o.Name)
	// dlq.Open creates its own directory (and fsyncs its parent) when the
	// parent exists: prepare only <ledger.dir>/dlq.
	if _, err := s.prepareDir(o.Key+" dead-letter store", filepath.Dir(dir)); err != nil {
		return nil, err
	}
	dopts := deadLetterOptions(s.cfg, maxBytes, maxAge)
	dopts.Logger = s.log.With("output", o.Name)
	d, err := dlq.Open(dir, dopts)
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", o.Key, err)
	}
	return d, nil
}

// orphanCursors are the ledger's cursors that no enabled output owns, by
// name: an output removed from the configuration (or disabled) left them,
// and each holds the ledger back.
func (s *Server) orphanCursors(cursors map[string]uint64) []string {
	var names []string
	for name := range cursors {
		if s.outputs.byName(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// reportOrphanCursors warns at start of every cursor no configured output
// owns: retention keeps what it has not passed, so it holds the ledger
// until the operator deletes it.
func (s *Server) reportOrphanCursors(l *ledger.Ledger) {
	cursors := l.Cursors()
	for _, name := range s.orphanCursors(cursors) {
		s.log.Warn("a ledger cursor belongs to no configured output: it holds the ledger back (retention keeps what it has not passed); if the output was removed for good, release it with `ledgerctl cursors delete "+name+"`",
			"cursor", name, "cursor_lsn", cursors[name], "held_bytes", l.BytesAfter(cursors[name]))
	}
}

// outputNames lists the outputs' names, for messages.
func (set outputSet) names() string {
	names := make([]string, len(set))
	for i, o := range set {
		names[i] = o.name
	}
	return strings.Join(names, ", ")
}

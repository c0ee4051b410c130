package elasticsearch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/logpond/logpond/output/processors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	es "github.com/elastic/go-elasticsearch/v8"

	"github.com/logpond/logpond/internal/hosturl"
	"github.com/logpond/logpond/internal/waitlog"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
	"github.com/logpond/logpond/output/sprintf"
)

// Options configures an Output. The server fills it from the output's
// section of the configuration ([output.elasticsearch], or
// [output.elasticsearch.NAME] for a named output); every field must be set
// (no zero defaults).
type Options struct {
	// Name is the output's configured name ("elasticsearch", "siem", …):
	// the "output" attribute of every line the output logs, so that the
	// lines of several outputs draining one ledger can be told apart.
	Name string
	// Key is the output's configuration key ("output.elasticsearch" or
	// "output.elasticsearch.siem"): messages that point the operator to a
	// setting name it under this key.
	Key string
	// Hosts are the cluster's URLs. They carry no credentials (New
	// refuses user info in them): those go in Username, Password or
	// APIKey, which never print.
	Hosts []string
	// Username and Password are HTTP basic credentials; APIKey, when set,
	// is sent instead. Secrets print as "<redacted>" however Options is
	// printed or logged.
	Username           string
	Password           Secret
	APIKey             Secret
	CACert             []byte // PEM; nil for the system roots
	InsecureSkipVerify bool   // tls.verification_mode = none
	// ClientCert, when set, is presented to hosts that ask for a client
	// certificate (Elasticsearch's PKI realm, or a proxy that requires
	// one).
	ClientCert *tls.Certificate
	// CurrentTLS, when set, gives the TLS configuration of each new
	// connection, asked when it opens (one reloaded when its files
	// change: package tlsfiles), in place of CACert, ClientCert and
	// InsecureSkipVerify. It must not change the configurations it
	// returns.
	CurrentTLS func() *tls.Config
	// HungAfter is the least time a request may go unanswered before
	// Waiting says the cluster does not answer (hung.go); 0 means
	// DefaultHungAfter.
	HungAfter time.Duration
	// Credentials, when set, are the credentials every request carries,
	// which the caller may replace while the output runs, in place of
	// Username, Password and APIKey.
	Credentials   *Credentials
	Index         *sprintf.Format
	FallbackIndex string
	Pipeline      *sprintf.Format // nil for none
	// DataStream says which events go to a data stream rather than to
	// Index: none (DataStreamOff), those that carry a data_stream object
	// (DataStreamAuto), or all (DataStreamAlways).
	DataStream DataStreamMode
	// DataStreamType, DataStreamDataset and DataStreamNamespace name the
	// data stream "{type}-{dataset}-{namespace}" of an event whose
	// data_stream object lacks that part (or that has none).
	DataStreamType      string
	DataStreamDataset   string
	DataStreamNamespace string
	// DataStreamSyncFields completes each data stream event's
	// data_stream object with the values it was routed by.
	DataStreamSyncFields bool
	// DerivedIDs is document_id = "auto": every create carries an id
	// (@metadata._id or one derived from the event's place in the ledger).
	DerivedIDs bool
	// Workers is the most bulk requests in flight. The output adapts how
	// many it sends at once between 1 and Workers (and paces them when the
	// cluster refuses part of the work), unless FixedConcurrency is set:
	// then Workers requests are in flight whenever there is work.
	Workers          int
	FixedConcurrency bool
	// Local, when set, lets the adaptive controller give way to
	// logpond's own acknowledgements (see LocalLoad).
	Local      LocalLoad
	FlushBytes int
	// FlushInterval is the longest a request that is not full waits for
	// more events, and how often the cursor is persisted. The request
	// goes sooner once events stop arriving: when the ledger has not
	// grown for twice LedgerFlushInterval (drain.ReadHooks.Linger).
	FlushInterval time.Duration
	// LedgerFlushInterval is the server's ledger.flush_interval, how
	// often the ledger grows while events arrive; 0 makes a request
	// that is not full always wait out FlushInterval.
	LedgerFlushInterval time.Duration
	MaxRequestBytes     int
	// MaxRecordBytes is the largest record of several events the input
	// builds (a record of one event may be larger: the event's size).
	// Buffers that hold FlushBytes and one such record are kept for
	// reuse; buffers grown larger, for outsized events, are not.
	MaxRecordBytes int
	Gzip           bool
	Timeout        time.Duration
	RetryInitial   time.Duration
	RetryMax       time.Duration
	// Cursor names the output's ledger cursor.
	Cursor string
	// UnreadableAfter is how long the ledger's device must have failed
	// every read of the same sealed segment, while answering reads
	// elsewhere, before the output takes the bytes it will not return
	// for damage and passes them (ledger.Reader.PassUnreadable): their
	// records are lost, logged, quarantined as far as they can be and
	// counted like damaged ones. Until then, and for ever when it is 0,
	// the read is retried and nothing is skipped (docs/design.md, §7).
	UnreadableAfter time.Duration
	// Chain is the processor chain run on every event before it is
	// encoded (docs/configuration.md, "Processors"); nil sends events as
	// stored.
	Chain *processors.Chain
	// DeadLetters keeps events Elasticsearch rejects for good. The Output
	// appends to it; its owner closes it after Run returned.
	DeadLetters *dlq.Store
	Logger      *slog.Logger
	// Observer, when set, receives measurements for metrics.
	Observer Observer
}

// DataStreamMode is Logstash's data_stream setting: which events the
// output sends to a data stream.
type DataStreamMode int

const (
	// DataStreamOff sends every event to Index.
	DataStreamOff DataStreamMode = iota
	// DataStreamAuto sends an event with a data_stream object to its data
	// stream, and any other event to Index: one output serves Elastic
	// Agents and classic Beats alike.
	DataStreamAuto
	// DataStreamAlways sends every event to a data stream.
	DataStreamAlways
)

// Secret holds a credential. However it is printed — any fmt verb, %+v of
// a struct holding it (also through unexported fields, where fmt bypasses
// methods: it then shows a pointer), slog, encoding/json or TOML — it shows
// "<redacted>", or "" when empty. Only Reveal returns the credential. The
// zero Secret is empty.
type Secret struct{ p *string }

// NewSecret returns a Secret holding s.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{p: &s}
}

// Reveal returns the credential, for the one place that sends it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

const redacted = "<redacted>"

// String returns "<redacted>", or "" when s is empty.
func (s Secret) String() string {
	if s.p == nil || *s.p == "" {
		return ""
	}
	return redacted
}

// GoString is String: %#v shows no credential either.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// Format prints String with any verb and flags.
func (s Secret) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// MarshalText returns String: encoders show no credential.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue returns String: slog shows no credential.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Observer receives the output's measurements. Its methods are called
// from the workers and must be quick.
type Observer interface {
	// Request: one bulk request took d; status is 0 and err says why
	// when nothing was answered (refused connection, timeout, …).
	Request(d time.Duration, status int, err error)
	// Items: n items ended with status and outcome ("done", "conflict",
	// "retry", "dead"); errType is Elasticsearch's error type ("" for
	// successes). Done, conflict and retry are reported per response;
	// dead once the dead letters are written (synced), whatever made them
	// dead: an item refused for good, a request refused as a whole (400,
	// 413) down to its one offending event, or an event no request can
	// carry (too large, or not JSON: status 0, Elasticsearch was not
	// asked).
	Items(status int, outcome, errType string, n int)
}

// Output drains a ledger into Elasticsearch from its cursor
// (docs/design.md, §7).
// Run it once; it stops when its context ends.
//
// Promise: the cursor is persisted only at an LSN up to which every event
// is stored in Elasticsearch (2xx, or 409 on a create with its id) or
// synced in the dead-letter store. Events are sent as create actions with
// ids that depend only on where they are stored, so sending a record again
// after a restart stores nothing twice.
//
// One output, one cluster: its hosts are asked which cluster they belong
// to before anything is sent (cluster.go); when two report different
// clusters it sends nothing until restarted with another configuration,
// and Misconfigured says why.
type Output struct {
	opts      Options
	ledger    *ledger.Ledger
	client    *es.Client
	transport *http.Transport
	pool      *bufPool // batch buffers
	maxKeep   int      // keptBufferBytes
	log       *slog.Logger
	idPrefix  string
	stats     counters
	// metaOnlyIndex: the index template reads only @metadata fields (no
	// date), so events with equal @metadata bytes share an index name.
	metaOnlyIndex bool

	// inflight tracks the requests in flight and the usual response time.
	inflight *inflight
	// deadLog logs the dead letters as they are written.
	deadLog *drain.DeadLetterLog
	live    atomic.Pointer[live] // the running drain's state, for Stats

	// src passes damaged and skipped ranges of the ledger and retries
	// its failing reads, counting them.
	src *drain.Source
	// cursor persists the output's cursor at the tracker's done LSN.
	cursor *drain.Cursor

	// cluster holds sending until the hosts are known to belong to one
	// cluster (cluster.go).
	cluster *clusterCheck

	mu         sync.Mutex      // guards the outage state below
	down       waitlog.Episode // the last request failed as a whole
	downReason string
}

// ErrCursorNotSaved: Run could not persist its final cursor (the ledger's
// device full, …). Nothing is lost: the next Run resends the events after
// the persisted cursor, under the same document ids.
var ErrCursorNotSaved = errors.New("elasticsearch: the final cursor could not be persisted")

// CheckOptions returns the error New would return for opts, but for
// DeadLetters, which it does not check: a caller can check its
// configuration before the dead-letter store (and the ledger) are open.
func CheckOptions(opts Options) error { return opts.check(false) }

// check returns what is wrong with opts; DeadLetters is checked when
// stores is set.
func (opts *Options) check(stores bool) error {
	bad := opts.incomplete()
	if !stores {
		bad = slices.DeleteFunc(bad, func(name string) bool { return name == "DeadLetters" })
	}
	if len(bad) > 0 {
		return fmt.Errorf("elasticsearch: incomplete options: %s", strings.Join(bad, ", "))
	}
	for _, h := range opts.Hosts {
		if _, ui, err := hosturl.Split(h); err != nil {
			return fmt.Errorf("elasticsearch: host: %w", err)
		} else if ui != nil {
			return fmt.Errorf("elasticsearch: host %q carries credentials: set Username and Password instead", hosturl.Redact(h))
		}
	}
	if len(opts.CACert) > 0 && !x509.NewCertPool().AppendCertsFromPEM(opts.CACert) {
		return fmt.Errorf("elasticsearch: %s.tls.ca holds no PEM certificate", opts.Key)
	}
	return nil
}

// dialFunc dials a connection, as net.Dialer's DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// newTransport is the output's HTTP transport: plain connections dialed
// with dial and wrapped to write bulk bodies whole (bodyConn), https ones
// with dialTLS.
func newTransport(dial, dialTLS dialFunc, tlsCfg *tls.Config, workers int) *http.Transport {
	return &http.Transport{
		Proxy:       http.ProxyFromEnvironment,
		DialContext: bodyDialer(dial),
		// Through a proxy, the transport's own TLS, with the
		// configuration at start; every other https connection takes the
		// one in place when it opens (DialTLSContext), so that rotated
		// TLS files apply without a restart.
		TLSClientConfig:     tlsCfg,
		DialTLSContext:      dialTLS,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
	}
}

// New prepares an Output over l. It contacts nobody until Run.
func New(l *ledger.Ledger, opts Options) (*Output, error) {
	if err := opts.check(true); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HungAfter <= 0 {
		opts.HungAfter = DefaultHungAfter
	}
	prefix, err := idPrefix(l.StreamID())
	if err != nil {
		return nil, err
	}
	currentTLS := opts.CurrentTLS
	if currentTLS == nil {
		tlsCfg, err := TLSConfig(opts.Key, opts.CACert, opts.ClientCert, opts.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		currentTLS = func() *tls.Config { return tlsCfg }
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	transport := newTransport(dialer.DialContext, tlsDialer(dialer, currentTLS), currentTLS(), opts.Workers)
	creds := opts.Credentials
	if creds == nil {
		creds = NewCredentials(opts.Username, opts.Password, opts.APIKey)
	}
	log := opts.Logger.With("output", opts.Name)
	cluster, err := newClusterCheck(&opts, transport, creds, log)
	if err != nil {
		return nil, err
	}
	client, err := es.NewClient(es.Config{
		Addresses: opts.Hosts,
		Transport: clusterGate{c: cluster, next: authTransport{creds, plainMediaTypes{lengthTransport{transport}}}},
		// Retries are the output's own: it must decide per item, keep
		// backing off for ever, and log the outage once. A failed
		// request still marks its host dead in the client's pool, so the
		// next attempt goes to another host (failover).
		DisableRetry:             true,
		CompressRequestBody:      opts.Gzip,
		CompressRequestBodyLevel: 1, // Filebeat's default level: most of the gain for little CPU
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch: %w", err)
	}
	metaOnly := !opts.Index.UsesTimestamp()
	for _, f := range opts.Index.Fields() {
		metaOnly = metaOnly && strings.HasPrefix(f, "[@metadata]")
	}
	maxKeep := keptBufferBytes(opts.FlushBytes, opts.MaxRecordBytes)
	// Room for two batches per worker: while a chunk's events make more
	// than one request, a worker fills the next batch while the last one
	// is in flight (and the transport may hold its body a little longer).
	// With room for one per worker, every such split let a buffer go to
	// the GC and made a new one for the next. Keeping them adds no
	// memory: the pool only ever holds buffers that were in use at once.
	pool := newBufPool(2*opts.Workers, opts.FlushBytes+opts.FlushBytes/4, maxKeep)
	return &Output{opts: opts, ledger: l, client: client, transport: transport, pool: pool, maxKeep: maxKeep,
		metaOnlyIndex: metaOnly, log: log, idPrefix: prefix, cluster: cluster,
		cursor: drain.NewCursor(l, opts.Cursor, log, "sent"), deadLog: drain.NewDeadLetterLog(log), inflight: newInflight(),
		src: drain.NewSource(drain.SourceOptions{Ledger: l, Log: log, UnreadableAfter: opts.UnreadableAfter, Sent: "sent", Sending: "delivery", Chain: opts.Chain,
			LedgerFlushInterval: opts.LedgerFlushInterval})}, nil
}

// keptBufferBytes is the largest buffer the output keeps for reuse (a
// chunk's records, a request's lines or its kept entries): room for
// flushBytes and one record of maxRecord bytes, the most a chunk of
// ordinary records holds, and a quarter more (a request adds its action
// lines; a slice grows by a quarter at a time). A buffer that grew beyond
// it, for an event larger than a record of several events may be, is left
// to the GC once used, as the ledger writer does with its buffer:
// otherwise a burst of such events would leave workers + 2 chunks and
// workers requests of their size held for good, outside the memory
// formula.
func keptBufferBytes(flushBytes, maxRecord int) int {
	n := flushBytes + maxRecord
	return n + n/4
}

// incomplete names the options that are unset or out of range, by name
// only: the message shows no value, so no credential.
func (opts *Options) incomplete() drain.Unset {
	var bad drain.Unset
	bad.Check("Name", opts.Name != "")
	bad.Check("Key", opts.Key != "")
	bad.Check("Hosts", len(opts.Hosts) > 0)
	bad.Check("Workers", opts.Workers >= 1)
	bad.Check("FlushBytes", opts.FlushBytes >= 1)
	bad.Check("MaxRequestBytes", opts.MaxRequestBytes >= opts.FlushBytes)
	bad.Check("MaxRecordBytes", opts.MaxRecordBytes >= 1)
	bad.Check("Index", opts.Index != nil)
	bad.Check("DeadLetters", opts.DeadLetters != nil)
	bad.Check("Cursor", opts.Cursor != "")
	bad.Check("RetryInitial", opts.RetryInitial > 0)
	bad.Check("RetryMax", opts.RetryMax >= opts.RetryInitial)
	bad.Check("Timeout", opts.Timeout > 0)
	bad.Check("FlushInterval", opts.FlushInterval > 0)
	return bad
}

// Run drains the ledger until ctx ends or a failure that retrying cannot
// fix (the ledger or the dead-letter store failing), which it returns. On
// return, no request is in flight and the cursor is persisted as far as
// events are done. It returns nil when ctx ended.
func (o *Output) Run(ctx context.Context) error {
	cursor, err := o.ledger.Cursor(o.opts.Cursor)
	if err != nil {
		return fmt.Errorf("elasticsearch: %w", err)
	}
	concurrency := "adaptive"
	if o.opts.FixedConcurrency {
		concurrency = "fixed"
	}
	o.log.Info("draining the ledger", "cursor", o.opts.Cursor, "from_lsn", cursor+1, "hosts", o.opts.Hosts,
		"workers", o.opts.Workers, "concurrency", concurrency)
	tr := drain.NewTracker(cursor)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Memory bound (conf.Config.OutputBytes): one chunk being filled, one
	// queued (a worker that finishes one finds the next ready; more
	// read-ahead only holds memory) and Workers being turned into
	// requests, each at most FlushBytes of records or one larger record
	// (read); per worker the request being built from its chunk (about
	// FlushBytes) and one kept in the pool; and the retry queue (Workers ×
	// FlushBytes, plus one request per worker: see retryQueue).
	rq := newRetryQueue(o.opts.Workers * o.opts.FlushBytes)
	defer rq.close()
	ctl := newController(!o.opts.FixedConcurrency, o.opts.Workers, o.opts.FlushBytes, o.opts.RetryInitial, o.opts.RetryMax)
	ctl.local = o.opts.Local
	// While the drain gives way to acknowledgements, its reader and
	// workers leave a P free for them (drain.CPUGate).
	gate := drain.NewCPUGate(ctl.yielding)
	o.live.Store(&live{tr: tr, rq: rq, ctl: ctl})
	defer o.live.Store(nil)
	chunks := make(chan *chunk, 1)
	free := make(chan *chunk, o.opts.Workers+2) // chunk buffers for reuse
	errs := make(chan error, o.opts.Workers+2)
	var wg sync.WaitGroup
	for range o.opts.Workers {
		wg.Go(func() {
			w := &worker{o: o, tr: tr, rq: rq, ctl: ctl, cpu: gate.Turn(), proc: o.src.Processor()}
			if err := w.run(ctx, chunks, free); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Go(func() { o.probeWhileDown(ctx, probeInterval, ctl, rq) })
	wg.Go(func() {
		if err := o.read(ctx, cursor+1, tr, chunks, free, gate.Turn()); err != nil && ctx.Err() == nil {
			errs <- err
			cancel()
		}
	})
	commitDone := make(chan struct{})
	go func() {
		defer close(commitDone)
		// Every FlushInterval: the cursor lags what is done by up to one
		// interval, which the document ids make harmless to resend.
		o.cursor.Commit(ctx, tr, cursor, o.opts.FlushInterval, "every "+o.opts.Key+".flush_interval")
	}()
	// The workers send nothing before it has asked every host which
	// cluster it belongs to; it ends early once it knows them all.
	clusterDone := make(chan struct{})
	go func() {
		defer close(clusterDone)
		o.cluster.run(ctx)
	}()
	wg.Wait()
	cancel()
	<-commitDone
	<-clusterDone
	// The final persist: what the workers finished before the stop.
	var runErr error
	select {
	case runErr = <-errs:
	default:
	}
	done, err := o.cursor.Final(tr, cursor, ErrCursorNotSaved)
	if err != nil {
		runErr = errors.Join(runErr, err)
	}
	// Run is called once: release the client's connections and its
	// goroutines (it schedules one per dead host to bring it back).
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := o.client.Close(cctx); err != nil {
		o.log.Warn("closing the Elasticsearch client", "err", err)
	}
	o.transport.CloseIdleConnections()
	o.log.Info("drain stopped", "cursor_lsn", done, "err", runErr)
	return runErr
}

// vendorMediaType starts the media types of Elasticsearch's REST API
// compatibility ("application/vnd.elasticsearch+json;compatible-with=8").
const vendorMediaType = "application/vnd.elasticsearch+"

// plainMediaTypes sends every request with plain media types (Accept:
// application/json; Content-Type: application/json, or
// application/x-ndjson for a bulk body) where the client set the
// compatibility ones. The client sets those when
// ELASTIC_CLIENT_APIVERSIONING=true is in logpond's environment, asking for
// the API of version 8, which 7.x refuses outright and a later major may
// not offer; logpond's requests (GET /, _bulk) are alike from 7.x to 9.x,
// so plain types work against every version logpond supports, whatever
// the environment says.
type plainMediaTypes struct{ next http.RoundTripper }

// RoundTrip rewrites the headers on a copy of the request (a RoundTripper
// must not change the one it is given), sharing its body.
func (t plainMediaTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	accept, ctype := req.Header.Get("Accept"), req.Header.Get("Content-Type")
	vendorAccept := hasPrefixFold(accept, vendorMediaType)
	vendorType := hasPrefixFold(ctype, vendorMediaType)
	if !vendorAccept && !vendorType {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if vendorAccept {
		r.Header.Set("Accept", "application/json")
	}
	if vendorType {
		// The client names a bulk body "+json" too: the path tells.
		plain := "application/json"
		if strings.HasSuffix(req.URL.Path, "/_bulk") || hasPrefixFold(ctype, vendorMediaType+"x-ndjson") {
			plain = "application/x-ndjson"
		}
		r.Header.Set("Content-Type", plain)
	}
	return t.next.RoundTrip(r)
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case: media types are
// case-insensitive.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

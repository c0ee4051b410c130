// Package estest is an in-process stand-in for an Elasticsearch node (7.x,
// 8.x or 9.x; Options.Version) that speaks enough of the REST API for
// logpond's Elasticsearch output. It stores documents in memory, byte for
// byte as received, and can inject the failures a real cluster produces:
// per-item 429 rejections, whole-request 503s, dropped connections,
// latency, refused connections (Pause), and arbitrary item or request
// failures chosen by hooks.
//
// What it speaks:
//   - GET and HEAD / (the info go-elasticsearch's product check reads),
//     with the version's number, Lucene and compatibility versions;
//   - GET /_license: an active basic license (what x-pack Beats and
//     Elastic Agent check when they connect);
//   - the bulk API (/_bulk, /{index}/_bulk) with create, index and delete
//     actions (update is refused), NDJSON or JSON bodies, gzip or deflate,
//     and filter_path on its answer (names and "*"; the forms it does not
//     know return the whole answer);
//   - read endpoints for inspection: _count, _refresh, _cat/indices,
//     a match_all _search, GET /{index}/_doc/{id}; a data stream's name
//     selects its backing index in them.
//
// What it enforces, with Elasticsearch's statuses, error types and texts:
//   - request validation: Content-Type, query parameters, body size
//     (MaxContentLength), malformed action lines, ids, index names, source
//     JSON (syntax, nesting depth, duplicate keys, UTF-8);
//   - the version's REST behaviour: X-Elastic-Product on every answer from
//     7.14 on; compatible-with=N in Accept and Content-Type accepted for N
//     equal to the node's major or, from 8, the previous one (others, or a
//     versioned header on one side only when there is a body, are answered
//     400 media_type_header_exception); "_type":"_doc" in 7.x answers;
//   - data streams (from 7.9): a name matching Options.DataStreamPatterns
//     (default BuiltinDataStreamPatterns()) is a data stream, which accepts
//     only create (index and delete are refused), needs a top-level
//     @timestamp that is a date string or a number, must not start with
//     ".ds-", and stores into its backing index .ds-NAME-yyyy.MM.dd-000001
//     (the "_index" of its answers; no date before 7.11). Its backing index
//     takes no create, nor an index without if_seq_no/if_primary_term.
//
// It does not model mappings, versions or sequence-number concurrency
// control, rollover, or templates beyond the data stream patterns.
//
// The server binds only to 127.0.0.1. Every goroutine it starts is stopped by
// Close. All exported methods are safe for concurrent use.
package estest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxContentLength is the body limit used when
// Options.MaxContentLength is 0: 100 MiB, Elasticsearch's default
// http.max_content_length.
const DefaultMaxContentLength = 100 << 20

// DefaultVersion is the cluster version GET / reports when Options.Version
// is empty.
const DefaultVersion = "8.17.0"

// Options configures Start. The zero value is a usable configuration.
type Options struct {
	// Addr is the listen address. It must be on host 127.0.0.1; the default
	// "127.0.0.1:0" picks a free port.
	Addr string
	// MaxContentLength is the largest request body accepted, in bytes,
	// counted after gzip or deflate decoding, like Elasticsearch's
	// http.max_content_length. A larger body is answered 413 and stores
	// nothing. 0 means DefaultMaxContentLength; negative values are an error.
	MaxContentLength int64
	// Seed seeds the fault RNG, so a run with the same seed, faults and
	// sequence of requests makes the same fault decisions. Log it in tests.
	Seed int64
	// Version is the Elasticsearch version the node answers as, "X.Y.Z"
	// (7.0.0 or later); default DefaultVersion. Besides GET /'s
	// version.number it decides: data streams (from 7.9), the
	// X-Elastic-Product header (from 7.14), the compatible-with versions
	// accepted (the node's major and, from 8, the previous one),
	// "_type":"_doc" in bulk and get answers (7.x), the backing index
	// names (dated from 7.11) and the data stream error types (7.x
	// mapper_parsing_exception, 8+ document_parsing_exception).
	Version string
	// DataStreamPatterns are the index patterns (`*` is the only wildcard)
	// whose names are data streams, like the index_patterns of index
	// templates with a data_stream section. nil means
	// BuiltinDataStreamPatterns(); an empty non-nil slice means none. On a
	// Version before 7.9 there are no data streams whatever they say.
	DataStreamPatterns []string
	// Users, when set, are the HTTP basic credentials (user → password)
	// the server accepts; APIKeys the API keys (the value after "ApiKey "
	// in the Authorization header, base64 of id:key). With either set,
	// every request must carry accepted credentials, or it is answered 401
	// security_exception, as by a cluster with security on: credential
	// problems can be rehearsed. Neither: anything is accepted.
	Users   map[string]string
	APIKeys []string
	// TLS, when set, makes the server speak https with it (its
	// certificate, and ClientAuth to ask for client certificates); URL
	// then starts with https://.
	TLS *tls.Config
}

// Faults describes the failures the server injects. Probabilities are in
// [0, 1]; values >= 1 always fire and values <= 0 never do. The zero value
// injects nothing.
//
// A bulk request is served in this order: body read (413 if too large),
// RequestHook, Latency, parsing (a malformed request is answered 400 as a
// whole whatever the faults), Drop, Request503, then each item in request
// order: index name and data stream checks (name, op type, backing index),
// ItemReject429, AcceptRate, source JSON check, data stream @timestamp
// check, ItemHook, store. Fault decisions come from the seeded RNG in that order (a
// probability of 0 draws nothing), so they are reproducible for a given
// seed and sequence of requests.
type Faults struct {
	// ItemReject429 is the probability that an individual create, index or
	// delete item is answered 429 es_rejected_execution_exception and not
	// stored.
	ItemReject429 float64
	// AcceptRate, when above 0, is how many create, index and delete
	// items per second the server accepts: an overloaded cluster. Items
	// draw from a token bucket that refills at AcceptRate and holds at
	// most one second's worth (it starts full); an item that finds it
	// empty is answered 429 es_rejected_execution_exception and not
	// stored. It is checked after ItemReject429.
	AcceptRate float64
	// Request503 is the probability that a whole bulk request is answered
	// 503 (nothing stored).
	Request503 float64
	// Drop is the probability that the connection of a bulk request is
	// closed, after its body has been read, without any response (nothing
	// stored).
	Drop float64
	// Latency is added before answering each bulk request. The wait ends
	// early, with no response and nothing stored, if the server is paused or
	// closed or the client goes away.
	Latency time.Duration
	// AnswerCreateAsIndex answers create actions under the key "index" in
	// the response items, as some Elasticsearch-compatible engines do.
	AnswerCreateAsIndex bool
	// ItemHook, when non-nil, is asked about every create, index and delete
	// item that passed the index name and data stream checks,
	// ItemReject429 and the source JSON check, just before it would be
	// stored (index is the item's target, a data stream's name rather than
	// its backing index; source is nil for delete; id is the generated one
	// when the item had none). Returning
	// ok=true makes the item fail with that status, error type and reason
	// (for example 400 "mapper_parsing_exception") and stores nothing. A
	// status outside 100..599 is answered as 500. It is called concurrently
	// from request goroutines and must not call Pause, Resume or Close.
	ItemHook func(action, index, id string, source []byte) (status int, errType, reason string, ok bool)
	// RequestHook, when non-nil, is asked about every bulk request body
	// (after decoding) before it is parsed; ok=true answers the whole
	// request with that status and an Elasticsearch-style error body,
	// storing nothing. A status outside 100..599 is answered as 500. It is
	// called concurrently and must not call Pause, Resume or Close.
	RequestHook func(body []byte) (status int, errType, reason string, ok bool)
}

// Doc is a stored document as returned by Docs.
type Doc struct {
	// Index is where the document is stored: the item's "_index" (else the
	// path's), or for a data stream document its backing index.
	Index string
	// DataStream is the data stream the document was written to, "" for a
	// plain index.
	DataStream string
	ID         string // the item's "_id", or the id the server generated
	// Source is exactly the bytes of the source line, without its "\n" (or
	// "\r\n"); a copy the caller owns.
	Source []byte
	// Version is 1 when created and grows by one on each index overwrite.
	Version int64
	// SeqNo is the index-wide sequence number of the last write.
	SeqNo int64
	// Pipeline is the effective ingest pipeline of the last write: the
	// item's "pipeline", else the request's ?pipeline=, else ""; "_none"
	// is recorded as "".
	Pipeline string
	Routing  string // the item's "routing", if any
}

// Stats are the server's counters since Start (or the last Reset).
type Stats struct {
	Requests          int64         // HTTP requests of any kind that reached the server
	BulkRequests      int64         // requests to a bulk endpoint with an allowed method
	Items             int64         // bulk items answered individually (any status)
	ItemsByStatus     map[int]int64 // Items by their status code
	Created           int64         // items answered 201
	Updated           int64         // index items that overwrote a document (200 "updated")
	Deleted           int64         // delete items that removed a document
	Conflicts409      int64         // items answered 409 version_conflict_engine_exception
	Rejected429       int64         // items answered 429 (fault or ItemHook)
	Failed503Requests int64         // bulk requests answered 503 as a whole (fault or RequestHook)
	Dropped           int64         // bulk requests whose connection was closed unanswered
	RequestErrors     int64         // bulk requests answered as a whole with a status other than 200 and 503 (400, 406, 413, RequestHook ...)
	TooLarge413       int64         // bulk requests answered 413 (also counted in RequestErrors)
	GzipRequests      int64         // bulk requests with a gzip (or deflate) Content-Encoding
	ChunkedRequests   int64         // bulk requests with no Content-Length (chunked transfer encoding)
	BytesReceived     int64         // bulk request body bytes read from the wire, before decoding
	BytesDecoded      int64         // bulk request body bytes after decoding (at most MaxContentLength+1 each)
	DataStreamRefused int64         // items refused by data stream rules: op type, @timestamp, data stream name, writes to backing indices
	CompatRefused     int64         // requests answered 400 media_type_header_exception (compatible-with headers)
}

// Server is a running test server. Create it with Start and stop it with
// Close. All methods are safe for concurrent use.
type Server struct {
	addr       string // "127.0.0.1:port", fixed for the server's life
	maxContent int64
	version    string
	ver        esVersion
	dsPatterns []string
	clusterID  string
	idPrefix   [7]byte
	idCounter  atomic.Uint64

	faultMu sync.Mutex // guards faults, rng and the token bucket
	faults  Faults
	rng     *mrand.Rand
	tokens  float64   // AcceptRate's bucket
	filled  time.Time // when tokens was last refilled; zero: full

	mu          sync.Mutex // guards indices, dataStreams, count and stats
	indices     map[string]*index
	dataStreams map[string]*dataStream
	count       int
	stats       Stats

	lifeMu sync.Mutex // guards gen and closed; held across Pause, Resume and Close
	gen    *generation
	closed bool

	users   map[string]string
	apiKeys []string
	tls     *tls.Config
}

type index struct {
	uuid       string
	dataStream string // the data stream it backs, or ""
	seqNo      int64  // next sequence number
	docs       map[string]*storedDoc
}

type storedDoc struct {
	source   []byte
	version  int64
	seqNo    int64
	pipeline string
	routing  string
}

// generation is one listening period: from Start or Resume to the next
// Pause or Close.
type generation struct {
	srv    *http.Server
	cancel context.CancelFunc
	served chan struct{} // closed when Serve returns

	mu       sync.Mutex // guards active, stopping and idle
	active   int
	stopping bool
	idle     chan struct{} // closed when stopping and active reaches 0
}

// Start listens on opts.Addr (default "127.0.0.1:0") and serves until
// Close. It refuses any host other than 127.0.0.1.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("estest: bad Addr %q: %w", addr, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("estest: Addr %q: the test server binds only to 127.0.0.1", addr)
	}
	if opts.MaxContentLength < 0 {
		return nil, fmt.Errorf("estest: negative MaxContentLength %d", opts.MaxContentLength)
	}
	s := &Server{
		maxContent: opts.MaxContentLength,
		version:    opts.Version,
		rng:        mrand.New(mrand.NewPCG(uint64(opts.Seed), 0x657374657374)), // "estest"
		indices:    make(map[string]*index),
		dsPatterns: BuiltinDataStreamPatterns(),
		users:      maps.Clone(opts.Users),
		apiKeys:    slices.Clone(opts.APIKeys),
	}
	if opts.TLS != nil {
		s.tls = opts.TLS.Clone()
	}
	s.dataStreams = make(map[string]*dataStream)
	if s.maxContent == 0 {
		s.maxContent = DefaultMaxContentLength
	}
	if s.version == "" {
		s.version = DefaultVersion
	}
	if s.ver, err = parseVersion(s.version); err != nil {
		return nil, fmt.Errorf("estest: bad Version: %w", err)
	}
	if opts.DataStreamPatterns != nil {
		if err := checkPatterns(opts.DataStreamPatterns); err != nil {
			return nil, fmt.Errorf("estest: bad DataStreamPatterns: %w", err)
		}
		s.dsPatterns = append([]string(nil), opts.DataStreamPatterns...)
	}
	s.stats.ItemsByStatus = make(map[int]int64)
	if _, err := rand.Read(s.idPrefix[:]); err != nil {
		return nil, fmt.Errorf("estest: random id prefix: %w", err)
	}
	s.clusterID = randomUUID()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("estest: listen on %s: %w", addr, err)
	}
	s.addr = ln.Addr().String()
	s.gen = s.serve(ln)
	return s, nil
}

// URL returns the server's base URL, "http://127.0.0.1:port" (https with
// Options.TLS). It stays the same across Pause and Resume.
func (s *Server) URL() string {
	if s.tls != nil {
		return "https://" + s.addr
	}
	return "http://" + s.addr
}

// Addr returns the server's listen address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// SetFaults replaces the injected faults. Requests whose faults were already
// read keep the old ones; requests arriving after SetFaults returns use the
// new ones. The RNG is not reseeded.
func (s *Server) SetFaults(f Faults) {
	s.faultMu.Lock()
	s.faults = f
	s.filled = time.Time{} // the bucket starts full
	s.faultMu.Unlock()
}

// Pause closes the listener and every open connection, aborting requests in
// flight (they store nothing more once Pause returns), so new connections
// are refused until Resume. A client reusing a kept-alive connection sees it
// closed (EOF or reset) rather than refused. Pausing a paused server does
// nothing. Stored documents and counters are kept.
func (s *Server) Pause() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return errors.New("estest: Pause: server is closed")
	}
	if s.gen == nil {
		return nil
	}
	err := s.gen.stop()
	s.gen = nil
	if err != nil {
		return fmt.Errorf("estest: Pause: %w", err)
	}
	return nil
}

// Resume listens again on the same address after Pause. Resuming a running
// server does nothing. It fails if another process took the port meanwhile.
func (s *Server) Resume() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return errors.New("estest: Resume: server is closed")
	}
	if s.gen != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("estest: Resume: listen on %s: %w", s.addr, err)
	}
	s.gen = s.serve(ln)
	return nil
}

// Close stops the server: it closes the listener and all connections and
// waits for every goroutine it started, including request handlers (a hook
// still running delays it). Stored documents stay readable. Close is
// idempotent.
func (s *Server) Close() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.gen == nil {
		return nil
	}
	err := s.gen.stop()
	s.gen = nil
	if err != nil {
		return fmt.Errorf("estest: Close: %w", err)
	}
	return nil
}

// serve starts a generation serving ln.
func (s *Server) serve(ln net.Listener) *generation {
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &generation{cancel: cancel, served: make(chan struct{})}
	g.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !g.enter() {
				return // paused or closing: the connection is being closed
			}
			defer g.exit()
			if !s.authorized(r) {
				unauthorized(w, r)
				return
			}
			s.handle(w, r)
		}),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(g.served)
		_ = g.srv.Serve(ln) // returns ErrServerClosed after stop
	}()
	return g
}

func (g *generation) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopping {
		return false
	}
	g.active++
	return true
}

func (g *generation) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.active == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// stop cancels requests in flight, closes the listener and connections and
// waits for Serve and every handler to return.
func (g *generation) stop() error {
	g.mu.Lock()
	g.stopping = true
	var idle chan struct{}
	if g.active > 0 {
		idle = make(chan struct{})
		g.idle = idle
	}
	g.mu.Unlock()
	// Close connections before cancelling, so a handler woken by the
	// cancellation finds its connection gone and cannot answer.
	err := g.srv.Close()
	g.cancel()
	<-g.served
	if idle != nil {
		<-idle
	}
	return err
}

// Doc returns a copy of the stored source of index/id, exactly as received,
// and whether it exists.
func (s *Server) Doc(index, id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indices[index]
	if ix == nil {
		return nil, false
	}
	d := ix.docs[id]
	if d == nil {
		return nil, false
	}
	return append([]byte(nil), d.source...), true
}

// Docs returns every stored document, sorted by index then id. The sources
// are copies the caller owns.
func (s *Server) Docs() []Doc {
	s.mu.Lock()
	out := make([]Doc, 0, s.count)
	for name, ix := range s.indices {
		for id, d := range ix.docs {
			out = append(out, Doc{
				Index: name, DataStream: ix.dataStream, ID: id, Source: append([]byte(nil), d.source...),
				Version: d.version, SeqNo: d.seqNo, Pipeline: d.pipeline, Routing: d.routing,
			})
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// DataStreams returns the names of the data streams that exist, sorted. A
// data stream, and its backing index, is created by its first stored
// document (Elasticsearch creates it already when a request first targets
// it) and never removed, except by Reset.
func (s *Server) DataStreams() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.dataStreams))
}

// DocsIn returns the stored documents of one data stream or index (a
// backing index's name works too), sorted by id, like Docs; nil if it does
// not exist.
func (s *Server) DocsIn(name string) []Doc {
	var out []Doc
	for _, d := range s.Docs() {
		if d.Index == name || d.DataStream == name {
			out = append(out, d)
		}
	}
	return out
}

// Count returns the number of stored documents across all indices.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// IndexCount returns the number of documents stored in one index.
func (s *Server) IndexCount(index string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indices[index]; ix != nil {
		return len(ix.docs)
	}
	return 0
}

// Indices returns the names of the indices that exist (an index is created
// by its first stored document and never removed, except by Reset), sorted.
func (s *Server) Indices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.indices))
}

// Stats returns a snapshot of the counters; the map is a copy.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.ItemsByStatus = make(map[int]int64, len(s.stats.ItemsByStatus))
	for k, v := range s.stats.ItemsByStatus {
		st.ItemsByStatus[k] = v
	}
	return st
}

// Reset deletes every index and document and zeroes the counters. Requests
// in flight may store documents after it returns.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indices = make(map[string]*index)
	s.dataStreams = make(map[string]*dataStream)
	s.count = 0
	s.stats = Stats{ItemsByStatus: make(map[int]int64)}
}

// faultsSnapshot returns the current faults.
func (s *Server) faultsSnapshot() Faults {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faults
}

// chance draws from the seeded RNG: true with probability p.
func (s *Server) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.rng.Float64() < p
}

// take draws one item from AcceptRate's bucket: false when it is empty.
func (s *Server) take(rate float64) bool {
	if rate <= 0 {
		return true
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	now := time.Now()
	if s.filled.IsZero() {
		s.tokens = rate
	} else {
		s.tokens = min(rate, s.tokens+now.Sub(s.filled).Seconds()*rate)
	}
	s.filled = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// newID returns a unique 20-character URL-safe id, like Elasticsearch's
// auto-generated ids: a random per-server prefix and a counter.
func (s *Server) newID() string {
	var b [15]byte
	copy(b[:7], s.idPrefix[:])
	binary.BigEndian.PutUint64(b[7:], s.idCounter.Add(1))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// randomUUID returns 22 URL-safe characters, the shape of Elasticsearch's
// cluster and index UUIDs.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥ 1.24 it cannot)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

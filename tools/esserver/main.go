// Command esserver runs the in-repo Elasticsearch test server
// (internal/testkit/estest) as a standalone process, for demos and manual tests of
// logpond's Elasticsearch output:
//
//	esserver -listen 127.0.0.1:9200 -reject429 0.02 -seed 1
//	esserver -version 7.17.25 -data-streams 'logs-*-*,app-*'
//	esserver -users logpond:secret -tls-cert es.crt -tls-key es.key
//
// -users and -api-keys require credentials as a cluster with security on
// does (401 security_exception otherwise), and -tls-cert/-tls-key serve
// https (-tls-client-ca also asks for client certificates), so that
// credential and certificate problems can be rehearsed.
//
// -version sets the Elasticsearch version it answers as (GET /, the
// X-Elastic-Product header from 7.14, the compatible-with versions it
// accepts, data streams from 7.9); -data-streams sets the index patterns
// whose names are data streams ("builtin", the default, for logs-*-*,
// metrics-*-*, synthetics-*-* and traces-*-*; "none" for none). GET
// /_license answers an active basic license, so that x-pack Beats and
// Elastic Agent, which check it when they connect, can ship to it.
//
// It stores every document in memory, answers the bulk API with the faults
// its flags ask for, and logs (log/slog, text, on stderr) one line with its
// URL once it listens:
//
//	level=INFO msg="esserver listening" url=http://127.0.0.1:9200 ...
//
// so that scripts can wait for it and, with -listen 127.0.0.1:0, learn the
// port it picked. What it holds can be read as from Elasticsearch: GET
// /_count, GET /_cat/indices?v (or ?format=json) for the documents and
// bytes per index, and GET /_search?size=N&sort=_id:asc (or a JSON body
// {"size":N,"sort":[{"_id":"asc"}]}) for the documents themselves. On
// SIGINT or SIGTERM it stops, prints a summary on stdout (documents per
// index and data stream, requests, items by status, injected 429s and
// 503s, items refused by data stream rules) and exits 0.
//
// Like estest, it binds only to 127.0.0.1: any other host is refused.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// config is what the flags ask for.
type config struct {
	opts   estest.Options
	faults estest.Faults
}

// parseFlags parses and checks the command line. Usage and flag errors go
// to stderr; flag.ErrHelp is returned for -h.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("esserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.opts.Addr, "listen", "127.0.0.1:9200", "listen address; the host must be 127.0.0.1 (port 0 picks a free port)")
	fs.DurationVar(&c.faults.Latency, "latency", 0, "delay added before answering each bulk request")
	fs.Float64Var(&c.faults.ItemReject429, "reject429", 0, "probability that a bulk item is rejected with 429 (0..1)")
	fs.Float64Var(&c.faults.Request503, "fail503", 0, "probability that a whole bulk request is answered 503 (0..1)")
	maxContent := fs.String("max-content-length", "100MiB", "largest request body accepted (Elasticsearch's http.max_content_length); binary units")
	fs.Int64Var(&c.opts.Seed, "seed", 1, "seed of the fault decisions (same seed and requests, same faults)")
	fs.StringVar(&c.opts.Version, "version", estest.DefaultVersion, "Elasticsearch version to answer as, X.Y.Z (7.0.0 or later)")
	users := fs.String("users", "", "comma-separated NAME:PASSWORD pairs: HTTP basic credentials to require (with -api-keys, either is accepted); none: no authentication")
	apiKeys := fs.String("api-keys", "", "comma-separated API keys to accept (the value after \"ApiKey \" in the Authorization header, base64 of id:key)")
	tlsCert := fs.String("tls-cert", "", "PEM certificate to serve https with (with -tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key of -tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "with -tls-cert: PEM CA bundle; clients must present a certificate it signed")
	dataStreams := fs.String("data-streams", "builtin", "comma-separated index patterns (`*` wildcards) whose names are data streams; builtin: "+
		strings.Join(estest.BuiltinDataStreamPatterns(), ",")+"; none: no data streams")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: esserver [flags]\n\nRuns the in-repo Elasticsearch test server (internal/testkit/estest) until SIGINT or SIGTERM.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"reject429", c.faults.ItemReject429}, {"fail503", c.faults.Request503}} {
		if p.v < 0 || p.v > 1 || p.v != p.v {
			return c, fmt.Errorf("-%s %v: want a probability between 0 and 1", p.name, p.v)
		}
	}
	if c.faults.Latency < 0 {
		return c, fmt.Errorf("-latency %s: must not be negative", c.faults.Latency)
	}
	n, err := conf.ParseSize(*maxContent)
	if err != nil {
		return c, fmt.Errorf("-max-content-length: %w", err)
	}
	if n <= 0 {
		return c, fmt.Errorf("-max-content-length %s: must be more than 0", *maxContent)
	}
	c.opts.MaxContentLength = int64(n)
	if *users != "" {
		c.opts.Users = map[string]string{}
		for _, pair := range strings.Split(*users, ",") {
			name, pw, ok := strings.Cut(pair, ":")
			if !ok || name == "" || pw == "" {
				return c, fmt.Errorf("-users %q: want NAME:PASSWORD pairs, comma-separated", *users)
			}
			c.opts.Users[name] = pw
		}
	}
	if *apiKeys != "" {
		c.opts.APIKeys = strings.Split(*apiKeys, ",")
	}
	if (*tlsCert == "") != (*tlsKey == "") || (*tlsClientCA != "" && *tlsCert == "") {
		return c, errors.New("-tls-cert and -tls-key go together, and -tls-client-ca needs them")
	}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return c, fmt.Errorf("-tls-cert %s / -tls-key %s: %w", *tlsCert, *tlsKey, err)
		}
		c.opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if *tlsClientCA != "" {
			pem, err := os.ReadFile(*tlsClientCA)
			if err != nil {
				return c, fmt.Errorf("-tls-client-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return c, fmt.Errorf("-tls-client-ca %s holds no PEM certificate", *tlsClientCA)
			}
			c.opts.TLS.ClientCAs, c.opts.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	switch *dataStreams {
	case "builtin":
		// nil: estest's built-in patterns
	case "none":
		c.opts.DataStreamPatterns = []string{}
	default:
		for _, p := range strings.Split(*dataStreams, ",") {
			p = strings.TrimSpace(p)
			if p == "" || strings.ContainsAny(p, "?[]\\") {
				return c, fmt.Errorf("-data-streams %q: want builtin, none, or comma-separated patterns with only `*` wildcards", *dataStreams)
			}
			c.opts.DataStreamPatterns = append(c.opts.DataStreamPatterns, p)
		}
	}
	return c, nil
}

// run is the whole command: it serves until ctx is done, then writes the
// summary to stdout. It returns the exit code: 0 after a requested stop,
// 1 when the server cannot start, 2 on bad flags. ready, when not nil, is
// called with the running server once it listens.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(*estest.Server)) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "esserver:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := estest.Start(c.opts)
	if err != nil {
		log.Error("cannot start", "err", err) // also a -version estest refuses
		return 1
	}
	srv.SetFaults(c.faults)
	log.Info("esserver listening", "url", srv.URL(), "reject429", c.faults.ItemReject429,
		"fail503", c.faults.Request503, "latency", c.faults.Latency.String(),
		"max_content_length", conf.Size(c.opts.MaxContentLength).String(), "seed", c.opts.Seed,
		"version", c.opts.Version, "data_streams", dataStreamsAttr(c.opts.DataStreamPatterns))
	if ready != nil {
		ready(srv)
	}
	<-ctx.Done()
	start := time.Now()
	if err := srv.Close(); err != nil {
		// Documents and counters stay readable after a failed close.
		log.Warn("close", "err", err)
	}
	log.Info("esserver stopped", "took", time.Since(start).Round(time.Millisecond).String())
	writeSummary(stdout, srv)
	return 0
}

// dataStreamsAttr names the data stream patterns for the log line.
func dataStreamsAttr(patterns []string) string {
	switch {
	case patterns == nil:
		return strings.Join(estest.BuiltinDataStreamPatterns(), ",")
	case len(patterns) == 0:
		return "none"
	}
	return strings.Join(patterns, ",")
}

// writeSummary prints what the server stored and answered.
func writeSummary(w io.Writer, srv *estest.Server) {
	st := srv.Stats()
	indices := srv.Indices()
	fmt.Fprintf(w, "esserver summary: %d documents in %d indices\n", srv.Count(), len(indices))
	for _, name := range indices {
		fmt.Fprintf(w, "  index %s: %d documents\n", name, srv.IndexCount(name))
	}
	for _, name := range srv.DataStreams() {
		fmt.Fprintf(w, "  data stream %s: %d documents\n", name, len(srv.DocsIn(name)))
	}
	fmt.Fprintf(w, "  requests: %d (bulk %d, %d bytes received)\n", st.Requests, st.BulkRequests, st.BytesReceived)
	codes := make([]int, 0, len(st.ItemsByStatus))
	for code := range st.ItemsByStatus {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	fmt.Fprintf(w, "  items: %d", st.Items)
	for _, code := range codes {
		fmt.Fprintf(w, " %d=%d", code, st.ItemsByStatus[code])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  injected: %d items rejected 429, %d requests failed 503\n", st.Rejected429, st.Failed503Requests)
	fmt.Fprintf(w, "  other: %d conflicts 409, %d request errors (%d too large 413), %d dropped\n",
		st.Conflicts409, st.RequestErrors, st.TooLarge413, st.Dropped)
	fmt.Fprintf(w, "  refused: %d items by data stream rules, %d requests by compatible-with headers\n",
		st.DataStreamRefused, st.CompatRefused)
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	es "github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/hosturl"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
)

// Bounds on one bulk request of a re-drive.
const (
	redriveBatchBytes   = 5 << 20
	redriveBatchEntries = 500
	redriveTimeout      = 60 * time.Second
)

// redriveLine is one dead letter's outcome.
type redriveLine struct {
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	LSN      uint64 `json:"lsn"`
	Position uint32 `json:"position"`
	Index    string `json:"index"`
	DocID    string `json:"doc_id"`
	// Outcome is created (2xx), exists (409: a document with that id is
	// already there, so the event is), or failed.
	Outcome string `json:"outcome"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
}

// redriver sends dead letters to Elasticsearch in bulk requests and
// reports each one's outcome.
type redriver struct {
	e      *env
	client *es.Client
	asJSON bool
	tw     *tabwriter.Writer

	body  bytes.Buffer
	items []redriveLine // the dead letters in body, in order

	created, exists, failed int
}

// dlqRedrive re-sends every dead letter with a bulk create (its index and
// document id as stored; the event minus its top-level @metadata), reports
// each outcome, and with -purge removes them all once every one succeeded.
// Purging is dlq purge through the last entry re-driven.
func dlqRedrive(e *env, args []string) int {
	fs, asJSON := newFlags(e, "dlq redrive", "dlq redrive [--output NAME] [-es URL] [-username NAME] [-ca FILE] [-purge] [--json]")
	output := fs.String("output", "", outputFlagHelp)
	url := fs.String("es", "", "Elasticsearch URL (default: the hosts of the output in -config); the output's configured credentials and TLS settings go only to its configured hosts")
	username := fs.String("username", "", "HTTP basic user name; the password is read from $"+envPassword+" (default: the configured credentials, for a configured host)")
	caFile := fs.String("ca", "", "PEM bundle to verify the host's certificate against (default: the output's configured tls.ca for one of its hosts, else the system roots)")
	purge := fs.Bool("purge", false, "after every dead letter was re-driven, remove them (as dlq purge --through the last one: a running logpond is asked on its admin listener)")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if status, ok := e.dlqSelect("dlq redrive", *output); !ok {
		return status
	}
	switch e.dlqOut.typ {
	case conf.TypeLumberjack:
		e.errorf("dlq redrive: output %s is a Lumberjack output: its dead letters are events its receiver refused, and re-drive sends to Elasticsearch; print them with `dlq dump --output %s` and send them to a receiver that takes them", e.dlqOut.name, e.dlqOut.name)
		return exitUsage
	case conf.TypeKafka:
		e.errorf("dlq redrive: output %s is a Kafka output: its dead letters are events Kafka refused (too large, a topic it refuses), and re-drive sends to Elasticsearch; print them with `dlq dump --output %s`, fix the cause, and produce them again", e.dlqOut.name, e.dlqOut.name)
		return exitUsage
	}
	target, err := redriveTarget(e, *url, *username, *caFile)
	if err != nil {
		e.errorf("dlq redrive: %v", err)
		return exitUsage
	}
	transport, err := redriveTransport(target)
	if err != nil {
		e.errorf("dlq redrive: %v", err)
		return exitFailed
	}
	defer transport.CloseIdleConnections()
	cfg := es.Config{Addresses: target.hosts, Transport: transport,
		Username: target.username, Password: target.password, APIKey: target.apiKey}
	client, err := es.NewClient(cfg)
	if err != nil {
		e.errorf("dlq redrive: %v", err)
		return exitFailed
	}

	if e.dlqNone {
		fmt.Fprintf(e.stderr, "ledgerctl: dlq redrive: no dead letters: %s holds none (no output has stored any)\n", e.dlqParent())
		return exitOK
	}
	dir := e.dlqDir()
	r, err := dlq.NewReader(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(e.stderr, "ledgerctl: dlq redrive: no dead letters (%s does not exist)\n", dir)
		return exitOK
	}
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	defer r.Close()
	rd := &redriver{e: e, client: client, asJSON: *asJSON, tw: tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)}
	if !rd.asJSON {
		fmt.Fprintln(rd.tw, "FILE:OFFSET\tLSN\tPOS\tINDEX\tDOC ID\tOUTCOME")
	}
	var last dlq.Pos
	total := 0
	for r.Next() {
		pos, en := r.Pos(), r.Entry()
		last = pos
		total++
		rd.add(pos, en)
		if rd.body.Len() >= redriveBatchBytes || len(rd.items) >= redriveBatchEntries {
			rd.send()
		}
	}
	rd.send()
	if !rd.asJSON {
		rd.tw.Flush()
		fmt.Fprintf(e.stdout, "re-drove %d dead letters: %d created, %d already there (409), %d failed\n", total, rd.created, rd.exists, rd.failed)
	}
	status := exitOK
	if err := r.Err(); err != nil {
		e.errorf("dlq redrive: the dead letters are damaged after the entries above: %s", locate("dead letters", err))
		status = exitFailed
	}
	if rd.failed > 0 {
		status = exitFailed
	}
	if !*purge || total == 0 {
		return status
	}
	if status != exitOK {
		e.errorf("dlq redrive: not purging: not every dead letter was re-driven")
		return status
	}
	p, err := purgeThrough(e, last.String())
	if err != nil {
		e.errorf("dlq redrive: the entries were re-driven and are kept: purge: %v", err)
		return exitFailed
	}
	if !rd.asJSON {
		fmt.Fprintf(e.stdout, "purged the %d re-driven dead letters (up to %s): %d entries in %d files deleted, by %s\n", total, last, p.Entries, p.Files, p.By)
	}
	return exitOK
}

// Environment variables with explicit credentials for dlq redrive: secrets
// stay off the command line, where other users of the machine can read
// them (ps, /proc).
const (
	envPassword = "LEDGERCTL_ES_PASSWORD"
	envAPIKey   = "LEDGERCTL_ES_API_KEY"
)

// redriveTo is where a re-drive sends, with which credentials and TLS
// settings.
type redriveTo struct {
	hosts                      []string
	username, password, apiKey string
	caFile                     string // "" for the system roots
	certFile, keyFile          string // the client certificate of a configured host (tls.cert, tls.key); "" for none
	skipVerify                 bool
}

// redriveTarget decides where dlq redrive sends and what it sends along.
// The configured credentials and TLS settings (CA, verification_mode) are
// for the configured hosts: they go along only when -es is absent or names
// one of them. Another host gets only the credentials given explicitly
// (-username with $LEDGERCTL_ES_PASSWORD, $LEDGERCTL_ES_API_KEY, or user
// info in -es), which also replace the configured ones for a configured
// host, and is verified against the system roots or -ca.
func redriveTarget(e *env, esURL, username, caFile string) (redriveTo, error) {
	var t redriveTo
	cfgES := e.dlqOut.es // nil when the output is not configured (or not -config)
	var urlUser, urlPass string
	switch {
	case esURL != "":
		bare, ui, err := hosturl.Split(esURL)
		if err != nil {
			return t, fmt.Errorf("-es: %w", err)
		}
		if ui != nil {
			urlUser = ui.Username()
			urlPass, _ = ui.Password()
		}
		t.hosts = []string{bare}
	case cfgES != nil && len(cfgES.Hosts) > 0:
		t.hosts = cfgES.Hosts
	default:
		return t, fmt.Errorf("say where Elasticsearch is: -es URL (or -config FILE where output %s has hosts)", e.dlqOut.name)
	}
	configured := cfgES != nil && (esURL == "" || slices.ContainsFunc(cfgES.Hosts, func(h string) bool { return hosturl.Same(h, t.hosts[0]) }))

	password, apiKey := os.Getenv(envPassword), os.Getenv(envAPIKey)
	switch {
	case username != "" && urlUser != "":
		return t, errors.New("-username and user info in -es: give the credentials once")
	case username != "" && password == "":
		return t, fmt.Errorf("-username %s needs the password in $%s", username, envPassword)
	case username != "":
		t.username, t.password = username, password
	case urlUser != "":
		t.username, t.password = urlUser, urlPass
	}
	t.apiKey = apiKey
	explicit := t.username != "" || t.apiKey != ""
	if configured {
		if !explicit {
			t.username, t.password, t.apiKey = cfgES.Username, cfgES.Password, cfgES.APIKey
		}
		t.caFile, t.skipVerify = cfgES.TLS.CA, cfgES.TLS.VerificationMode == "none"
		// A cluster that authenticates logpond by its certificate (PKI
		// realm) authenticates the re-drive by the same one.
		t.certFile, t.keyFile = cfgES.TLS.Cert, cfgES.TLS.Key
	} else if cfgES != nil && !explicit && (cfgES.APIKey != "" || cfgES.Password != "") {
		fmt.Fprintf(e.stderr, "ledgerctl: dlq redrive: %s is not one of the hosts of output %s: the configured credentials are not sent to it; give its own with -username and $%s, or $%s\n",
			hosturl.Redact(t.hosts[0]), e.dlqOut.name, envPassword, envAPIKey)
	}
	if caFile != "" {
		// A CA given for this run is what the host is verified against,
		// also where the configuration turned verification off.
		t.caFile, t.skipVerify = caFile, false
	}
	if t.apiKey != "" || (t.username != "" && t.password != "") {
		for _, h := range t.hosts {
			if u, err := hosturl.Parse(h); err == nil && strings.EqualFold(u.Scheme, "http") {
				fmt.Fprintf(e.stderr, "ledgerctl: dlq redrive: warning: the credentials go in clear text to %s (http)\n", hosturl.Redact(h))
			}
		}
	}
	return t, nil
}

// redriveTransport is the HTTP transport, with the TLS settings of t.
func redriveTransport(t redriveTo) (*http.Transport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.skipVerify} //nolint:gosec // only for configured hosts whose configuration says so
	if t.caFile != "" {
		pem, err := os.ReadFile(t.caFile)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", t.caFile)
		}
		tlsCfg.RootCAs = pool
	}
	if t.certFile != "" {
		cert, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate (tls.cert, tls.key): %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 1}, nil
}

// add puts one dead letter into the request being built, or reports why it
// cannot be sent.
func (rd *redriver) add(pos dlq.Pos, en dlq.Entry) {
	line := redriveLine{File: pos.File, Offset: pos.Offset, LSN: en.LSN, Position: en.Position, Index: en.Index, DocID: en.DocID}
	// An entry that cannot be sent keeps its place in the report: it is
	// queued with its outcome already set.
	if en.Index == "" {
		line.Outcome, line.Error = "failed", "the dead letter names no index"
		rd.items = append(rd.items, line)
		return
	}
	src, err := redriveSource(en)
	if err != nil {
		line.Outcome, line.Error = "failed", err.Error()
		rd.items = append(rd.items, line)
		return
	}
	action := map[string]map[string]string{"create": {"_index": en.Index}}
	if en.DocID != "" {
		action["create"]["_id"] = en.DocID
	}
	a, _ := json.Marshal(action)
	rd.body.Write(a)
	rd.body.WriteByte('\n')
	rd.body.Write(src)
	rd.body.WriteByte('\n')
	rd.items = append(rd.items, line)
}

// send sends the request built so far and reports every item's outcome.
func (rd *redriver) send() {
	if len(rd.items) == 0 {
		return
	}
	defer func() { rd.body.Reset(); rd.items = rd.items[:0] }()
	sent := 0
	for _, line := range rd.items {
		if line.Outcome == "" {
			sent++
		}
	}
	var (
		res  *esapi.Response
		err  error
		body []byte
	)
	if sent > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), redriveTimeout)
		defer cancel()
		res, err = rd.client.Bulk(bytes.NewReader(rd.body.Bytes()),
			rd.client.Bulk.WithContext(ctx),
			rd.client.Bulk.WithFilterPath("errors,items.*.status,items.*.error.type,items.*.error.reason"))
	}
	if sent > 0 && err == nil {
		body, err = io.ReadAll(io.LimitReader(res.Body, 64<<20))
		res.Body.Close()
		if err == nil && res.StatusCode/100 != 2 {
			err = fmt.Errorf("bulk request answered %d: %s", res.StatusCode, oneLine(string(body), 300))
		}
	}
	var results []gjson.Result
	if sent > 0 && err == nil {
		items := gjson.GetBytes(body, "items")
		if results = items.Array(); !items.IsArray() || len(results) != sent {
			err = fmt.Errorf("unusable bulk response: %d items for %d actions", len(results), sent)
		}
	}
	i := 0 // index of the next result
	for _, line := range rd.items {
		if line.Outcome != "" { // not sent
			rd.report(line)
			continue
		}
		if err != nil {
			line.Outcome, line.Error = "failed", err.Error()
			rd.report(line)
			continue
		}
		// Items are matched by position, never by their action key: some
		// Elasticsearch-compatible engines answer a create under "index".
		var item gjson.Result
		results[i].ForEach(func(_, v gjson.Result) bool { item = v; return false })
		i++
		line.Status = int(item.Get("status").Int())
		switch {
		case line.Status/100 == 2:
			line.Outcome = "created"
		case line.Status == http.StatusConflict:
			line.Outcome = "exists"
		default:
			line.Outcome = "failed"
			line.Error = item.Get("error.type").String() + ": " + item.Get("error.reason").String()
			if line.Status == 0 {
				line.Error = "no status in the bulk response item"
			}
		}
		rd.report(line)
	}
}

func (rd *redriver) report(line redriveLine) {
	switch line.Outcome {
	case "created":
		rd.created++
	case "exists":
		rd.exists++
	default:
		rd.failed++
	}
	if rd.asJSON {
		writeJSONLine(rd.e.stdout, line)
		return
	}
	outcome := line.Outcome
	if line.Status != 0 {
		outcome += " (" + strconv.Itoa(line.Status) + ")"
	}
	if line.Error != "" {
		outcome += ": " + oneLine(line.Error, 200)
	}
	fmt.Fprintf(rd.tw, "%s:%d\t%d\t%d\t%s\t%s\t%s\n", line.File, line.Offset, line.LSN, line.Position, line.Index, orDash(line.DocID), outcome)
}

// redriveSource is the document source of a dead letter's event, as the
// output sends it to the dead letter's index: the event as stored minus
// its top-level @metadata member (which Beats add for the output and
// logpond does not index), on one line; into a data stream, with the
// @timestamp and data_stream members the output adds
// (elasticsearch.RedriveSource).
func redriveSource(en dlq.Entry) ([]byte, error) {
	if en.Action != "" && en.Action != "create" {
		// A Lumberjack output's ("forward"): its Index is the receiver.
		return nil, fmt.Errorf("the dead letter is of a %q action, not an Elasticsearch create: it cannot be re-driven to Elasticsearch (inspect it with `dlq dump`)", en.Action)
	}
	if !json.Valid(en.Event) {
		return nil, errors.New("the event is not valid JSON: it cannot be sent as a document (inspect it with `dlq dump`)")
	}
	src, err := elasticsearch.RedriveSource(en.Event, en.Index, en.Received)
	if err != nil {
		return nil, fmt.Errorf("the event cannot be sent to %s: %w", en.Index, err)
	}
	return src, nil
}

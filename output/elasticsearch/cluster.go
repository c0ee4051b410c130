package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/internal/hosturl"
)

// One output, one cluster.
//
// The client spreads bulk requests over all of an output's hosts (and
// fails over between them), which is right for the nodes of one cluster
// and silently splits the events when the hosts belong to two clusters.
// So every host is asked which cluster it belongs to (cluster_uuid on
// GET /, sent to that host alone) before the output sends anything, and
// again before the first bulk request to a host that had not answered; a
// host not identified yet is asked again in the background with the
// output's retry backoff. When two hosts report different clusters the
// output sends nothing more until it is restarted with another
// configuration: the events wait in the ledger. The first round holds
// the start for as long as the slowest host takes to answer or fail (at
// most Options.Timeout): sending before every host was asked is what
// would let events reach the wrong cluster.
//
// A host that does not answer GET /, or answers without a cluster uuid (a
// version before 5, a cluster that has not formed, credentials without the
// monitor privilege), is not judged: the check can only tell hosts apart,
// not vouch for them.
//
// The same answer gives the host's version, which is logged once per host
// and judged: a version before 7.14 is warned of (logpond is not tested
// against it), and one before 7.9 has no data streams. There, with
// data_stream = true, the output is misconfigured as with hosts of two
// clusters (nothing is sent: no event could reach a data stream); with
// data_stream = "auto", events with a data_stream object go to the index
// instead (noDataStreams). This GET / is the only one logpond sends a
// host: it is the start-up check the operator reads too (a WARN when no
// host answers the first round).

// mismatchHint is what the operator must do about hosts of two clusters.
const mismatchHint = "hosts of one output must belong to one cluster; to send to two clusters, configure two outputs: [output.elasticsearch.NAME]"

// clusterCheck identifies the cluster behind each host of an output and
// says when they differ. Its methods are safe for concurrent use.
type clusterCheck struct {
	key          string // Options.Key, for messages
	dataStream   DataStreamMode
	hosts        []*hostState
	rt           http.RoundTripper // the output's transport: its TLS settings, no failover
	auth         func(*http.Request)
	creds        *Credentials
	timeout      time.Duration
	retryInitial time.Duration
	retryMax     time.Duration
	log          *slog.Logger

	ready chan struct{} // closed once the first round has asked every host

	mu     sync.Mutex // guards reason and the hosts' state
	reason string     // why the output sends nothing; "" while it may send

	// noDataStreams is set once a host reported a version without data
	// streams (before 7.9).
	noDataStreams atomic.Bool
	dsWarned      bool // noDataStreams was logged; guarded by mu
}

// The versions the check judges.
const (
	// dataStreamsSince is the first version with data streams.
	dataStreamsSince = "7.9"
	// supportedSince is the oldest version logpond supports: the first
	// whose answers carry X-Elastic-Product, which the client requires.
	supportedSince = "7.14"
)

// hostState is one configured host and what is known of its cluster.
type hostState struct {
	shown string        // the host as configured, redacted
	info  string        // the URL of its GET /
	key   string        // its endpoint, to match request URLs against (endpoint)
	lock  chan struct{} // held while asking: one GET / at a time per host

	// Guarded by clusterCheck.mu.
	cluster    clusterInfo // what it said, once identified
	identified bool        // it answered with a cluster uuid
	answered   bool        // its last GET / got an HTTP answer, of any status
	versioned  bool        // it answered with a version, which was logged and judged
	warned     bool        // an answer that did not identify it was logged
	wait       time.Duration
	next       time.Time // when the background asks it again
}

// newClusterCheck prepares the check of opts.Hosts, asked through rt with
// the output's credentials.
func newClusterCheck(opts *Options, rt http.RoundTripper, creds *Credentials, log *slog.Logger) (*clusterCheck, error) {
	c := &clusterCheck{
		key: opts.Key, dataStream: opts.DataStream, rt: rt, timeout: opts.Timeout,
		retryInitial: opts.RetryInitial, retryMax: opts.RetryMax,
		log: log, ready: make(chan struct{}),
	}
	c.auth, c.creds = creds.apply, creds
	for _, h := range opts.Hosts {
		u, err := hosturl.Parse(h)
		if err != nil {
			return nil, fmt.Errorf("elasticsearch: %s.hosts: %w", opts.Key, err)
		}
		info := *u
		info.User, info.RawQuery, info.Fragment, info.RawPath = nil, "", "", ""
		info.Path = strings.TrimRight(u.Path, "/") + "/"
		c.hosts = append(c.hosts, &hostState{
			shown: hosturl.Redact(h), info: info.String(), key: endpoint(u.Scheme, u.Host, u.Path),
			lock: make(chan struct{}, 1),
		})
	}
	return c, nil
}

// endpoint is what tells hosts apart in request URLs: scheme, host and
// port as written, and the path prefix, without its trailing slashes.
func endpoint(scheme, host, path string) string {
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + strings.TrimRight(path, "/")
}

// Misconfigured says why the output sends nothing, or "" when it may send:
// two of its hosts belong to different clusters, or a host runs a version
// without data streams (before 7.9) while DataStream is DataStreamAlways.
// Once set it stays until the output is made anew (the configuration must
// change). Safe for concurrent use.
func (o *Output) Misconfigured() string { return o.cluster.misconfigured() }

func (c *clusterCheck) misconfigured() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// wait returns once the first round has asked every host and no mismatch
// was found; while there is one, it waits for ctx and returns its error.
func (c *clusterCheck) wait(ctx context.Context) error {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.misconfigured() == "" {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// run asks every host at once, opens wait, then asks the hosts not
// identified yet with backoff until each is identified, a mismatch is
// found, or ctx ends.
func (c *clusterCheck) run(ctx context.Context) {
	var wg sync.WaitGroup
	errs := make([]error, len(c.hosts))
	for i, h := range c.hosts {
		wg.Go(func() { errs[i] = c.identify(ctx, h, false) })
	}
	wg.Wait()
	c.reportSilence(ctx, errs)
	close(c.ready)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		// A stopping identify returns without moving the host's next
		// time: the loop must see the stop itself, or spin.
		if ctx.Err() != nil {
			return
		}
		due, next, pending := c.due(time.Now())
		if !pending {
			return
		}
		for _, h := range due {
			c.identify(ctx, h, false)
		}
		if len(due) > 0 {
			continue
		}
		t.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// due returns the hosts not identified whose time to be asked again has
// come, the earliest time another one's comes, and whether any host is
// left to identify (none once a mismatch is found: it stays).
func (c *clusterCheck) due(now time.Time) (due []*hostState, next time.Time, pending bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != "" {
		return nil, next, false
	}
	for _, h := range c.hosts {
		if h.identified {
			continue
		}
		pending = true
		if !now.Before(h.next) {
			due = append(due, h)
		} else if next.IsZero() || h.next.Before(next) {
			next = h.next
		}
	}
	return due, next, pending
}

// reportSilence logs one WARN when no host answered the first round as
// Elasticsearch does (errs holds each host's failure: a refused
// connection, a timeout, a certificate refused, a 401 for wrong
// credentials), so that a wrong setting shows at start rather than as a
// stalled drain.
func (c *clusterCheck) reportSilence(ctx context.Context, errs []error) {
	if ctx.Err() != nil {
		return // stopping: the requests were cut short, not refused
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	shown := make([]string, len(c.hosts))
	for i, h := range c.hosts {
		if h.versioned {
			return
		}
		shown[i] = h.shown
	}
	var ae *authError
	refused := true
	for _, err := range errs {
		refused = refused && errors.As(err, &ae)
	}
	if refused {
		return // each host's refusal is logged at ERROR (identify): it answered
	}
	c.log.Warn("elasticsearch did not answer at start: events wait in the ledger and are sent once it does",
		"hosts", strings.Join(shown, ","), "err", errors.Join(errs...))
}

// authError is a cluster's refusal of the output's credentials: 401 (it
// did not authenticate them) or 403 (they lack a privilege).
type authError struct {
	status          int
	errType, reason string
	settings        string // the settings to check
}

func (e *authError) Error() string {
	return fmt.Sprintf("GET / answered %d %s %s", e.status, e.errType, e.reason)
}

// summary says what the refusal means and what to check.
func (e *authError) summary() string {
	if e.status == http.StatusForbidden {
		return "elasticsearch refused logpond's request (403): the credentials are valid but lack a privilege; grant the user or API key the monitor cluster privilege and create_doc (or index) and auto_configure on the indices and data streams it writes (settings: " + e.settings + ")"
	}
	return "elasticsearch refused logpond's credentials (401): check " + e.settings
}

// identify asks h which cluster it belongs to, unless it is identified
// already (or, beforeSend, it answered its last GET /: then the background
// asks it again), and judges the hosts when it is. It returns why the
// host was not asked or gave no usable answer, for reportSilence; nil when
// it was skipped.
func (c *clusterCheck) identify(ctx context.Context, h *hostState, beforeSend bool) error {
	select {
	case h.lock <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-h.lock }()
	c.mu.Lock()
	skip := h.identified || c.reason != "" || (beforeSend && h.answered)
	c.mu.Unlock()
	if skip {
		return nil
	}
	cl, answered, err := c.ask(ctx, h)
	if ctx.Err() != nil {
		return nil // stopping, or the request that asked gave up: not the host's answer
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h.answered = answered
	if err == nil && !h.versioned {
		h.versioned = true
		c.log.Info("elasticsearch answered", "host", h.shown, "cluster_name", cl.ClusterName, "cluster_uuid", cl.UUID,
			"version", cl.Version, "node", cl.Node)
		c.judgeVersionLocked(h, cl.Version)
	}
	if err == nil && cl.UUID != "" {
		h.identified, h.cluster = true, cl
		c.judgeLocked()
		return nil
	}
	h.wait = min(max(2*h.wait, c.retryInitial), c.retryMax)
	h.next = time.Now().Add(h.wait)
	if err == nil {
		err = errors.New("GET / answered without a cluster_uuid")
	}
	var ae *authError
	switch {
	case errors.As(err, &ae) && !h.warned:
		// The cluster answered, refusing the credentials: that is what
		// to fix, not the identity of a host that would say it.
		h.warned = true
		c.log.Error(ae.summary()+"; events wait in the ledger and are sent once they are accepted", "host", h.shown, "setting", ae.settings, "err", err)
	case answered && !h.warned && ae == nil && len(c.hosts) > 1:
		h.warned = true
		c.log.Warn("cannot tell which cluster an elasticsearch host belongs to: it is not checked against the output's other hosts until it says",
			"host", h.shown, "err", err)
	default:
		c.log.Debug("elasticsearch host not identified", "host", h.shown, "err", err, "next_in", h.wait)
	}
	return fmt.Errorf("%s: %w", h.shown, err)
}

// judgeVersionLocked judges the version host h reported, once per host:
// it warns of a version logpond does not support, and applies the data
// stream gate to one without data streams. c.mu is held.
func (c *clusterCheck) judgeVersionLocked(h *hostState, version string) {
	if !versionBefore(version, supportedSince) {
		return
	}
	c.log.Warn("elasticsearch answered with a version logpond does not support: it needs "+supportedSince+" or later",
		"host", h.shown, "version", version)
	if !versionBefore(version, dataStreamsSince) {
		return
	}
	switch c.dataStream {
	case DataStreamAlways:
		// No event would land in a data stream (each would be refused,
		// or make an ordinary index of the data stream's name): send
		// none, as for hosts of two clusters.
		if c.reason != "" {
			return
		}
		c.reason = fmt.Sprintf("%s.data_stream = true needs Elasticsearch %s or later, and host %s runs %s, which has no data streams; "+
			"set %s.data_stream = false and name the target in %s.index (or use a cluster of %s or later); "+
			"nothing is sent until the configuration changes (events wait in the ledger)",
			c.key, dataStreamsSince, h.shown, version, c.key, c.key, dataStreamsSince)
		c.log.Error("data_stream = true needs Elasticsearch "+dataStreamsSince+" or later: sending nothing until the configuration changes and logpond restarts (events wait in the ledger); set data_stream = false with an index",
			"setting", c.key+".data_stream", "host", h.shown, "version", version)
	case DataStreamAuto:
		c.noDataStreams.Store(true)
		if !c.dsWarned {
			c.dsWarned = true
			c.log.Warn("elasticsearch has no data streams before "+dataStreamsSince+": events with a data_stream object go to index instead",
				"setting", c.key+".index", "host", h.shown, "version", version)
		}
	}
}

// versionBefore says whether version ("X.Y", "X.Y.Z", …) is older than
// the major.minor than. A version it cannot read is not judged older: a
// check that cannot tell must not stop the output.
func versionBefore(version, than string) bool {
	v, ok1 := majorMinor(version)
	t, ok2 := majorMinor(than)
	if !ok1 || !ok2 {
		return false
	}
	return v[0] < t[0] || v[0] == t[0] && v[1] < t[1]
}

// majorMinor reads the major and minor of "X.Y", "X.Y.Z" or
// "X.Y.Z-SNAPSHOT".
func majorMinor(v string) ([2]int, bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{major, minor}, true
}

// ask sends GET / to h alone. answered says an HTTP answer came, whatever
// its status.
func (c *clusterCheck) ask(ctx context.Context, h *hostState) (cl clusterInfo, answered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.info, nil)
	if err != nil {
		return clusterInfo{}, false, fmt.Errorf("GET /: %w", err)
	}
	c.auth(req)
	res, err := c.rt.RoundTrip(req)
	if err != nil {
		return clusterInfo{}, false, fmt.Errorf("GET /: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxInfoBytes))
	if err != nil {
		return clusterInfo{}, false, fmt.Errorf("reading the answer to GET /: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		errType, why := errorBody(body)
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
			return clusterInfo{}, true, &authError{status: res.StatusCode, errType: errType, reason: why, settings: c.creds.settings(c.key)}
		}
		return clusterInfo{}, true, fmt.Errorf("GET / answered %d %s %s", res.StatusCode, errType, why)
	}
	cl, err = parseInfo(body)
	return cl, true, err
}

// answers reports whether any host answers GET / as Elasticsearch does
// (200 with its identity), for the probe of a cluster in an outage.
func (c *clusterCheck) answers(ctx context.Context) bool {
	for _, h := range c.hosts {
		if _, _, err := c.ask(ctx, h); err == nil {
			return true
		}
	}
	return false
}

// judgeLocked sets the reason, and logs it once, when the identified hosts
// report more than one cluster. c.mu is held.
func (c *clusterCheck) judgeLocked() {
	if c.reason != "" {
		return
	}
	var first string
	split := false
	var hosts []string
	for _, h := range c.hosts {
		if !h.identified {
			continue
		}
		if first == "" {
			first = h.cluster.UUID
		}
		split = split || h.cluster.UUID != first
		hosts = append(hosts, fmt.Sprintf("%s (cluster %q, uuid %s)", h.shown, h.cluster.ClusterName, h.cluster.UUID))
	}
	if !split {
		return
	}
	c.reason = fmt.Sprintf("%s.hosts belong to different clusters: %s; %s; nothing is sent until the configuration changes (events wait in the ledger)",
		c.key, strings.Join(hosts, ", "), mismatchHint)
	c.log.Error("the output's hosts belong to different clusters: sending nothing until the configuration changes and logpond restarts (events wait in the ledger); "+mismatchHint,
		"setting", c.key+".hosts", "hosts", hosts)
}

// host returns the configured host a request URL goes to, or nil.
func (c *clusterCheck) host(u *url.URL, suffix string) *hostState {
	k := endpoint(u.Scheme, u.Host, strings.TrimSuffix(u.Path, suffix))
	for _, h := range c.hosts {
		if h.key == k {
			return h
		}
	}
	return nil
}

// errMisconfigured is a bulk request's error while the output is
// misconfigured (Output.Misconfigured says why).
var errMisconfigured = errors.New("elasticsearch: not sent: the output is misconfigured (hosts of two clusters, or data streams a host lacks)")

// clusterGate is the client's transport: a bulk request goes only after
// its host was asked which cluster it belongs to (unless it answered
// before without saying), and never once the output is misconfigured
// (hosts of different clusters, or a host without data streams while
// every event must go to one). It catches what the workers' wait cannot:
// a host that comes up after the first round, which the client may send
// to before the background asks it.
type clusterGate struct {
	c    *clusterCheck
	next http.RoundTripper
}

// RoundTrip asks the request's host first when it must, then sends the
// request or refuses it (closing its body, as a RoundTripper must).
func (g clusterGate) RoundTrip(req *http.Request) (*http.Response, error) {
	const bulk = "/_bulk"
	if strings.HasSuffix(req.URL.Path, bulk) {
		if h := g.c.host(req.URL, bulk); h != nil {
			g.c.identify(req.Context(), h, true)
		}
		if g.c.misconfigured() != "" {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, errMisconfigured
		}
	}
	return g.next.RoundTrip(req)
}

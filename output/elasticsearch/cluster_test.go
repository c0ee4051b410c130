package elasticsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// info reads GET / of a test server.
func info(t *testing.T, base string) (name, uuid string) {
	t.Helper()
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		ClusterName string `json:"cluster_name"`
		ClusterUUID string `json:"cluster_uuid"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.ClusterUUID == "" {
		t.Fatalf("%s: GET / without a cluster_uuid", base)
	}
	return v.ClusterName, v.ClusterUUID
}

// otherCluster starts a second test server: a cluster of its own.
func otherCluster(t *testing.T) *estest.Server {
	t.Helper()
	s, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// front is another endpoint (on 127.0.0.1) for target: a second host of
// the same cluster, unless handle answers the request itself.
func front(t *testing.T, target string, handle func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if handle == nil || !handle(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestHostsOfTwoClustersSendNothing: hosts of two clusters in one output
// send nothing (the events wait in the ledger), say why once, naming both
// hosts and their clusters, and leave Run running.
func TestHostsOfTwoClustersSendNothing(t *testing.T) {
	r := newRig(t, estest.Options{})
	other := otherCluster(t)
	for i := range 10 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	var logs syncbuf.Buffer
	run := r.start(r.options(func(o *Options) {
		o.Name, o.Key = "siem", "output.elasticsearch.siem"
		o.Hosts = []string{r.es.URL(), other.URL()}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	waitFor(t, "the mismatch", func() bool { return run.Out.Misconfigured() != "" })
	why := run.Out.Misconfigured()
	for _, s := range []*estest.Server{r.es, other} {
		_, uuid := info(t, s.URL())
		if !strings.Contains(why, s.URL()) || !strings.Contains(why, uuid) {
			t.Errorf("Misconfigured() = %q: lacks %s or its cluster uuid %s", why, s.URL(), uuid)
		}
		if n := s.Stats().BulkRequests; n != 0 {
			t.Errorf("%s received %d bulk requests", s.URL(), n)
		}
	}
	for _, want := range []string{"output.elasticsearch.siem.hosts", "[output.elasticsearch.NAME]"} {
		if !strings.Contains(why, want) {
			t.Errorf("Misconfigured() = %q: lacks %q", why, want)
		}
	}
	select {
	case err := <-run.Done:
		t.Fatalf("Run returned %v on a mismatch: it must keep running", err)
	default:
	}
	run.Stop(t)
	if c, _ := r.ledger.Cursor("elasticsearch"); c != 0 {
		t.Errorf("cursor at %d: events passed that were not sent", c)
	}
	out := logs.String()
	if n := strings.Count(out, "level=ERROR"); n != 1 {
		t.Errorf("%d error lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "[output.elasticsearch.NAME]") {
		t.Errorf("the error does not point to named outputs:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if !strings.Contains(line, "output=siem") {
			t.Errorf("a line without the output's name: %s", line)
		}
	}
}

// TestHostsOfOneClusterDeliver: two endpoints of one cluster are both
// identified, found alike, and used.
func TestHostsOfOneClusterDeliver(t *testing.T) {
	r := newRig(t, estest.Options{})
	for i := range 50 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	var logs syncbuf.Buffer
	run := r.start(r.options(func(o *Options) {
		o.Hosts = []string{r.es.URL(), front(t, r.es.URL(), nil), r.es.URL() + "/"}
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	waitFor(t, "every event", func() bool { return r.es.Count() == 50 })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if why := run.Out.Misconfigured(); why != "" {
		t.Errorf("Misconfigured() = %q for hosts of one cluster", why)
	}
	if n := strings.Count(logs.String(), `msg="elasticsearch answered"`); n != 3 {
		t.Errorf("%d hosts identified, want 3:\n%s", n, logs.String())
	}
}

// TestHostUpLaterInAnotherClusterIsRefused: a host down at start is not
// judged; once it answers, from another cluster, the output refuses to
// send, and that host never received a bulk request.
func TestHostUpLaterInAnotherClusterIsRefused(t *testing.T) {
	r := newRig(t, estest.Options{})
	other := otherCluster(t)
	if err := other.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(func(o *Options) { o.Hosts = []string{other.URL(), r.es.URL()} }))
	waitFor(t, "every event", func() bool { return r.es.Count() == 10 })
	if why := run.Out.Misconfigured(); why != "" {
		t.Fatalf("Misconfigured() = %q while the other host is down", why)
	}
	if err := other.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mismatch", func() bool { return run.Out.Misconfigured() != "" })
	if why := run.Out.Misconfigured(); !strings.Contains(why, other.URL()) || !strings.Contains(why, r.es.URL()) {
		t.Errorf("Misconfigured() = %q: does not name both hosts", why)
	}
	r.store(time.Now(), filebeatEvent(10, ""))
	run.Stop(t)
	if n := other.Stats().BulkRequests; n != 0 {
		t.Errorf("the host of the other cluster received %d bulk requests", n)
	}
	if n := r.es.Count(); n != 10 {
		t.Errorf("%d documents, want 10: an event was sent after the mismatch", n)
	}
}

// TestHostWithoutClusterUUIDIsNotJudged: a host whose GET / carries no
// cluster uuid (an old version) is not held against the others.
func TestHostWithoutClusterUUIDIsNotJudged(t *testing.T) {
	r := newRig(t, estest.Options{})
	other := otherCluster(t)
	old := front(t, other.URL(), func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Path != "/" {
			return false
		}
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		io.WriteString(w, `{"name":"old","cluster_name":"old","cluster_uuid":"_na_","version":{"number":"8.17.0"}}`)
		return true
	})
	for i := range 20 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	run := r.start(r.options(func(o *Options) { o.Hosts = []string{r.es.URL(), old} }))
	waitFor(t, "every event", func() bool { return r.es.Count()+other.Count() == 20 })
	run.Stop(t)
	if why := run.Out.Misconfigured(); why != "" {
		t.Errorf("Misconfigured() = %q: a host without a cluster uuid was judged", why)
	}
}

// TestClusterCheckSendsCredentials: GET / goes to each host with the
// output's credentials, an API key instead of the user when set.
func TestClusterCheckSendsCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"basic", func(o *Options) { o.Username, o.Password = "writer", NewSecret("pw") }, "Basic d3JpdGVyOnB3"},
		{"api key", func(o *Options) { o.Username, o.Password, o.APIKey = "writer", NewSecret("pw"), NewSecret("k") }, "APIKey k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, estest.Options{})
			var mu sync.Mutex
			var seen []string
			host := front(t, r.es.URL(), func(_ http.ResponseWriter, req *http.Request) bool {
				if req.URL.Path == "/" {
					mu.Lock()
					seen = append(seen, req.Header.Get("Authorization"))
					mu.Unlock()
				}
				return false
			})
			out, err := New(r.ledger, r.options(func(o *Options) { o.Hosts = []string{host}; tc.mod(o) }))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out.cluster.run(ctx) // returns once the one host is identified
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || !strings.EqualFold(seen[0], tc.want) {
				t.Errorf("GET / sent with Authorization %q, want [%q]", seen, tc.want)
			}
			if err := out.client.Close(ctx); err != nil {
				t.Error(err)
			}
			out.transport.CloseIdleConnections()
		})
	}
}

// TestOptionsRequireNameAndKey: the output's name and configuration key
// have no default.
func TestOptionsRequireNameAndKey(t *testing.T) {
	r := newRig(t, estest.Options{})
	for _, field := range []string{"Name", "Key"} {
		err := CheckOptions(r.options(func(o *Options) {
			if field == "Name" {
				o.Name = ""
			} else {
				o.Key = ""
			}
		}))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("CheckOptions without %s: %v", field, err)
		}
	}
}

// TestGateAsksAHostBeforeItsFirstBulk: a bulk request to a host that had
// not answered goes only after the host was asked; from another cluster,
// it is refused unsent. (The background would ask it only in an hour.)
func TestGateAsksAHostBeforeItsFirstBulk(t *testing.T) {
	r := newRig(t, estest.Options{})
	other := otherCluster(t)
	if err := other.Pause(); err != nil {
		t.Fatal(err)
	}
	out, err := New(r.ledger, r.options(func(o *Options) {
		o.Hosts = []string{r.es.URL(), other.URL()}
		o.RetryInitial, o.RetryMax = time.Hour, time.Hour
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer out.transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); out.cluster.run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := out.cluster.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Resume(); err != nil {
		t.Fatal(err)
	}
	gate := clusterGate{c: out.cluster, next: out.transport}
	body := "{\"create\":{\"_index\":\"x\",\"_id\":\"1\"}}\n{\"a\":1}\n"
	req, err := http.NewRequest(http.MethodPost, other.URL()+"/_bulk", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if res, err := gate.RoundTrip(req); err == nil {
		res.Body.Close()
		t.Fatalf("a bulk request to a host of another cluster was sent: %d", res.StatusCode)
	}
	if n := other.Stats().BulkRequests; n != 0 {
		t.Errorf("the host of the other cluster received %d bulk requests", n)
	}
	if out.Misconfigured() == "" {
		t.Error("Misconfigured() is empty after the gate found the other cluster")
	}
}

// lines returns the lines of a text log that hold msg.
func lines(log, msg string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, msg) {
			out = append(out, line)
		}
	}
	return out
}

// TestSupportedVersionsAnsweredAndDeliver: hosts of 7.17, 8.17 and 9.1 are
// each logged once with their cluster and version, judged supported, and
// receive every event; none has its data streams turned off.
func TestSupportedVersionsAnsweredAndDeliver(t *testing.T) {
	for _, version := range []string{"7.17.25", "8.17.0", "9.1.0"} {
		t.Run(version, func(t *testing.T) {
			r := newRig(t, estest.Options{Version: version})
			for i := range 10 {
				r.store(time.Now(), filebeatEvent(i, ""))
			}
			var logs syncbuf.Buffer
			run := r.start(r.options(func(o *Options) {
				o.DataStream = DataStreamAuto
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			}))
			waitFor(t, "every event", func() bool { return r.es.Count() == 10 })
			run.Stop(t)
			r.checkAllStoredOnce(t)
			name, uuid := info(t, r.es.URL())
			answered := lines(logs.String(), `msg="elasticsearch answered"`)
			if len(answered) != 1 {
				t.Fatalf("%d lines say the host answered, want 1:\n%s", len(answered), logs.String())
			}
			for _, want := range []string{"level=INFO", "version=" + version, "cluster_uuid=" + uuid, "cluster_name=" + name, "host=" + r.es.URL()} {
				if !strings.Contains(answered[0], want) {
					t.Errorf("the line lacks %s: %s", want, answered[0])
				}
			}
			if why := run.Out.Misconfigured(); why != "" {
				t.Errorf("Misconfigured() = %q", why)
			}
			if run.Out.cluster.noDataStreams.Load() {
				t.Error("data streams turned off for a cluster that has them")
			}
			for _, not := range []string{"does not support", "no data streams", "level=ERROR"} {
				if strings.Contains(logs.String(), not) {
					t.Errorf("the log says %q:\n%s", not, logs.String())
				}
			}
		})
	}
}

// TestDataStreamAlwaysRefusedBefore7_9: with data_stream = true, a host of
// 7.8 (no data streams) leaves the output misconfigured: nothing is sent,
// the reason names the host, its version and the way out, one ERROR says
// so, and Run keeps running.
func TestDataStreamAlwaysRefusedBefore7_9(t *testing.T) {
	r := newRig(t, estest.Options{Version: "7.8.1"})
	for i := range 10 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	var logs syncbuf.Buffer
	run := r.start(r.options(func(o *Options) {
		o.DataStream = DataStreamAlways
		o.DataStreamType, o.DataStreamDataset, o.DataStreamNamespace = "logs", "generic", "default"
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	waitFor(t, "the refusal", func() bool { return run.Out.Misconfigured() != "" })
	why := run.Out.Misconfigured()
	for _, want := range []string{r.es.URL(), "7.8.1", "output.elasticsearch.data_stream = true", "7.9 or later", "data_stream = false", "output.elasticsearch.index"} {
		if !strings.Contains(why, want) {
			t.Errorf("Misconfigured() = %q: lacks %q", why, want)
		}
	}
	select {
	case err := <-run.Done:
		t.Fatalf("Run returned %v: it must keep running", err)
	default:
	}
	run.Stop(t)
	if n := r.es.Stats().BulkRequests; n != 0 {
		t.Errorf("%d bulk requests sent to a cluster without data streams", n)
	}
	if c, _ := r.ledger.Cursor("elasticsearch"); c != 0 {
		t.Errorf("cursor at %d: events passed that were not sent", c)
	}
	errs := lines(logs.String(), "level=ERROR")
	if len(errs) != 1 || !strings.Contains(errs[0], "version=7.8.1") || !strings.Contains(errs[0], "data_stream = false") {
		t.Errorf("want one ERROR naming the version and data_stream = false:\n%s", logs.String())
	}
	if n := len(lines(logs.String(), "does not support")); n != 1 {
		t.Errorf("%d warnings of an unsupported version, want 1:\n%s", n, logs.String())
	}
}

// TestDataStreamAutoOffBefore7_9: with data_stream = "auto", hosts of 7.8
// turn data streams off (events with a data_stream object go to index),
// say so in one WARN however many hosts report it, and leave the output
// free to send.
func TestDataStreamAutoOffBefore7_9(t *testing.T) {
	r := newRig(t, estest.Options{Version: "7.8.1"})
	var logs syncbuf.Buffer
	out, err := New(r.ledger, r.options(func(o *Options) {
		o.DataStream = DataStreamAuto
		o.Hosts = []string{r.es.URL(), r.es.URL() + "/"} // two hosts, one cluster
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer out.transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out.cluster.run(ctx) // returns once both hosts are identified
	if !out.cluster.noDataStreams.Load() {
		t.Error("data streams left on for a cluster of 7.8")
	}
	if why := out.Misconfigured(); why != "" {
		t.Errorf("Misconfigured() = %q with data_stream = \"auto\"", why)
	}
	warn := lines(logs.String(), "no data streams")
	if len(warn) != 1 || !strings.Contains(warn[0], "level=WARN") || !strings.Contains(warn[0], "version=7.8.1") {
		t.Errorf("want one WARN that data streams are off:\n%s", logs.String())
	}
	if n := len(lines(logs.String(), `msg="elasticsearch answered"`)); n != 2 {
		t.Errorf("%d hosts answered, want 2:\n%s", n, logs.String())
	}
}

// TestDataStreamOffIgnoresOldVersions: with data_stream = false a host of
// 7.8 changes nothing but the unsupported-version warning.
func TestDataStreamOffIgnoresOldVersions(t *testing.T) {
	r := newRig(t, estest.Options{Version: "7.8.1"})
	out, err := New(r.ledger, r.options(func(o *Options) { o.DataStream = DataStreamOff }))
	if err != nil {
		t.Fatal(err)
	}
	defer out.transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out.cluster.run(ctx)
	if why := out.Misconfigured(); why != "" || out.cluster.noDataStreams.Load() {
		t.Errorf("Misconfigured() = %q, noDataStreams = %v with data_stream = false", why, out.cluster.noDataStreams.Load())
	}
}

// TestNoHostAnswersAtStart: one WARN after the first round names every
// host and why, when none answered.
func TestNoHostAnswersAtStart(t *testing.T) {
	r := newRig(t, estest.Options{})
	other := otherCluster(t)
	for _, s := range []*estest.Server{r.es, other} {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	logs := firstRoundLog(t, r, r.es.URL(), other.URL())
	warn := lines(logs, "did not answer at start")
	if len(warn) != 1 || !strings.Contains(warn[0], "level=WARN") {
		t.Fatalf("want one WARN:\n%s", logs)
	}
	for _, s := range []*estest.Server{r.es, other} {
		if strings.Count(warn[0], s.URL()) < 2 { // in hosts and in err
			t.Errorf("the warning does not name %s and its error: %s", s.URL(), warn[0])
		}
	}
}

// TestVersionBefore reads versions as Elasticsearch writes them.
func TestVersionBefore(t *testing.T) {
	for _, tc := range []struct {
		v, than string
		want    bool
	}{
		{"7.8.1", "7.9", true},
		{"7.9.0", "7.9", false},
		{"7.10.2", "7.9", false},
		{"7.13.4", "7.14", true},
		{"8.0.0-SNAPSHOT", "7.14", false},
		{"7.8-SNAPSHOT", "7.9", true},
		{"10.0.0", "7.14", false},
		{"6.8.23", "7.14", true},
		{"banana", "7.9", false}, // unreadable: not judged
		{"", "7.9", false},
	} {
		if got := versionBefore(tc.v, tc.than); got != tc.want {
			t.Errorf("versionBefore(%q, %q) = %v, want %v", tc.v, tc.than, got, tc.want)
		}
	}
}

// TestRefusedCredentialsAtStart: a host that refuses the credentials
// (401), or a privilege they lack (403), answered: the start-up log says,
// once, at ERROR, which it was, naming the host and what to check or
// grant, and not that it did not answer nor that its cluster is unknown.
func TestRefusedCredentialsAtStart(t *testing.T) {
	for _, tc := range []struct {
		status       int
		body, inLine string
	}{
		{401, `{"error":{"type":"security_exception","reason":"unable to authenticate user [writer]"},"status":401}`, "refused logpond's credentials (401)"},
		{403, `{"error":{"type":"security_exception","reason":"action [cluster:monitor/main] is unauthorized for user [writer]"},"status":403}`, "monitor cluster privilege"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			r := newRig(t, estest.Options{})
			host := front(t, r.es.URL(), func(w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
				return true
			})
			logs := firstRoundLog(t, r, host)
			refused := lines(logs, tc.inLine)
			if len(refused) != 1 || !strings.Contains(refused[0], "level=ERROR") || !strings.Contains(refused[0], host) ||
				strings.Contains(logs, "did not answer") || strings.Contains(logs, "cannot tell which cluster") {
				t.Errorf("want one ERROR naming the host and %q, and neither \"did not answer\" nor \"cannot tell which cluster\":\n%s", tc.inLine, logs)
			}
		})
	}
}

// firstRoundLog runs the cluster check of an output to hosts until its
// first round has asked every host, and returns what the output logged
// (the background would ask again only in an hour).
func firstRoundLog(t *testing.T, r *rig, hosts ...string) string {
	t.Helper()
	var logs syncbuf.Buffer
	out, err := New(r.ledger, r.options(func(o *Options) {
		o.Hosts = hosts
		o.RetryInitial, o.RetryMax = time.Hour, time.Hour
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer out.transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); out.cluster.run(ctx) }()
	err = out.cluster.wait(ctx)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return logs.String()
}

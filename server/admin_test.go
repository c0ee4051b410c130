package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/powerloss"
	"github.com/logpond/logpond/journal"
)

// TestMetricsAndHealth runs the whole pipeline into the test Elasticsearch
// and scrapes /metrics, /healthz and /readyz: the numbers must match what
// was sent.
func TestMetricsAndHealth(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 7})
	srv.SetFaults(estest.Faults{ItemReject429: 0.1})
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Admin.Listen = "127.0.0.1:0"
	es := &cfg.Output.Elasticsearch
	es.Enabled, es.Hosts = true, []string{srv.URL()}
	es.FlushInterval, es.RetryInitialInterval, es.RetryMaxInterval = 10e6, 1e6, 10e6
	cfg.Ledger.FlushInterval = 5e6
	r := start(t, cfg)
	defer r.shutdown(t)
	s := r.s
	base := "http://" + s.AdminAddr().String()

	c, err := lj.SyncDial(s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const batches, per = 4, 250
	sent := 0
	var bytes int
	for b := range batches {
		var data []interface{}
		for i := range per {
			ev := fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%d-%d"}`, b, i)
			bytes += len(ev)
			data = append(data, json.RawMessage(ev))
		}
		if n, err := c.Send(data); err != nil || n != per {
			t.Fatalf("acked %d: %v", n, err)
		}
		sent += per
	}
	c.Close()
	deadline := time.Now().Add(60 * time.Second)
	var fams map[string]*dto.MetricFamily
	for {
		fams = scrape(t, base+"/metrics")
		if value(fams, "logpond_ledger_lag_records", "cursor", "elasticsearch") == 0 &&
			value(fams, "logpond_ledger_last_lsn") > 0 && srv.Count() == sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipeline did not drain: %d documents of %d", srv.Count(), sent)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"logpond_input_events_total", nil, float64(sent)},
		{"logpond_input_batches_total", nil, batches},
		{"logpond_input_bytes_total", nil, float64(bytes)},
		{"logpond_input_connections", nil, 0},
		{"logpond_input_connections_closed_total", []string{"reason", "client_closed"}, 1},
		{"logpond_backpressure", []string{"reason", "journal_full"}, 0},
		{"logpond_backpressure", []string{"reason", "elasticsearch"}, 0},
	} {
		if got := value(fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if n := histCount(fams, "logpond_journal_group_records"); n == 0 || n != value(fams, "logpond_journal_fsyncs_total") {
		t.Errorf("group histogram count %v, fsyncs %v", n, value(fams, "logpond_journal_fsyncs_total"))
	}
	if histCount(fams, "logpond_journal_fsync_seconds") == 0 || histCount(fams, "logpond_output_request_seconds") == 0 {
		t.Error("fsync or request latency histogram is empty")
	}
	if n := histCount(fams, "logpond_input_ack_seconds"); n != batches {
		t.Errorf("ack latency histogram counts %v batches, want %v", n, batches)
	}
	if _, ok := fams["logpond_output_yielding"]; !ok {
		t.Error("logpond_output_yielding is missing")
	}
	if got := value(fams, "logpond_output_items_total", "outcome", "done") + value(fams, "logpond_output_items_total", "outcome", "conflict"); got != float64(sent) {
		t.Errorf("items done %v, want %d", got, sent)
	}
	if value(fams, "logpond_output_items_total", "outcome", "retry") == 0 {
		t.Error("the test server's 429s were not counted as retries")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, res.StatusCode, body)
		}
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value sums the samples of a counter or gauge whose labels include the
// given name/value pairs; -1 when the family is missing.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		}
	}
	return sum
}

func histCount(fams map[string]*dto.MetricFamily, name string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	n := 0.0
	for _, m := range f.GetMetric() {
		n += float64(m.GetHistogram().GetSampleCount())
	}
	return n
}

func hasLabels(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && strings.EqualFold(l.GetValue(), kv[i+1]) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestReadyzReportsBackpressure fills a tiny ledger with nothing draining
// it: the flusher waits, the journal fills, acknowledgements stop, and
// /readyz and logpond_backpressure must say so with the reason.
func TestReadyzReportsBackpressure(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes, cfg.Journal.MaxGroupBytes = 1<<20, 2<<20, 256<<10
	cfg.Journal.SpareSegments = 0
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes, cfg.Ledger.FlushInterval = 1<<20, 2<<20, 5e6
	cfg.Input.Beats.MaxEventBytes = 512 << 10     // what the small journal admits
	cfg.Ledger.Compression = conf.CompressionNone // the stores fill with the events' own size, not what their padding compresses to
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	base := "http://" + s.AdminAddr().String()
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz %d before any load", code)
	}
	c, err := lj.SyncDial(s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	sender := make(chan struct{})
	go func() {
		defer close(sender)
		ev := json.RawMessage(fmt.Sprintf(`{"message":%q}`, strings.Repeat("x", 4000)))
		for {
			data := make([]interface{}, 100)
			for i := range data {
				data[i] = ev
			}
			if _, err := c.Send(data); err != nil {
				return // the server stopped
			}
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := get(t, base+"/readyz")
		if code == 503 && strings.Contains(body, "journal_full") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never reported the full journal: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fams := scrape(t, base+"/metrics")
	for _, reason := range []string{"journal_full", "ledger_full"} {
		if v := value(fams, "logpond_backpressure", "reason", reason); v != 1 {
			t.Errorf("logpond_backpressure{reason=%q} = %v, want 1", reason, v)
		}
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz %d: backpressure is not ill health", code)
	}
	cancel()
	// The final flush gives up on the full ledger after its bound; the
	// journal keeps the rest: not a failed stop.
	if err := <-done; err != nil {
		t.Errorf("Run with a full ledger: %v", err)
	}
	c.Close()
	<-sender
	s.Close()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// startWithAdmin runs a server with the admin endpoint and no output.
func startWithAdmin(t *testing.T, cfg *conf.Config) (*running, string) {
	t.Helper()
	cfg.Admin.Listen = "127.0.0.1:0"
	r := start(t, cfg)
	t.Cleanup(func() { r.shutdown(t) })
	return r, "http://" + r.s.AdminAddr().String()
}

// TestAdminConnectionLimits: the admin endpoint closes a connection that
// idles after a request, and refuses oversized headers.
func TestAdminConnectionLimits(t *testing.T) {
	saved := adminLimits
	adminLimits.idle = 200 * time.Millisecond
	t.Cleanup(func() { adminLimits = saved })
	root := t.TempDir()
	_, base := startWithAdmin(t, testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger")))
	addr := strings.TrimPrefix(base, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /livez HTTP/1.1\r\nHost: logpond\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("/livez %d", res.StatusCode)
	}
	// Kept alive for the next request, then closed by the server once it
	// idled: well before this hang guard.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the server sent bytes nobody asked for")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("an idle admin connection was kept open")
	}

	req, err := http.NewRequest("GET", base+"/livez", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Padding", strings.Repeat("x", 64<<10))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header got %d, want 431", res.StatusCode)
	}
	if l := adminLimits; l.read <= 0 || l.write <= 0 || l.readHeader <= 0 || l.maxHeaderBytes <= 0 {
		t.Errorf("admin limits %+v: every one must be set", l)
	}
}

// TestProbeVerdicts: liveness fails only for a stage that stopped for
// good; readiness also for what logpond waits out by itself.
func TestProbeVerdicts(t *testing.T) {
	in := &input.BeatsStats{}
	for _, tc := range []struct {
		name         string
		st           state
		alive, ready bool
	}{
		{"healthy", state{input: in}, true, true},
		{"journal failed", state{input: in, journalErr: errors.New("no space left on device")}, true, false},
		{"ledger failed", state{input: in, waiting: map[string]string{"ledger_failed": "reopening"}}, true, false},
		{"journal full", state{input: in, waiting: map[string]string{"journal_full": "full"}}, true, false},
		{"accepts fail", state{input: in, inputWaiting: "accepting fails: too many open files"}, true, false},
		{"input stopped", state{input: in, inputFailed: errors.New("listener closed")}, false, false},
		{"input not running", state{}, true, false},
	} {
		if alive := len(tc.st.notAlive()) == 0; alive != tc.alive {
			t.Errorf("%s: alive %v, want %v (%q)", tc.name, alive, tc.alive, tc.st.notAlive())
		}
		if ready := len(tc.st.notReady()) == 0; ready != tc.ready {
			t.Errorf("%s: ready %v, want %v (%q)", tc.name, ready, tc.ready, tc.st.notReady())
		}
	}
}

// TestProbesWhileTheJournalFailed: a journal failed on a full device is
// not ready (nothing is acknowledged) but alive: logpond reopens it by
// itself once there is room, and a liveness probe that restarted it
// meanwhile would only loop.
func TestProbesWhileTheJournalFailed(t *testing.T) {
	jdisk := powerloss.New(t, 32<<20)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(jdisk.Dir, "journal")
	cfg.Journal.MaxBytes = 1 << 30 // larger than the device: the device fills first
	r, base := startWithAdmin(t, cfg)
	jdisk.Fill("filler", 64<<10)
	for seq := 0; ; seq++ {
		_, err := appendVia(context.Background(), r.s, testRecordText(fmt.Sprintf(`{"seq":%d,"pad":"%0*d"}`, seq, 64<<10, 0)))
		if errors.Is(err, journal.ErrPoisoned) || errors.Is(err, journal.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if seq > 100_000 {
			t.Fatal("the journal never failed on its full device")
		}
	}
	for _, path := range []string{"/livez", "/healthz"} {
		if code, body := get(t, base+path); code != 200 {
			t.Errorf("%s while the journal failed: %d %s, want 200", path, code, body)
		}
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "journal failed") {
		t.Errorf("/readyz while the journal failed: %d %q, want 503 saying why", code, body)
	}
}

// Package promcheck holds what the tests of the shipped Prometheus rules
// and Grafana dashboard share: the metric names a PromQL expression
// selects, and the metric names a running logpond exports.
package promcheck

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/servertest"
)

// Funcs are the PromQL functions and aggregations the shipped
// expressions may call; anything else followed by "(" is reported as a
// typo.
var Funcs = []string{
	"abs", "absent", "absent_over_time", "avg", "avg_over_time", "ceil", "changes", "clamp_max", "clamp_min", "count",
	"count_over_time", "delta", "deriv", "floor", "histogram_quantile", "idelta", "increase", "irate",
	"label_replace", "max", "max_over_time", "min", "min_over_time", "predict_linear", "quantile", "quantile_over_time",
	"rate", "resets", "round", "scalar", "sort", "sort_desc", "stddev", "sum", "sum_over_time", "time",
	"topk", "bottomk", "vector",
}

var keywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}

var (
	reString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	reMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	reRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	reGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	reToken    = regexp.MustCompile(`[A-Za-z0-9_:.]+`)
)

// MetricNames returns the metric names an expression selects: what is
// left once strings, label matchers, ranges, grouping clauses, function
// names, keywords and numbers are taken out. A name called like a
// function that PromQL does not have is an error.
func MetricNames(expr string) ([]string, error) {
	s := reString.ReplaceAllString(expr, `""`)
	s = reMatchers.ReplaceAllString(s, " ")
	s = reRange.ReplaceAllString(s, " ")
	s = reGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range reToken.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if tok[0] >= '0' && tok[0] <= '9' || tok[0] == '.' {
			continue // a number
		}
		if strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " "), "(") {
			if !slices.Contains(Funcs, tok) {
				return nil, fmt.Errorf("%q is not a PromQL function this test knows", tok)
			}
			continue
		}
		if slices.Contains(keywords, strings.ToLower(tok)) {
			continue
		}
		names = append(names, tok)
	}
	return names, nil
}

// Exported runs a real logpond server (Beats input, journal, ledger,
// Elasticsearch output into the in-repo test server, admin endpoint),
// sends events and a malformed connection so that every labelled and
// histogram metric has samples, and returns the sample names /metrics
// exports: every family, and for histograms and summaries their _bucket,
// _sum and _count series.
func Exported(t *testing.T) map[string]bool {
	t.Helper()
	es, err := estest.Start(estest.Options{Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	// Some 429s so that retries show up as an outcome too.
	es.SetFaults(estest.Faults{ItemReject429: 0.1})
	root := t.TempDir()
	cfg := servertest.Config(root, es.URL())
	o := &cfg.Output.Elasticsearch
	o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(time.Millisecond), conf.Duration(10*time.Millisecond)
	// A Lumberjack output too, whose receiver is down: its own series
	// (reconnects, events without id) are exported as well.
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	lo := conf.DefaultLumberjack()
	lo.Hosts = []string{downAddr}
	cfg.Output.Lumberjack = map[string]*conf.Lumberjack{"relay": &lo}
	s := servertest.Run(t, cfg, nil)

	c, err := lj.SyncDial(s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const per = 200
	for b := range 3 {
		var data []interface{}
		for i := range per {
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%d-%d"}`, b, i)))
		}
		if n, err := c.Send(data); err != nil || n != per {
			t.Fatalf("batch %d: acked %d: %v", b, n, err)
		}
	}
	c.Close()
	// A client speaking Lumberjack v1: closed, counted as a violation.
	raw, err := net.Dial("tcp", s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("1W\x00\x00\x00\x01"))
	raw.Close()

	// Wait until what this caused has been counted: every event stored
	// (so item outcomes and request latencies were observed), the
	// output's cursor exists, the bad connection was closed.
	url := "http://" + s.AdminAddr().String() + "/metrics"
	deadline := time.Now().Add(60 * time.Second)
	for {
		exported := scrape(t, url)
		settled := es.Count() == 3*per
		for _, n := range []string{"logpond_output_items_total", "logpond_output_request_seconds_bucket", "logpond_ledger_lag_records", "logpond_input_violations_total"} {
			settled = settled && exported[n]
		}
		if settled || time.Now().After(deadline) {
			return exported
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape returns the sample names /metrics exports.
func scrape(t *testing.T, url string) map[string]bool {
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
	names := map[string]bool{}
	for name, f := range fams {
		if len(f.GetMetric()) == 0 {
			continue
		}
		names[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names
}

// Unexported returns, sorted, the metric names among used's keys that a
// running logpond does not export (see Exported).
func Unexported(t *testing.T, used map[string][]string) []string {
	t.Helper()
	exported := Exported(t)
	var missing []string
	for n := range used {
		if !exported[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	return missing
}

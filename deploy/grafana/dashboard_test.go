package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	"github.com/logpond/logpond/output/estest"
	"github.com/logpond/logpond/server"
)

// dashboard is the part of Grafana's dashboard model the tests look at.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	data, err := os.ReadFile("logpond.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("logpond.json: %v", err)
	}
	return &d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// expressions returns every PromQL expression of the dashboard, labelled
// with where it is, including the metric of label_values() variables.
func expressions(t *testing.T, d *dashboard) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			exprs[fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)] = tg.Expr
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(\s*([^,]+),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: definition %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		exprs["variable "+v.Name] = m[1]
	}
	return exprs
}

// promqlFuncs are the PromQL functions and aggregations the dashboard may
// call; anything else followed by "(" is reported as a typo.
var promqlFuncs = []string{
	"abs", "absent", "avg", "avg_over_time", "ceil", "changes", "clamp_max", "clamp_min", "count",
	"count_over_time", "delta", "deriv", "floor", "histogram_quantile", "idelta", "increase", "irate",
	"label_replace", "max", "max_over_time", "min", "min_over_time", "quantile", "quantile_over_time",
	"rate", "resets", "round", "scalar", "sort", "sort_desc", "stddev", "sum", "sum_over_time", "time",
	"topk", "bottomk", "vector",
}

var promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}

var (
	reString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	reMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	reRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	reGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	reToken    = regexp.MustCompile(`[A-Za-z0-9_:.]+`)
)

// metricNames returns the metric names an expression selects: what is
// left once strings, label matchers, ranges, grouping clauses, function
// names, keywords and numbers are taken out. A name the dashboard calls
// like a function but PromQL does not have is an error.
func metricNames(expr string) ([]string, error) {
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
			if !slices.Contains(promqlFuncs, tok) {
				return nil, fmt.Errorf("%q is not a PromQL function this test knows", tok)
			}
			continue
		}
		if slices.Contains(promqlKeywords, strings.ToLower(tok)) {
			continue
		}
		names = append(names, tok)
	}
	return names, nil
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (le, instance) (rate(logpond_journal_fsync_seconds_bucket{instance=~"$instance",x="a{b}"}[$__rate_interval]))`: {"logpond_journal_fsync_seconds_bucket"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m])))`:                                                           {"a_bucket"},
		`sum(rate(a_sum[1m])) / sum(rate(a_count[1m])) > 1e3 and on (instance) b`:                                              {"a_sum", "a_count", "b"},
		`max without (cursor) (c) - 2`: {"c"},
	} {
		got, err := metricNames(expr)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %v, %v; want %v", expr, got, err, want)
		}
	}
	if _, err := metricNames(`rat(a[1m])`); err == nil {
		t.Error("an unknown function was accepted")
	}
}

// TestDashboardShape: a Grafana dashboard of schema 36 or later whose
// every panel and query uses the Prometheus data source variable, so it
// imports into any Grafana with any data source name.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want at least 36", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	var dsVar string
	for _, v := range d.Templating.List {
		var q string
		if v.Type == "datasource" && json.Unmarshal(v.Query, &q) == nil && q == "prometheus" {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("no datasource variable of type prometheus in templating")
	}
	want := datasource{Type: "prometheus", UID: "${" + dsVar + "}"}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || *v.Datasource != want) {
			t.Errorf("variable %s does not use the data source variable: %+v", v.Name, v.Datasource)
		}
	}
	ids := map[int]bool{}
	n := 0
	for _, p := range allPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		n++
		if p.Datasource == nil || *p.Datasource != want {
			t.Errorf("panel %q does not use the data source variable: %+v", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && *tg.Datasource != want {
				t.Errorf("panel %q target %s uses another data source: %+v", p.Title, tg.RefID, tg.Datasource)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
			}
		}
	}
	if n == 0 {
		t.Fatal("the dashboard has no panels")
	}
}

// required are the metrics the dashboard exists to show: removing one
// of them from the dashboard fails the test.
var required = []string{
	"logpond_input_events_total", "logpond_output_items_total", "logpond_journal_fsync_seconds",
	"logpond_journal_group_records", "logpond_ledger_lag_records", "logpond_ledger_bytes",
	"logpond_journal_bytes", "logpond_backpressure", "logpond_output_request_seconds",
}

// TestDashboardMetricsAreExported runs a real server (Beats input, journal,
// ledger, Elasticsearch output into the in-repo test server, admin
// endpoint), sends events and a malformed connection so that every
// labelled and histogram metric has samples, scrapes /metrics, and checks
// that every metric the dashboard queries is there.
func TestDashboardMetricsAreExported(t *testing.T) {
	d := loadDashboard(t)
	used := map[string][]string{} // metric → where
	for where, expr := range expressions(t, d) {
		names, err := metricNames(expr)
		if err != nil {
			t.Errorf("%s: %v: %s", where, err, expr)
		}
		if len(names) == 0 {
			t.Errorf("%s selects no metric: %s", where, expr)
		}
		for _, n := range names {
			used[n] = append(used[n], where)
		}
	}
	for _, r := range required {
		if len(used[r])+len(used[r+"_bucket"])+len(used[r+"_sum"])+len(used[r+"_count"]) == 0 {
			t.Errorf("the dashboard does not show %s", r)
		}
	}

	es, err := estest.Start(estest.Options{Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	// Some 429s so that retries show up as an outcome too.
	es.SetFaults(estest.Faults{ItemReject429: 0.1})
	root := t.TempDir()
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	cfg.Input.Beats.Listen, cfg.Admin.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Ledger.FlushInterval = conf.Duration(5 * time.Millisecond)
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval = conf.Duration(10 * time.Millisecond)
	o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(time.Millisecond), conf.Duration(10*time.Millisecond)
	s, err := server.Open(&cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	}()

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

	// Wait until what this test caused has been counted: every event
	// stored (so item outcomes and request latencies were observed), the
	// output's cursor exists, the bad connection was closed. Then compare.
	url := "http://" + s.AdminAddr().String() + "/metrics"
	deadline := time.Now().Add(60 * time.Second)
	var exported map[string]bool
	for {
		exported = scrape(t, url)
		settled := es.Count() == 3*per
		for _, n := range []string{"logpond_output_items_total", "logpond_output_request_seconds_bucket", "logpond_ledger_lag_records", "logpond_input_violations_total"} {
			settled = settled && exported[n]
		}
		if settled || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var missing []string
	for n := range used {
		if !exported[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	for _, n := range missing {
		t.Errorf("the dashboard queries %s, which logpond does not export (used in %s)", n, strings.Join(used[n], "; "))
	}
}

// scrape returns the sample names /metrics exports: every family, and for
// histograms and summaries their _bucket, _sum and _count series.
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

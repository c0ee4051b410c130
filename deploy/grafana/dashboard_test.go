package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/logpond/logpond/deploy/internal/deploytest"
	"github.com/logpond/logpond/internal/testkit/promcheck"
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
		RefID        string      `json:"refId"`
		Expr         string      `json:"expr"`
		LegendFormat string      `json:"legendFormat"`
		Datasource   *datasource `json:"datasource"`
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

// metricNames is promcheck.MetricNames.
var metricNames = promcheck.MetricNames

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
	"logpond_output_pending_events", "logpond_output_pending_bytes", "logpond_output_oldest_pending_seconds",
	"logpond_journal_fill_ratio", "logpond_ledger_fill_ratio", "logpond_dead_letter_fill_ratio",
	"logpond_output_events_delivered_total", "logpond_output_events_dead_lettered_total",
	"logpond_output_concurrency_limit", "logpond_output_requests_in_flight", "logpond_output_pace_events_per_second",
	"logpond_input_ack_seconds", "logpond_output_yielding",
	"logpond_output_retry_queue_events", "logpond_output_retry_queue_bytes", "logpond_output_retry_queue_max_bytes",
	"logpond_ledger_read_errors_total", "logpond_journal_read_errors_total", "logpond_input_connections_closed_total",
	"logpond_output_skipped_events_total", "logpond_output_skipped_records_total", "logpond_ledger_orphan_cursor_bytes",
	"logpond_output_misconfigured", "logpond_ledger_compression_ratio", "logpond_ledger_stored_bytes_total", "logpond_ledger_raw_bytes_total",
}

// TestDashboardMetricsAreExported runs a real server
// (promcheck.Exported), scrapes /metrics, and checks that every metric the
// dashboard queries is there.
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

	used = deploytest.Check(t, used, "the dashboard")
	for _, n := range promcheck.Unexported(t, used) {
		t.Errorf("the dashboard queries %s, which logpond does not export (used in %s)", n, strings.Join(used[n], "; "))
	}
}

// TestOutputPanelsByOutput: every graph of a per-output series keeps the
// output label (its aggregations group by output) and names it in its
// legend, so that several outputs draining one ledger are told apart;
// and every such query obeys the $output variable. The overview's stat
// panels add the outputs up and only obey the variable.
func TestOutputPanelsByOutput(t *testing.T) {
	d := loadDashboard(t)
	grouping := regexp.MustCompile(`\b(by|without)\s*\(([^()]*)\)`)
	n := 0
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "logpond_output_") && !strings.Contains(tg.Expr, "logpond_dead_letter_") {
				continue
			}
			n++
			if !strings.Contains(tg.Expr, `output=~"$output"`) {
				t.Errorf("panel %q target %s ignores the $output variable: %s", p.Title, tg.RefID, tg.Expr)
			}
			if p.Type == "stat" {
				continue
			}
			for _, g := range grouping.FindAllStringSubmatch(tg.Expr, -1) {
				labels := strings.Split(g[2], ",")
				for i := range labels {
					labels[i] = strings.TrimSpace(labels[i])
				}
				if g[1] != "by" || !slices.Contains(labels, "output") {
					t.Errorf("panel %q target %s: %q drops the output label: %s", p.Title, tg.RefID, g[0], tg.Expr)
				}
			}
			if !strings.Contains(tg.LegendFormat, "{{output}}") {
				t.Errorf("panel %q target %s: legend %q does not name the output ({{output}})", p.Title, tg.RefID, tg.LegendFormat)
			}
		}
	}
	if n == 0 {
		t.Fatal("no panel shows an output's series")
	}
}

package prometheus

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/logpond/logpond/deploy/internal/deploytest"
	"github.com/logpond/logpond/internal/testkit/promcheck"
)

// rules is the part of Prometheus' rule file format the test looks at.
type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) *rules {
	t.Helper()
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var r rules
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true) // a misspelt key is an error, as in Prometheus
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	return &r
}

// watched are the conditions the rules exist to catch, by the metric
// each must read: removing one fails the test.
var watched = map[string]string{
	"output lag age":                      "logpond_output_oldest_pending_seconds",
	"journal nearly full":                 "logpond_journal_fill_ratio",
	"ledger nearly full":                  "logpond_ledger_fill_ratio",
	"dead letters growing":                "logpond_output_events_dead_lettered_total",
	"elasticsearch failing":               "logpond_backpressure",
	"requests failing whole":              "logpond_output_requests_failed_total",
	"damage passed in the ledger":         "logpond_output_damaged_ranges_total",
	"open ledger segment damage repaired": "logpond_ledger_damage_repaired_total",
	"failed ledger not reopened":          "logpond_ledger_reopen_refused_total",
	"ledger device failing reads":         "logpond_ledger_read_errors_total",
	"journal device failing reads":        "logpond_journal_read_errors_total",
	"output skipped by max_lag":           "logpond_output_skipped_records_total",
	"cursor of a removed output":          "logpond_ledger_orphan_cursor_bytes",
	"output misconfigured":                "logpond_output_misconfigured",
	"events forwarded without an id":      "logpond_output_events_without_id_total",
}

// watchedReasons are the logpond_backpressure reasons an alert must
// select on its own, each for an output's destination failing.
var watchedReasons = []string{"elasticsearch", "lumberjack"}

// TestAlertRules: every rule is a complete alert (name, expression, a
// severity, a summary, a valid for), names are unique, and every metric an
// expression selects is exported by a running logpond.
func TestAlertRules(t *testing.T) {
	r := loadRules(t)
	used := map[string][]string{} // metric → alerts
	names := map[string]bool{}
	n := 0
	for _, g := range r.Groups {
		if g.Name == "" {
			t.Error("a group without a name")
		}
		for _, rule := range g.Rules {
			n++
			if rule.Alert == "" || rule.Record != "" {
				t.Errorf("group %s: rule %q is not an alert", g.Name, rule.Expr)
				continue
			}
			if names[rule.Alert] {
				t.Errorf("alert %s is defined twice", rule.Alert)
			}
			names[rule.Alert] = true
			if s := rule.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", rule.Alert, s)
			}
			if rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
				t.Errorf("alert %s needs a summary and a description", rule.Alert)
			}
			if rule.For != "" {
				if d, err := model.ParseDuration(rule.For); err != nil || time.Duration(d) <= 0 {
					t.Errorf("alert %s: for %q: %v", rule.Alert, rule.For, err)
				}
			}
			ms, err := promcheck.MetricNames(rule.Expr)
			if err != nil {
				t.Errorf("alert %s: %v: %s", rule.Alert, err, rule.Expr)
			}
			if len(ms) == 0 {
				t.Errorf("alert %s selects no metric: %s", rule.Alert, rule.Expr)
			}
			for _, m := range ms {
				used[m] = append(used[m], rule.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	for what, m := range watched {
		if len(used[m]) == 0 {
			t.Errorf("no alert for %s (on %s)", what, m)
		}
	}
	for _, reason := range watchedReasons {
		sel := `logpond_backpressure{reason="` + reason + `"}`
		found := false
		for _, g := range r.Groups {
			for _, rule := range g.Rules {
				found = found || strings.Contains(rule.Expr, sel)
			}
		}
		if !found {
			t.Errorf("no alert selects %s", sel)
		}
	}
	used = deploytest.Check(t, used, "alerts")
	for _, m := range promcheck.Unexported(t, used) {
		t.Errorf("alerts %s read %s, which logpond does not export", strings.Join(slices.Compact(used[m]), ", "), m)
	}
}

// perOutput says whether expr reads a series labelled with the output it
// is about: every logpond_output_* and logpond_dead_letter_* series, and
// logpond_backpressure for an output's own reasons.
func perOutput(expr string) bool {
	for _, r := range watchedReasons {
		if strings.Contains(expr, `logpond_backpressure{reason="`+r+`"}`) {
			return true
		}
	}
	return strings.Contains(expr, "logpond_output_") || strings.Contains(expr, "logpond_dead_letter_")
}

// TestOutputAlertsNameTheOutput: an alert about an output keeps the
// output label (every aggregation groups by instance and output) and its
// summary says which output, so that one output failing is not taken for
// all of them, and two failing outputs are two alerts.
func TestOutputAlertsNameTheOutput(t *testing.T) {
	r := loadRules(t)
	n := 0
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			if !perOutput(rule.Expr) {
				continue
			}
			n++
			for _, by := range regexp.MustCompile(`\b(?:by|without)\s*\(([^()]*)\)`).FindAllStringSubmatch(rule.Expr, -1) {
				if !strings.HasPrefix(by[0], "by") || !slices.Contains(splitLabels(by[1]), "output") || !slices.Contains(splitLabels(by[1]), "instance") {
					t.Errorf("alert %s: %q drops the output or instance label: group by (instance, output)", rule.Alert, by[0])
				}
			}
			if !strings.Contains(rule.Annotations["summary"], "{{ $labels.output }}") {
				t.Errorf("alert %s: its summary does not name the output ({{ $labels.output }})", rule.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert reads an output's series")
	}
}

// splitLabels splits a grouping clause's label list.
func splitLabels(list string) []string {
	var out []string
	for _, l := range strings.Split(list, ",") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

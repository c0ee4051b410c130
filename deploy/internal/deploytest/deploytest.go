// Package deploytest holds what the tests of the shipped Prometheus rules
// and Grafana dashboard need beyond internal/testkit/promcheck: the
// metrics a running logpond exports only in some conditions, and a server
// set up in those conditions. Only tests import it.
package deploytest

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logpond/logpond/internal/testkit/servertest"
	"github.com/logpond/logpond/ledger"
)

// Conditional are the metrics a running logpond exports only in some
// condition, by the condition. promcheck.Exported's server does not meet
// them, so the tests check these against ExportedConditional instead.
var Conditional = map[string]string{
	// One series per cursor no configured output owns: none while every
	// cursor belongs to an output.
	"logpond_ledger_orphan_cursor_bytes": "a ledger cursor that no configured output owns",
}

// orphanCursor names the cursor of the output ExportedConditional's
// server no longer has.
const orphanCursor = "removed"

// ExportedConditional runs a real logpond server in every condition of
// Conditional — a ledger holding the cursor of an output its
// configuration no longer has — and returns the metric names its
// /metrics exports.
func ExportedConditional(t *testing.T) map[string]bool {
	t.Helper()
	root := t.TempDir()
	cfg := servertest.Config(root, "") // no output: every cursor is an orphan
	// The ledger as an earlier configuration left it: one output's cursor.
	l, err := ledger.Open(cfg.Ledger.Dir, ledger.Options{SegmentBytes: int64(cfg.Ledger.SegmentBytes), MaxBytes: int64(cfg.Ledger.MaxBytes)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetCursor(orphanCursor, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s := servertest.Run(t, cfg, nil)
	return scrape(t, "http://"+s.AdminAddr().String()+"/metrics")
}

// scrape returns the metric family names url exports with at least one
// sample.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	names := map[string]bool{}
	for name, f := range fams {
		if len(f.GetMetric()) > 0 {
			names[name] = true
		}
	}
	return names
}

// Check reports, as test errors, the metrics among used's keys (metric →
// where it is used) that promcheck cannot find on its server because they
// are Conditional, yet that a server in their condition does not export
// either; and every Conditional metric such a server does not export, used
// or not, so that the list stays true. It returns used without the
// Conditional metrics, for promcheck.Unexported.
func Check(t *testing.T, used map[string][]string, what string) map[string][]string {
	t.Helper()
	exported := ExportedConditional(t)
	rest := map[string][]string{}
	for m, where := range used {
		if _, ok := Conditional[m]; !ok {
			rest[m] = where
		}
	}
	for m, cond := range Conditional {
		if !exported[m] {
			t.Errorf("logpond does not export %s even with %s (used by %s %v)", m, cond, what, used[m])
		}
	}
	return rest
}

// Package prometheus holds logpond's Prometheus alerting rules,
// alerts.yml: load them with rule_files in prometheus.yml. The package's
// test checks that every rule is complete, that every metric its
// expressions select is one a running logpond exports (in the condition
// that exports it, for the few that only some conditions do), and that the
// alerts about an output keep and name the output label.
package prometheus

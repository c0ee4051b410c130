// Package prometheus holds logpond's Prometheus alerting rules,
// alerts.yml: load them with rule_files in prometheus.yml. The package's
// test checks that every rule is complete and that every metric its
// expressions select is one a running logpond exports.
package prometheus

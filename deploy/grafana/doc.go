// Package grafana holds logpond's Grafana dashboard, logpond.json: import
// it into Grafana (schema version 36 or later) and pick the Prometheus data
// source that scrapes logpond's /metrics. The package's test starts a real
// logpond server and checks that every metric the dashboard queries is
// exported.
package grafana

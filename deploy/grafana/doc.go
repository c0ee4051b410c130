// Package grafana holds logpond's Grafana dashboard, logpond.json: import
// it into Grafana (schema version 36 or later) and pick the Prometheus data
// source that scrapes logpond's /metrics. Per-output series are shown by
// output and filtered by the $output variable. The package's test starts a
// real logpond server and checks that every metric the dashboard queries is
// exported (metrics only some conditions export, such as orphan cursors,
// against a server in that condition: deploy/internal/deploytest).
package grafana

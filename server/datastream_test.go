package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/dlq"
)

// agentEvent is one event of TestDataStreamsEndToEnd and where it must
// land: a data stream or an index by name (target), with these
// data_stream members once stored, or a dead letter whose reason holds
// dead.
type agentEvent struct {
	name   string
	event  string // without its "n" member, which the test adds
	target string
	ds     [3]string // the stored data_stream object's type, dataset, namespace; "" for none
	dead   string
}

const fbMeta = `"@metadata":{"beat":"filebeat","version":"9.3.0"}`

// agentEvents are Elastic Agent events (whole and partial data_stream,
// logs and metrics), classic Filebeat events and events naming invalid
// data streams, for data_stream = "auto" (always false) or true.
func agentEvents(always bool) []agentEvent {
	ts := `"@timestamp":"2026-12-05T01:02:03.456Z"`
	classic := agentEvent{name: "classic filebeat", event: `{` + ts + `,` + fbMeta + `,"message":"GET /"}`, target: "filebeat-9.3.0"}
	if always {
		classic.target, classic.ds = "logs-generic-default", [3]string{"logs", "generic", "default"}
	}
	return []agentEvent{
		{name: "agent logs", event: `{` + ts + `,` + fbMeta + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"GET /"}`,
			target: "logs-nginx.access-prod", ds: [3]string{"logs", "nginx.access", "prod"}},
		{name: "agent metrics", event: `{` + ts + `,"data_stream":{"type":"metrics","dataset":"system.cpu","namespace":"default"},"system":{"cpu":{"total":{"pct":0.5}}}}`,
			target: "metrics-system.cpu-default", ds: [3]string{"metrics", "system.cpu", "default"}},
		{name: "partial, no @timestamp", event: `{"data_stream":{"dataset":"app"},"message":"partial"}`,
			target: "logs-app-default", ds: [3]string{"logs", "app", "default"}},
		{name: "null members", event: `{` + ts + `,"data_stream":{"type":null,"dataset":"app","namespace":null},"message":"nulls"}`,
			target: "logs-app-default", ds: [3]string{"logs", "app", "default"}},
		classic,
		{name: "dash in dataset", event: `{` + ts + `,"data_stream":{"type":"logs","dataset":"nginx-access"},"message":"x"}`, dead: `must not contain "-"`},
		{name: "upper case namespace", event: `{` + ts + `,"data_stream":{"type":"logs","dataset":"app","namespace":"Prod"},"message":"x"}`, dead: "lowercase"},
		{name: "unknown type", event: `{` + ts + `,"data_stream":{"type":"events","dataset":"app"},"message":"x"}`, dead: "logs, metrics, traces"},
	}
}

// TestDataStreamsEndToEnd sends Agent-shaped, classic and invalid events
// through the whole pipeline (Beats input, journal, ledger) into a test
// cluster that enforces data stream rules (create only, @timestamp, names)
// answering as 7.17, 8.x and 9.x, with data_stream = "auto" and true:
// every valid event lands once in its place with its data_stream object
// filled in, the invalid ones become dead letters naming the rule, the
// drain completes, and GET / and /metrics count the events by target.
func TestDataStreamsEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		version string
		always  bool
	}{{"7.17.25", false}, {"8.17.0", false}, {"9.1.0", false}, {"8.17.0", true}, {"7.17.25", true}} {
		mode := "auto"
		if tc.always {
			mode = "true"
		}
		t.Run(tc.version+"/data_stream="+mode, func(t *testing.T) {
			es := startES(t, estest.Options{Version: tc.version, Seed: 31})
			cfg := pipelineConfig(t, t.TempDir())
			cfg.Admin.Listen = "127.0.0.1:0"
			cfg.Output.Elasticsearch = *namedES(es.URL())
			cfg.Output.Elasticsearch.DataStream = conf.DataStreamAuto
			if tc.always {
				cfg.Output.Elasticsearch.DataStream = conf.DataStreamOn
			}
			r := start(t, cfg)
			defer r.shutdown(t)

			const copies = 25 // each event, numbered
			events := agentEvents(tc.always)
			c, err := lj.SyncDial(r.s.BeatsAddr().String(), lj.Timeout(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			var batch []any
			for n := range copies * len(events) {
				ev := events[n%len(events)].event
				batch = append(batch, json.RawMessage(fmt.Sprintf(`{"n":%d,%s`, n, ev[1:])))
			}
			if _, err := c.Send(batch); err != nil {
				t.Fatal(err)
			}
			c.Close()
			waitUntil(t, "the drain", func() bool {
				st := r.s.outputs.byName("elasticsearch").Stats()
				return st.Delivered >= int64(len(batch)) && st.CursorLSN >= r.s.ledger().LastLSN()
			})

			// Placement: each valid event once, where it belongs.
			seen := map[int]int{}
			for _, d := range es.Docs() {
				var doc struct {
					N          int                `json:"n"`
					Timestamp  string             `json:"@timestamp"`
					DataStream *map[string]string `json:"data_stream"`
					Metadata   json.RawMessage    `json:"@metadata"`
				}
				if err := json.Unmarshal(d.Source, &doc); err != nil {
					t.Fatalf("stored %s: %v", d.Source, err)
				}
				seen[doc.N]++
				want := events[doc.N%len(events)]
				where := d.Index
				if d.DataStream != "" {
					where = d.DataStream
				}
				if want.dead != "" || where != want.target {
					t.Errorf("%s (n=%d) stored in %q, want %q (dead letter %q)", want.name, doc.N, where, want.target, want.dead)
					continue
				}
				if doc.Timestamp == "" || doc.Metadata != nil {
					t.Errorf("%s: stored %s: want @timestamp and no @metadata", want.name, d.Source)
				}
				switch {
				case want.ds == [3]string{}:
					if doc.DataStream != nil || d.DataStream != "" {
						t.Errorf("%s: stored as a data stream document: %s", want.name, d.Source)
					}
				case doc.DataStream == nil:
					t.Errorf("%s: stored without data_stream: %s", want.name, d.Source)
				default:
					got := [3]string{(*doc.DataStream)["type"], (*doc.DataStream)["dataset"], (*doc.DataStream)["namespace"]}
					if got != want.ds || d.DataStream == "" {
						t.Errorf("%s: data_stream %v in %q (a data stream: %v), want %v", want.name, got, where, d.DataStream != "", want.ds)
					}
				}
			}
			valid, invalid := 0, 0
			for n := range copies * len(events) {
				ev := events[n%len(events)]
				if ev.dead != "" {
					invalid++
					continue
				}
				valid++
				if seen[n] != 1 {
					t.Errorf("%s (n=%d) stored %d times, want once", ev.name, n, seen[n])
				}
			}
			if st := es.Stats(); st.DataStreamRefused != 0 || st.Conflicts409 != 0 {
				t.Errorf("the cluster refused %d data stream items and answered %d conflicts: want none", st.DataStreamRefused, st.Conflicts409)
			}

			// Dead letters: each invalid event once, with the rule it broke,
			// exactly as received.
			deadByN := map[int]dlq.Entry{}
			if err := dlq.Scan(dlq.Dir(cfg.Ledger.Dir, "elasticsearch"), func(_ dlq.Pos, e dlq.Entry) error {
				var doc struct {
					N int `json:"n"`
				}
				if err := json.Unmarshal(e.Event, &doc); err != nil {
					return fmt.Errorf("dead letter %s: %w", e.Event, err)
				}
				deadByN[doc.N] = e
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for n := range copies * len(events) {
				ev := events[n%len(events)]
				e, ok := deadByN[n]
				switch {
				case ev.dead == "" && ok:
					t.Errorf("%s (n=%d) dead-lettered: %s", ev.name, n, e.Reason)
				case ev.dead != "" && !ok:
					t.Errorf("%s (n=%d): no dead letter", ev.name, n)
				case ev.dead != "" && (e.ErrType != "invalid_data_stream" || !strings.Contains(e.Reason, ev.dead)):
					t.Errorf("%s: dead letter %s %q, want invalid_data_stream naming %q", ev.name, e.ErrType, e.Reason, ev.dead)
				case ev.dead != "" && string(e.Event) != fmt.Sprintf(`{"n":%d,%s`, n, ev.event[1:]):
					t.Errorf("%s: dead letter holds %s, not the event as received", ev.name, e.Event)
				}
			}

			// Counted by target, in GET / and /metrics.
			wantDS, wantIndex := 0, 0
			for _, ev := range events {
				switch {
				case ev.dead != "":
				case ev.ds == [3]string{}:
					wantIndex += copies
				default:
					wantDS += copies
				}
			}
			want := map[string]int64{"data_stream": int64(wantDS), "index": int64(wantIndex), "fallback_index": 0, "dead_letter": int64(invalid)}
			base := "http://" + r.s.AdminAddr().String()
			var node NodeInfo
			if code, body := get(t, base+"/"); code != 200 || json.Unmarshal([]byte(body), &node) != nil || len(node.Outputs) != 1 {
				t.Fatalf("GET / answered %d: %.300s", code, body)
			}
			for target, n := range want {
				if got := node.Outputs[0].RoutedEventsTotal[target]; got != n {
					t.Errorf("GET / routed_events_total[%s] = %d, want %d", target, got, n)
				}
			}
			_, metrics := get(t, base+"/metrics")
			for target, n := range want {
				line := fmt.Sprintf(`logpond_output_routed_events_total{output="elasticsearch",target=%q} %d`, target, n)
				if !strings.Contains(metrics, line+"\n") {
					t.Errorf("/metrics lacks %s", line)
				}
			}
			if valid+invalid != copies*len(events) {
				t.Fatal("miscounted")
			}
		})
	}
}

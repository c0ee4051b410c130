package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/dlq"
)

// processorsTOML decodes the [[processors]] list of a TOML document.
func processorsTOML(t *testing.T, doc string) conf.Processors {
	t.Helper()
	var c struct {
		Processors conf.Processors `toml:"processors"`
	}
	if _, err := toml.Decode(doc, &c); err != nil {
		t.Fatal(err)
	}
	return c.Processors
}

// TestProcessingInTheServer: an Elasticsearch output with a chain. Events
// the chain drops count as delivered and are stored nowhere; an event the
// chain makes unsendable (a data stream name it cannot be stored under)
// and one no processor can run on (not a JSON object) go to dead letters
// with the reason; the others are stored as the chain leaves them, under
// the ids of their ledger positions. /metrics counts per processor.
func TestProcessingInTheServer(t *testing.T) {
	es := startES(t, estest.Options{Seed: 41})
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch = *namedES(es.URL())
	cfg.Output.Elasticsearch.DataStream = conf.DataStreamOn
	cfg.Processors = processorsTOML(t, `
[[processors]]
[processors.dissect]
tokenizer = "%{level} %{text}"
target_prefix = ""
[[processors]]
[processors.drop_event.when.equals]
level = "DEBUG"
[[processors]]
[processors.copy_fields]
fields = [{from = "ds", to = "data_stream.dataset"}]
ignore_missing = true
`)
	cfg.Output.Elasticsearch.Processors = processorsTOML(t, `
[[processors]]
[processors.add_tags]
tags = ["es"]
`)
	r := start(t, cfg)
	defer r.shutdown(t)

	// 40 events: one in four DEBUG (dropped), one in ten with a dataset
	// no data stream may be named with, one array.
	var batch []any
	kept, dead := 0, 0
	for n := range 40 {
		level, ds := "INFO", ""
		switch {
		case n%4 == 0:
			level = "DEBUG"
		case n%10 == 5:
			ds, dead = `,"ds":"Not Valid"`, dead+1
		default:
			kept++
		}
		batch = append(batch, json.RawMessage(fmt.Sprintf(`{"@timestamp":"2026-12-06T10:00:00.000Z","n":%d,"message":"%s line %d"%s}`, n, level, n, ds)))
	}
	batch = append(batch, json.RawMessage(`[1,2,3]`))
	c, err := lj.SyncDial(r.s.BeatsAddr().String(), lj.Timeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(batch); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitUntil(t, "the drain", func() bool {
		st := r.s.outputs.byName("elasticsearch").Stats()
		return st.Delivered >= int64(len(batch)) && st.CursorLSN >= r.s.ledger().LastLSN()
	})
	time.Sleep(100 * time.Millisecond)

	docs := es.Docs()
	if len(docs) != kept {
		t.Fatalf("%d documents stored, want %d", len(docs), kept)
	}
	ids := map[string]bool{}
	for _, d := range docs {
		if ids[d.ID] || len(d.ID) < 20 {
			t.Errorf("document id %q: want a derived id (a ledger position's), once", d.ID)
		}
		ids[d.ID] = true
		var doc struct {
			N     int      `json:"n"`
			Level string   `json:"level"`
			Text  string   `json:"text"`
			Tags  []string `json:"tags"`
		}
		if err := json.Unmarshal(d.Source, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Level != "INFO" || doc.Text != fmt.Sprintf("line %d", doc.N) || len(doc.Tags) != 1 || doc.Tags[0] != "es" {
			t.Errorf("stored %s: want level, text and the tag the chain adds", d.Source)
		}
		if d.DataStream != "logs-generic-default" {
			t.Errorf("stored in %q", d.DataStream)
		}
	}
	var entries []dlq.Entry
	if err := dlq.Scan(dlq.Dir(cfg.Ledger.Dir, "elasticsearch"), func(_ dlq.Pos, e dlq.Entry) error {
		entries = append(entries, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	invalid, unprocessable := 0, 0
	for _, e := range entries {
		switch e.ErrType {
		case "invalid_data_stream":
			invalid++
			if !strings.Contains(string(e.Event), `"dataset":"Not Valid"`) {
				t.Errorf("dead letter %s: want the event as the chain made it", e.Event)
			}
		case "unprocessable_event":
			unprocessable++
			if string(e.Event) != "[1,2,3]" || !strings.Contains(e.Reason, "not a JSON object") {
				t.Errorf("dead letter %s %q", e.Event, e.Reason)
			}
		default:
			t.Errorf("dead letter %s: %s %q", e.Event, e.ErrType, e.Reason)
		}
	}
	if invalid != dead || unprocessable != 1 {
		t.Errorf("dead letters: %d invalid data streams (want %d), %d unprocessable (want 1)", invalid, dead, unprocessable)
	}

	_, metrics := get(t, "http://"+r.s.AdminAddr().String()+"/metrics")
	for _, line := range []string{
		`logpond_processor_events_total{output="elasticsearch",processor="processors[0].dissect"} 40`,
		`logpond_processor_events_total{output="elasticsearch",processor="processors[1].drop_event"} 10`,
		`logpond_processor_dropped_events_total{output="elasticsearch",processor="processors[1].drop_event"} 10`,
		`logpond_processor_events_total{output="elasticsearch",processor="processors[2].copy_fields"} 30`,
		fmt.Sprintf(`logpond_processor_events_total{output="elasticsearch",processor="output.elasticsearch.processors[0].add_tags"} %d`, kept+dead),
		`logpond_processor_failed_events_total{output="elasticsearch",processor="processors[0].dissect"} 0`,
		`logpond_output_unprocessable_events_total{output="elasticsearch"} 1`,
		fmt.Sprintf(`logpond_output_events_delivered_total{output="elasticsearch"} %d`, len(batch)),
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if !strings.Contains(metrics, `logpond_processor_seconds_total{output="elasticsearch",processor="processors[0].dissect"} `) {
		t.Error("/metrics lacks the time spent in dissect")
	}
}

// TestReprocessingHistory is the way docs/operations.md ("Re-processing
// history") gives to run a corrected chain over events already
// delivered: a new named output with start_at = "oldest", its own index
// and its own chain, added beside the one that delivered them. It reads
// the ledger from its oldest record (kept by ledger.retention), while the
// first output sends nothing again.
func TestReprocessingHistory(t *testing.T) {
	es := startES(t, estest.Options{Seed: 43})
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Ledger.Retention = conf.Duration(24 * time.Hour)
	cfg.Output.Elasticsearch.Enabled = false
	v1 := namedES(es.URL())
	v1.Index, v1.DataStream = "logs-v1", conf.DataStreamOff
	v1.Processors = processorsTOML(t, `
[[processors]]
[processors.dissect]
tokenizer = "%{client} %{status}"
target_prefix = "http"
`)
	cfg.Output.NamedElasticsearch = map[string]*conf.Elasticsearch{"v1": v1}
	send := func(r *running, from, n int) {
		var batch []any
		for i := from; i < from+n; i++ {
			batch = append(batch, json.RawMessage(fmt.Sprintf(`{"n":%d,"message":"10.0.0.%d %d"}`, i, i%250, 200+i%3)))
		}
		c, err := lj.SyncDial(r.s.BeatsAddr().String(), lj.Timeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Send(batch); err != nil {
			t.Fatal(err)
		}
	}
	drained := func(r *running, names ...string) func() bool {
		return func() bool {
			for _, name := range names {
				if st := r.s.outputs.byName(name).Stats(); st.CursorLSN < r.s.ledger().LastLSN() {
					return false
				}
			}
			return true
		}
	}
	r := start(t, cfg)
	send(r, 0, 300)
	waitUntil(t, "v1's drain", drained(r, "v1"))
	r.shutdown(t)

	// The corrected chain: status as a number, under the ECS names.
	v2 := namedES(es.URL())
	v2.Index, v2.DataStream, v2.StartAt = "logs-v2", conf.DataStreamOff, "oldest"
	v2.Processors = processorsTOML(t, `
[[processors]]
[processors.dissect]
tokenizer = "%{source.ip} %{http.response.status_code|integer}"
target_prefix = ""
`)
	cfg.Output.NamedElasticsearch["v2"] = v2
	r = start(t, cfg)
	defer r.shutdown(t)
	send(r, 300, 100)
	waitUntil(t, "both drains", drained(r, "v1", "v2"))
	time.Sleep(100 * time.Millisecond)

	byIndex := map[string]map[int]int{}
	for _, d := range es.Docs() {
		var doc struct {
			N      int `json:"n"`
			Source struct {
				IP string `json:"ip"`
			} `json:"source"`
			HTTP struct {
				Client   string `json:"client"`
				Response struct {
					StatusCode any `json:"status_code"`
				} `json:"response"`
			} `json:"http"`
		}
		if err := json.Unmarshal(d.Source, &doc); err != nil {
			t.Fatal(err)
		}
		if byIndex[d.Index] == nil {
			byIndex[d.Index] = map[int]int{}
		}
		byIndex[d.Index][doc.N]++
		switch d.Index {
		case "logs-v1":
			if doc.HTTP.Client != fmt.Sprintf("10.0.0.%d", doc.N%250) {
				t.Errorf("v1 stored %s", d.Source)
			}
		case "logs-v2":
			if doc.Source.IP != fmt.Sprintf("10.0.0.%d", doc.N%250) || doc.HTTP.Response.StatusCode != float64(200+doc.N%3) {
				t.Errorf("v2 stored %s: want the corrected chain's fields", d.Source)
			}
		default:
			t.Errorf("stored in %q", d.Index)
		}
	}
	for _, index := range []string{"logs-v1", "logs-v2"} {
		for n := range 400 {
			if c := byIndex[index][n]; c != 1 {
				t.Errorf("%s holds event %d %d times, want once", index, n, c)
			}
		}
	}
}

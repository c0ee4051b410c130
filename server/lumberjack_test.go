package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
)

// TestLumberjackOutputExportsEventsWithoutID: the events a Lumberjack
// output forwards without a document id (its @metadata is not an object)
// and its reconnects are counted in GET / and in /metrics, where the log
// line about them sends the operator, not only in the log.
func TestLumberjackOutputExportsEventsWithoutID(t *testing.T) {
	rcv := lumbertest.StartPeer(t, lumbertest.PeerOptions{})
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch.Enabled = false
	ljc := conf.DefaultLumberjack()
	ljc.Hosts = []string{rcv.Addr()}
	cfg.Output.Lumberjack = map[string]*conf.Lumberjack{"relay": &ljc}
	r := start(t, cfg)
	defer r.shutdown(t)

	c, err := lj.SyncDial(r.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const events, withoutID = 10, 3
	var data []any
	for i := range events {
		meta := `{"beat":"filebeat","version":"9.3.0"}`
		if i < withoutID {
			meta = `"not an object"`
		}
		data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":%s,"message":"m%d"}`, meta, i)))
	}
	if n, err := c.Send(data); err != nil || n != events {
		t.Fatalf("acked %d of %d: %v", n, events, err)
	}
	c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for rcv.Count() < events && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	base := "http://" + r.s.AdminAddr().String()
	var info struct {
		Outputs []struct {
			Name            string `json:"name"`
			Reconnects      *int64 `json:"reconnects_total"`
			EventsWithoutID *int64 `json:"events_without_id_total"`
			ClosedUnacked   *int64 `json:"windows_closed_unacked_total"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(body(t, base+"/")), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Outputs) != 1 || info.Outputs[0].EventsWithoutID == nil || *info.Outputs[0].EventsWithoutID != withoutID || info.Outputs[0].Reconnects == nil || info.Outputs[0].ClosedUnacked == nil {
		t.Errorf("GET / outputs: %+v, want relay with events_without_id_total %d and reconnects_total; receiver got %d", info.Outputs, withoutID, rcv.Count())
	}
	metrics := body(t, base+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`logpond_output_events_without_id_total{output="relay"} %d`, withoutID),
		`logpond_output_reconnects_total{output="relay"} 0`,
		`logpond_output_windows_closed_unacked_total{output="relay"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
}

// body is the body of a GET of url that answered 200.
func body(t *testing.T, url string) string {
	t.Helper()
	code, b := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	return b
}

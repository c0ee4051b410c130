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
	"github.com/logpond/logpond/output/dlq"
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

// TestLumberjackOutputDeadLettersWhatTheReceiverRefuses: an edge logpond
// forwards to a central one whose max_event_bytes is smaller than one of
// the events the edge accepted. The central refuses every window holding
// it; the edge isolates that event, keeps it in the relay's dead letters
// (<ledger.dir>/dlq/relay), counts it in GET / and /metrics, and forwards
// every other event, which the central passes on.
func TestLumberjackOutputDeadLettersWhatTheReceiverRefuses(t *testing.T) {
	final := lumbertest.StartPeer(t, lumbertest.PeerOptions{})
	ccfg := pipelineConfig(t, t.TempDir())
	ccfg.Input.Beats.MaxEventBytes = 1 << 20
	ccfg.Input.Beats.MaxInflightBytes = 8 << 20
	fwd := conf.DefaultLumberjack()
	fwd.Hosts = []string{final.Addr()}
	fwd.DeadLetterMaxBytes = 16 << 20
	ccfg.Output.Lumberjack = map[string]*conf.Lumberjack{"final": &fwd}
	central := start(t, ccfg)
	defer central.shutdown(t)

	cfg := pipelineConfig(t, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	relay := conf.DefaultLumberjack()
	relay.Hosts = []string{central.s.BeatsAddr().String()}
	relay.Backoff.Init, relay.Backoff.Max = conf.Duration(time.Millisecond), conf.Duration(10*time.Millisecond)
	cfg.Output.Lumberjack = map[string]*conf.Lumberjack{"relay": &relay}
	edge := start(t, cfg)
	defer edge.shutdown(t)

	c, err := lj.SyncDial(edge.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const events, big = 200, 77
	var data []any
	for i := range events {
		msg := fmt.Sprintf("m%d", i)
		if i == big {
			msg = strings.Repeat("x", 2<<20) // above the central's 1 MiB
		}
		data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":%q}`, msg)))
	}
	if n, err := c.Send(data); err != nil || n != events {
		t.Fatalf("acked %d of %d: %v", n, events, err)
	}
	c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for final.Count() < events-1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := final.Count(); got != events-1 {
		t.Fatalf("the final receiver got %d events, want %d", got, events-1)
	}

	base := "http://" + edge.s.AdminAddr().String()
	var info struct {
		Outputs []struct {
			Name            string `json:"name"`
			DeadLettered    int64  `json:"dead_lettered_total"`
			DeadLetterBytes int64  `json:"dead_letter_bytes"`
			DeadLetterMax   int64  `json:"dead_letter_max_bytes"`
		} `json:"outputs"`
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		if err := json.Unmarshal([]byte(body(t, base+"/")), &info); err != nil {
			t.Fatal(err)
		}
		if len(info.Outputs) == 1 && info.Outputs[0].DeadLettered == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if o := info.Outputs; len(o) != 1 || o[0].DeadLettered != 1 || o[0].DeadLetterBytes < 2<<20 || o[0].DeadLetterMax != 1<<30 {
		t.Errorf("GET / outputs: %+v, want relay with one dead letter of more than 2 MiB in a 1 GiB store", o)
	}
	if m := body(t, base+"/metrics"); !strings.Contains(m, `logpond_output_events_dead_lettered_total{output="relay"} 1`) {
		t.Errorf("no dead letter of relay in /metrics")
	}
	var entries []dlq.Entry
	if err := dlq.Scan(dlq.Dir(cfg.Ledger.Dir, "relay"), func(_ dlq.Pos, e dlq.Entry) error {
		entries = append(entries, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || len(entries[0].Event) < 2<<20 || entries[0].ErrType != "window_refused" {
		t.Errorf("dead letters of relay: %d, want the one large event", len(entries))
	}
}

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/kafka"
)

// TestKafkaOutputInTheServer: a Kafka output runs as a named output like
// the others: GET / lists it with its type, what it delivered and its
// dead letters (an event larger than max_message_bytes), /metrics counts
// the same under its name, and /readyz answers 200 while it delivers;
// with the cluster gone, GET / shows it waiting with Kafka's error while
// the events wait in the ledger.
func TestKafkaOutputInTheServer(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch.Enabled = false
	kc := conf.DefaultKafka()
	kc.Hosts, kc.Topic, kc.MaxMessageBytes = cluster.ListenAddrs(), "logs", 2<<10
	kc.Backoff = conf.LumberjackBackoff{Init: conf.Duration(10 * time.Millisecond), Max: conf.Duration(100 * time.Millisecond)}
	kc.Timeout, kc.BrokerTimeout = conf.Duration(2*time.Second), conf.Duration(time.Second)
	cfg.Output.NamedKafka = map[string]*conf.Kafka{"stream": &kc}
	r := start(t, cfg)
	defer r.shutdown(t)

	send := func(n int, pad int) {
		t.Helper()
		c, err := lj.SyncDial(r.s.BeatsAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var data []any
		for i := range n {
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"m%d %s"}`, i, strings.Repeat("x", pad))))
		}
		if acked, err := c.Send(data); err != nil || acked != n {
			t.Fatalf("acked %d of %d: %v", acked, n, err)
		}
	}
	send(100, 10)
	send(1, 4<<10) // larger than max_message_bytes: a dead letter

	base := "http://" + r.s.AdminAddr().String()
	type outputInfo struct {
		Name      string `json:"name"`
		Type      string `json:"type"`
		State     string `json:"state"`
		Waiting   string `json:"waiting"`
		Delivered int64  `json:"events_delivered_total"`
		Dead      int64  `json:"dead_lettered_total"`
	}
	info := func() outputInfo {
		var node struct {
			Outputs []outputInfo `json:"outputs"`
		}
		if err := json.Unmarshal([]byte(body(t, base+"/")), &node); err != nil {
			t.Fatal(err)
		}
		if len(node.Outputs) != 1 {
			t.Fatalf("GET / outputs: %+v, want the one Kafka output", node.Outputs)
		}
		return node.Outputs[0]
	}
	deadline := time.Now().Add(30 * time.Second)
	for o := info(); o.Delivered+o.Dead < 101; o = info() {
		if time.Now().After(deadline) {
			t.Fatalf("GET / after 30 s: %+v, want 100 delivered and 1 dead letter", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if o := info(); o.Name != "stream" || o.Type != "kafka" || o.State != "ok" || o.Delivered != 100 || o.Dead != 1 {
		t.Errorf("GET / output: %+v, want stream, kafka, ok, 100 delivered, 1 dead-lettered", o)
	}
	metrics := body(t, base+"/metrics")
	for _, want := range []string{`logpond_output_events_dead_lettered_total{output="stream"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
	if code, b := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, b)
	}

	cluster.Close()
	send(10, 10)
	deadline = time.Now().Add(30 * time.Second)
	for o := info(); o.State != "waiting" || o.Waiting == ""; o = info() {
		if time.Now().After(deadline) {
			t.Fatalf("GET / after the cluster went: %+v, want the output waiting, saying why", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKafkaMaxLag: a Kafka output whose cluster refuses it (every
// InitProducerID fails) with max_lag set lets 12 MiB of events flow
// through a 4 MiB ledger beside a healthy Elasticsearch output, and
// counts the ranges retention deleted before it produced them; once the
// cluster takes it again it produces what the ledger kept, and Kafka and
// the skipped ranges account for every event.
func TestKafkaMaxLag(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var refusing atomic.Bool
	refusing.Store(true)
	cluster.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		resp := req.(*kmsg.InitProducerIDRequest).ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil, true
	})
	live := startES(t, estest.Options{Seed: 43})
	cfg := smallStoresConfig(t, map[string]*conf.Elasticsearch{"live": namedES(live.URL())})
	kc := conf.DefaultKafka()
	kc.Hosts, kc.Topic, kc.MaxLag = cluster.ListenAddrs(), "logs", 1<<20
	kc.Backoff = conf.LumberjackBackoff{Init: conf.Duration(10 * time.Millisecond), Max: conf.Duration(100 * time.Millisecond)}
	kc.Timeout, kc.BrokerTimeout = conf.Duration(2*time.Second), conf.Duration(time.Second)
	cfg.Output.NamedKafka = map[string]*conf.Kafka{"stream": &kc}
	r := start(t, cfg)
	defer r.shutdown(t)

	const events = 12000 // about 12 MiB
	if err := sendFanout(t, r.s.BeatsAddr().String(), 0, events); err != nil {
		t.Fatalf("sending with max_lag on the Kafka output: %v", err)
	}
	waitUntil(t, "the live output stores every event", func() bool { return live.Count() == events })
	refusing.Store(false)
	waitUntil(t, "the Kafka output done with what the ledger kept", func() bool {
		return r.s.outputs.byName("stream").Stats().CursorLSN >= r.s.ledger().LastLSN()
	})
	st := r.s.outputs.byName("stream").Stats()
	if st.SkippedRecords == 0 || st.SkippedEvents == 0 || len(st.SkippedRanges) == 0 {
		t.Fatalf("Kafka output: skipped %d records, %d events, ranges %v: want the deleted ranges counted", st.SkippedRecords, st.SkippedEvents, st.SkippedRanges)
	}
	if st.Delivered+st.SkippedEvents < events {
		t.Errorf("Kafka output: %d produced + %d skipped < %d sent", st.Delivered, st.SkippedEvents, events)
	}
}

// TestKafkaIDHeaderAgrees: the header configuration refuses (conf) is the
// one the output writes each event's id in.
func TestKafkaIDHeaderAgrees(t *testing.T) {
	if conf.KafkaIDHeader != kafka.IDHeader {
		t.Fatalf("conf refuses the header %q, but the output writes ids in %q", conf.KafkaIDHeader, kafka.IDHeader)
	}
}

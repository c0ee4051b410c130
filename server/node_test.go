package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
)

// TestNodeInfo: GET / on the admin listener names the node (version,
// stream id, uptime) and says how each stage is doing: here the output
// waits for an Elasticsearch that refuses connections, with every event
// sent pending.
func TestNodeInfo(t *testing.T) {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	r := start(t, cfg)
	defer r.shutdown(t)
	base := "http://" + r.s.AdminAddr().String()
	c, err := lj.SyncDial(r.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const per = 50
	var data []interface{}
	for i := range per {
		data = append(data, json.RawMessage(fmt.Sprintf(`{"message":"%d"}`, i)))
	}
	if n, err := c.Send(data); err != nil || n != per {
		t.Fatalf("acked %d: %v", n, err)
	}
	c.Close()
	var n NodeInfo
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := get(t, base+"/")
		if code != 200 {
			t.Fatalf("GET /: %d %s", code, body)
		}
		n = NodeInfo{}
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			t.Fatalf("GET /: %v: %s", err, body)
		}
		if len(n.Outputs) == 1 && n.Outputs[0].State == StateWaiting && n.Outputs[0].PendingEvents == per {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the output never showed as waiting with %d events pending: %s", per, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n.Name != "logpond" || n.Version == "" || n.GoVersion == "" || n.StreamID != r.s.ledger().StreamID() || n.UptimeSeconds <= 0 {
		t.Errorf("node identity: %+v", n)
	}
	if n.Input.State != StateOK || n.Input.EventsTotal != per || n.Input.Listen != r.s.BeatsAddr().String() {
		t.Errorf("input: %+v", n.Input)
	}
	if n.Journal.State != StateOK || n.Ledger.State != StateOK || n.Ledger.MaxBytes != int64(cfg.Ledger.MaxBytes) || n.Ledger.LastLSN == 0 {
		t.Errorf("stores: journal %+v, ledger %+v", n.Journal, n.Ledger)
	}
	if !strings.Contains(n.Outputs[0].Waiting, "elasticsearch failing") || n.Outputs[0].OldestPendingSeconds <= 0 || n.Outputs[0].PendingBytes <= 0 {
		t.Errorf("output: %+v", n.Outputs[0])
	}
	if !n.Ready {
		t.Errorf("not ready: %v", n.NotReady)
	}
	// Only / itself: other paths stay 404.
	if code, _ := get(t, base+"/nothing"); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
}

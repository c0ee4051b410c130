package lumberload

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	server "github.com/elastic/go-lumber/server/v2"
)

// TestEventIsValidJSONOfTheAskedSize: every event is one JSON object of
// exactly the asked size (beyond its header), and events differ.
func TestEventIsValidJSONOfTheAskedSize(t *testing.T) {
	seen := map[string]bool{}
	for _, size := range []int{10, 120, 256, 1024, 90 << 10} {
		for n := range 200 {
			ev := Event(size, n)
			var v struct {
				Message string `json:"message"`
				N       int    `json:"n"`
			}
			if err := json.Unmarshal(ev, &v); err != nil {
				t.Fatalf("Event(%d, %d) = %q: %v", size, n, ev, err)
			}
			if v.N != n {
				t.Fatalf("Event(%d, %d): n = %d", size, n, v.N)
			}
			if size >= 120 && len(ev) != size {
				t.Fatalf("Event(%d, %d) has %d bytes", size, n, len(ev))
			}
			seen[v.Message] = true
		}
	}
	if len(seen) < 800 {
		t.Fatalf("only %d distinct messages in 1000 events", len(seen))
	}
}

// TestPercentileIsNearestRank: p of n sorted values is the smallest with
// at least p·n values at or below it — p99 of 100 values is not the
// largest.
func TestPercentileIsNearestRank(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {0.999, 100}, {0, 1}, {1, 100}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(1..100, %v) = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
}

// TestProcessStat: this process is running and has used some CPU; a
// process that does not exist is not running.
func TestProcessStat(t *testing.T) {
	pid := os.Getpid()
	for range 1_000_000 { // burn a little CPU to be measurable
		_ = Event(16, 1)
	}
	if !Running(pid) || ProcessCPU(pid) <= 0 {
		t.Fatalf("Running %v, CPU %s for this process", Running(pid), ProcessCPU(pid))
	}
	if Running(1 << 30) {
		t.Fatal("a nonexistent pid is running")
	}
}

// TestShapedEvents: every shape makes valid JSON events of the asked
// size with the same n; classic is Event; agent carries @timestamp and a
// whole data_stream naming Dataset(n); agent-partial names only the
// dataset and has no @timestamp; the events cycle through every dataset.
func TestShapedEvents(t *testing.T) {
	type dataStream struct {
		Type, Dataset, Namespace string
	}
	for _, size := range []int{256, 512, 1024} {
		used := map[string]bool{}
		for n := range 50 {
			for _, shape := range append([]Shape{""}, Shapes...) {
				ev, err := ShapedEvent(shape, size, n)
				if err != nil {
					t.Fatalf("ShapedEvent(%q, %d, %d): %v", shape, size, n, err)
				}
				var v struct {
					N          int         `json:"n"`
					Timestamp  *string     `json:"@timestamp"`
					DataStream *dataStream `json:"data_stream"`
					Message    string      `json:"message"`
				}
				if err := json.Unmarshal(ev, &v); err != nil {
					t.Fatalf("ShapedEvent(%q, %d, %d) = %q: %v", shape, size, n, ev, err)
				}
				if len(ev) != size || v.N != n || v.Message == "" {
					t.Fatalf("ShapedEvent(%q, %d, %d): %d bytes, n = %d, message %q", shape, size, n, len(ev), v.N, v.Message)
				}
				switch shape {
				case "", ShapeClassic:
					if string(ev) != string(Event(size, n)) {
						t.Fatalf("classic event %d differs from Event: %s", n, ev)
					}
				case ShapeAgent:
					if v.Timestamp == nil || v.DataStream == nil || *v.DataStream != (dataStream{"logs", Dataset(n), "default"}) {
						t.Fatalf("agent event %d lacks @timestamp or a whole data_stream: %s", n, ev)
					}
					if _, err := time.Parse(time.RFC3339Nano, *v.Timestamp); err != nil {
						t.Fatalf("agent event %d: @timestamp: %v", n, err)
					}
					used[v.DataStream.Dataset] = true
				case ShapeAgentPartial:
					if v.Timestamp != nil || v.DataStream == nil || *v.DataStream != (dataStream{Dataset: Dataset(n)}) {
						t.Fatalf("agent-partial event %d is not a data_stream with only the dataset and no @timestamp: %s", n, ev)
					}
				}
			}
		}
		if len(used) != len(Datasets()) {
			t.Fatalf("agent events use %d datasets of %v", len(used), Datasets())
		}
	}
	if got := DataStream(1); got != "logs-"+Datasets()[1]+"-default" {
		t.Fatalf("DataStream(1) = %q", got)
	}
}

// TestUnknownShape: an unknown shape is refused by ParseShape,
// ShapedEvent and Run (before dialling anything); "" is classic.
func TestUnknownShape(t *testing.T) {
	if sh, err := ParseShape(""); err != nil || sh != ShapeClassic {
		t.Fatalf("ParseShape(\"\") = %q, %v", sh, err)
	}
	if sh, err := ParseShape("agent-partial"); err != nil || sh != ShapeAgentPartial {
		t.Fatalf("ParseShape(agent-partial) = %q, %v", sh, err)
	}
	if _, err := ParseShape("agnet"); err == nil {
		t.Fatal("ParseShape accepts agnet")
	}
	if _, err := ShapedEvent("agnet", 256, 1); err == nil {
		t.Fatal("ShapedEvent accepts agnet")
	}
	if _, err := Run(t.Context(), "127.0.0.1:1", Config{Connections: 1, Batch: 1, EventSize: 256, Duration: time.Second, Shape: "agnet"}); err == nil {
		t.Fatal("Run accepts agnet")
	}
}

// TestRunSendsExactlyEvents: with Config.Events, the connections together
// send exactly that many events, the last batch cut short, and the
// result counts them and their bytes; the receiver saw each batch's
// events of the asked shape.
func TestRunSendsExactlyEvents(t *testing.T) {
	addr, srv, closeSrv := startReceiver(t)
	defer closeSrv()
	received := make(chan int, 1)
	go func() {
		n := 0
		defer func() { received <- n }()
		for b := range srv.ReceiveChan() {
			for _, ev := range b.Events {
				m, ok := ev.(map[string]interface{})
				if !ok || m["data_stream"] == nil {
					t.Errorf("received %v, not an agent event", ev)
				}
			}
			n += len(b.Events)
			b.ACK()
		}
	}()
	const events = 1050 // not a multiple of 3 × 100
	res, err := Run(t.Context(), addr, Config{Connections: 3, Batch: 100, EventSize: 256, Shape: ShapeAgent, Duration: time.Minute, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	closeSrv()
	if got := <-received; res.Events != events || got != events {
		t.Fatalf("Run acknowledged %d events, the server received %d; want %d", res.Events, got, events)
	}
	if res.Bytes != events*256 || res.Batches != 11 {
		t.Fatalf("Run counted %d bytes in %d batches; want %d in 11", res.Bytes, res.Batches, events*256)
	}
}

// TestRunCyclesPayloads: with Payloads, a connection sends them in order,
// window after window, wrapping round at the end (a window may straddle
// it), and the result counts the bytes of exactly the events sent.
func TestRunCyclesPayloads(t *testing.T) {
	addr, srv, closeSrv := startReceiver(t)
	defer closeSrv()
	var payloads [][]byte
	for i := range 10 {
		payloads = append(payloads, fmt.Appendf(nil, `{"i":%d,"pad":"%*s"}`, i, i, ""))
	}
	received := make(chan []int, 1)
	go func() {
		var got []int
		defer func() { received <- got }()
		for b := range srv.ReceiveChan() {
			for _, ev := range b.Events {
				m, _ := ev.(map[string]interface{})
				i, _ := m["i"].(float64)
				got = append(got, int(i))
			}
			b.ACK()
		}
	}()
	const events = 25 // windows 0–3, 4–7, 8–1 (wrapping), 2–5, 6–9, 0–3, 4
	res, err := Run(t.Context(), addr, Config{Connections: 1, Batch: 4, Payloads: payloads, Duration: time.Minute, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	closeSrv()
	got := <-received
	var wantBytes int64
	for n := range events {
		wantBytes += int64(len(payloads[n%10]))
		if n >= len(got) || got[n] != n%10 {
			t.Fatalf("received %v: event %d is not payload %d", got, n, n%10)
		}
	}
	if len(got) != events || res.Events != events || res.Bytes != wantBytes {
		t.Fatalf("received %d, acknowledged %d events of %d bytes; want %d of %d bytes", len(got), res.Events, res.Bytes, events, wantBytes)
	}
}

// startReceiver starts a go-lumber server on a loopback port and returns
// its address, the server, and a close that may be called more than once
// (go-lumber panics on a second Close).
func startReceiver(t *testing.T) (string, *server.Server, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewWithListener(ln)
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), srv, sync.OnceFunc(func() { srv.Close() })
}

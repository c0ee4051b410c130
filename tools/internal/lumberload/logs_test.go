package lumberload

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	server "github.com/elastic/go-lumber/server/v2"
)

// TestRunCyclesPayloads: with Payloads, a connection sends them in order,
// window after window, wrapping round at the end (a window may straddle
// it), and the result counts the bytes of exactly the events sent.
func TestRunCyclesPayloads(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewWithListener(ln)
	if err != nil {
		t.Fatal(err)
	}
	closeSrv := sync.OnceFunc(func() { srv.Close() })
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
	res, err := Run(t.Context(), ln.Addr().String(), Config{Connections: 1, Batch: 4, Payloads: payloads, Duration: time.Minute, Events: events})
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

package lumberjack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"

	lj "github.com/elastic/go-lumber/client/v2"
)

// ackServer reads batches from one connection with the hardened reader,
// records the events, and acknowledges each batch.
func ackServer(t *testing.T, ln net.Listener, got *[][]byte, mu *sync.Mutex) {
	conn, err := ln.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	r := NewReader(conn, DefaultLimits())
	for {
		_, seq, err := r.ReadBatch(func(ev []byte) error {
			mu.Lock()
			*got = append(*got, bytes.Clone(ev))
			mu.Unlock()
			return nil
		})
		if err != nil {
			return
		}
		if err := WriteACK(conn, seq); err != nil {
			return
		}
	}
}

// TestGoLumberClient: go-lumber's client (the reference peer), sync and
// pipelined, at every compression level and several window sizes; every
// event arrives byte-identical and every batch is acknowledged.
func TestGoLumberClient(t *testing.T) {
	for _, level := range []int{0, 1, 3, 6, 9} {
		for _, window := range []int{1, 100, 2048, 8192} {
			for _, mode := range []string{"sync", "async"} {
				t.Run(fmt.Sprintf("level=%d/window=%d/%s", level, window, mode), func(t *testing.T) {
					ln, err := net.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						t.Fatal(err)
					}
					defer ln.Close()
					var mu sync.Mutex
					var got [][]byte
					done := make(chan struct{})
					go func() { ackServer(t, ln, &got, &mu); close(done) }()

					var want [][]byte
					batch := func(b int) []interface{} {
						var data []interface{}
						for i := range window {
							ev := json.RawMessage(fmt.Sprintf(`{"batch":%d,"i":%d,"msg":"héllo \u00e9 %d"}`, b, i, i*7))
							want = append(want, ev)
							data = append(data, ev)
						}
						return data
					}
					const batches = 3
					if mode == "sync" {
						c, err := lj.SyncDial(ln.Addr().String(), lj.CompressionLevel(level))
						if err != nil {
							t.Fatal(err)
						}
						for b := range batches {
							n, err := c.Send(batch(b))
							if err != nil || n != window {
								t.Fatalf("batch %d: acked %d of %d: %v", b, n, window, err)
							}
						}
						c.Close()
					} else {
						c, err := lj.AsyncDial(ln.Addr().String(), batches, lj.CompressionLevel(level))
						if err != nil {
							t.Fatal(err)
						}
						var wg sync.WaitGroup
						for b := range batches {
							wg.Add(1)
							if err := c.Send(func(n uint32, err error) {
								defer wg.Done()
								if err != nil || int(n) != window {
									t.Errorf("async batch: acked %d of %d: %v", n, window, err)
								}
							}, batch(b)); err != nil {
								t.Fatal(err)
							}
						}
						wg.Wait()
						c.Close()
					}
					<-done
					mu.Lock()
					defer mu.Unlock()
					if len(got) != len(want) {
						t.Fatalf("server got %d events, client sent %d", len(got), len(want))
					}
					for i := range want {
						if !bytes.Equal(got[i], want[i]) {
							t.Fatalf("event %d differs: %s vs %s", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}

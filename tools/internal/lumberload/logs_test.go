package lumberload

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	server "github.com/elastic/go-lumber/server/v2"
)

// TestFilebeatEvents: each non-empty line of each *.log becomes one
// Filebeat-shaped event carrying the line as message and its byte offset,
// files in name order, each from a host of its own; other files are
// ignored; a missing folder is os.ErrNotExist, a folder without logs an
// error.
func TestFilebeatEvents(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.log", "first \"quoted\" line\n\nthird line\n")
	write("a.log", "only line")
	write("README.md", "not a log\n")
	files, err := FilebeatEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		Timestamp string                `json:"@timestamp"`
		Metadata  struct{ Beat string } `json:"@metadata"`
		Message   string
		Log       struct {
			Offset int64
			File   struct{ Path string }
		}
		Host struct{ Name string }
	}
	want := []struct {
		name    string
		lines   []string
		offsets []int64
	}{{"a", []string{"only line"}, []int64{0}}, {"b", []string{`first "quoted" line`, "third line"}, []int64{0, 21}}}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d", len(files), len(want))
	}
	hosts := map[string]bool{}
	for i, w := range want {
		f := files[i]
		if f.Name != w.name || len(f.Events) != len(w.lines) {
			t.Fatalf("file %d: %s with %d events, want %s with %d", i, f.Name, len(f.Events), w.name, len(w.lines))
		}
		for j, raw := range f.Events {
			var ev event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatalf("%s event %d: %v: %s", f.Name, j, err, raw)
			}
			if ev.Message != w.lines[j] || ev.Log.Offset != w.offsets[j] || ev.Metadata.Beat != "filebeat" || ev.Timestamp == "" || ev.Log.File.Path == "" {
				t.Fatalf("%s event %d is not line %q at offset %d: %s", f.Name, j, w.lines[j], w.offsets[j], raw)
			}
			hosts[ev.Host.Name] = true
		}
	}
	if len(hosts) != 2 {
		t.Fatalf("hosts %v: want one per file", hosts)
	}
	if n := len(AllEvents(files)); n != 3 {
		t.Fatalf("AllEvents: %d events, want 3", n)
	}
	if _, err := FilebeatEvents(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: %v, want os.ErrNotExist", err)
	}
	if _, err := FilebeatEvents(t.TempDir()); err == nil {
		t.Fatal("a folder without *.log gives no error")
	}
}

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

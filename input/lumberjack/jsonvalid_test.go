package lumberjack

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/jsonvalid"
)

// TestRealFilebeatEventsAreValid: every event real Filebeat sent passes
// the input's validator.
func TestRealFilebeatEventsAreValid(t *testing.T) {
	for _, name := range []string{"filebeat-7.17.29-events.ndjson", "filebeat-9.3.0-events.ndjson"} {
		data, err := os.ReadFile(filepath.Join(captures, name))
		if err != nil {
			t.Fatalf("real Filebeat capture missing: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if !jsonvalid.Valid([]byte(line)) {
				t.Errorf("%s: real Filebeat event refused: %.100s", name, line)
			}
		}
	}
}

func BenchmarkValidJSON(b *testing.B) {
	b.Run("bench-event", func(b *testing.B) { benchmarkValidJSON(b, benchEvent) })
	// Real Filebeat events: many short fields around the message.
	data, err := os.ReadFile(filepath.Join(captures, "filebeat-9.3.0-events.ndjson"))
	if err != nil {
		b.Fatalf("real Filebeat capture missing: %v", err)
	}
	var small [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) < 64<<10 {
			small = append(small, line)
		}
	}
	b.Run("filebeat-9.3.0", func(b *testing.B) { benchmarkValidJSON(b, small...) })
}

var benchEvent = []byte(`{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"host":{"name":"vm"},"message":"` +
	strings.Repeat("127.0.0.1 - - [02/Dec/2026:10:00:00 +0000] GET /index.html ", 12) + `"}`)

func benchmarkValidJSON(b *testing.B, events ...[]byte) {
	var n int64
	for _, ev := range events {
		n += int64(len(ev))
	}
	for _, v := range []struct {
		name string
		fn   func([]byte) bool
	}{{"logpond", jsonvalid.Valid}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				for _, ev := range events {
					if !v.fn(ev) {
						b.Fatal("invalid")
					}
				}
			}
		})
	}
}

package lumberjack

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var jsonCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x", {}] } `,
	`{"a":"\u00e9\n\"\\\/\b\f\r\t"}`, `"just a string"`, `12`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E+9`, `-0.0e0`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `[]]`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\x1f\"}", "{\"a\":\"\x7f\xff\"}",
	`tru`, `true`, `truex`, `nul`, `null `, `"unterminated`, `"ends with backslash\`, `{"a":"12345678\"12345678"}`,
	`"0123456789abcdef0123456789abcdef"`, "\"0123456789abcde\x00\"", strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500),
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.80q) = %v, encoding/json says %v", c, got, want)
		}
	}
	for _, name := range []string{"filebeat-7.17.29-events.ndjson", "filebeat-9.3.0-events.ndjson"} {
		data, err := os.ReadFile(filepath.Join(captures, name))
		if err != nil {
			t.Fatalf("real Filebeat capture missing: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if !validJSON([]byte(line)) {
				t.Errorf("%s: real Filebeat event refused: %.100s", name, line)
			}
		}
	}
}

// FuzzValidJSON holds validJSON to encoding/json.Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
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
	}{{"logpond", validJSON}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
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

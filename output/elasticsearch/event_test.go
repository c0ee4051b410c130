package elasticsearch

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSourceDropsMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, event, want, id, pipeline string
	}{
		{"filebeat", `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"message":"hi"}`,
			`{"@timestamp":"2026-12-02T10:57:41.210Z","message":"hi"}`, "", ""},
		{"first member", `{"@metadata":{"_id":"abc"},"message":"hi"}`, `{"message":"hi"}`, "abc", ""},
		{"only member", `{"@metadata":{"_id":"abc"}}`, `{}`, "abc", ""},
		{"last member", `{"a":1,"@metadata":{"pipeline":"p"}}`, `{"a":1}`, "", "p"},
		{"spaces", `{ "a" : 1 , "@metadata" : { "_id" : "x" } , "b" : 2 }`, `{ "a" : 1  , "b" : 2 }`, "x", ""},
		{"no metadata", `{"a":"@metadata"}`, `{"a":"@metadata"}`, "", ""},
		{"nested metadata kept", `{"a":{"@metadata":{"_id":"x"}}}`, `{"a":{"@metadata":{"_id":"x"}}}`, "", ""},
		{"metadata not an object", `{"@metadata":"x","a":1}`, `{"a":1}`, "", ""},
		{"id not a string", `{"@metadata":{"_id":5},"a":1}`, `{"a":1}`, "", ""},
		{"escaped quote in earlier key", `{"k\"":1,"@metadata":{},"a":1}`, `{"k\"":1,"a":1}`, "", ""},
		{"pretty printed", "{\n  \"@metadata\": {\"_id\": \"i\"},\n  \"msg\": \"a\\nb\"\n}", `{"msg":"a\nb"}`, "i", ""},
		{"crlf", "{\"a\":1,\r\n\"b\":2}", `{"a":1,"b":2}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := readMeta([]byte(tc.event))
			got, err := appendSource([]byte("prefix"), []byte(tc.event), m.cut)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+tc.want {
				t.Errorf("source %q, want %q", got[6:], tc.want)
			}
			if string(m.id) != tc.id || string(m.pipeline) != tc.pipeline {
				t.Errorf("id %q pipeline %q, want %q %q", m.id, m.pipeline, tc.id, tc.pipeline)
			}
		})
	}
}

func TestMultiLineInvalidEventIsRefused(t *testing.T) {
	ev := []byte("{\"a\":\n")
	got, err := appendSource([]byte("x"), ev, readMeta(ev).cut)
	if err == nil || string(got) != "x" {
		t.Fatalf("got %q, %v; want errNotOneLine and nothing appended", got, err)
	}
	// Invalid but on one line: sent as is, for Elasticsearch to judge.
	if got, err := appendSource(nil, []byte(`{"a":`), [2]int{}); err != nil || string(got) != `{"a":` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "ctl\x00\x1f\n\t", "ünïcode", `"`, `"both ends\`, "\x01\x02"} {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%q encoded as %s, decoded %q, %v", s, b, back, err)
		}
		if bb := appendJSONString([]byte("x"), []byte(s)); string(bb) != "x"+string(b) {
			t.Errorf("%q encoded as %s from a string, %s from bytes", s, b, bb[1:])
		}
	}
}

func TestDocIDs(t *testing.T) {
	p, err := idPrefix("0b4e7a2c-6f0e-4d59-9d55-3f1b7c3a9e10")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 22 || strings.ContainsAny(p, "+/=") {
		t.Fatalf("prefix %q: want 22 URL-safe characters", p)
	}
	if got := string(appendDocID(nil, p, 12345, 7)); got != p+"-12345-7" {
		t.Fatalf("id %q", got)
	}
	if _, err := idPrefix("not-a-uuid"); err == nil {
		t.Fatal("bad stream id accepted")
	}
}

// FuzzSource checks that removing @metadata from a valid JSON object
// always leaves a valid JSON object on one line.
func FuzzSource(f *testing.F) {
	for _, s := range []string{
		`{"@timestamp":"x","@metadata":{"beat":"filebeat"},"message":"hi"}`,
		`{"@metadata":{"_id":"abc"}}`, `{ "a" : 1 , "@metadata" : { } }`, "{\n\"@metadata\":1}", `[]`, `{"a\\":"@metadata","@metadata":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		m := readMeta(ev)
		src, err := appendSource(nil, ev, m.cut)
		if !json.Valid(ev) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(ev, &obj) != nil {
			return // valid JSON, but not an object
		}
		if err != nil {
			t.Fatalf("valid event %q refused: %v", ev, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(src, &got); err != nil {
			t.Fatalf("source %q of %q is not an object: %v", src, ev, err)
		}
		if strings.ContainsAny(string(src), "\n\r") {
			t.Fatalf("source %q spans lines", src)
		}
		if _, ok := got["@metadata"]; ok && strings.Count(string(ev), "@metadata") == 1 {
			t.Fatalf("source %q kept @metadata", src)
		}
		// Every other member survives.
		for k := range obj {
			if _, ok := got[k]; !ok && k != "@metadata" {
				t.Fatalf("source %q lost member %q of %q", src, k, ev)
			}
		}
	})
}

package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/dlq"
)

// oddLetters are dead letters whose events need care: @metadata first,
// last, alone and nested; pretty-printed; no document id; not JSON.
func oddLetters() []dlq.Entry {
	es := []dlq.Entry{
		deadLetter(0, `{"@metadata":{"beat":"filebeat","_id":"x"},"message":"first"}`),
		deadLetter(1, `{"message":"last", "@metadata" : {"beat":"filebeat"} }`),
		deadLetter(2, `{"@metadata":{}}`),
		deadLetter(3, `{"a":{"@metadata":1},"message":"nested stays"}`),
		deadLetter(4, "{\n  \"message\": \"pretty\",\n  \"@metadata\": {\"beat\": \"x\"}\n}"),
		deadLetter(5, `{"message":"no id"}`),
	}
	es[5].DocID = ""
	return es
}

// wantSources are the documents oddLetters become.
var wantSources = []string{
	`{"message":"first"}`,
	`{"message":"last" }`,
	`{}`,
	`{"a":{"@metadata":1},"message":"nested stays"}`,
	`{"message":"pretty"}`,
	`{"message":"no id"}`,
}

func TestDLQListAndDump(t *testing.T) {
	s := buildStores(t)
	entries := append(oddLetters(), deadLetter(6, "not json\x00"))
	writeDeadLetters(t, s.ledger, entries)

	out, _, code := ctl(t, "-ledger", s.ledger, "dlq", "list")
	if code != exitOK || !strings.Contains(out, "00000000000000000001.dlq:20") || !strings.Contains(out, "mapper_parsing_exception") ||
		!strings.Contains(out, "7 dead letters in "+dlq.Dir(s.ledger, "elasticsearch")) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, _, code = ctl(t, "-ledger", s.ledger, "dlq", "list", "--json")
	var doc struct {
		Entries []dlqLine `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Entries) != 7 {
		t.Fatalf("exit %d, %v: %d entries", code, err, len(doc.Entries))
	}
	for i, l := range doc.Entries {
		en := entries[i]
		if l.LSN != en.LSN || l.DocID != en.DocID || l.Index != en.Index || l.Status != 400 || l.EventBytes != len(en.Event) ||
			l.Event != nil || !l.Received.Equal(en.Received) || l.Stream != en.Stream {
			t.Fatalf("entry %d: %+v", i, l)
		}
	}

	out, _, code = ctl(t, "-ledger", s.ledger, "dlq", "dump")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 7 {
		t.Fatalf("exit %d, %d lines", code, len(lines))
	}
	for i, line := range lines {
		var l struct {
			LSN         uint64          `json:"lsn"`
			Event       json.RawMessage `json:"event"`
			EventBase64 string          `json:"event_base64"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if i == 6 {
			if l.EventBase64 != base64.StdEncoding.EncodeToString(entries[6].Event) || l.Event != nil {
				t.Fatalf("line %d: %s", i, line)
			}
			continue
		}
		if l.LSN != entries[i].LSN || !json.Valid(l.Event) || l.EventBase64 != "" {
			t.Fatalf("line %d: %s", i, line)
		}
	}

	// No dead-letter directory: nothing to list.
	s2 := buildStores(t)
	out, _, code = ctl(t, "-ledger", s2.ledger, "dlq", "list")
	if code != exitOK || !strings.Contains(out, "0 dead letters") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(s2.ledger, "dlq")); !os.IsNotExist(err) {
		t.Fatal("dlq list created the dead-letter directory")
	}
}

func startES(t *testing.T) *estest.Server {
	t.Helper()
	srv, err := estest.Start(estest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestDLQRedrive(t *testing.T) {
	s := buildStores(t)
	dir := writeDeadLetters(t, s.ledger, oddLetters())
	srv := startES(t)

	out, _, code := ctl(t, "-ledger", s.ledger, "dlq", "redrive", "-es", srv.URL(), "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d outcome lines", len(lines))
	}
	for i, line := range lines {
		var l redriveLine
		if err := json.Unmarshal([]byte(line), &l); err != nil || l.Outcome != "created" || l.Status != 201 || l.LSN != uint64(100+i) {
			t.Fatalf("line %d: %s (%v)", i, line, err)
		}
	}
	docs := srv.Docs()
	if len(docs) != 6 {
		t.Fatalf("%d documents in Elasticsearch, want 6", len(docs))
	}
	got := map[string]string{}
	for _, d := range docs {
		if d.Index != "logs-2026.12.02" {
			t.Fatalf("document in index %q", d.Index)
		}
		got[d.ID] = string(d.Source)
	}
	for i, want := range wantSources[:5] {
		if id := fmt.Sprintf("doc-%d", i); got[id] != want {
			t.Fatalf("document %s: %q, want %q", id, got[id], want)
		}
	}
	assigned := false // the dead letter without an id got one from Elasticsearch
	for id, src := range got {
		assigned = assigned || (!strings.HasPrefix(id, "doc-") && src == wantSources[5])
	}
	if !assigned {
		t.Fatalf("no document %q with an assigned id: %v", wantSources[5], got)
	}

	// Again: the five with ids are already there (409), which is fine; the
	// one without an id is created anew (Elasticsearch assigns ids). Then
	// purge: the files go, and the store is usable again.
	out, _, code = ctl(t, "-ledger", s.ledger, "dlq", "redrive", "-es", srv.URL(), "-purge")
	if code != exitOK || strings.Count(out, "exists (409)") != 5 || !strings.Contains(out, "1 created, 5 already there (409), 0 failed") ||
		!strings.Contains(out, "purged the 6 re-driven dead letters") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, _, _ = ctl(t, "-ledger", s.ledger, "dlq", "list")
	if !strings.Contains(out, "0 dead letters") {
		t.Fatalf("after purge:\n%s", out)
	}
	st, err := dlq.Open(dir, dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// TestDLQRedriveFailures: an entry Elasticsearch rejects, and one that is
// not JSON, are reported as failed with the reason, the exit status is 1,
// and -purge purges nothing.
func TestDLQRedriveFailures(t *testing.T) {
	s := buildStores(t)
	writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(0, `{"ok":1}`), deadLetter(1, `{"bad":1}`), deadLetter(2, "not json")})
	srv := startES(t)
	srv.SetFaults(estest.Faults{ItemHook: func(action, index, id string, source []byte) (int, string, string, bool) {
		if id == "doc-1" {
			return 400, "mapper_parsing_exception", "failed to parse field [bad]", true
		}
		return 0, "", "", false
	}})
	out, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "redrive", "-es", srv.URL(), "-purge")
	for _, want := range []string{"doc-0", "created (201)", "doc-1", "failed (400): mapper_parsing_exception: failed to parse field [bad]",
		"doc-2", "failed: the event is not valid JSON", "1 created, 0 already there (409), 2 failed"} {
		if code != exitFailed || !strings.Contains(out, want) {
			t.Fatalf("exit %d, no %q in:\n%s", code, want, out)
		}
	}
	if !strings.Contains(errOut, "not purging") {
		t.Fatalf("stderr: %s", errOut)
	}
	if out, _, _ := ctl(t, "-ledger", s.ledger, "dlq", "list"); !strings.Contains(out, "3 dead letters") {
		t.Fatalf("entries were purged:\n%s", out)
	}

	// Elasticsearch down: every entry fails, none is lost.
	url := srv.URL()
	srv.Close()
	out, _, code = ctl(t, "-ledger", s.ledger, "dlq", "redrive", "-es", url)
	if code != exitFailed || !strings.Contains(out, "0 created, 0 already there (409), 3 failed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestDLQPurgeWhileLocked: with the store open (as by a running logpond),
// purge fails with a message that says so, after re-driving.
func TestDLQPurgeWhileLocked(t *testing.T) {
	s := buildStores(t)
	dir := writeDeadLetters(t, s.ledger, []dlq.Entry{deadLetter(0, `{"ok":1}`)})
	st, err := dlq.Open(dir, dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := startES(t)
	out, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "redrive", "-es", srv.URL(), "-purge")
	if code != exitFailed || !strings.Contains(out, "1 created") || !strings.Contains(errOut, "in use by a running logpond") ||
		!strings.Contains(errOut, "stop logpond") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if out, _, _ := ctl(t, "-ledger", s.ledger, "dlq", "list"); !strings.Contains(out, "1 dead letters") {
		t.Fatalf("entries were purged:\n%s", out)
	}
}

func TestRedriveSource(t *testing.T) {
	for i, en := range oddLetters() {
		src, err := redriveSource(en)
		if err != nil || string(src) != wantSources[i] {
			t.Fatalf("%q → %q, %v; want %q", en.Event, src, err, wantSources[i])
		}
	}
}

// TestRedriveSourceIntoDataStreams: a dead letter bound for a data stream
// is re-driven as the output sent it (its @timestamp, its data_stream
// object completed from the name), and one that names another data
// stream, or an invalid one, is refused with the reason.
func TestRedriveSourceIntoDataStreams(t *testing.T) {
	received := time.Date(2026, 12, 5, 1, 2, 3, 456e6, time.UTC)
	for _, tc := range []struct {
		event, index, want, err string
	}{
		{`{"@metadata":{"beat":"filebeat"},"message":"m"}`, "logs-nginx.access-prod",
			`{"@timestamp":"2026-12-05T01:02:03.456Z","data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"m"}`, ""},
		{`{"@timestamp":"2026-01-01T00:00:00Z","data_stream":{"dataset":"app"},"m":1}`, "metrics-app-default",
			`{"@timestamp":"2026-01-01T00:00:00Z","data_stream":{"type":"metrics","namespace":"default","dataset":"app"},"m":1}`, ""},
		{`{"@timestamp":"2026-01-01T00:00:00Z","data_stream":{"type":"logs","dataset":"a","namespace":"b"}}`, "logs-a-b",
			`{"@timestamp":"2026-01-01T00:00:00Z","data_stream":{"type":"logs","dataset":"a","namespace":"b"}}`, ""},
		{`{"data_stream":{"type":"logs","dataset":"other","namespace":"b"}}`, "logs-a-b", "", `names the data stream "logs-other-b"`},
		{`{"data_stream":{"type":"logs","dataset":"Bad","namespace":"b"}}`, "logs-Bad-b", "", "lowercase"},
		{`{"@metadata":{"beat":"filebeat"},"message":"m"}`, "filebeat-9.3.0", `{"message":"m"}`, ""},
		{`{"message":"m"}`, "logs-2026.12.05", `{"message":"m"}`, ""},
	} {
		src, err := redriveSource(dlq.Entry{Event: []byte(tc.event), Index: tc.index, Received: received})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s into %s: %s, %v; want an error naming %q", tc.event, tc.index, src, err, tc.err)
		case tc.err == "" && (err != nil || !jsonEqual(src, []byte(tc.want))):
			t.Errorf("%s into %s: %s, %v; want %s", tc.event, tc.index, src, err, tc.want)
		}
	}
}

// jsonEqual says whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

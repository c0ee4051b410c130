package estest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// backing is the backing index name a stream created now gets on 7.11+.
func backing(stream string) string {
	return ".ds-" + stream + "-" + time.Now().UTC().Format("2006.01.02") + "-000001"
}

// itemWant is the expected answer to one bulk item.
type itemWant struct {
	status    int64
	index     string // "_index" of the answer
	errType   string
	reason    string // exact, when not empty
	cause     string // caused_by.reason, when not empty
	idNull    bool
	dsRefused bool // counted in Stats.DataStreamRefused
}

func checkItems(t *testing.T, r resp, wants []itemWant) {
	t.Helper()
	for i, w := range wants {
		_, v := item(r, i)
		if v.Get("status").Int() != w.status || v.Get("_index").String() != w.index {
			t.Errorf("item %d: %s, want status %d _index %s", i, v.Raw, w.status, w.index)
			continue
		}
		if v.Get("error.type").String() != w.errType {
			t.Errorf("item %d: error %s, want type %q", i, v.Get("error").Raw, w.errType)
		}
		if w.reason != "" && v.Get("error.reason").String() != w.reason {
			t.Errorf("item %d: reason %q\n want %q", i, v.Get("error.reason").String(), w.reason)
		}
		if w.cause != "" && (v.Get("error.caused_by.reason").String() != w.cause ||
			v.Get("error.caused_by.type").String() != "illegal_argument_exception") {
			t.Errorf("item %d: caused_by %s, want %q", i, v.Get("error.caused_by").Raw, w.cause)
		}
		if w.idNull != (v.Get("_id").Type == 0 && v.Get("_id").Exists()) {
			t.Errorf("item %d: _id %s, want null: %v", i, v.Get("_id").Raw, w.idNull)
		}
	}
}

func TestDataStreamRules(t *testing.T) {
	const ts = `"@timestamp":"2026-12-05T00:20:00.123Z"`
	ds := backing("logs-app-default")
	const onlyCreate = "only write ops with an op_type of create are allowed in data streams"
	const missing = "data stream timestamp field [@timestamp] is missing"
	for _, tc := range []struct {
		name       string
		action     string
		source     string // "" for delete
		want       itemWant
		wantStored bool
	}{
		{"create with date string", `{"create":{"_index":"logs-app-default","_id":"11"}}`, `{` + ts + `,"m":"a"}`,
			itemWant{status: 201, index: ds}, true},
		{"create with epoch millis", `{"create":{"_index":"logs-app-default","_id":"12"}}`, `{"@timestamp":1733357000000}`,
			itemWant{status: 201, index: ds}, true},
		{"create with date only", `{"create":{"_index":"logs-app-default","_id":"13"}}`, `{"@timestamp":"2026-12-05"}`,
			itemWant{status: 201, index: ds}, true},
		{"index op_type create", `{"index":{"_index":"logs-app-default","_id":"4","op_type":"create"}}`, `{` + ts + `}`,
			itemWant{status: 201, index: ds}, true},
		{"create without id", `{"create":{"_index":"logs-app-default"}}`, `{` + ts + `}`,
			itemWant{status: 201, index: ds}, true},
		{"index refused", `{"index":{"_index":"logs-app-default"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "logs-app-default", errType: "illegal_argument_exception", reason: onlyCreate, idNull: true, dsRefused: true}, false},
		{"index with id refused", `{"index":{"_index":"logs-app-default","_id":"1"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "logs-app-default", errType: "illegal_argument_exception", reason: onlyCreate, dsRefused: true}, false},
		{"op_type index refused", `{"index":{"_index":"logs-app-default","op_type":"index"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "logs-app-default", errType: "illegal_argument_exception", reason: onlyCreate, idNull: true, dsRefused: true}, false},
		{"index refused before the stream exists", `{"index":{"_index":"metrics-new-default"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "metrics-new-default", errType: "illegal_argument_exception", reason: onlyCreate, idNull: true, dsRefused: true}, false},
		{"delete by id refused", `{"delete":{"_index":"logs-app-default","_id":"1"}}`, "",
			itemWant{status: 400, index: "logs-app-default", errType: "illegal_argument_exception", reason: onlyCreate, dsRefused: true}, false},
		{"delete in a stream that does not exist", `{"delete":{"_index":"traces-none-default","_id":"1"}}`, "",
			itemWant{status: 404, index: "traces-none-default", errType: "index_not_found_exception", reason: "no such index [traces-none-default]"}, false},
		{"missing timestamp", `{"create":{"_index":"logs-app-default","_id":"m1"}}`, `{"m":1}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception", reason: "[1:7] failed to parse: " + missing, cause: missing, dsRefused: true}, false},
		{"null timestamp", `{"create":{"_index":"logs-app-default","_id":"m2"}}`, `{"@timestamp":null}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception", reason: "[1:19] failed to parse: " + missing, cause: missing, dsRefused: true}, false},
		{"nested timestamp only", `{"create":{"_index":"logs-app-default","_id":"m3"}}`, `{"a":{` + ts + `}}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception", cause: missing, dsRefused: true}, false},
		{"empty array timestamp", `{"create":{"_index":"logs-app-default","_id":"m4"}}`, `{"@timestamp":[]}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception", cause: missing, dsRefused: true}, false},
		{"two timestamps", `{"create":{"_index":"logs-app-default","_id":"m5"}}`, `{"@timestamp":["2026-01-01","2026-01-02"]}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception",
				reason: "[1:42] failed to parse: data stream timestamp field [@timestamp] encountered multiple values", dsRefused: true}, false},
		{"not a date", `{"create":{"_index":"logs-app-default","_id":"m6"}}`, `{"@timestamp":"yesterday"}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception",
				reason: "[1:15] failed to parse field [@timestamp] of type [date] in document with id 'm6'. Preview of field's value: 'yesterday'", dsRefused: true}, false},
		{"boolean timestamp", `{"create":{"_index":"logs-app-default","_id":"m7"}}`, `{"@timestamp":true}`,
			itemWant{status: 400, index: ds, errType: "document_parsing_exception", dsRefused: true}, false},
		{"uppercase stream name", `{"create":{"_index":"logs-App-default"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "logs-App-default", errType: "illegal_argument_exception",
				reason: "data_stream [logs-App-default] must be lowercase", idNull: true, dsRefused: true}, false},
		{"stream name with '#'", `{"create":{"_index":"logs-a#b-default"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: "logs-a#b-default", errType: "illegal_argument_exception",
				reason: "data_stream [logs-a#b-default] must not contain '#'", idNull: true, dsRefused: true}, false},
		{"create into the backing index", `{"create":{"_index":"` + ds + `"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: ds, errType: "illegal_argument_exception", idNull: true, dsRefused: true,
				reason: "index request with op_type=create targeting backing indices is disallowed, target corresponding data stream [logs-app-default] instead"}, false},
		{"index into the backing index", `{"index":{"_index":"` + ds + `","_id":"1"}}`, `{` + ts + `}`,
			itemWant{status: 400, index: ds, errType: "illegal_argument_exception", dsRefused: true,
				reason: "index request with op_type=index and no if_primary_term and if_seq_no set targeting backing indices is disallowed, target corresponding data stream [logs-app-default] instead"}, false},
		{"conditional index into the backing index", `{"index":{"_index":"` + ds + `","_id":"2","if_seq_no":1,"if_primary_term":1}}`, `{` + ts + `,"v":2}`,
			itemWant{status: 200, index: ds}, true},
		{"delete in the backing index", `{"delete":{"_index":"` + ds + `","_id":"3"}}`, "",
			itemWant{status: 200, index: ds}, false},
		{"plain index with a dash less", `{"index":{"_index":"logs-2026.12.05","_id":"p"}}`, `{"m":1}`,
			itemWant{status: 201, index: "logs-2026.12.05"}, true},
		{"plain index, any name", `{"index":{"_index":"metricsx-a-b","_id":"p"}}`, `{"m":1}`,
			itemWant{status: 201, index: "metricsx-a-b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case runs on a server holding stream logs-app-default
			// with documents 1, 2 and 3.
			h := start(t, Options{})
			h.bulkOK("/_bulk", nd(
				`{"create":{"_index":"logs-app-default","_id":"1"}}`, `{`+ts+`}`,
				`{"create":{"_index":"logs-app-default","_id":"2"}}`, `{`+ts+`}`,
				`{"create":{"_index":"logs-app-default","_id":"3"}}`, `{`+ts+`}`,
			), 3)
			before := h.srv.Count()
			lines := []string{tc.action}
			if tc.source != "" {
				lines = append(lines, tc.source)
			}
			r := h.bulkOK("/_bulk", nd(lines...), 1)
			checkItems(t, r, []itemWant{tc.want})
			if got := r.get("errors").Bool(); got != (tc.want.errType != "") {
				t.Errorf("errors = %v", got)
			}
			if st := h.srv.Stats(); (st.DataStreamRefused == 1) != tc.want.dsRefused || st.DataStreamRefused > 1 {
				t.Errorf("DataStreamRefused = %d, want refused: %v", st.DataStreamRefused, tc.want.dsRefused)
			}
			delta := 0
			switch {
			case tc.want.status == 201:
				delta = 1
			case tc.want.status == 200 && tc.source == "":
				delta = -1
			}
			if h.srv.Count() != before+delta {
				t.Errorf("count %d -> %d, want %+d", before, h.srv.Count(), delta)
			}
			if _, v := item(r, 0); tc.wantStored {
				src, ok := h.srv.Doc(tc.want.index, v.Get("_id").String())
				if !ok || string(src) != tc.source {
					t.Errorf("Doc(%s, %s) = %s %v", tc.want.index, v.Get("_id").String(), src, ok)
				}
			}
			if got := h.srv.DataStreams(); !slices.Equal(got, []string{"logs-app-default"}) {
				t.Errorf("DataStreams() = %q", got)
			}
		})
	}
}

func TestDataStreamPlacementAndHelpers(t *testing.T) {
	h := start(t, Options{})
	r := h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"logs-b-default","_id":"1"}}`, `{"@timestamp":1}`,
		`{"create":{"_index":"logs-a-default","_id":"1"}}`, `{"@timestamp":2}`,
		`{"create":{"_index":"logs-a-default","_id":"2"}}`, `{"@timestamp":3}`,
		`{"create":{"_index":"plain","_id":"1"}}`, `{"m":1}`,
	), 4)
	if r.get("errors").Bool() {
		t.Fatalf("errors: %s", r.body)
	}
	if got := h.srv.DataStreams(); !slices.Equal(got, []string{"logs-a-default", "logs-b-default"}) {
		t.Errorf("DataStreams() = %q", got)
	}
	wantIndices := []string{backing("logs-a-default"), backing("logs-b-default"), "plain"}
	if got := h.srv.Indices(); !slices.Equal(got, wantIndices) {
		t.Errorf("Indices() = %q, want %q", got, wantIndices)
	}
	in := h.srv.DocsIn("logs-a-default")
	if len(in) != 2 || in[0].ID != "1" || in[1].ID != "2" || in[0].DataStream != "logs-a-default" ||
		in[0].Index != backing("logs-a-default") || string(in[1].Source) != `{"@timestamp":3}` {
		t.Errorf("DocsIn(logs-a-default) = %+v", in)
	}
	if got := h.srv.DocsIn(backing("logs-a-default")); len(got) != 2 {
		t.Errorf("DocsIn(backing) has %d docs", len(got))
	}
	if got := h.srv.DocsIn("plain"); len(got) != 1 || got[0].DataStream != "" || got[0].Index != "plain" {
		t.Errorf("DocsIn(plain) = %+v", got)
	}
	if got := h.srv.DocsIn("nothing"); got != nil {
		t.Errorf("DocsIn(nothing) = %+v", got)
	}
	// The read endpoints resolve a data stream to its backing index.
	for path, want := range map[string]int64{
		"/logs-a-default/_count": 2, "/logs-*/_count": 3, "/_count": 4, "/logs-a-default,plain/_count": 3,
	} {
		if c := h.must(http.MethodGet, path, nil); c.status != 200 || c.get("count").Int() != want {
			t.Errorf("GET %s: %d %s, want count %d", path, c.status, c.body, want)
		}
	}
	h.srv.Reset()
	if len(h.srv.DataStreams()) != 0 || h.srv.Count() != 0 {
		t.Errorf("after Reset: %q, %d docs", h.srv.DataStreams(), h.srv.Count())
	}
}

func TestDataStreamPatterns(t *testing.T) {
	const ts = `{"@timestamp":"2026-12-05T00:00:00Z"}`
	for _, tc := range []struct {
		name     string
		patterns []string
		target   string
		stream   bool // stored as a data stream
		reason   string
	}{
		{"builtin logs", nil, "logs-x-y", true, ""},
		{"builtin metrics", nil, "metrics-x-y", true, ""},
		{"builtin synthetics", nil, "synthetics-x-y", true, ""},
		{"builtin traces", nil, "traces-apm-default", true, ""},
		{"builtin needs two dashes", nil, "logs-x", false, ""},
		{"builtin prefix only", nil, "mylogs-x-y", false, ""},
		{"none", []string{}, "logs-x-y", false, ""},
		{"custom", []string{"app-*"}, "app-1", true, ""},
		{"custom replaces builtin", []string{"app-*"}, "logs-x-y", false, ""},
		{"custom exact", []string{"events"}, "events", true, ""},
		{"custom middle star", []string{"a*z"}, "abcz", true, ""},
		{"custom middle star no match", []string{"a*z"}, "abcza", false, ""},
		{"backing prefix refused", []string{"*"}, ".ds-x", false, "data_stream [.ds-x] must not start with '.ds-'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{DataStreamPatterns: tc.patterns})
			r := h.bulkOK("/_bulk", nd(`{"create":{"_index":"`+tc.target+`","_id":"1"}}`, ts), 1)
			_, v := item(r, 0)
			if tc.reason != "" {
				if v.Get("error.reason").String() != tc.reason {
					t.Errorf("answer %s, want %q", v.Raw, tc.reason)
				}
				return
			}
			if v.Get("status").Int() != 201 {
				t.Fatalf("answer %s", v.Raw)
			}
			docs := h.srv.DocsIn(tc.target)
			if len(docs) != 1 || (docs[0].DataStream != "") != tc.stream {
				t.Errorf("docs %+v, want data stream: %v", docs, tc.stream)
			}
		})
	}
	for _, bad := range [][]string{{""}, {"logs-?"}, {"a[b]"}} {
		if srv, err := Start(Options{DataStreamPatterns: bad}); err == nil {
			srv.Close()
			t.Errorf("Start with patterns %q: no error", bad)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"logs-*-*", "logs-a-b", true},
		{"logs-*-*", "logs-a-b-c", true},
		{"logs-*-*", "logs--", true},
		{"logs-*-*", "logs-ab", false},
		{"logs-*-*", "xlogs-a-b", false},
		{"*", "", true},
		{"a**b", "ab", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
		{"abc", "abc", true},
		{"abc", "abcd", false},
	} {
		if got := matchPattern(tc.pattern, tc.name); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
}

// The node behaves as its version: data streams from 7.9 (backing
// indices dated from 7.11), the 7.x error type and "_type".
func TestDataStreamVersions(t *testing.T) {
	const missing = "data stream timestamp field [@timestamp] is missing"
	for _, tc := range []struct {
		version    string
		stored     string // where logs-a-b's document goes
		docType    bool
		parseType  string
		parseWhy   string
		hasStreams bool
	}{
		{"7.8.1", "logs-a-b", true, "", "", false},
		{"7.10.2", ".ds-logs-a-b-000001", true, "mapper_parsing_exception", "failed to parse", true},
		{"7.17.25", backing("logs-a-b"), true, "mapper_parsing_exception", "failed to parse", true},
		{"8.0.0", backing("logs-a-b"), false, "document_parsing_exception", "[1:7] failed to parse: " + missing, true},
		{"9.1.0", backing("logs-a-b"), false, "document_parsing_exception", "[1:7] failed to parse: " + missing, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			h := start(t, Options{Version: tc.version})
			r := h.bulkOK("/_bulk", nd(
				`{"create":{"_index":"logs-a-b","_id":"1"}}`, `{"@timestamp":"2026-12-05T00:00:00Z"}`,
				`{"create":{"_index":"logs-a-b","_id":"2"}}`, `{"m":1}`,
				`{"index":{"_index":"logs-a-b","_id":"3"}}`, `{"@timestamp":"2026-12-05T00:00:00Z"}`,
			), 3)
			_, v0 := item(r, 0)
			_, v1 := item(r, 1)
			_, v2 := item(r, 2)
			if v0.Get("status").Int() != 201 || v0.Get("_index").String() != tc.stored {
				t.Errorf("item 0: %s, want stored in %s", v0.Raw, tc.stored)
			}
			for i, v := range []string{v0.Raw, v1.Raw, v2.Raw} {
				if got := strings.Contains(v, `"_type":"_doc"`); got != tc.docType {
					t.Errorf("item %d: %s, want _type: %v", i, v, tc.docType)
				}
			}
			if !tc.hasStreams {
				if v1.Get("status").Int() != 201 || v2.Get("status").Int() != 201 || len(h.srv.DataStreams()) != 0 {
					t.Errorf("a %s node has no data streams: %s", tc.version, r.body)
				}
				return
			}
			if v1.Get("error.type").String() != tc.parseType || v1.Get("error.reason").String() != tc.parseWhy ||
				v1.Get("error.caused_by.reason").String() != missing {
				t.Errorf("item 1: %s, want %s %q", v1.Raw, tc.parseType, tc.parseWhy)
			}
			if v2.Get("status").Int() != 400 || v2.Get("error.type").String() != "illegal_argument_exception" {
				t.Errorf("item 2: %s", v2.Raw)
			}
			g := h.must(http.MethodGet, "/"+tc.stored+"/_doc/1", nil)
			if g.status != 200 || g.get("_type").Exists() != tc.docType {
				t.Errorf("GET doc: %d %s", g.status, g.body)
			}
		})
	}
}

// Each rule is counted once, whatever the mix in one request.
func TestDataStreamRefusedCount(t *testing.T) {
	h := start(t, Options{})
	var lines []string
	for i := range 5 {
		lines = append(lines, `{"index":{"_index":"logs-a-b"}}`, `{"@timestamp":1}`,
			`{"create":{"_index":"logs-a-b","_id":"`+strconv.Itoa(i)+`"}}`, `{}`,
			`{"create":{"_index":"logs-a-b"}}`, `{"@timestamp":1}`)
	}
	h.bulkOK("/_bulk", nd(lines...), 15)
	st := h.srv.Stats()
	if st.DataStreamRefused != 10 || st.Created != 5 || st.ItemsByStatus[400] != 10 {
		t.Errorf("stats %+v", st)
	}
}

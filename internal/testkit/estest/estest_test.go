package estest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestInfo(t *testing.T) {
	for _, tc := range []struct{ version, want, lucene string }{
		{"", "8.17.0", "9.12.0"},
		{"7.17.25", "7.17.25", "8.11.3"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			h := start(t, Options{Version: tc.version})
			r := h.must(http.MethodGet, "/", nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET /: %d %s", r.status, r.body)
			}
			for path, want := range map[string]string{
				"version.number":         tc.want,
				"version.build_flavor":   "default",
				"version.lucene_version": tc.lucene,
				"tagline":                "You Know, for Search",
			} {
				if got := r.get(path).String(); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			for _, path := range []string{"name", "cluster_name", "cluster_uuid",
				"version.minimum_wire_compatibility_version", "version.minimum_index_compatibility_version"} {
				if r.get(path).String() == "" {
					t.Errorf("%s missing in %s", path, r.body)
				}
			}
			head := h.must(http.MethodHead, "/", nil)
			if head.status != http.StatusOK {
				t.Errorf("HEAD /: %d", head.status)
			}
		})
	}
}

// Every answer, success or failure, must carry the product header, or
// go-elasticsearch refuses the server.
func TestHeadersOnEveryAnswer(t *testing.T) {
	h := start(t, Options{MaxContentLength: 64})
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		ct           string
		want         int
	}{
		{"info", "GET", "/", "", "", 200},
		{"bulk", "POST", "/_bulk", nd(`{"create":{"_index":"a"}}`, `{}`), "application/x-ndjson", 200},
		{"bulk json content type", "PUT", "/a/_bulk", nd(`{"create":{}}`, `{}`), "application/json; charset=UTF-8", 200},
		// A versioned Content-Type needs a versioned Accept, as in Elasticsearch.
		{"bulk vendor content type", "POST", "/a/_bulk", nd(`{"create":{}}`, `{}`), "application/vnd.elasticsearch+x-ndjson; compatible-with=8", 200},
		{"vendor content type without accept", "POST", "/a/_bulk", nd(`{"create":{}}`, `{}`), "application/vnd.elasticsearch+x-ndjson; compatible-with=8", 400},
		{"unknown path", "GET", "/_cat/nodes", "", "", 404},
		{"wrong method", "GET", "/_bulk", "", "", 405},
		{"bad content type", "POST", "/_bulk", nd(`{"create":{"_index":"a"}}`, `{}`), "text/plain", 406},
		{"missing content type", "POST", "/_bulk", nd(`{"create":{"_index":"a"}}`, `{}`), "", 406},
		{"empty body", "POST", "/_bulk", "", "application/x-ndjson", 400},
		{"too large", "POST", "/_bulk", nd(`{"create":{"_index":"a"}}`, `{"m":"`+strings.Repeat("x", 64)+`"}`), "application/x-ndjson", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			var hdr []string
			if tc.ct != "" {
				hdr = []string{"Content-Type", tc.ct}
			}
			if tc.name == "bulk vendor content type" {
				hdr = append(hdr, "Accept", "application/vnd.elasticsearch+json; compatible-with=8")
			}
			r := h.must(tc.method, tc.path, body, hdr...)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if len(r.body) > 0 && !gjson.ValidBytes(r.body) {
				t.Fatalf("body is not JSON: %s", r.body)
			}
			if tc.want >= 400 && tc.want != 413 && r.get("status").Int() != int64(tc.want) {
				t.Errorf("error body status %s, want %d: %s", r.get("status").Raw, tc.want, r.body)
			}
		})
	}
}

func TestCreateConflictIndex(t *testing.T) {
	h := start(t, Options{})
	r := h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"t","_id":"1"}}`, `{"a":1}`,
		`{"create":{"_index":"t","_id":"1"}}`, `{"a":2}`,
		`{"index":{"_index":"t","_id":"1"}}`, `{"a":3}`,
		`{"index":{"_index":"t","_id":"2"}}`, `{"b":1}`,
		`{"create":{"_index":"t","_id":"1"}}`, `{"a":4}`,
	), 5)
	if !r.get("errors").Bool() {
		t.Errorf("errors = false with a conflict in the request")
	}
	for i, want := range []struct {
		key     string
		status  int64
		result  string
		version int64
		errType string
		reason  string
	}{
		{"create", 201, "created", 1, "", ""},
		{"create", 409, "", 0, "version_conflict_engine_exception", "[1]: version conflict, document already exists (current version [1])"},
		{"index", 200, "updated", 2, "", ""},
		{"index", 201, "created", 1, "", ""},
		{"create", 409, "", 0, "version_conflict_engine_exception", "[1]: version conflict, document already exists (current version [2])"},
	} {
		key, v := item(r, i)
		if key != want.key || v.Get("status").Int() != want.status || v.Get("_index").String() != "t" {
			t.Errorf("item %d: %s %s, want %s status %d", i, key, v.Raw, want.key, want.status)
		}
		if want.errType == "" {
			if v.Get("result").String() != want.result || v.Get("_version").Int() != want.version ||
				v.Get("_shards.successful").Int() != 1 || v.Get("_primary_term").Int() != 1 || !v.Get("_seq_no").Exists() {
				t.Errorf("item %d: %s, want result %s version %d", i, v.Raw, want.result, want.version)
			}
			continue
		}
		if v.Get("error.type").String() != want.errType || v.Get("error.reason").String() != want.reason {
			t.Errorf("item %d error: %s, want %s %q", i, v.Get("error").Raw, want.errType, want.reason)
		}
	}
	if src, ok := h.srv.Doc("t", "1"); !ok || string(src) != `{"a":3}` {
		t.Errorf("Doc(t, 1) = %q, %v", src, ok)
	}
	if n := h.srv.Count(); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
	// A clean request says errors:false.
	r = h.bulkOK("/_bulk", nd(`{"create":{"_index":"t","_id":"3"}}`, `{}`), 1)
	if r.get("errors").Bool() {
		t.Errorf("errors = true for a clean request: %s", r.body)
	}
}

func TestGeneratedIDs(t *testing.T) {
	h := start(t, Options{})
	const n = 50
	var lines []string
	for i := 0; i < n; i++ {
		action := "create"
		if i%2 == 1 {
			action = "index"
		}
		lines = append(lines, `{"`+action+`":{"_index":"gen"}}`, fmt.Sprintf(`{"i":%d}`, i))
	}
	r := h.bulkOK("/_bulk", nd(lines...), n)
	seen := make(map[string]bool)
	for i := 0; i < n; i++ {
		_, v := item(r, i)
		id := v.Get("_id").String()
		if v.Get("status").Int() != 201 || len(id) != 20 || seen[id] {
			t.Fatalf("item %d: %s (want 201, a fresh 20-character id)", i, v.Raw)
		}
		if _, err := base64.RawURLEncoding.DecodeString(id); err != nil {
			t.Fatalf("id %q is not URL-safe base64: %v", id, err)
		}
		seen[id] = true
		if src, ok := h.srv.Doc("gen", id); !ok || string(src) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("Doc(gen, %s) = %q, %v", id, src, ok)
		}
	}
}

func TestSourceValidation(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001)
	for _, tc := range []struct {
		name   string
		source string
		status int64
		stored string // what Doc returns when stored
	}{
		{"object", `{"a":1}`, 201, `{"a":1}`},
		{"verbatim spacing and escapes", ` { "msg" : "h\u00e9llo" , "n": 1.50 } `, 201, ` { "msg" : "h\u00e9llo" , "n": 1.50 } `},
		{"crlf line end", "{\"a\":1}\r", 201, `{"a":1}`},
		{"empty object", `{}`, 201, `{}`},
		{"utf8", `{"m":"日本語"}`, 201, `{"m":"日本語"}`},
		{"syntax error", `{"a":}`, 400, ""},
		{"truncated", `{"a":"b`, 400, ""},
		{"two objects", `{"a":1}{"b":2}`, 400, ""},
		{"array", `[1,2]`, 400, ""},
		{"string", `"x"`, 400, ""},
		{"empty line", ``, 400, ""},
		{"blank line", `   `, 400, ""},
		{"invalid utf8", "{\"a\":\"\xff\xfe\"}", 400, ""},
		{"duplicate key", `{"a":1,"a":2}`, 400, ""},
		{"nested duplicate key", `{"o":{"x":1,"y":[{"z":1,"z":2}]}}`, 400, ""},
		{"too deep", deep, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{})
			r := h.bulkOK("/_bulk", nd(
				`{"create":{"_index":"v","_id":"ok"}}`, `{"fine":true}`,
				`{"create":{"_index":"v","_id":"x"}}`, tc.source,
			), 2)
			if _, v := item(r, 0); v.Get("status").Int() != 201 {
				t.Fatalf("neighbour item: %s", v.Raw)
			}
			_, v := item(r, 1)
			if v.Get("status").Int() != tc.status {
				t.Fatalf("item: %s, want status %d", v.Raw, tc.status)
			}
			src, ok := h.srv.Doc("v", "x")
			if tc.status == 201 {
				if !ok || string(src) != tc.stored {
					t.Fatalf("stored %q, %v; want %q", src, ok, tc.stored)
				}
				return
			}
			if ok {
				t.Fatalf("an invalid source was stored: %q", src)
			}
			if got := v.Get("error.type").String(); got != "document_parsing_exception" || v.Get("error.reason").String() == "" {
				t.Fatalf("error %s, want document_parsing_exception with a reason", v.Get("error").Raw)
			}
			if !r.get("errors").Bool() {
				t.Errorf("errors = false")
			}
		})
	}
}

// A malformed request is refused as a whole, with Elasticsearch's error
// envelope, and stores nothing even when its first items are fine.
func TestMalformedRequests(t *testing.T) {
	good := `{"create":{"_index":"m","_id":"good"}}` + "\n{}\n"
	for _, tc := range []struct {
		name    string
		path    string
		body    string
		errType string
		reason  string // substring
	}{
		{"action is an array", "/_bulk", good + nd(`[]`, `{}`), "illegal_argument_exception", "Malformed action/metadata line [3], expected START_OBJECT but found [START_ARRAY]"},
		{"action is a string", "/_bulk", good + nd(`"create"`, `{}`), "illegal_argument_exception", "expected START_OBJECT but found [VALUE_STRING]"},
		{"action object empty", "/_bulk", good + nd(`{}`, `{}`), "illegal_argument_exception", "expected FIELD_NAME but found [END_OBJECT]"},
		{"unknown action", "/_bulk", good + nd(`{"upsert":{"_index":"m"}}`, `{}`), "illegal_argument_exception", "expected field [create], [delete], [index] or [update] but found [upsert]"},
		{"metadata not an object", "/_bulk", good + nd(`{"create":"m"}`, `{}`), "illegal_argument_exception", "expected START_OBJECT or END_OBJECT but found [VALUE_STRING]"},
		{"unknown parameter", "/_bulk", good + nd(`{"create":{"_index":"m","colour":"red"}}`, `{}`), "illegal_argument_exception", "contains an unknown parameter [colour]"},
		{"_type is gone in 8", "/_bulk", good + nd(`{"create":{"_index":"m","_type":"_doc"}}`, `{}`), "illegal_argument_exception", "unknown parameter [_type]"},
		{"array parameter", "/_bulk", good + nd(`{"create":{"_index":["m"]}}`, `{}`), "illegal_argument_exception", "expected a simple value for field [_index] but found [START_ARRAY]"},
		{"action not JSON", "/_bulk", good + nd(`{"create":{`, `{}`), "x_content_parse_exception", "[3:1]"},
		{"source line missing", "/_bulk", good + nd(`{"create":{"_index":"m"}}`), "illegal_argument_exception", "has no source line"},
		{"no final newline", "/_bulk", good + `{"create":{"_index":"m"}}` + "\n{}", "illegal_argument_exception", "must be terminated by a newline"},
		{"bad op_type", "/_bulk", good + nd(`{"index":{"_index":"m","op_type":"upsert"}}`, `{}`), "illegal_argument_exception", "opType must be 'create' or 'index'"},
		{"index missing", "/_bulk", good + nd(`{"create":{"_id":"1"}}`, `{}`), "action_request_validation_exception", "Validation Failed: 1: index is missing;"},
		{"two validation errors", "/_bulk", good + nd(`{"create":{}}`, `{}`, `{"delete":{"_index":"m"}}`), "action_request_validation_exception", "1: index is missing;2: id is missing;"},
		{"empty id", "/_bulk", good + nd(`{"index":{"_index":"m","_id":""}}`, `{}`), "action_request_validation_exception", "if _id is specified it must not be empty"},
		{"id too long", "/_bulk", good + nd(`{"index":{"_index":"m","_id":"`+strings.Repeat("i", 513)+`"}}`, `{}`), "action_request_validation_exception", "must be no longer than 512 bytes but was: 513"},
		{"only newlines", "/_bulk", "\n\n\n", "action_request_validation_exception", "no requests added"},
		{"empty body", "/_bulk", "", "parse_exception", "request body is required"},
		{"bad refresh", "/_bulk?refresh=sometimes", good, "illegal_argument_exception", "Unknown value for refresh: [sometimes]."},
		{"unknown query parameter", "/_bulk?piepline=x", good, "illegal_argument_exception", "contains unrecognized parameter: [piepline]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{})
			r := h.bulk(tc.path, tc.body)
			if r.status != http.StatusBadRequest || r.get("status").Int() != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if r.get("error.type").String() != tc.errType || r.get("error.root_cause.0.type").String() != tc.errType {
				t.Errorf("error type %s, want %s: %s", r.get("error.type"), tc.errType, r.body)
			}
			if reason := r.get("error.reason").String(); !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", reason, tc.reason)
			}
			if n := h.srv.Count(); n != 0 {
				t.Errorf("a refused request stored %d docs", n)
			}
			if st := h.srv.Stats(); st.RequestErrors != 1 || st.Items != 0 {
				t.Errorf("stats %+v, want 1 request error and no items", st)
			}
		})
	}
}

func TestAcceptedQueryAndMetadata(t *testing.T) {
	h := start(t, Options{})
	r := h.bulkOK("/_bulk?refresh=wait_for&filter_path=took,errors,items.*._id,items.*.status,items.*.error&require_alias=false&timeout=1m&pretty", nd(
		`{"create":{"_index":"q","_id":"1","routing":"r1","require_alias":false,"dynamic_templates":{"a":"b"},"if_seq_no":null}}`, `{}`,
		`{"index":{"_index":"q","_id":2,"op_type":"create","version":3,"version_type":"external"}}`, `{}`,
		`{"index":{"_index":"q","_id":"2","op_type":"create"}}`, `{}`,
	), 3)
	if key, v := item(r, 1); key != "create" || v.Get("_id").String() != "2" || v.Get("status").Int() != 201 {
		t.Errorf("numeric _id with op_type create: %s %s", key, v.Raw)
	}
	if key, v := item(r, 2); key != "create" || v.Get("status").Int() != 409 {
		t.Errorf("op_type create on an existing doc: %s %s", key, v.Raw)
	}
	docs := h.srv.Docs()
	if len(docs) != 2 || docs[0].Routing != "r1" {
		t.Errorf("docs %+v", docs)
	}
}

func TestInvalidIndexNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string // substring; "" for a valid name
	}{
		{"logs-2024.06.01", ""},
		{".hidden", ""},
		{"a_b+c", ""},
		{strings.Repeat("x", 255), ""},
		{"Upper", "must be lowercase"},
		{"_under", "must not start with '_', '-', or '+'"},
		{"-dash", "must not start with"},
		{"+plus", "must not start with"},
		{"a b", "must not contain the following characters"},
		{`a\\b`, "must not contain the following characters"},
		{"a/b", "must not contain the following characters"},
		{"a*b", "must not contain"},
		{"a?b", "must not contain"},
		{`a\"b`, "must not contain"},
		{"a<b", "must not contain"},
		{"a>b", "must not contain"},
		{"a|b", "must not contain"},
		{"a,b", "must not contain"},
		{"a#b", "must not contain '#'"},
		{"a:b", "must not contain ':'"},
		{".", "must not be '.' or '..'"},
		{"..", "must not be '.' or '..'"},
		{strings.Repeat("x", 256), "index name is too long, (256 > 255)"},
	} {
		t.Run(truncate(tc.name, 20), func(t *testing.T) {
			h := start(t, Options{})
			r := h.bulkOK("/_bulk", nd(`{"create":{"_index":"`+tc.name+`","_id":"1"}}`, `{}`), 1)
			_, v := item(r, 0)
			if tc.reason == "" {
				if v.Get("status").Int() != 201 || h.srv.Count() != 1 {
					t.Fatalf("valid name refused: %s", v.Raw)
				}
				return
			}
			if v.Get("status").Int() != 400 || v.Get("error.type").String() != "invalid_index_name_exception" ||
				!strings.Contains(v.Get("error.reason").String(), tc.reason) || v.Get("error.index_uuid").String() != "_na_" {
				t.Fatalf("item %s, want 400 invalid_index_name_exception %q", v.Raw, tc.reason)
			}
			if h.srv.Count() != 0 {
				t.Fatal("stored under an invalid name")
			}
		})
	}
	// The index may come from the path too.
	h := start(t, Options{})
	r := h.bulkOK("/Bad/_bulk", nd(`{"create":{}}`, `{}`), 1)
	if _, v := item(r, 0); v.Get("error.type").String() != "invalid_index_name_exception" || v.Get("_id").Type != gjson.Null {
		t.Errorf("path index: %s", v.Raw)
	}
}

func TestPathIndexAndPipeline(t *testing.T) {
	h := start(t, Options{})
	h.bulkOK("/logs/_bulk?pipeline=p1", nd(
		`{"create":{"_id":"1"}}`, `{"n":1}`,
		`{"create":{"_id":"2","pipeline":"p2"}}`, `{"n":2}`,
		`{"create":{"_id":"3","_index":"other"}}`, `{"n":3}`,
		`{"create":{"_id":"4","pipeline":"_none"}}`, `{"n":4}`,
	), 4)
	h.bulkOK("/_bulk", nd(`{"index":{"_index":"logs","_id":"5"}}`, `{"n":5}`), 1)
	want := []Doc{
		{Index: "logs", ID: "1", Source: []byte(`{"n":1}`), Version: 1, SeqNo: 0, Pipeline: "p1"},
		{Index: "logs", ID: "2", Source: []byte(`{"n":2}`), Version: 1, SeqNo: 1, Pipeline: "p2"},
		{Index: "logs", ID: "4", Source: []byte(`{"n":4}`), Version: 1, SeqNo: 2, Pipeline: ""},
		{Index: "logs", ID: "5", Source: []byte(`{"n":5}`), Version: 1, SeqNo: 3, Pipeline: ""},
		{Index: "other", ID: "3", Source: []byte(`{"n":3}`), Version: 1, SeqNo: 0, Pipeline: "p1"},
	}
	if got := h.srv.Docs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Docs:\n got %+v\nwant %+v", got, want)
	}
	if got := h.srv.Indices(); !reflect.DeepEqual(got, []string{"logs", "other"}) {
		t.Errorf("Indices = %v", got)
	}
	if h.srv.IndexCount("logs") != 4 || h.srv.IndexCount("nope") != 0 {
		t.Errorf("IndexCount wrong")
	}
}

func TestDeleteAndUpdate(t *testing.T) {
	h := start(t, Options{})
	h.bulkOK("/_bulk", nd(`{"create":{"_index":"d","_id":"1"}}`, `{}`), 1)
	r := h.bulkOK("/_bulk", nd(
		`{"delete":{"_index":"d","_id":"1"}}`,
		`{"delete":{"_index":"d","_id":"1"}}`,
	), 2)
	if _, v := item(r, 0); v.Get("status").Int() != 200 || v.Get("result").String() != "deleted" || v.Get("_version").Int() != 2 {
		t.Errorf("delete: %s", v.Raw)
	}
	if _, v := item(r, 1); v.Get("status").Int() != 404 || v.Get("result").String() != "not_found" || v.Get("error").Exists() {
		t.Errorf("delete missing: %s", v.Raw)
	}
	if r.get("errors").Bool() {
		t.Errorf("not_found is not an error: %s", r.body)
	}
	r = h.bulkOK("/_bulk", nd(
		`{"delete":{"_index":"nope","_id":"1"}}`,
		`{"update":{"_index":"d","_id":"1"}}`, `{"doc":{"a":1}}`,
	), 2)
	if _, v := item(r, 0); v.Get("status").Int() != 404 || v.Get("error.type").String() != "index_not_found_exception" {
		t.Errorf("delete in a missing index: %s", v.Raw)
	}
	if key, v := item(r, 1); key != "update" || v.Get("status").Int() != 400 {
		t.Errorf("update: %s %s", key, v.Raw)
	}
	if h.srv.Count() != 0 {
		t.Errorf("Count = %d", h.srv.Count())
	}
	if st := h.srv.Stats(); st.Deleted != 1 || st.ItemsByStatus[404] != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestAnswerCreateAsIndex(t *testing.T) {
	h := start(t, Options{})
	h.srv.SetFaults(Faults{AnswerCreateAsIndex: true})
	r := h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"c","_id":"1"}}`, `{}`,
		`{"create":{"_index":"c","_id":"1"}}`, `{}`,
		`{"delete":{"_index":"c","_id":"9"}}`,
	), 3)
	for i, want := range []struct {
		key    string
		status int64
	}{{"index", 201}, {"index", 409}, {"delete", 404}} {
		if key, v := item(r, i); key != want.key || v.Get("status").Int() != want.status {
			t.Errorf("item %d: %s %s, want %s %d", i, key, v.Raw, want.key, want.status)
		}
	}
	h.srv.SetFaults(Faults{})
	if key, _ := item(h.bulkOK("/_bulk", nd(`{"create":{"_index":"c","_id":"2"}}`, `{}`), 1), 0); key != "create" {
		t.Errorf("key %s after clearing the fault", key)
	}
}

func TestHooks(t *testing.T) {
	h := start(t, Options{})
	var mu sync.Mutex
	var seen []string
	h.srv.SetFaults(Faults{
		ItemHook: func(action, index, id string, source []byte) (int, string, string, bool) {
			mu.Lock()
			seen = append(seen, action+" "+index+" "+id+" "+string(source))
			mu.Unlock()
			switch id {
			case "bad":
				return 400, "mapper_parsing_exception", "failed to parse field [n] of type [long]", true
			case "busy":
				return 429, "es_rejected_execution_exception", "hook says busy", true
			case "weird":
				return 0, "x", "status 0 becomes 500", true
			}
			return 0, "", "", false
		},
		RequestHook: func(body []byte) (int, string, string, bool) {
			switch {
			case bytes.Contains(body, []byte("REJECT")):
				return 429, "es_rejected_execution_exception", "rejected execution of coordinating operation", true
			case bytes.Contains(body, []byte("DOWN")):
				return 503, "master_not_discovered_exception", "no master", true
			}
			return 0, "", "", false
		},
	})
	r := h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"h","_id":"ok"}}`, `{"n": 1}`,
		`{"create":{"_index":"h","_id":"bad"}}`, `{"n":"x"}`,
		`{"create":{"_index":"h","_id":"busy"}}`, `{}`,
		`{"create":{"_index":"h","_id":"weird"}}`, `{}`,
		`{"create":{"_index":"h","_id":"broken"}}`, `{`, // invalid JSON never reaches the hook
	), 5)
	for i, want := range []struct {
		status  int64
		errType string
	}{{201, ""}, {400, "mapper_parsing_exception"}, {429, "es_rejected_execution_exception"}, {500, "x"}, {400, "document_parsing_exception"}} {
		if _, v := item(r, i); v.Get("status").Int() != want.status || v.Get("error.type").String() != want.errType {
			t.Errorf("item %d: %s, want %d %s", i, v.Raw, want.status, want.errType)
		}
	}
	mu.Lock()
	if len(seen) != 4 || seen[0] != `create h ok {"n": 1}` {
		t.Errorf("hook saw %q", seen)
	}
	mu.Unlock()
	if h.srv.Count() != 1 {
		t.Errorf("Count = %d, want 1", h.srv.Count())
	}

	for _, tc := range []struct {
		marker  string
		status  int
		errType string
	}{{"REJECT", 429, "es_rejected_execution_exception"}, {"DOWN", 503, "master_not_discovered_exception"}} {
		r := h.bulk("/_bulk", nd(`{"create":{"_index":"h","_id":"`+tc.marker+`"}}`, `{}`))
		if r.status != tc.status || r.get("error.type").String() != tc.errType || r.get("status").Int() != int64(tc.status) {
			t.Errorf("%s: %d %s", tc.marker, r.status, r.body)
		}
	}
	if _, ok := h.srv.Doc("h", "REJECT"); ok || h.srv.Count() != 1 {
		t.Errorf("a hooked request stored documents")
	}
	st := h.srv.Stats()
	if st.Failed503Requests != 1 || st.RequestErrors != 1 || st.Rejected429 != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestFaults(t *testing.T) {
	body := nd(
		`{"create":{"_index":"f","_id":"1"}}`, `{}`,
		`{"create":{"_index":"f","_id":"2"}}`, `{}`,
		`{"delete":{"_index":"f","_id":"3"}}`,
	)
	for _, tc := range []struct {
		name   string
		faults Faults
		check  func(t *testing.T, r resp, err error, st Stats)
	}{
		{"ItemReject429", Faults{ItemReject429: 1}, func(t *testing.T, r resp, err error, st Stats) {
			if err != nil || r.status != 200 || !r.get("errors").Bool() {
				t.Fatalf("%v %d %s", err, r.status, r.body)
			}
			for i := 0; i < 3; i++ {
				if _, v := item(r, i); v.Get("status").Int() != 429 || v.Get("error.type").String() != "es_rejected_execution_exception" {
					t.Errorf("item %d: %s", i, v.Raw)
				}
			}
			if st.Rejected429 != 3 || st.ItemsByStatus[429] != 3 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"Request503", Faults{Request503: 1, ItemReject429: 1}, func(t *testing.T, r resp, err error, st Stats) {
			if err != nil || r.status != 503 || r.get("status").Int() != 503 || r.get("error.type").String() == "" {
				t.Fatalf("%v %d %s", err, r.status, r.body)
			}
			checkHeaders(t, r)
			if st.Failed503Requests != 1 || st.Items != 0 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"Drop", Faults{Drop: 1, Request503: 1}, func(t *testing.T, r resp, err error, st Stats) {
			if err == nil {
				t.Fatalf("a dropped request was answered: %d %s", r.status, r.body)
			}
			t.Logf("client saw: %v", err)
			if st.Dropped != 1 || st.Failed503Requests != 0 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"Latency", Faults{Latency: 1}, func(t *testing.T, r resp, err error, st Stats) {
			if err != nil || r.status != 200 || r.get("errors").Bool() {
				t.Fatalf("%v %d %s", err, r.status, r.body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{})
			h.srv.SetFaults(tc.faults)
			r, err := h.do(http.MethodPost, "/_bulk", []byte(body), "Content-Type", "application/x-ndjson")
			tc.check(t, r, err, h.srv.Stats())
			if tc.name != "Latency" && h.srv.Count() != 0 {
				t.Errorf("a faulted request stored %d docs", h.srv.Count())
			}
			// Clearing the faults takes effect for the next request.
			h.srv.SetFaults(Faults{})
			r = h.bulkOK("/_bulk", nd(`{"index":{"_index":"f","_id":"after"}}`, `{}`), 1)
			if r.get("errors").Bool() {
				t.Errorf("faults still active: %s", r.body)
			}
		})
	}
}

// The same seed, faults and requests give the same decisions.
func TestFaultDeterminism(t *testing.T) {
	const seed = 7
	run := func() []int64 {
		h := start(t, Options{Seed: seed})
		h.srv.SetFaults(Faults{ItemReject429: 0.5})
		var statuses []int64
		for req := 0; req < 5; req++ {
			var lines []string
			for i := 0; i < 20; i++ {
				lines = append(lines, fmt.Sprintf(`{"create":{"_index":"r","_id":"%d-%d"}}`, req, i), `{}`)
			}
			r := h.bulkOK("/_bulk", nd(lines...), 20)
			r.get("items.#.create.status").ForEach(func(_, v gjson.Result) bool {
				statuses = append(statuses, v.Int())
				return true
			})
		}
		return statuses
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed %d gave different decisions:\n%v\n%v", seed, a, b)
	}
	n429 := 0
	for _, s := range a {
		if s == 429 {
			n429++
		}
	}
	if n429 == 0 || n429 == len(a) {
		t.Errorf("probability 0.5 rejected %d of %d", n429, len(a))
	}
}

func TestPauseResume(t *testing.T) {
	h := start(t, Options{})
	url := h.srv.URL()
	h.bulkOK("/_bulk", nd(`{"create":{"_index":"p","_id":"1"}}`, `{}`), 1)
	if err := h.srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Pause(); err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	// A kept-alive connection was closed under the client, which would see
	// EOF on it once; new connections are refused.
	h.c.CloseIdleConnections()
	_, err := h.do(http.MethodPost, "/_bulk", []byte(nd(`{"create":{"_index":"p","_id":"2"}}`, `{}`)), "Content-Type", "application/x-ndjson")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while paused: %v, want connection refused", err)
	}
	if err := h.srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Resume(); err != nil {
		t.Fatalf("second Resume: %v", err)
	}
	if h.srv.URL() != url {
		t.Fatalf("URL changed: %s -> %s", url, h.srv.URL())
	}
	h.bulkOK("/_bulk", nd(`{"create":{"_index":"p","_id":"2"}}`, `{}`), 1)
	if h.srv.Count() != 2 {
		t.Errorf("Count = %d, want 2 (documents survive a pause)", h.srv.Count())
	}
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, f := range map[string]func() error{"Pause": h.srv.Pause, "Resume": h.srv.Resume} {
		if err := f(); err == nil || !strings.HasPrefix(err.Error(), "estest: ") {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, ok := h.srv.Doc("p", "1"); !ok {
		t.Errorf("documents are not readable after Close")
	}
}

// A request waiting out its latency is cut off by Pause or Close, answers
// nothing and stores nothing.
func TestLatencyCutOff(t *testing.T) {
	for _, how := range []string{"Pause", "Close"} {
		t.Run(how, func(t *testing.T) {
			h := start(t, Options{})
			h.srv.SetFaults(Faults{Latency: 1 << 62})
			errc := make(chan error, 1)
			go func() {
				_, err := h.do(http.MethodPost, "/_bulk", []byte(nd(`{"create":{"_index":"l","_id":"1"}}`, `{}`)),
					"Content-Type", "application/x-ndjson")
				errc <- err
			}()
			eventually(t, func() bool { return h.srv.Stats().BytesReceived > 0 })
			var err error
			if how == "Pause" {
				err = h.srv.Pause()
			} else {
				err = h.srv.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err == nil {
				t.Fatal("the cut-off request was answered")
			}
			if h.srv.Count() != 0 {
				t.Fatal("the cut-off request stored documents")
			}
			if how == "Pause" {
				if err := h.srv.Resume(); err != nil {
					t.Fatal(err)
				}
				h.srv.SetFaults(Faults{})
				h.bulkOK("/_bulk", nd(`{"create":{"_index":"l","_id":"1"}}`, `{}`), 1)
			}
		})
	}
}

func TestDocsAndStats(t *testing.T) {
	h := start(t, Options{})
	raw := nd(
		`{"create":{"_index":"s","_id":"1"}}`, `{"v":1}`,
		`{"create":{"_index":"s","_id":"1"}}`, `{"v":2}`,
		`{"index":{"_index":"s","_id":"1","pipeline":"pp"}}`, `{"v":3}`,
		`{"create":{"_index":"s","_id":"2"}}`, `{"v":"x"`,
	)
	h.bulkOK("/_bulk", raw, 4)
	h.must(http.MethodGet, "/", nil)
	h.must(http.MethodGet, "/nowhere", nil)
	docs := h.srv.Docs()
	want := []Doc{{Index: "s", ID: "1", Source: []byte(`{"v":3}`), Version: 2, SeqNo: 1, Pipeline: "pp"}}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("Docs = %+v", docs)
	}
	docs[0].Source[0] = 'X' // Docs returns copies
	if src, _ := h.srv.Doc("s", "1"); string(src) != `{"v":3}` {
		t.Errorf("Docs shares its sources: %q", src)
	}
	got := h.srv.Stats()
	wantStats := Stats{
		Requests: 3, BulkRequests: 1, Items: 4, Created: 1, Updated: 1, Conflicts409: 1,
		ItemsByStatus: map[int]int64{201: 1, 409: 1, 200: 1, 400: 1},
		BytesReceived: int64(len(raw)), BytesDecoded: int64(len(raw)),
	}
	if !reflect.DeepEqual(got, wantStats) {
		t.Errorf("Stats:\n got %+v\nwant %+v", got, wantStats)
	}
	got.ItemsByStatus[201] = 99
	if h.srv.Stats().ItemsByStatus[201] != 1 {
		t.Errorf("Stats shares its map")
	}
	h.srv.Reset()
	if h.srv.Count() != 0 || h.srv.Stats().Items != 0 || len(h.srv.Indices()) != 0 {
		t.Errorf("Reset left state behind")
	}
}

func TestReadEndpoints(t *testing.T) {
	h := start(t, Options{})
	h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"a1","_id":"x"}}`, `{"k":"v"}`,
		`{"create":{"_index":"a2","_id":"y"}}`, `{}`,
		`{"create":{"_index":"b","_id":"z"}}`, `{}`,
	), 3)
	for _, tc := range []struct {
		method, path string
		status       int
		check        string // gjson path
		want         string
	}{
		{"GET", "/a1/_doc/x", 200, "_source.k", "v"},
		{"GET", "/a1/_doc/x", 200, "found", "true"},
		{"GET", "/a1/_doc/nope", 404, "found", "false"},
		{"GET", "/zz/_doc/x", 404, "error.type", "index_not_found_exception"},
		{"GET", "/_count", 200, "count", "3"},
		{"POST", "/a*/_count", 200, "count", "2"},
		{"GET", "/a1,b/_count", 200, "count", "2"},
		{"GET", "/zz/_count", 404, "error.type", "index_not_found_exception"},
		{"POST", "/_refresh", 200, "_shards.failed", "0"},
		{"POST", "/a1/_refresh", 200, "_shards.total", "1"},
		{"GET", "/_license", 200, "license.type", "basic"},
		{"GET", "/_license", 200, "license.status", "active"},
		{"DELETE", "/_license", 405, "status", "405"},
	} {
		r := h.must(tc.method, tc.path, nil)
		if r.status != tc.status || r.get(tc.check).String() != tc.want {
			t.Errorf("%s %s: %d %s, want %d %s=%s", tc.method, tc.path, r.status, r.body, tc.status, tc.check, tc.want)
		}
	}
	if r := h.must(http.MethodHead, "/a1/_doc/x", nil); r.status != 200 {
		t.Errorf("HEAD doc: %d", r.status)
	}
}

func TestConcurrentBulk(t *testing.T) {
	h := start(t, Options{})
	const workers, requests, perRequest = 8, 10, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < requests; r++ {
				var b strings.Builder
				for i := 0; i < perRequest; i++ {
					fmt.Fprintf(&b, "{\"create\":{\"_index\":\"c%d\",\"_id\":\"%d-%d\"}}\n{\"w\":%d}\n", w%3, w, r*perRequest+i, w)
				}
				res, err := h.do(http.MethodPost, "/_bulk", []byte(b.String()), "Content-Type", "application/x-ndjson")
				if err != nil {
					errs <- err
					return
				}
				if res.status != 200 || res.get("errors").Bool() {
					errs <- fmt.Errorf("status %d: %.200s", res.status, res.body)
					return
				}
			}
		}()
	}
	// Readers race the writers.
	for i := 0; i < 20; i++ {
		_ = h.srv.Count()
		_ = h.srv.Stats()
		_ = h.srv.Docs()
		h.srv.SetFaults(Faults{})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := h.srv.Count(); n != workers*requests*perRequest {
		t.Fatalf("Count = %d, want %d", n, workers*requests*perRequest)
	}
	if st := h.srv.Stats(); st.Created != workers*requests*perRequest || st.BulkRequests != workers*requests {
		t.Errorf("stats %+v", st)
	}
}

func TestStartOptions(t *testing.T) {
	for _, opts := range []Options{
		{Addr: "0.0.0.0:0"},
		{Addr: "localhost:0"},
		{Addr: "[::1]:0"},
		{Addr: "nonsense"},
		{MaxContentLength: -1},
	} {
		if s, err := Start(opts); err == nil {
			s.Close()
			t.Errorf("Start(%+v) succeeded", opts)
		} else if !strings.HasPrefix(err.Error(), "estest: ") {
			t.Errorf("error without prefix: %v", err)
		}
	}
	h := start(t, Options{Addr: "127.0.0.1:0"})
	if !strings.HasPrefix(h.srv.URL(), "http://127.0.0.1:") || h.srv.URL() != "http://"+h.srv.Addr() {
		t.Errorf("URL %s, Addr %s", h.srv.URL(), h.srv.Addr())
	}
}

// Responses must stay valid JSON whatever ids, index names and hook
// reasons contain.
func TestResponseEscaping(t *testing.T) {
	h := start(t, Options{})
	h.srv.SetFaults(Faults{ItemHook: func(_, _, id string, _ []byte) (int, string, string, bool) {
		if id == "hook" {
			return 400, "t\"y\npe", "reason with \x01 control, \u2028 and \xff bad utf8", true
		}
		return 0, "", "", false
	}})
	r := h.bulkOK("/_bulk", nd(
		`{"create":{"_index":"e","_id":"q\"uo\\te\u0000d\n"}}`, `{}`,
		`{"create":{"_index":"e","_id":"日本"}}`, `{}`,
		`{"create":{"_index":"e","_id":"hook"}}`, `{}`,
		`{"create":{"_index":"E\"vil","_id":"1"}}`, `{}`,
	), 4)
	if _, v := item(r, 0); v.Get("_id").String() != "q\"uo\\te\x00d\n" {
		t.Errorf("escaped id round trip: %q", v.Get("_id").String())
	}
	if _, ok := h.srv.Doc("e", "日本"); !ok {
		t.Errorf("unicode id not stored")
	}
	if _, v := item(r, 2); v.Get("error.type").String() != "t\"y\npe" {
		t.Errorf("hook type: %s", v.Raw)
	}
}

// TestAcceptRateIsATokenBucket: with AcceptRate, a burst of up to one
// second's worth of items is stored, the rest answered 429
// es_rejected_execution_exception; the bucket refills at the rate.
func TestAcceptRateIsATokenBucket(t *testing.T) {
	h := start(t, Options{})
	h.srv.SetFaults(Faults{AcceptRate: 100})
	var lines []string
	for i := range 150 {
		lines = append(lines, fmt.Sprintf(`{"create":{"_index":"logs","_id":"a%d"}}`, i), `{"m":1}`)
	}
	r := h.bulkOK("/_bulk", nd(lines...), 150)
	stored, rejected := 0, 0
	for i := range 150 {
		_, v := item(r, i)
		switch v.Get("status").Int() {
		case 201:
			stored++
		case 429:
			if v.Get("error.type").String() != "es_rejected_execution_exception" {
				t.Errorf("item %d: %s", i, v.Raw)
			}
			rejected++
		}
	}
	// Refill during the request itself may add a token or two.
	if stored < 100 || stored > 105 || stored+rejected != 150 {
		t.Fatalf("stored %d, rejected %d of 150 against a bucket of 100", stored, rejected)
	}
	if st := h.srv.Stats(); st.Rejected429 != int64(rejected) {
		t.Errorf("Rejected429 = %d, want %d", st.Rejected429, rejected)
	}
	time.Sleep(200 * time.Millisecond) // about 20 tokens
	r = h.bulkOK("/_bulk", nd(lines[:2*50]...), 50)
	stored = 0
	for i := range 50 {
		if _, v := item(r, i); v.Get("status").Int() != 429 {
			stored++
		}
	}
	if stored == 0 || stored == 50 {
		t.Errorf("after 200ms: %d of 50 accepted, want some (the refill) but not all", stored)
	}
}

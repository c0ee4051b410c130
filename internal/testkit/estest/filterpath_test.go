package estest

import (
	"encoding/json"
	"testing"
)

// A bulk response is filtered as Elasticsearch filters it: only the
// members filter_path names, with the objects on the way; a pattern that
// names an object keeps all of it; "*" matches any one name; forms this
// server does not know keep everything.
func TestBulkResponseFilterPath(t *testing.T) {
	ok := itemResult{key: "create", index: "logs", id: "a", status: 201, result: "created", version: 1, seqNo: 7}
	bad := itemResult{key: "create", index: "logs", id: "b", status: 429, errType: "es_rejected_execution_exception", reason: "queue full"}
	results := []itemResult{ok, bad}
	for _, c := range []struct{ filter, want string }{
		{"errors,items.*.status,items.*.error.type,items.*.error.reason",
			`{"errors":true,"items":[{"create":{"status":201}},{"create":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}}]}`},
		{"items.*.error",
			`{"items":[{"create":{}},{"create":{"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}}]}`},
		{"took,items.create._id",
			`{"took":3,"items":[{"create":{"_id":"a"}},{"create":{"_id":"b"}}]}`},
		{"items.index.status", `{"items":[{"create":{}},{"create":{}}]}`},
		{"errors", `{"errors":true}`},
	} {
		got := string(appendBulkResponse(nil, parseFilterPath(c.filter), 3, true, results))
		if got != c.want {
			t.Errorf("filter_path=%s:\n got %s\nwant %s", c.filter, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("filter_path=%s: invalid JSON %s", c.filter, got)
		}
	}
	// No filter, or one this server cannot apply: the whole response.
	whole := string(appendBulkResponse(nil, nil, 3, true, results))
	for _, f := range []string{"", "items.**.status", "-took", "it*ms.status"} {
		if got := string(appendBulkResponse(nil, parseFilterPath(f), 3, true, results)); got != whole {
			t.Errorf("filter_path=%q: %s, want the whole response %s", f, got, whole)
		}
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(whole), &v); err != nil || len(v["items"].([]any)) != 2 {
		t.Errorf("whole response %s: %v", whole, err)
	}
}

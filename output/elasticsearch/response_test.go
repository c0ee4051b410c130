package elasticsearch

import (
	"errors"
	"testing"
)

func TestParseBulkResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		n    int
		want []itemResult
		bad  bool
	}{
		// errors:false is trusted: every item counts as created (201).
		{"all created", `{"errors":false,"items":[{"create":{"status":201}},{"create":{"status":201}}]}`, 2,
			[]itemResult{{status: 201}, {status: 201}}, false},
		{"all created, fewer items", `{"errors":false,"items":[{"create":{"status":201}}]}`, 2, nil, true},
		{"create answered as index", `{"errors":true,"items":[{"index":{"status":201}}]}`, 1, []itemResult{{status: 201}}, false},
		{"mixed", `{"errors":true,"items":[{"create":{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}},{"create":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}},{"create":{"status":400,"error":{"type":"document_parsing_exception","reason":"bad"}}}]}`, 3,
			[]itemResult{{409, "version_conflict_engine_exception", "exists"}, {429, "es_rejected_execution_exception", "queue full"}, {400, "document_parsing_exception", "bad"}}, false},
		{"fewer items", `{"items":[{"create":{"status":201}}]}`, 2, nil, true},
		{"more items", `{"items":[{"create":{"status":201}},{"create":{"status":201}}]}`, 1, nil, true},
		{"no status", `{"items":[{"create":{}}]}`, 1, nil, true},
		{"empty item", `{"items":[{}]}`, 1, nil, true},
		{"no items", `{"errors":false}`, 1, nil, true},
		{"items not an array", `{"errors":false,"items":{"create":{"status":201}}}`, 1, nil, true},
		{"items a string", `{"errors":false,"items":"1"}`, 1, nil, true},
		{"not json", `<html>`, 1, nil, true},
		{"truncated", `{"items":[{"create":{"status":201}}`, 1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBulkResponse([]byte(tc.body), tc.n, nil)
			if tc.bad {
				if !errors.Is(err, errBadResponse) {
					t.Fatalf("got %v, %v; want errBadResponse", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("item %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		r     itemResult
		hasID bool
		want  outcome
	}{
		{itemResult{status: 201}, true, outcomeDone},
		{itemResult{status: 200}, false, outcomeDone},
		{itemResult{status: 409, errType: "version_conflict_engine_exception"}, true, outcomeDone},
		{itemResult{status: 409, errType: "version_conflict_engine_exception"}, false, outcomeDead},
		{itemResult{status: 429, errType: "es_rejected_execution_exception"}, true, outcomeRetry},
		{itemResult{status: 503, errType: "unavailable_shards_exception"}, true, outcomeRetry},
		{itemResult{status: 500}, true, outcomeRetry},
		{itemResult{status: 400, errType: "es_rejected_execution_exception"}, true, outcomeRetry},
		{itemResult{status: 400, errType: "document_parsing_exception"}, true, outcomeDead},
		{itemResult{status: 404, errType: "index_not_found_exception"}, true, outcomeDead},
		// The cluster's state, not the event: retried until it passes.
		{itemResult{status: 403, errType: "cluster_block_exception"}, true, outcomeRetry},
		{itemResult{status: 403, errType: "security_exception"}, true, outcomeRetry},
		{itemResult{status: 401, errType: "security_exception"}, true, outcomeRetry},
		{itemResult{status: 408}, true, outcomeRetry},
	} {
		if got := classify(tc.r, tc.hasID); got != tc.want {
			t.Errorf("classify(%+v, %v) = %d, want %d", tc.r, tc.hasID, got, tc.want)
		}
	}
}

func TestErrorBody(t *testing.T) {
	typ, reason := errorBody([]byte(`{"error":{"root_cause":[],"type":"x_content_parse_exception","reason":"bad line"},"status":400}`))
	if typ != "x_content_parse_exception" || reason != "bad line" {
		t.Errorf("got %q %q", typ, reason)
	}
	if _, reason := errorBody([]byte("<html>413</html>")); reason != "<html>413</html>" {
		t.Errorf("got %q", reason)
	}
}

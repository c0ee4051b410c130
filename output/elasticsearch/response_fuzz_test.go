package elasticsearch

import (
	"errors"
	"slices"
	"testing"
)

// FuzzParseBulkResponse feeds fuzzed bulk answers to parseBulkResponse:
// they come from a cluster, or from whatever answers at its address. It
// must not panic; it either refuses the answer with errBadResponse or
// returns exactly one result with a status per action (the output
// matches items to actions by position); and a reused results slice
// does not change the answer.
func FuzzParseBulkResponse(f *testing.F) {
	f.Add([]byte(`{"errors":false,"items":[{"create":{"status":201}},{"create":{"status":201}}]}`), uint8(2))
	f.Add([]byte(`{"errors":true,"items":[{"index":{"status":201}}]}`), uint8(1))
	f.Add([]byte(`{"errors":true,"items":[{"create":{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}},{"create":{"status":429,"error":"queue full"}}]}`), uint8(2))
	f.Add([]byte(`{"items":[{"create":{}}]}`), uint8(1))
	f.Add([]byte(`{"errors":false,"items":"1"}`), uint8(1))
	f.Add([]byte(`{"items":[{"create":{"status":201}}`), uint8(1))
	f.Add([]byte(`<html>`), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		got, err := parseBulkResponse(body, int(n), nil)
		if err != nil {
			if !errors.Is(err, errBadResponse) {
				t.Fatalf("%q: %v does not wrap errBadResponse", body, err)
			}
			if got != nil {
				t.Fatalf("%q: results %v beside the error", body, got)
			}
		} else {
			if len(got) != int(n) {
				t.Fatalf("%q: %d results for %d actions", body, len(got), n)
			}
			for i, r := range got {
				if r.status == 0 {
					t.Fatalf("%q: item %d has no status: %+v", body, i, r)
				}
			}
		}
		dirty := make([]itemResult, 3, 300)
		for i := range dirty {
			dirty[i] = itemResult{status: 999, errType: "stale", reason: "stale"}
		}
		again, err2 := parseBulkResponse(body, int(n), dirty)
		if (err == nil) != (err2 == nil) || !slices.Equal(got, again) {
			t.Fatalf("%q: with a reused slice %v, %v; fresh %v, %v", body, again, err2, got, err)
		}
	})
}

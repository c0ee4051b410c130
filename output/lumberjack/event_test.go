package lumberjack

import (
	"testing"
	"time"
)

// TestAppendWithID: the id goes last into an existing @metadata object,
// or into a new @metadata member first in the event; an existing usable
// _id is kept; every other byte stays; events that cannot carry an id
// are unchanged and reported.
func TestAppendWithID(t *testing.T) {
	const p = "C056LG8OTVmdVT8bfDqeEA"
	const id = p + "-7-3"
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"metadata with members", `{"a":1,"@metadata":{"beat":"filebeat","pipeline":"p"},"b":[1,2]}`,
			`{"a":1,"@metadata":{"beat":"filebeat","pipeline":"p","_id":"` + id + `"},"b":[1,2]}`, true},
		{"metadata empty", `{"@metadata":{ },"a":1}`, `{"@metadata":{ "_id":"` + id + `"},"a":1}`, true},
		{"metadata spaced", "{\"@metadata\" : {\"beat\":\"x\"\n} ,\"a\":1}", "{\"@metadata\" : {\"beat\":\"x\"\n,\"_id\":\"" + id + "\"} ,\"a\":1}", true},
		{"no metadata", `{"a":1}`, `{"@metadata":{"_id":"` + id + `"},"a":1}`, true},
		{"no metadata, leading space", ` {"a":1}`, ` {"@metadata":{"_id":"` + id + `"},"a":1}`, true},
		{"empty event", `{}`, `{"@metadata":{"_id":"` + id + `"}}`, true},
		{"own id kept", `{"@metadata":{"_id":"mine","beat":"x"},"a":1}`, `{"@metadata":{"_id":"mine","beat":"x"},"a":1}`, true},
		{"own id escaped kept", `{"@metadata":{"_id":"m\u00e9"}}`, `{"@metadata":{"_id":"m\u00e9"}}`, true},
		// The Elasticsearch output ignores an empty or non-string _id and
		// reads the last _id: the derived one goes after it.
		{"empty id replaced", `{"@metadata":{"_id":""}}`, `{"@metadata":{"_id":"","_id":"` + id + `"}}`, true},
		{"number id replaced", `{"@metadata":{"_id":5}}`, `{"@metadata":{"_id":5,"_id":"` + id + `"}}`, true},
		{"usable id after unusable kept", `{"@metadata":{"_id":"","_id":"x"}}`, `{"@metadata":{"_id":"","_id":"x"}}`, true},
		{"metadata not an object", `{"@metadata":"x","a":1}`, `{"@metadata":"x","a":1}`, false},
		{"array", `[1,2]`, `[1,2]`, false},
		{"not JSON", `{"a":`, `{"a":`, false},
		{"plain text", `hello {`, `hello {`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := appendWithID([]byte("prev"), []byte(tc.in), p, 7, 3)
			if string(got) != "prev"+tc.want || ok != tc.ok {
				t.Fatalf("got %s (ok %v)\nwant %s (ok %v)", got[4:], ok, tc.want, tc.ok)
			}
		})
	}
}

// TestBatchDrop: the events a failed window had ACKed leave the batch,
// and the tracker learns which records they belonged to.
func TestBatchDrop(t *testing.T) {
	b := &batch{}
	pos := map[uint64]int{}
	for _, lsn := range []uint64{4, 4, 5, 6, 6, 6} {
		b.data = append(b.data, `{}`...)
		b.added(lsn, pos[lsn], time.Time{})
		pos[lsn]++
	}
	b.seal()
	got := b.drop(4)
	want := []span{{4, 0, 2, time.Time{}}, {5, 0, 1, time.Time{}}, {6, 0, 1, time.Time{}}}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("spans %v, want %v", got, want)
		}
	}
	if len(b.events) != 2 || b.bytes != 4 || len(b.spans) != 1 || b.spans[0] != (span{6, 1, 2, time.Time{}}) {
		t.Fatalf("left %d events, %d bytes, spans %v", len(b.events), b.bytes, b.spans)
	}
}

package journal

import (
	"bytes"
	"testing"
)

func TestRecentServesTheTailFromMemory(t *testing.T) {
	opts := smallOpts()
	opts.TailBytes = 10 * int64(len(rec(t, 0, 0, 100)))
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	if recs, ok := j.Recent(1, 100); !ok || len(recs) != 0 {
		t.Fatalf("empty journal: %d records, ok %v", len(recs), ok)
	}
	for i := range 30 {
		mustAppend(t, j, rec(t, 0, i, 100))
	}
	if _, ok := j.Recent(1, 100); ok {
		t.Fatal("LSN 1 was evicted, yet Recent claims to serve it")
	}
	recs, ok := j.Recent(25, 3)
	if !ok || len(recs) != 3 {
		t.Fatalf("Recent(25, 3): %d records, ok %v", len(recs), ok)
	}
	for i, r := range recs {
		if !bytes.Equal(r, rec(t, 0, 24+i, 100)) {
			t.Fatalf("record %d differs", 25+i)
		}
	}
	if recs, ok := j.Recent(31, 10); !ok || len(recs) != 0 {
		t.Fatalf("Recent past the end: %d records, ok %v", len(recs), ok)
	}
}

package journal

import (
	"bytes"
	"testing"

	"github.com/logpond/logpond/record"
)

// TestCompressedRecords: the journal takes records of either version
// (it verifies, never decompresses) and gives them back byte for byte
// after a reopen; a damaged compressed record is refused at Submit as a
// damaged plain one is.
func TestCompressedRecords(t *testing.T) {
	c, err := record.NewCompressor(record.S2(record.LevelFastest))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs [][]byte
	for i := range 10 {
		v1 := rec(t, 1, i, 2000)
		v2, err := c.Compress(nil, v1)
		if err != nil {
			t.Fatal(err)
		}
		if v2[0] != record.VersionCompressed {
			t.Fatalf("record %d did not compress", i)
		}
		recs = append(recs, v1, v2)
	}
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	for _, r := range recs {
		mustAppend(t, j, r)
	}
	bad := bytes.Clone(recs[1])
	bad[len(bad)/2] ^= 1
	if _, err := j.Append(t.Context(), bad); err == nil {
		t.Fatal("the journal took a compressed record whose CRC fails")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	r := j.Reader(1)
	defer r.Close()
	n := 0
	for r.Next() {
		if !bytes.Equal(r.Record(), recs[n]) {
			t.Fatalf("LSN %d changed across a reopen", r.LSN())
		}
		n++
	}
	if r.Err() != nil || n != len(recs) {
		t.Fatalf("read %d of %d records: %v", n, len(recs), r.Err())
	}
}

package ledger

import "testing"

// TestWriteBufferShrinksAfterALargeRecord checks that the writer's buffer,
// grown for a record larger than it, goes back to its usual size once that
// record is written, and that the records still read back.
func TestWriteBufferShrinksAfterALargeRecord(t *testing.T) {
	opts := testOpts(t, false)
	opts.SegmentBytes = 64 << 20
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	fill(t, l, 1, 1, 4*writeBuffer, false)
	if len(l.buf) > writeBuffer {
		t.Fatalf("the write buffer kept %d bytes after a large record, want at most %d", len(l.buf), writeBuffer)
	}
	fill(t, l, 2, 3, 100, false)
	r := l.Reader(1)
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	if err := r.Err(); err != nil || n != 3 {
		t.Fatalf("read back %d records (%v), want 3", n, err)
	}
}

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

// TestReadBufferShrinksAfterALargeRecord checks that a Reader's window,
// grown for a record larger than a read chunk, goes back to a chunk once
// that record is passed: when the large record was the last one (the
// Reader is caught up and holds no record any more), and when small
// records follow it (by the second of them: a run of large records does
// not shrink and grow the window for each).
func TestReadBufferShrinksAfterALargeRecord(t *testing.T) {
	opts := testOpts(t, true)
	opts.SegmentBytes = 64 << 20
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	fill(t, l, 1, 1, 100, false)
	fill(t, l, 2, 2, 4*readChunk, false)
	r := l.Reader(1)
	defer r.Close()
	window := func() int { return len(r.sc.buf) }
	for lsn := uint64(1); lsn <= 2; lsn++ {
		if !r.Next() || r.LSN() != lsn {
			t.Fatalf("reading LSN %d: %v", lsn, r.Err())
		}
	}
	if window() <= readChunk {
		t.Fatalf("the window is %d bytes while it holds a record of %d", window(), len(r.Record()))
	}
	if r.Next() || r.Err() != nil {
		t.Fatalf("Next past the last record: %v", r.Err())
	}
	if window() > readChunk || r.Record() != nil {
		t.Fatalf("caught up after a large record, the window kept %d bytes (record %d), want at most %d", window(), len(r.Record()), readChunk)
	}

	fill(t, l, 3, 3, 4*readChunk, false)
	fill(t, l, 4, 6, 100, false)
	for lsn := uint64(3); lsn <= 5; lsn++ {
		if !r.Next() || r.LSN() != lsn {
			t.Fatalf("reading LSN %d: %v", lsn, r.Err())
		}
	}
	if window() > readChunk {
		t.Fatalf("after a large record, reading small ones kept a window of %d bytes, want at most %d", window(), readChunk)
	}
	if !r.Next() || r.LSN() != 6 {
		t.Fatalf("reading LSN 6: %v", r.Err())
	}
}

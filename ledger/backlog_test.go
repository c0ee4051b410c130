package ledger

import "testing"

// TestBytesAfter: the backlog of a cursor in bytes is every byte the
// ledger holds after it: all of it before the first record, none after the
// last, and about half of it from the middle.
func TestBytesAfter(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOpts(t, false))
	defer l.Close()
	if n := l.BytesAfter(0); n != 0 {
		t.Fatalf("empty ledger: BytesAfter(0) = %d", n)
	}
	fill(t, l, 1, 400, 1000, false) // about 1 KiB each: several 64 KiB segments
	used := l.UsedBytes()
	if n := l.BytesAfter(0); n != used {
		t.Errorf("BytesAfter(0) = %d, want every byte (%d)", n, used)
	}
	if n := l.BytesAfter(400); n != 0 {
		t.Errorf("BytesAfter(last) = %d, want 0", n)
	}
	if n := l.BytesAfter(200); n < used*4/10 || n > used*6/10 {
		t.Errorf("BytesAfter(200 of 400) = %d, want about half of %d", n, used)
	}
	if a, b := l.BytesAfter(100), l.BytesAfter(101); a < b {
		t.Errorf("BytesAfter(100) = %d < BytesAfter(101) = %d", a, b)
	}
}

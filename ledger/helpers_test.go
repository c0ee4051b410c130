package ledger

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func rec(t testing.TB, lsn uint64, pad int) []byte {
	ev := fmt.Appendf(nil, `{"lsn":%d,"pad":"%s"}`, lsn, bytes.Repeat([]byte("p"), pad))
	b, err := record.Encode(nil, t0, [][]byte{ev})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

func testOpts(t testing.TB, direct bool) Options {
	// Readers share a read cache, as in production: every test that reads
	// checks it too.
	return Options{SegmentBytes: 64 << 10, DirectIO: direct, ReadCacheBytes: DefaultReadCacheBytes,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
}

func mustOpen(t testing.TB, dir string, opts Options) *Ledger {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fill appends and syncs records from..to, each its own Sync when
// syncEach, else one Sync at the end.
func fill(t testing.TB, l *Ledger, from, to uint64, pad int, syncEach bool) {
	t.Helper()
	for lsn := from; lsn <= to; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, pad)); err != nil {
			t.Fatal(err)
		}
		if syncEach {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every record from the oldest, checking content.
func readAll(t testing.TB, l *Ledger, pad int) []uint64 {
	t.Helper()
	r := l.Reader(1)
	defer r.Close()
	var lsns []uint64
	for r.Next() {
		if !bytes.Equal(r.Record(), rec(t, r.LSN(), pad)) {
			t.Fatalf("LSN %d has the wrong content", r.LSN())
		}
		// Decoded is the same record, already verified.
		want, _ := record.Decode(r.Record())
		d := r.Decoded()
		if d.Count() != want.Count() || d.Size() != len(r.Record()) || d.Received() != want.Received() {
			t.Fatalf("LSN %d: Decoded() gives %d events, %d bytes", r.LSN(), d.Count(), d.Size())
		}
		if !slices.EqualFunc(slices.Collect(d.Events()), slices.Collect(want.Events()), bytes.Equal) {
			t.Fatalf("LSN %d: Decoded() events differ", r.LSN())
		}
		lsns = append(lsns, r.LSN())
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return lsns
}

package dlq

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 123456789, time.UTC)

// entry is the i-th entry of a test stream: sizes vary with i.
func entry(stream string, i int) Entry {
	return Entry{
		Stream:   stream,
		LSN:      uint64(i),
		Position: uint32(i % 7),
		Index:    "logs-2026.12.02",
		Action:   "create",
		DocID:    fmt.Sprintf("doc-%d", i),
		Status:   400,
		ErrType:  "mapper_parsing_exception",
		Reason:   fmt.Sprintf("failed to parse field [n] of type [long] (%d)", i),
		Received: t0.Add(time.Duration(i) * time.Millisecond),
		Failed:   t0.Add(time.Hour),
		Event:    fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", i%23)),
	}
}

func entries(stream string, from, to int) []Entry {
	var es []Entry
	for i := from; i <= to; i++ {
		es = append(es, entry(stream, i))
	}
	return es
}

func sameEntry(a, b Entry) bool {
	return a.Stream == b.Stream && a.LSN == b.LSN && a.Position == b.Position && a.Index == b.Index &&
		a.Action == b.Action && a.DocID == b.DocID && a.Status == b.Status && a.ErrType == b.ErrType &&
		a.Reason == b.Reason && a.Received.Equal(b.Received) && a.Failed.Equal(b.Failed) && bytes.Equal(a.Event, b.Event)
}

// logSink collects log records for assertions and echoes them to the test log.
type logSink struct {
	t  testing.TB
	mu sync.Mutex
	ms []string
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.ms = append(l.ms, string(p))
	l.mu.Unlock()
	l.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// count returns how many records contain s.
func (l *logSink) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.ms {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

func testOpts(t testing.TB, segment, max int64) (Options, *logSink) {
	sink := &logSink{t: t}
	return Options{SegmentBytes: segment, MaxBytes: max, Logger: slog.New(slog.NewTextHandler(sink, nil))}, sink
}

func mustOpen(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t testing.TB, s *Store, es ...Entry) {
	t.Helper()
	if err := s.Append(context.Background(), es); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// scanAll returns what Scan delivers before it stops, and why it stopped.
func scanAll(t testing.TB, dir string) ([]Pos, []Entry, error) {
	t.Helper()
	var ps []Pos
	var es []Entry
	err := Scan(dir, func(p Pos, e Entry) error {
		ps = append(ps, p)
		es = append(es, e)
		return nil
	})
	return ps, es, err
}

// expectEntries checks that Scan returns exactly want, without error.
func expectEntries(t testing.TB, dir string, want []Entry) []Pos {
	t.Helper()
	ps, got, err := scanAll(t, dir)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("scan: %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if !sameEntry(got[i], want[i]) {
			t.Fatalf("scan: entry %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	return ps
}

func dlqFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+fileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// errOf is the error of a Purge.
func errOf(_ Purged, err error) error { return err }

package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the receive time of LSN 1; LSN n was received n seconds later.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func received(lsn uint64) time.Time { return t0.Add(time.Duration(lsn) * time.Second) }

// events are the two events of the record at lsn.
func events(lsn uint64) [][]byte {
	return [][]byte{
		fmt.Appendf(nil, `{"@metadata":{"beat":"filebeat"},"lsn":%d,"i":0,"pad":"%s"}`, lsn, strings.Repeat("x", int(lsn%7)*50)),
		fmt.Appendf(nil, `{"lsn":%d,"i":1}`, lsn),
	}
}

func testRecord(t testing.TB, lsn uint64) []byte {
	b, err := record.Encode(nil, received(lsn), events(lsn))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stores is a ledger and a journal built with the real packages, closed.
type stores struct {
	journal, ledger string
	ledgerLast      uint64 // ledger holds 1..ledgerLast
	journalFirst    uint64 // journal holds journalFirst..journalLast
	journalLast     uint64
}

// buildStores writes LSNs 1..300 to the ledger (64 KiB segments, so
// several), sets cursor "elasticsearch" at 100, and writes LSNs 251..400 to
// the journal (16 KiB generations), each record its own write group.
func buildStores(t *testing.T) stores {
	t.Helper()
	root := t.TempDir()
	s := stores{journal: filepath.Join(root, "journal"), ledger: filepath.Join(root, "ledger"),
		ledgerLast: 300, journalFirst: 251, journalLast: 400}
	l, err := ledger.Open(s.ledger, ledger.Options{SegmentBytes: 64 << 10, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	for lsn := uint64(1); lsn <= s.ledgerLast; lsn++ {
		if err := l.Append(lsn, testRecord(t, lsn)); err != nil {
			t.Fatal(err)
		}
		if lsn%10 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.SetCursor("elasticsearch", 100); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, s.journal, s.journalFirst-1, s.journalFirst, s.journalLast)
	return s
}

// writeJournal creates a journal continuing after startAfter and appends
// records from..to (which must be startAfter+1.. on a new journal).
func writeJournal(t *testing.T, dir string, startAfter, from, to uint64) {
	t.Helper()
	j, err := journal.Open(dir, journal.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		StartAfter: startAfter, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for lsn := from; lsn <= to; lsn++ {
		got, err := j.Append(context.Background(), testRecord(t, lsn))
		if err != nil || got != lsn {
			t.Fatalf("journal append: LSN %d, want %d: %v", got, lsn, err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// openJournal opens a new journal in dir for a test to append to.
func openJournal(t *testing.T, dir string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(dir, journal.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// appendEvents appends one record holding evs and returns its LSN.
func appendEvents(t *testing.T, j *journal.Journal, evs [][]byte) uint64 {
	t.Helper()
	b, err := record.Encode(nil, t0, evs)
	if err != nil {
		t.Fatal(err)
	}
	lsn, err := j.Append(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return lsn
}

// deadLetter is the i-th dead letter of a test.
func deadLetter(i int, event string) dlq.Entry {
	return dlq.Entry{
		Stream: "6f1c8f4e-3c1a-4b7a-9d51-0f4f3a9c2b11", LSN: uint64(100 + i), Position: uint32(i % 3),
		Index: "logs-2026.12.02", Action: "create", DocID: fmt.Sprintf("doc-%d", i),
		Status: 400, ErrType: "mapper_parsing_exception", Reason: fmt.Sprintf("failed to parse field [n] (%d)", i),
		Received: t0.Add(time.Duration(i) * time.Second), Failed: t0.Add(time.Hour), Event: []byte(event),
	}
}

// writeDeadLetters stores entries in <ledger>/dlq/elasticsearch.
func writeDeadLetters(t *testing.T, ledgerDir string, entries []dlq.Entry) string {
	t.Helper()
	return writeDeadLettersOf(t, ledgerDir, "elasticsearch", entries)
}

// writeDeadLettersOf stores entries in the dead-letter store of output.
func writeDeadLettersOf(t *testing.T, ledgerDir, output string, entries []dlq.Entry) string {
	t.Helper()
	dir := dlq.Dir(ledgerDir, output)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := dlq.Open(dir, dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ctl runs ledgerctl with args and returns its output and exit status.
func ctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	t.Logf("ledgerctl %s → %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

// testEnv is an env for calling a command function directly, with a fixed
// clock.
func testEnv(s stores, now time.Time) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{journalDir: s.journal, ledgerDir: s.ledger, directIO: true, stdout: &out, stderr: &errb,
		now: func() time.Time { return now }}, &out, &errb
}

// where is a record's place in a store: the file and the offset of its
// frame (ledger) or entry (journal).
type where struct {
	file string
	off  int64
}

// ledgerOffsets returns where every record of the ledger is.
func ledgerOffsets(t *testing.T, dir string) map[uint64]where {
	t.Helper()
	out := map[uint64]where{}
	r, err := ledger.NewDirReader(dir, 1, ledger.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		out[r.LSN()] = where{r.Segment(), r.Offset()}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// journalOffsets returns where every record of the journal is.
func journalOffsets(t *testing.T, dir string) map[uint64]where {
	t.Helper()
	out := map[uint64]where{}
	r, err := journal.NewDirReader(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		out[r.LSN()] = where{r.File(), r.Offset()}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

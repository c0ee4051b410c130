package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/journal"
)

// liveJournal opens a journal in dir whose newest generation ends in bytes
// that are not a record, as a running logpond's journal does once it
// recycles released segments: the stale rest of the recycled file after
// the records written into it. The journal stays open until the test ends.
func liveJournal(t *testing.T, dir string) {
	t.Helper()
	j, err := journal.Open(dir, journal.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		SpareSegments: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	// Appends until a new generation overwrites a released one; the
	// count bounds it, not time.
	for lsn := uint64(1); lsn <= 5000; lsn++ {
		if _, err := j.Append(context.Background(), testRecord(t, lsn)); err != nil {
			t.Fatal(err)
		}
		if err := j.Release(lsn); err != nil {
			t.Fatal(err)
		}
		r, err := journal.NewDirReader(dir, 1)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if r.Tail() != nil {
			return
		}
	}
	t.Fatal("no recycled generation after 5000 records")
}

// TestStatSaysATailIsExpected: the end of a live journal's newest
// generation, and of the ledger's open segment while the journal holds
// its records, is said to be expected and not damage (exit 0); the
// ledger's, once the journal no longer holds its records, is damage (exit
// 1); without the journal stat says how to check.
func TestStatSaysATailIsExpected(t *testing.T) {
	t.Run("live journal", func(t *testing.T) {
		dir := t.TempDir()
		liveJournal(t, dir)
		out, _, code := ctl(t, "-journal", dir, "stat")
		if code != exitOK || !strings.Contains(out, "tail            not synced yet from offset") ||
			!strings.Contains(out, "expected at the end of the newest generation") || !strings.Contains(out, "not damage") ||
			strings.Contains(out, "torn") || strings.Contains(out, "DAMAGE") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		out, _, code = ctl(t, "-journal", dir, "segments")
		if code != exitOK || !strings.Contains(out, "(LSN") || !strings.Contains(out, "expected, not damage") || strings.Contains(out, "torn") {
			t.Fatalf("segments: exit %d:\n%s", code, out)
		}
	})
	cut := func(t *testing.T, s stores) {
		w := ledgerOffsets(t, s.ledger)[300]
		if err := os.Truncate(w.file, w.off+20); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("ledger, the journal holds it", func(t *testing.T) {
		s := buildStores(t)
		cut(t, s)
		out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "stat")
		if code != exitOK || !strings.Contains(out, "expected at the end of the open segment") || !strings.Contains(out, "LSN 300 on") ||
			strings.Contains(out, "torn") || strings.Contains(out, "DAMAGE") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("ledger alone", func(t *testing.T) {
		s := buildStores(t)
		cut(t, s)
		out, _, code := ctl(t, "-ledger", s.ledger, "stat")
		if code != exitOK || !strings.Contains(out, "give -journal (or -config) to check") || strings.Contains(out, "DAMAGE") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("ledger, the journal released it", func(t *testing.T) {
		s := buildStores(t)
		os.RemoveAll(s.journal)
		writeJournal(t, s.journal, 300, 301, 400)
		w := ledgerOffsets(t, s.ledger)[300]
		storetest.Flip(t, w.file, w.off+16+10)
		out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "stat")
		if code != exitFailed || !strings.Contains(out, "DAMAGE          the open segment ends in a damaged write") ||
			!strings.Contains(out, "no longer holds LSN 300") || !strings.Contains(out, "accept-loss") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		out, _, _ = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "stat", "--json")
		if !strings.Contains(out, `"tail_state": "lost"`) {
			t.Fatalf("--json:\n%s", out)
		}
	})
}

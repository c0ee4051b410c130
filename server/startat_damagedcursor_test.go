package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// TestDamagedCursorIgnoresStartAtNewest: an output with start_at =
// "newest" whose cursor file is damaged is no new output: its cursor file
// is set aside and it starts again from the oldest record, as the ledger's
// log line says, so the records it had not delivered are still sent;
// start_at applies only to names that never had a cursor.
func TestDamagedCursorIgnoresStartAtNewest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Open(dir, ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for lsn := uint64(1); lsn <= 10; lsn++ {
		rec, _ := record.Encode(nil, time.Now(), [][]byte{[]byte(`{"message":"x"}`)})
		if err := l.Append(lsn, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetCursor("siem", 3); err != nil { // siem delivered 1..3
		t.Fatal(err)
	}
	l.Close()
	// A bit flip in the cursor file.
	p := filepath.Join(dir, "cursors", "siem.cursor")
	b, _ := os.ReadFile(p)
	b[0] ^= 0xff
	os.WriteFile(p, b, 0o640)

	l, err = ledger.Open(dir, ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var logs syncbuf.Buffer
	if err := startCursor(l, "siem", "newest", slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	c, err := l.Cursor("siem")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cursor after the damaged file was set aside and start_at=newest applied: %d (first LSN %d, last %d)", c, l.FirstLSN(), l.LastLSN())
	if c > 3 {
		t.Errorf("records 4..%d, never delivered to siem, are skipped: the cursor starts at %d", c, c)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "set aside") {
		t.Errorf("no ERROR saying the damaged cursor overrides start_at:\n%s", logs.String())
	}
	// A name that never had a cursor still starts at the newest record.
	if err := startCursor(l, "fresh", "newest", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Cursor("fresh"); err != nil || c != l.LastLSN() {
		t.Errorf("a new output with start_at = \"newest\" starts at %d (%v), want %d", c, err, l.LastLSN())
	}
}

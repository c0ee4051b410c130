package drain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// openLedger opens a ledger in a temporary directory holding records
// records of one event each.
func openLedger(t *testing.T, records int) (*ledger.Ledger, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Open(dir, ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for lsn := 1; lsn <= records; lsn++ {
		appendEvent(t, l, uint64(lsn), []byte(`{"message":"x"}`))
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// appendEvent appends a record of the one event ev at lsn to l, unsynced.
func appendEvent(t *testing.T, l *ledger.Ledger, lsn uint64, ev []byte) {
	t.Helper()
	rec, err := record.Encode(nil, time.Now(), [][]byte{ev})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(lsn, rec); err != nil {
		t.Fatal(err)
	}
}

// TestCursorFinalPersistsOnlyTheDonePrefix: the final persist writes the
// done LSN, never a pending record's, and nothing when it did not move.
func TestCursorFinalPersistsOnlyTheDonePrefix(t *testing.T) {
	l, _ := openLedger(t, 4)
	c := NewCursor(l, "out", nil, "sent")
	tr := NewTracker(0)
	for lsn, n := range []int{0, 1, 0, 2} {
		if err := tr.Add(uint64(lsn+1), n, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Finish(4, 2); err != nil { // done, behind pending record 2
		t.Fatal(err)
	}
	done, err := c.Final(tr, 0, errors.New("not saved"))
	if err != nil || done != 1 {
		t.Fatalf("Final: %d, %v; want 1", done, err)
	}
	if got, err := l.Cursor("out"); err != nil || got != 1 {
		t.Fatalf("cursor %d (%v), want 1", got, err)
	}
	if c.Persisted() != 1 {
		t.Fatalf("Persisted %d, want 1", c.Persisted())
	}
	if done, err := c.Final(tr, 1, errors.New("not saved")); err != nil || done != 1 {
		t.Fatalf("Final without progress: %d, %v", done, err)
	}
}

// TestCursorFinalFailureWrapsTheSentinel: a final persist that fails
// names the caller's sentinel, not the write's error, in its chain.
func TestCursorFinalFailureWrapsTheSentinel(t *testing.T) {
	l, dir := openLedger(t, 1)
	// A non-empty directory where the cursor's temporary file goes: every
	// write of the cursor fails.
	if err := os.MkdirAll(filepath.Join(dir, "cursors", "out.cursor.tmp", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := NewCursor(l, "out", nil, "sent")
	tr := NewTracker(0)
	if err := tr.Add(1, 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	notSaved := errors.New("not saved")
	done, err := c.Final(tr, 0, notSaved)
	if done != 1 || !errors.Is(err, notSaved) {
		t.Fatalf("Final: %d, %v; want 1 and the sentinel", done, err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		t.Fatalf("the write's error is in the chain: %v", err)
	}
	if c.Persisted() != 0 {
		t.Fatalf("Persisted %d after a failed write", c.Persisted())
	}
}

// TestCursorReportsThePersistedPositionBeforeItMoves: an output restarted
// over a ledger where its cursor is persisted at 5 reports 5 (GET /'s
// cursor_lsn) from the start, and the position its run starts from once
// that run commits, although nothing new is done (its destination down),
// never 0 until its first persist.
func TestCursorReportsThePersistedPositionBeforeItMoves(t *testing.T) {
	l, _ := openLedger(t, 10)
	if err := l.SetCursor("out", 5); err != nil {
		t.Fatal(err)
	}
	c := NewCursor(l, "out", nil, "sent")
	if got := c.Persisted(); got != 5 {
		t.Fatalf("a new Cursor over a ledger holding it at 5 reports %d", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tr := NewTracker(7)
	go func() { defer close(done); c.Commit(ctx, tr, 7, time.Millisecond, "every millisecond") }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Persisted() != 7 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if got := c.Persisted(); got != 7 {
		t.Errorf("a run that started from 7 with nothing done reports %d", got)
	}
	if _, err := c.Final(tr, 7, errors.New("not saved")); err != nil || c.Persisted() != 7 {
		t.Errorf("Final with nothing done: %v, reports %d, want 7", err, c.Persisted())
	}
}

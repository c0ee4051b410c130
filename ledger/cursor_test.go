package ledger

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCursors(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOpts(t, true))
	fill(t, l, 1, 100, 500, false)
	pos, err := l.Cursor("es")
	if err != nil || pos != 0 {
		t.Fatalf("new cursor at %d (%v), want 0 (before the oldest record)", pos, err)
	}
	if err := l.SetCursor("es", 50); err != nil {
		t.Fatal(err)
	}
	if err := l.SetCursor("es", 40); err == nil {
		t.Fatal("cursor moved backwards")
	}
	if err := l.SetCursor("es", 101); err == nil {
		t.Fatal("cursor moved past the last stored LSN")
	}
	if _, err := l.Cursor("../etc"); err == nil {
		t.Fatal("a cursor name with a path was accepted")
	}
	l.Close()
	l = mustOpen(t, dir, testOpts(t, true))
	defer l.Close()
	if pos, _ := l.Cursor("es"); pos != 50 {
		t.Fatalf("after reopen cursor at %d, want 50", pos)
	}
	os.WriteFile(l.cursorPath("bad"), []byte("garbage"), 0o640)
	if _, err := Open(t.TempDir(), testOpts(t, true)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// A damaged cursor file does not stop the ledger: it is set aside,
	// and that cursor starts again before the oldest record (nothing is
	// lost; what was delivered is sent again).
	l = mustOpen(t, dir, testOpts(t, true))
	defer l.Close()
	if pos, _ := l.Cursor("es"); pos != 50 {
		t.Fatalf("the intact cursor moved to %d", pos)
	}
	if pos, err := l.Cursor("bad"); err != nil || pos != l.FirstLSN()-1 {
		t.Fatalf("the damaged cursor restarts at %d (%v), want %d", pos, err, l.FirstLSN()-1)
	}
	if b, err := os.ReadFile(l.cursorPath("bad") + ".damaged"); err != nil || string(b) != "garbage" {
		t.Fatalf("the damaged file was not kept aside: %q, %v", b, err)
	}
}

// TestCursorSurvivesKill SIGKILLs a process that updates a cursor as fast
// as it can, at random moments: the file then holds an old or a new value,
// never garbage.
func TestCursorSurvivesKill(t *testing.T) {
	if dir := os.Getenv("LEDGER_CURSOR_CHILD"); dir != "" {
		l, err := Open(dir, Options{SegmentBytes: 1 << 20})
		if err != nil {
			os.Exit(2)
		}
		for lsn := uint64(1); lsn <= 1000; lsn++ {
			l.Append(lsn, rec(t, lsn, 0))
		}
		l.Sync()
		for i := uint64(1); ; i = i%1000 + 1 {
			if i == 1 {
				l.DeleteCursor("out")
			}
			if err := l.SetCursor("out", i); err != nil {
				os.Exit(3)
			}
		}
	}
	for round := range 10 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCursorSurvivesKill$")
		cmd.Env = append(os.Environ(), "LEDGER_CURSOR_CHILD="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+round*20) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		l, err := Open(dir, Options{SegmentBytes: 1 << 20})
		if err != nil {
			t.Fatalf("round %d: open after kill: %v", round, err)
		}
		if pos, ok := l.Cursors()["out"]; ok && (pos < 1 || pos > 1000) {
			t.Fatalf("round %d: cursor holds %d", round, pos)
		}
		l.Close()
	}
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	opts := testOpts(t, true)
	opts.Retention = time.Hour
	opts.hooks.now = func() time.Time { return now }
	l := mustOpen(t, dir, opts)
	defer l.Close()
	fill(t, l, 1, 300, 500, false)
	if n, _ := l.Retain(); n != 0 {
		t.Fatalf("deleted %d segments with no cursor", n)
	}
	l.Cursor("a")
	l.Cursor("b")
	l.SetCursor("a", 300)
	l.SetCursor("b", 150)
	segsBefore, _ := listSegments(dir)
	if n, _ := l.Retain(); n != 0 {
		t.Fatalf("deleted %d segments before retention elapsed", n)
	}
	now = now.Add(2 * time.Hour)
	n, err := l.Retain()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d (%v)", n, err)
	}
	segs, _ := listSegments(dir)
	if len(segs) != len(segsBefore)-n || segs[0].first > 151 {
		t.Fatalf("after retention the oldest segment starts at %d; cursor b needs 151", segs[0].first)
	}
	// A new cursor starts at the oldest retained record.
	if pos, _ := l.Cursor("c"); pos != segs[0].first-1 {
		t.Fatalf("new cursor at %d, want %d", pos, segs[0].first-1)
	}
	// Everything drained: the open segment stays, and with it the last LSN.
	l.SetCursor("b", 300)
	l.SetCursor("c", 300)
	now = now.Add(2 * time.Hour)
	l.Retain()
	now = now.Add(2 * time.Hour)
	l.Retain()
	segs, _ = listSegments(dir)
	if len(segs) != 1 {
		t.Fatalf("%d segments left, want only the open one", len(segs))
	}
	l.Close()
	l = mustOpen(t, dir, opts)
	defer l.Close()
	if l.LastLSN() != 300 {
		t.Fatalf("last LSN %d after deleting drained segments, want 300", l.LastLSN())
	}
}

// TestRetentionRacesReader: a reader holding a segment open keeps reading
// it after retention deleted it, then reports the deleted segments after
// it as a Skip and goes on with the oldest retained record.
func TestRetentionRacesReader(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOpts(t, true))
	defer l.Close()
	fill(t, l, 1, 300, 500, false)
	_, segs := l.snapshot()
	r := l.Reader(1)
	defer r.Close()
	if !r.Next() || r.LSN() != 1 {
		t.Fatal("first read failed")
	}
	l.Cursor("a")
	l.SetCursor("a", 300)
	if n, err := l.Retain(); n == 0 || err != nil {
		t.Fatalf("retention deleted %d (%v)", n, err)
	}
	first := l.FirstLSN()
	var skips []Skip
	want := uint64(2)
	for r.Next() {
		if sk := r.Skipped(); sk != nil {
			skips = append(skips, *sk)
			want = sk.LastLSN + 1
			continue
		}
		if r.LSN() != want {
			t.Fatalf("read LSN %d, want %d", r.LSN(), want)
		}
		want++
	}
	if r.Err() != nil || want != 301 {
		t.Fatalf("stopped before LSN %d: %v", want, r.Err())
	}
	// Drained segments are not counted: their events are unknown.
	wantSkip := Skip{FirstLSN: segs[1].first, LastLSN: first - 1, Events: -1}
	if len(skips) != 1 || skips[0] != wantSkip {
		t.Fatalf("skips %+v, want %+v", skips, wantSkip)
	}
}

// TestMaxBytesMakesAppendRefuse: a full ledger refuses a record at once
// (ErrFull, nothing buffered, the reason in Waiting) instead of waiting
// inside Append, and takes it once a cursor has passed sealed segments.
func TestMaxBytesMakesAppendRefuse(t *testing.T) {
	opts := testOpts(t, true)
	opts.MaxBytes = 4 * opts.SegmentBytes
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	lsn := uint64(1)
	for ; ; lsn++ {
		err := l.Append(lsn, rec(t, lsn, 3000))
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if lsn > 10000 {
			t.Fatal("ledger never became full")
		}
	}
	if got := l.AppendedLSN(); got != lsn-1 {
		t.Fatalf("AppendedLSN %d after a refused LSN %d: the refused record was buffered", got, lsn)
	}
	if w := l.Waiting(); !strings.Contains(w, "ledger full") {
		t.Fatalf("Waiting() = %q, want the reason", w)
	}
	if used := l.UsedBytes(); used > opts.MaxBytes {
		t.Fatalf("used %d bytes, max %d", used, opts.MaxBytes)
	}
	l.Cursor("out")
	if err := l.SetCursor("out", lsn-1); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(lsn, rec(t, lsn, 3000)); err != nil {
		t.Fatalf("append after the cursor passed: %v", err)
	}
	if l.Waiting() != "" {
		t.Fatalf("still waiting: %q", l.Waiting())
	}
}

// TestFullLedgerOutranksRetention: when the ledger is full of segments
// every cursor has passed but Retention still keeps, the drained segments
// give way to new records (oldest first, only as many as needed); with
// room to spare, Retention keeps them.
func TestFullLedgerOutranksRetention(t *testing.T) {
	opts := testOpts(t, true)
	opts.MaxBytes = 4 * opts.SegmentBytes
	opts.Retention = 24 * time.Hour
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	l.Cursor("out")
	var lsn uint64
	appendSynced := func() error {
		lsn++
		if err := l.Append(lsn, rec(t, lsn, 3000)); err != nil {
			lsn--
			return err
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		// The output keeps up: everything synced is drained.
		if err := l.SetCursor("out", lsn); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	for range 2 * int(opts.SegmentBytes/3000) {
		if err := appendSynced(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	kept := l.FirstLSN()
	if kept != 1 {
		t.Fatalf("FirstLSN %d: Retain deleted drained segments within their retention", kept)
	}
	// Three times what the ledger holds: without deleting drained
	// segments it would be full after the first third.
	for range 3 * int(opts.MaxBytes/3000) {
		if err := appendSynced(); err != nil {
			t.Fatalf("LSN %d: %v (a full ledger of drained segments must make room)", lsn+1, err)
		}
	}
	if used := l.UsedBytes(); used > opts.MaxBytes {
		t.Fatalf("used %d bytes, max %d", used, opts.MaxBytes)
	}
	if l.FirstLSN() == 1 {
		t.Fatal("nothing was deleted")
	}
	// Only what was needed went: the ledger is still more than half full
	// of drained records kept for replays.
	if used := l.UsedBytes(); used < opts.MaxBytes/2 {
		t.Fatalf("used %d of %d: more was deleted than room needed", used, opts.MaxBytes)
	}
}

package ledger

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// linesWith returns the lines of log that hold substr.
func linesWith(log *syncbuf.Buffer, substr string) []string {
	var out []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

const maxLagMsg = "beyond their max_lag had not read"

// TestMaxLag fills a ledger of four segments while cursor "slow" stays at
// the start and cursor "fast" follows the writer a few records behind:
// with slow's max_lag the full ledger deletes the oldest segments only
// slow needs (logged at ERROR, one line each, naming slow) and fast's
// records stay; without it, or with slow within its max_lag, or with
// another cursor without max_lag as far behind, the ledger is full as
// before (ErrFull) and nothing is deleted.
func TestMaxLag(t *testing.T) {
	const pad = 3000
	for _, tc := range []struct {
		name   string
		maxLag map[string]int64
		// other: a third cursor left at the start, without max_lag
		other bool
		full  bool // Append must end in ErrFull
	}{
		{name: "no max_lag", full: true},
		{name: "max_lag of another cursor only", maxLag: map[string]int64{"fast": 64 << 10}, full: true},
		{name: "slow within its max_lag", maxLag: map[string]int64{"slow": 1 << 30}, full: true},
		{name: "slow beyond, a cursor without max_lag as far behind", maxLag: map[string]int64{"slow": 64 << 10}, other: true, full: true},
		{name: "slow beyond its max_lag", maxLag: map[string]int64{"slow": 64 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			opts := testOpts(t, true)
			opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
			opts.MaxBytes = 4 * opts.SegmentBytes
			opts.MaxLag = tc.maxLag
			l := mustOpen(t, t.TempDir(), opts)
			defer l.Close()
			for _, c := range []string{"slow", "fast"} {
				if _, err := l.Cursor(c); err != nil {
					t.Fatal(err)
				}
			}
			if tc.other {
				l.Cursor("other")
			}
			// Three times what the ledger holds.
			total := uint64(3 * opts.MaxBytes / pad)
			var lsn uint64
			var err error
			for lsn = 1; lsn <= total; lsn++ {
				if err = l.Append(lsn, rec(t, lsn, pad)); err != nil {
					break
				}
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				if lsn > 5 {
					if err := l.SetCursor("fast", lsn-5); err != nil {
						t.Fatal(err)
					}
				}
				if first, fast := l.FirstLSN(), l.Cursors()["fast"]; first > fast+1 {
					t.Fatalf("LSN %d: the oldest record is %d, but fast needs %d", lsn, first, fast+1)
				}
			}
			deleted := linesWith(logs, maxLagMsg)
			if tc.full {
				if !errors.Is(err, ErrFull) {
					t.Fatalf("appended up to LSN %d: %v, want ErrFull", lsn, err)
				}
				if l.FirstLSN() != 1 || len(deleted) > 0 {
					t.Fatalf("FirstLSN %d, %d deletions logged: nothing may be deleted", l.FirstLSN(), len(deleted))
				}
				return
			}
			if err != nil {
				t.Fatalf("LSN %d: %v: the segments only slow needs must give way", lsn, err)
			}
			if used := l.UsedBytes(); used > opts.MaxBytes || used < opts.MaxBytes/2 {
				t.Fatalf("used %d bytes of max %d: deleted more than needed", used, opts.MaxBytes)
			}
			first := l.FirstLSN()
			if first == 1 {
				t.Fatal("nothing was deleted")
			}
			// One ERROR per deleted segment, each naming its range and slow.
			if len(deleted) < 8 {
				t.Fatalf("%d deletions logged, want one per segment (at least 8)", len(deleted))
			}
			for _, line := range deleted {
				if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "cursors=[slow]") ||
					!strings.Contains(line, "first_lsn=") || !strings.Contains(line, "last_lsn=") || strings.Contains(line, "fast") {
					t.Fatalf("deletion logged as %q", line)
				}
			}
			// slow's Reader reports the deleted records, with their events
			// (one per record), then reads on.
			r := l.Reader(l.Cursors()["slow"] + 1)
			defer r.Close()
			if !r.Next() || r.Skipped() == nil {
				t.Fatalf("first Next: skip %v, LSN %d, err %v", r.Skipped(), r.LSN(), r.Err())
			}
			want := Skip{FirstLSN: 1, LastLSN: first - 1, Events: int64(first - 1)}
			if *r.Skipped() != want || r.LSN() != first-1 || r.Record() != nil {
				t.Fatalf("skip %+v at LSN %d, want %+v", *r.Skipped(), r.LSN(), want)
			}
			if !r.Next() || r.Skipped() != nil || r.LSN() != first {
				t.Fatalf("after the skip: LSN %d, skip %v, err %v; want LSN %d", r.LSN(), r.Skipped(), r.Err(), first)
			}
		})
	}
}

// TestSkipWhileReading: a Reader standing in a segment that max_lag
// retention deletes reads it to its end, then reports the deleted
// segments after it, with their events, and goes on; after a restart, a
// Reader from the same place reports the same range with its events
// unknown. Reopen keeps MaxLag.
func TestSkipWhileReading(t *testing.T) {
	const pad = 3000
	dir := t.TempDir()
	opts := testOpts(t, true)
	opts.MaxBytes = 4 * opts.SegmentBytes
	opts.MaxLag = map[string]int64{"slow": 64 << 10}
	l := mustOpen(t, dir, opts)
	l.Cursor("slow")
	fill(t, l, 1, 10, pad, true)
	r := l.Reader(1)
	defer r.Close()
	if !r.Next() || r.LSN() != 1 {
		t.Fatalf("first read: %v", r.Err())
	}
	_, segs := l.snapshot()
	firstSegEnd := uint64(0)
	var lsn uint64
	for lsn = 11; l.FirstLSN() < 100; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, pad)); err != nil {
			t.Fatalf("LSN %d: %v", lsn, err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, now := l.snapshot(); firstSegEnd == 0 && len(now) > 1 {
			firstSegEnd = now[1].first - 1
		}
	}
	if segs[0].first != 1 || firstSegEnd == 0 {
		t.Fatalf("segments %+v", segs)
	}
	first := l.FirstLSN()
	var got []uint64
	var skips []Skip
	for r.Next() {
		if sk := r.Skipped(); sk != nil {
			skips = append(skips, *sk)
			continue
		}
		got = append(got, r.LSN())
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	want := Skip{FirstLSN: firstSegEnd + 1, LastLSN: first - 1, Events: int64(first - 1 - firstSegEnd)}
	if len(skips) != 1 || skips[0] != want {
		t.Fatalf("skips %+v, want [%+v]", skips, want)
	}
	if len(got) != int(firstSegEnd-1)+int(lsn-first) || got[0] != 2 || got[firstSegEnd-2] != firstSegEnd || got[firstSegEnd-1] != first {
		t.Fatalf("read %d records (%v…), want 2–%d then %d–%d", len(got), got[:3], firstSegEnd, first, lsn-1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen keeps MaxLag: the full ledger still deletes for slow.
	l2, err := l.Reopen(func(uint64) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if l2.opts.MaxLag["slow"] != 64<<10 {
		t.Fatalf("Reopen kept MaxLag %v", l2.opts.MaxLag)
	}
	l2.Close()

	// After a restart the events of the deleted range are unknown.
	l = mustOpen(t, dir, opts)
	defer l.Close()
	r2 := l.Reader(firstSegEnd + 1)
	defer r2.Close()
	if !r2.Next() || r2.Skipped() == nil || *r2.Skipped() != (Skip{FirstLSN: firstSegEnd + 1, LastLSN: first - 1, Events: -1}) {
		t.Fatalf("after a restart: skip %v, LSN %d, err %v", r2.Skipped(), r2.LSN(), r2.Err())
	}
	// A new cursor starts at the oldest record: its Reader skips nothing.
	c, err := l.Cursor("new")
	if err != nil {
		t.Fatal(err)
	}
	r3 := l.Reader(c + 1)
	defer r3.Close()
	if !r3.Next() || r3.Skipped() != nil || r3.LSN() != first {
		t.Fatalf("new cursor's Reader: skip %v, LSN %d, want LSN %d", r3.Skipped(), r3.LSN(), first)
	}
}

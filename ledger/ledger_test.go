package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/storetest"
)

func TestWriteReadReopen(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, testOpts(t, direct))
			stream := l.StreamID()
			fill(t, l, 1, 300, 500, false) // several segments
			fill(t, l, 301, 320, 10, true) // small synced writes: padding between them
			if l.LastLSN() != 320 {
				t.Fatalf("last LSN %d", l.LastLSN())
			}
			segs, _ := listSegments(dir)
			if len(segs) < 3 {
				t.Fatalf("%d segments, want several", len(segs))
			}
			for _, s := range segs {
				if s.size%BlockSize != 0 {
					t.Fatalf("segment %s size %d is not whole blocks", s.path, s.size)
				}
			}
			check := func(l *Ledger) {
				r := l.Reader(1)
				defer r.Close()
				n := uint64(0)
				for r.Next() {
					n++
					pad := 500
					if r.LSN() > 300 {
						pad = 10
					}
					if r.LSN() != n || string(r.Record()) != string(rec(t, n, pad)) {
						t.Fatalf("record %d: LSN %d or content wrong", n, r.LSN())
					}
				}
				if r.Err() != nil || n != 320 {
					t.Fatalf("read %d records, err %v", n, r.Err())
				}
			}
			check(l)
			l.Close()
			l = mustOpen(t, dir, testOpts(t, direct))
			defer l.Close()
			if l.StreamID() != stream || l.LastLSN() != 320 || l.Recovery() != nil {
				t.Fatalf("reopen: stream %s last %d repair %+v", l.StreamID(), l.LastLSN(), l.Recovery())
			}
			check(l)
			if err := l.Append(322, rec(t, 322, 0)); err == nil {
				t.Fatal("a gap in LSNs was accepted")
			}
			fill(t, l, 321, 321, 0, true)
		})
	}
}

func TestSyncedBytesAreNeverRewritten(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 1 << 20, DirectIO: true})
	defer l.Close()
	seg := filepath.Join(dir, segmentName(1))
	var before []byte
	for lsn := uint64(1); lsn <= 50; lsn++ {
		fill(t, l, lsn, lsn, 100, true)
		after, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) < len(before) || string(after[:len(before)]) != string(before) {
			t.Fatalf("Sync of LSN %d changed bytes that an earlier Sync had made durable", lsn)
		}
		before = after
	}
}

func TestMisalignedIORefused(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := alignedBuffer(2 * BlockSize)
	cases := []struct {
		name string
		buf  []byte
		off  int64
	}{
		{"misaligned address", buf[1 : BlockSize+1], 0},
		{"misaligned offset", buf[:BlockSize], 512},
		{"misaligned length", buf[:BlockSize-1], 0},
		{"empty", buf[:0], 0},
	}
	for _, tc := range cases {
		if err := writeAt(f, tc.buf, tc.off); !errors.Is(err, errMisaligned) {
			t.Errorf("%s: write got %v, want errMisaligned", tc.name, err)
		}
		if _, err := readAt(f, tc.buf, tc.off); !errors.Is(err, errMisaligned) {
			t.Errorf("%s: read got %v, want errMisaligned", tc.name, err)
		}
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Fatal("a refused write reached the file")
	}
}

func TestReaderFollowsTheTail(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOpts(t, true))
	defer l.Close()
	r := l.Reader(1)
	defer r.Close()
	if r.Next() || r.Err() != nil {
		t.Fatalf("empty ledger: Next true or error %v", r.Err())
	}
	next := uint64(1)
	for round := range 30 {
		to := next + uint64(round%5)
		fill(t, l, next, to, 900, false)
		// Appended but not synced: never visible.
		if err := l.Append(to+1, rec(t, to+1, 900)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		for r.Next() {
			if r.LSN() != next {
				t.Fatalf("got LSN %d, want %d", r.LSN(), next)
			}
			next++
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if next != to+1 {
			t.Fatalf("reader stopped at %d, durable is %d", next-1, to)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			next++
		}
	}
}

func TestStreamFileRequired(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, testOpts(t, false))
	fill(t, l, 1, 3, 0, false)
	l.Close()
	os.Remove(filepath.Join(dir, streamFile))
	if _, err := Open(dir, testOpts(t, false)); err == nil || !strings.Contains(err.Error(), "no STREAM file") {
		t.Fatalf("got %v, want a refusal naming the missing STREAM file", err)
	}
}

func TestFdatasyncFailurePoisons(t *testing.T) {
	opts := testOpts(t, true)
	fail := failFdatasync(&opts)
	dir := t.TempDir()
	l := mustOpen(t, dir, opts)
	fill(t, l, 1, 5, 0, false)
	*fail = true
	l.Append(6, rec(t, 6, 0))
	if err := l.Sync(); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("Sync with failing fdatasync: %v", err)
	}
	*fail = false
	if err := l.Append(7, rec(t, 7, 0)); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("Append after poisoning: %v", err)
	}
	if l.LastLSN() != 5 {
		t.Fatalf("last LSN %d after a failed Sync, want 5", l.LastLSN())
	}
	l.Close()
}

// TestReaderDecoded: over several segments, in both I/O modes, the Reader
// returns every record in LSN order, and Decoded gives the same record
// already decoded (the outputs use it without decoding again).
func TestReaderDecoded(t *testing.T) {
	for _, direct := range []bool{true, false} {
		l := mustOpen(t, t.TempDir(), testOpts(t, direct))
		fill(t, l, 1, 60, 3000, false) // about 180 KB: three 64 KiB segments
		if got := readAll(t, l, 3000); !slices.Equal(got, storetest.Seq(1, 60)) {
			t.Fatalf("direct=%v: read %v", direct, got)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

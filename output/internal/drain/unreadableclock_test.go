package drain

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/faultfs"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
)

// TestUnreadableClockRestartsOnProgress: a transient read error in a
// large sealed segment starts the "unreadable since" clock; the Reader
// then reads on through the same segment for longer than UnreadableAfter
// (progress, though it does not reach the ledger's end, so ReadWorks is
// never called). A new unreadable block further on in that segment must
// then be retried for UnreadableAfter of its own before it is passed as
// damage, not passed at its first failure on the old failure's clock.
func TestUnreadableClockRestartsOnProgress(t *testing.T) {
	m := faultfs.Mount(t)
	l, err := ledger.Open(filepath.Join(m.Dir, "ledger"), ledger.Options{SegmentBytes: 8 << 20, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := append([]byte(`{"message":"`), bytes.Repeat([]byte("x"), 480)...)
	ev = append(ev, `"}`...)
	for lsn := uint64(1); lsn <= 20000; lsn++ {
		appendEvent(t, l, lsn, ev)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	segs, err := ledger.Segments(l.Dir(), ledger.InspectOptions{})
	if err != nil || len(segs) < 2 || segs[0].Open {
		t.Fatalf("segments %+v %v", segs, err)
	}
	seg := filepath.Join("ledger", filepath.Base(segs[0].Path))
	t.Logf("sealed segment %s: LSN %d..%d, %d bytes", seg, segs[0].FirstLSN, segs[0].LastLSN, segs[0].Bytes)

	var logs syncbuf.Buffer
	const after = 300 * time.Millisecond
	src := NewSource(SourceOptions{Ledger: l, Log: slog.New(slog.NewTextHandler(&logs, nil)), UnreadableAfter: after, Sent: "sent", Sending: "delivery"})
	tr := NewTracker(0)
	r := l.Reader(1)
	defer r.Close()
	r.SkipDamage()
	ctx := context.Background()

	var damaged []uint64
	var bFirstFail time.Time
	bFails := 0
	inB := false
	// read reads until stop (an LSN) or a damage pass, handling errors
	// as the outputs do.
	read := func(stop uint64, onErr func()) {
		for {
			for r.Next() {
				if passed, err := src.Pass(r, tr); err != nil {
					t.Fatal(err)
				} else if passed {
					if d := r.Damage(); d != nil {
						damaged = append(damaged, d.FirstLSN, d.LastLSN)
					}
					continue
				}
				if err := tr.Add(r.LSN(), r.Decoded().Count(), time.Time{}); err != nil {
					t.Fatal(err)
				}
				if r.LSN() >= stop {
					return
				}
			}
			var re *ledger.ReadError
			if err := r.Err(); err != nil {
				if !errors.As(err, &re) {
					t.Fatal(err)
				}
				if onErr != nil {
					onErr()
				}
				if !src.ReadFailed(ctx, r, re) {
					t.Fatal("ctx")
				}
				continue
			}
			return
		}
	}
	// Block A: fails once, transiently (healed after the first failure).
	m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: seg, Off: 2<<20 + 4096, Len: 1})
	read(7000, func() { m.Heal() })
	if len(damaged) != 0 {
		t.Fatalf("damage passed for a transient error: %v", damaged)
	}
	t.Logf("read through the transient fault up to LSN %d; read errors so far %d", r.LSN(), src.Counts().ReadErrors)
	// The output is slow: it spends more than UnreadableAfter in this
	// segment, reading fine.
	time.Sleep(after + 200*time.Millisecond)
	read(9000, nil)
	// Block B: a fresh fault, further on in the same segment.
	m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: seg, Off: 6<<20 + 4096, Len: 1})
	errsBefore := src.Counts().ReadErrors
	read(segs[0].LastLSN, func() {
		if !inB {
			inB, bFirstFail = true, time.Now()
		}
		bFails++
	})
	m.Heal()
	passedAfter := time.Since(bFirstFail)
	t.Logf("block B: %d failed reads (%d counted), damaged ranges %v, passed %v after its first failure", bFails, src.Counts().ReadErrors-errsBefore, damaged, passedAfter)
	if len(damaged) > 0 && passedAfter < after {
		t.Errorf("block B was passed as damage %v after its first failed read (UnreadableAfter %v): records %v lost for one read error", passedAfter, after, damaged)
	}
}

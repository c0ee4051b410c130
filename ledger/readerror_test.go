package ledger

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/logpond/logpond/internal/testkit/faultfs"
)

// TestReaderRetriesAfterReadError puts the ledger on a device whose reads
// fail for a while, in a sealed segment and in the open one: Next stops
// with a *ReadError naming the segment, the Reader is not stopped for
// good, and once reads work again it goes on from where it stopped,
// returning every record once, in order.
func TestReaderRetriesAfterReadError(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "buffered", true: "direct"}[direct], func(t *testing.T) {
			m := faultfs.Mount(t)
			l := mustOpen(t, filepath.Join(m.Dir, "ledger"), testOpts(t, direct))
			defer l.Close()
			fill(t, l, 1, 300, 500, false) // several 64 KiB segments
			_, segs := l.snapshot()
			if len(segs) < 3 {
				t.Fatalf("%d segments, want at least 3", len(segs))
			}
			sealed := filepath.Join("ledger", filepath.Base(segs[1].path))
			open := filepath.Join("ledger", filepath.Base(segs[len(segs)-1].path))

			r := l.Reader(1)
			defer r.Close()
			var got []uint64
			read := func(until uint64) {
				for (until == 0 || r.LSN() < until) && r.Next() {
					got = append(got, r.LSN())
				}
			}
			// stall sets fault, checks that the Reader stops at it with a
			// *ReadError naming segment and makes no progress while it
			// lasts, then heals it.
			stall := func(fault faultfs.Fault) {
				t.Helper()
				m.Fail(fault)
				at := uint64(0)
				for range 2 {
					read(0)
					var re *ReadError
					if err := r.Err(); !errors.As(err, &re) || !errors.Is(err, syscall.EIO) || filepath.Base(re.Segment) != filepath.Base(fault.Path) {
						t.Fatalf("fault %+v: Next stopped at LSN %d with %v, want a *ReadError (EIO) naming the segment", fault, r.LSN(), err)
					}
					if at != 0 && r.LSN() != at {
						t.Fatalf("while the fault lasts the Reader moved from %d to %d", at, r.LSN())
					}
					at = r.LSN()
				}
				m.Heal()
			}
			read(segs[1].first - 3) // inside the first segment
			stall(faultfs.Fault{Ops: faultfs.Read, Path: sealed})
			read(segs[len(segs)-1].first - 3)
			stall(faultfs.Fault{Ops: faultfs.Open, Path: open})
			read(0) // caught up inside the open segment
			// New records in the open segment are read where the Reader
			// stands, after the bytes it read before.
			fill(t, l, 301, 320, 500, false)
			stall(faultfs.Fault{Ops: faultfs.Read, Path: open})
			read(0)
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if len(got) != 320 {
				t.Fatalf("read %d records, want 320", len(got))
			}
			for i, lsn := range got {
				if lsn != uint64(i+1) {
					t.Fatalf("record %d has LSN %d", i, lsn)
				}
			}
		})
	}
}

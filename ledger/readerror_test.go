package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// passLedger is a ledger of 300 records in 64 KiB segments on a
// fault-injecting mount, and a Reader passing damage.
func passLedger(t *testing.T) (*faultfs.FS, *Ledger, []segment) {
	m := faultfs.Mount(t)
	l := mustOpen(t, filepath.Join(m.Dir, "ledger"), testOpts(t, true))
	t.Cleanup(func() { l.Close() })
	fill(t, l, 1, 300, 500, false)
	_, segs := l.snapshot()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	return m, l, segs
}

// readPassing reads every record with r, calling PassUnreadable whenever
// Next stops at a read error, and returns the LSNs read and the ranges
// passed; it fails the test when an LSN comes twice or is neither read
// nor passed.
func readPassing(t *testing.T, r *Reader, want int) (map[uint64]bool, []Damage) {
	t.Helper()
	got := map[uint64]bool{}
	var passed []Damage
	for range 100 {
		for r.Next() {
			if d := r.Damage(); d != nil {
				passed = append(passed, *d)
				for lsn := d.FirstLSN; lsn <= d.LastLSN; lsn++ {
					if got[lsn] {
						t.Fatalf("LSN %d read and passed", lsn)
					}
				}
				continue
			}
			if got[r.LSN()] {
				t.Fatalf("LSN %d read twice", r.LSN())
			}
			got[r.LSN()] = true
		}
		if r.Err() == nil {
			break
		}
		if _, err := r.PassUnreadable(); err != nil {
			t.Fatalf("PassUnreadable: %v", err)
		}
	}
	lost := 0
	for _, d := range passed {
		lost += int(d.Records())
	}
	if len(got)+lost != want {
		t.Fatalf("%d records read and %d passed, want %d in all (stopped at %d: %v)", len(got), lost, want, r.LSN(), r.Err())
	}
	return got, passed
}

// TestPassUnreadablePassesOnlyWhatTheDeviceWillNotReturn: a block of a
// sealed segment that the device will not return is passed as a damaged
// range holding only the records that touch it (the records before it in
// the same large read are read, in small reads); the end of a sealed
// segment likewise, when the next segment reads. A device that fails as a
// whole, and the open segment, are never passed: the Reader keeps
// retrying and loses nothing once reads work again.
func TestPassUnreadablePassesOnlyWhatTheDeviceWillNotReturn(t *testing.T) {
	t.Run("a block in the middle", func(t *testing.T) {
		m, l, segs := passLedger(t)
		seg := filepath.Join("ledger", filepath.Base(segs[1].path))
		const bad = 5 * BlockSize
		m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: seg, Off: bad, Len: 1})
		r := l.Reader(1)
		defer r.Close()
		r.SkipDamage()
		_, passed := readPassing(t, r, 300)
		if len(passed) != 1 {
			t.Fatalf("passed %v, want one range", passed)
		}
		d := passed[0]
		if d.Start > bad || d.End < bad+BlockSize || d.End-d.Start > 3*BlockSize || d.Records() == 0 || d.Records() > 10 ||
			filepath.Base(d.Segment) != filepath.Base(seg) || !strings.Contains(d.Reason, "failed every read") {
			t.Fatalf("passed %+v, want the few records around bytes %d-%d", d, bad, bad+BlockSize)
		}
	})
	t.Run("the end of a segment", func(t *testing.T) {
		m, l, segs := passLedger(t)
		seg := filepath.Join("ledger", filepath.Base(segs[1].path))
		m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: seg, Off: 8 * BlockSize, Len: 1 << 30})
		r := l.Reader(1)
		defer r.Close()
		r.SkipDamage()
		_, passed := readPassing(t, r, 300)
		if len(passed) != 1 || passed[0].LastLSN != segs[2].first-1 || passed[0].Start > 8*BlockSize {
			t.Fatalf("passed %+v, want the records from byte %d to the segment's last, LSN %d", passed, 8*BlockSize, segs[2].first-1)
		}
	})
	t.Run("the whole device, then the open segment", func(t *testing.T) {
		m, l, segs := passLedger(t)
		r := l.Reader(1)
		defer r.Close()
		r.SkipDamage()
		for r.LSN() < 5 && r.Next() {
		}
		m.Fail(faultfs.Fault{Ops: faultfs.Read})
		for r.Next() { // the rest of the first segment, read before
		}
		at := r.LSN()
		if _, err := r.PassUnreadable(); err == nil || !errors.Is(err, syscall.EIO) {
			t.Fatalf("PassUnreadable with the whole device failing: %v, want it refused", err)
		}
		if r.Next() || r.LSN() != at {
			t.Fatalf("the Reader moved from %d to %d", at, r.LSN())
		}
		m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: filepath.Join("ledger", filepath.Base(segs[len(segs)-1].path))})
		for r.Next() { // the sealed segments
		}
		if at = r.LSN(); at != segs[len(segs)-1].first-1 {
			t.Fatalf("stopped at %d, want the end of the sealed segments", at)
		}
		if _, err := r.PassUnreadable(); err == nil || !strings.Contains(err.Error(), "open segment") {
			t.Fatalf("PassUnreadable in the open segment: %v, want it refused", err)
		}
		m.Heal()
		if _, passed := readPassing(t, r, 300-int(at)); len(passed) != 0 {
			t.Fatalf("after healing: passed %v", passed)
		}
	})
}

// TestPassUnreadableAsksTheDeviceWithoutDirectIO: with DirectIO off the
// Reader reads through the page cache, which could answer for a device
// that fails as a whole; PassUnreadable asks the device itself, opening
// the segment with O_DIRECT, before it passes anything, and passes nothing
// where O_DIRECT cannot be used (a file system that refuses it): the read
// is retried, and nothing is lost once the device reads again.
func TestPassUnreadableAsksTheDeviceWithoutDirectIO(t *testing.T) {
	for _, directWorks := range []bool{true, false} {
		t.Run(fmt.Sprintf("O_DIRECT works: %v", directWorks), func(t *testing.T) {
			m := faultfs.Mount(t)
			opts := testOpts(t, false)
			var asked []string
			opts.hooks.openDevice = func(path string) (*os.File, error) {
				asked = append(asked, path)
				if !directWorks {
					return nil, fmt.Errorf("open %s: %w", path, syscall.EINVAL)
				}
				return openSegmentFile(path, os.O_RDONLY, true)
			}
			l := mustOpen(t, filepath.Join(m.Dir, "ledger"), opts)
			defer l.Close()
			fill(t, l, 1, 300, 500, false)
			_, segs := l.snapshot()
			seg := filepath.Join("ledger", filepath.Base(segs[1].path))
			m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: seg, Off: 5 * BlockSize, Len: 1})
			r := l.Reader(1)
			defer r.Close()
			r.SkipDamage()
			if directWorks {
				if _, passed := readPassing(t, r, 300); len(passed) != 1 {
					t.Fatalf("passed %v, want one range", passed)
				}
				if len(asked) == 0 {
					t.Fatal("bytes were passed as unreadable without asking the device itself (O_DIRECT)")
				}
				return
			}
			for r.Next() {
			}
			at := r.LSN()
			if passed, err := r.PassUnreadable(); err == nil || passed || !strings.Contains(err.Error(), "never passed") {
				t.Fatalf("PassUnreadable without O_DIRECT: passed %v, %v; want it refused", passed, err)
			}
			if len(asked) == 0 {
				t.Fatal("the device was not asked")
			}
			if r.Next() || r.LSN() != at {
				t.Fatalf("the Reader moved from %d to %d", at, r.LSN())
			}
			m.Heal()
			got, passed := readPassing(t, r, 300-int(at))
			if len(passed) != 0 || len(got) != 300-int(at) {
				t.Fatalf("after the device healed: %d read, %v passed; want the %d records left, none passed", len(got), passed, 300-int(at))
			}
		})
	}
}

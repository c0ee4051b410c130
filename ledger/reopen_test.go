package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/testkit/powerloss"
)

// coveredFrom is an Options.Covered for a journal whose first LSN is first.
func coveredFrom(first uint64) func(uint64) bool {
	return func(lsn uint64) bool { return lsn >= first }
}

// expectLSNs reads l from its oldest record and checks that it holds
// exactly from..to, each with the content rec(lsn, pad(lsn)).
func expectLSNs(t *testing.T, l *Ledger, from, to uint64, pad func(uint64) int) {
	t.Helper()
	r := l.Reader(1)
	defer r.Close()
	n := from
	for r.Next() {
		if r.LSN() != n || string(r.Record()) != string(rec(t, n, pad(n))) {
			t.Fatalf("record at LSN %d (want %d) is wrong", r.LSN(), n)
		}
		n++
	}
	if r.Err() != nil || n != to+1 {
		t.Fatalf("read LSNs %d..%d, want %d..%d (err %v)", from, n-1, from, to, r.Err())
	}
}

// TestReopenCutsUnsyncedRecords: the records of a write whose fdatasync
// failed read back intact, but nothing proves they are on disk, so Reopen
// cuts them (the journal still holds them) and the writer writes them
// again; what was synced before stays, and nothing synced is rewritten.
func TestReopenCutsUnsyncedRecords(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			opts := testOpts(t, direct)
			opts.SegmentBytes = 1 << 20
			fail := failFdatasync(&opts)
			dir := t.TempDir()
			l := mustOpen(t, dir, opts)
			fill(t, l, 1, 10, 100, false)
			seg := filepath.Join(dir, segmentName(1))
			syncedSize := fileSize(t, seg)
			synced := readFile(t, seg)
			*fail = true
			for lsn := uint64(11); lsn <= 20; lsn++ {
				if err := l.Append(lsn, rec(t, lsn, 100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(); !errors.Is(err, ErrPoisoned) || l.Err() == nil {
				t.Fatalf("Sync with a failing fdatasync: %v (Err %v)", err, l.Err())
			}
			if fileSize(t, seg) <= syncedSize {
				t.Fatal("the failed Sync wrote nothing: the test cannot tell")
			}
			if _, err := l.Reopen(coveredFrom(11)); err == nil {
				t.Fatal("Reopen of an instance that is still open succeeded")
			}
			if err := l.Close(); err == nil {
				t.Fatal("Close of a poisoned ledger returned nil, want the failure")
			}
			if l.Err() == nil {
				t.Fatal("Err is nil after Close")
			}
			*fail = false
			l2, err := l.Reopen(coveredFrom(11))
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if l2.LastLSN() != 10 || l2.Err() != nil {
				t.Fatalf("reopened: last LSN %d, err %v; want 10, nil", l2.LastLSN(), l2.Err())
			}
			if rp := l2.Recovery(); rp == nil || rp.FirstLSN != 11 || rp.CutAt != syncedSize {
				t.Fatalf("repair %+v, want LSN 11 cut at %d", rp, syncedSize)
			}
			if got := fileSize(t, seg); got != syncedSize {
				t.Fatalf("segment is %d bytes after Reopen, want %d", got, syncedSize)
			}
			fill(t, l2, 11, 25, 100, false)
			expectLSNs(t, l2, 1, 25, func(uint64) int { return 100 })
			if got := readFile(t, seg)[:len(synced)]; string(got) != string(synced) {
				t.Fatal("synced bytes were rewritten")
			}
		})
	}
}

// TestReopenRefusesUnsyncedRecordsTheJournalLacks: records appended after
// the last successful Sync whose LSNs the journal no longer holds are
// acknowledged records in neither store for sure, whatever reached the
// file: the whole write, none of it, or part of it. Reopen neither cuts
// them (nothing could replay them, and the journal could not continue
// after the cut) nor keeps them (nothing proves them on disk): it refuses
// with an *UnsyncedError naming them and changes nothing, so that the
// failed instance reopens as usual once the journal covers them, and a
// restart's Open applies its rule to the bytes as the failure left them.
func TestReopenRefusesUnsyncedRecordsTheJournalLacks(t *testing.T) {
	cases := []struct {
		name string
		// writeFails: the write of records 4–6 fails (EIO) and nothing of
		// it reaches the file; otherwise it reaches the file and its
		// fdatasync fails. tornAt: the file is then cut this many bytes
		// after the synced records (a write the device took part of).
		writeFails bool
		tornAt     int64
		// What Open (a restart) makes of the same bytes with a journal
		// that starts at LSN 7: the last LSN it keeps, or a refusal.
		openLast    uint64
		openRefuses bool
	}{
		{name: "written whole, fdatasync failed", openLast: 6},
		{name: "write failed, nothing reached the file", writeFails: true, openLast: 3},
		{name: "torn write", tornAt: 20, openRefuses: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts(t, true)
			failSync := failFdatasync(&opts)
			failWrite := false
			opts.hooks.writeAt = func(f *os.File, buf []byte, off int64) error {
				if failWrite {
					return unix.EIO
				}
				return writeAt(f, buf, off)
			}
			dir := t.TempDir()
			l := mustOpen(t, dir, opts)
			fill(t, l, 1, 3, 0, false)
			seg := filepath.Join(dir, segmentName(1))
			syncedSize := fileSize(t, seg)
			*failSync, failWrite = true, tc.writeFails
			for lsn := uint64(4); lsn <= 6; lsn++ {
				if err := l.Append(lsn, rec(t, lsn, 0)); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(); !errors.Is(err, ErrPoisoned) {
				t.Fatalf("Sync with a failing write or fdatasync: %v", err)
			}
			*failSync, failWrite = false, false
			l.Close()
			if tc.tornAt > 0 {
				if err := os.Truncate(seg, syncedSize+tc.tornAt); err != nil {
					t.Fatal(err)
				}
			}
			before := readFile(t, seg)

			_, err := l.Reopen(coveredFrom(7))
			var ue *UnsyncedError
			if !errors.As(err, &ue) || ue.FirstLSN != 4 || ue.LastLSN != 6 || ue.Offset != syncedSize || ue.Segment != seg {
				t.Fatalf("Reopen: %v (%+v), want an UnsyncedError for LSNs 4–6 after offset %d of %s", err, ue, syncedSize, seg)
			}
			if !bytes.Equal(readFile(t, seg), before) {
				t.Fatal("the refused Reopen changed the segment")
			}

			// A restart's Open, on a copy of the same bytes.
			oopts := opts
			oopts.Covered = coveredFrom(7)
			lo, err := Open(copyDir(t, dir), oopts)
			switch {
			case tc.openRefuses:
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.LSN != 4 {
					t.Fatalf("Open: %v, want a CorruptionError at LSN 4", err)
				}
			case err != nil:
				t.Fatalf("Open: %v", err)
			default:
				if lo.LastLSN() != tc.openLast {
					t.Fatalf("Open kept up to LSN %d, want %d", lo.LastLSN(), tc.openLast)
				}
				lo.Close()
			}

			// Nothing was used up: covered, the same instance reopens as
			// usual, cutting what was never synced.
			l2, err := l.Reopen(coveredFrom(4))
			if err != nil {
				t.Fatalf("Reopen covered: %v", err)
			}
			defer l2.Close()
			if l2.LastLSN() != 3 || fileSize(t, seg) != syncedSize {
				t.Fatalf("reopened at LSN %d with %d bytes, want 3 and %d", l2.LastLSN(), fileSize(t, seg), syncedSize)
			}
			fill(t, l2, 4, 8, 0, false)
			expectLSNs(t, l2, 1, 8, func(uint64) int { return 0 })
		})
	}
}

// TestReopenAfterFailedSegmentStart: a Sync that sealed a segment, created
// the next and failed to fsync the directory leaves records in the new
// segment whose directory entry is not durable. Reopen keeps the sealed
// segment (its fdatasync succeeded), cuts the new one, and its first Sync
// fsyncs the directory before the journal may release anything.
func TestReopenAfterFailedSegmentStart(t *testing.T) {
	opts := testOpts(t, true) // 64 KiB segments
	failDir := false
	dirSyncs := 0
	opts.hooks.syncDir = func(dir string) error {
		dirSyncs++
		if failDir {
			return errors.New("EIO")
		}
		return nil
	}
	dir := t.TempDir()
	l := mustOpen(t, dir, opts)
	fill(t, l, 1, 5, 1000, false)
	failDir = true
	lsn := uint64(6)
	for ; ; lsn++ {
		if err := l.Append(lsn, rec(t, lsn, 1000)); err != nil {
			t.Fatal(err)
		}
		if len(l.segs) == 2 {
			break // the record that started the second segment
		}
	}
	second := lsn
	if err := l.Sync(); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("Sync with a failing directory fsync: %v", err)
	}
	l.Close()
	failDir = false
	l2, err := l.Reopen(coveredFrom(6))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LastLSN() != second-1 {
		t.Fatalf("reopened: last LSN %d, want %d (the sealed segment's last)", l2.LastLSN(), second-1)
	}
	if _, err := os.Stat(indexPath(filepath.Join(dir, segmentName(second)))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the open segment has an index: %v", err)
	}
	before := dirSyncs
	fill(t, l2, second, second+3, 1000, false)
	if dirSyncs == before {
		t.Fatal("the first Sync after Reopen did not fsync the directory")
	}
	expectLSNs(t, l2, 1, second+3, func(uint64) int { return 1000 })
}

// TestReopenAfterENOSPC fills the ledger's real ext4 file system until a
// write fails with ENOSPC (a partial write: the file system takes what
// fits), frees space and reopens: every synced record is intact, the torn
// or unsynced tail is cut, and the writer continues after the last synced
// record.
func TestReopenAfterENOSPC(t *testing.T) {
	disk := powerloss.New(t, 32<<20)
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			dir := filepath.Join(disk.Dir, fmt.Sprintf("ledger-%v", direct))
			opts := testOpts(t, direct)
			opts.SegmentBytes = 4 << 20
			l := mustOpen(t, dir, opts)
			filler := disk.Fill("filler", 3<<20) // leave less than a segment
			pad := func(lsn uint64) int { return int(lsn*131) % 7000 }
			var failure error
			lsn := uint64(1)
			for ; failure == nil; lsn++ {
				if err := l.Append(lsn, rec(t, lsn, pad(lsn))); err != nil {
					failure = err
					break
				}
				if lsn%150 == 0 {
					failure = l.Sync()
				}
			}
			if !errors.Is(failure, ErrPoisoned) || !errors.Is(failure, unix.ENOSPC) {
				t.Fatalf("the full device gave %v, want ENOSPC poisoning the ledger", failure)
			}
			synced := l.LastLSN()
			t.Logf("failed at LSN %d with %v; last synced LSN %d", lsn, failure, synced)
			l.Close()
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			l2, err := l.Reopen(coveredFrom(synced + 1))
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			t.Logf("reopen cut %+v", l2.Recovery())
			if l2.LastLSN() != synced {
				t.Fatalf("reopened at LSN %d, want the last synced %d", l2.LastLSN(), synced)
			}
			fill(t, l2, synced+1, lsn+50, 0, false)
			expectLSNs(t, l2, 1, lsn+50, func(n uint64) int {
				if n > synced {
					return 0
				}
				return pad(n)
			})
			l2.Close()
			// And a plain Open (the next start) agrees.
			l3 := mustOpen(t, dir, opts)
			defer l3.Close()
			if l3.LastLSN() != lsn+50 || l3.Recovery() != nil {
				t.Fatalf("open after: last LSN %d, repair %+v", l3.LastLSN(), l3.Recovery())
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failFdatasync makes the ledger's fdatasync fail with EIO while the
// returned flag is true (it starts false).
func failFdatasync(opts *Options) *bool {
	fail := new(bool)
	opts.hooks.fdatasync = func(f *os.File) error {
		if *fail {
			return errors.New("EIO")
		}
		return fdatasync(f)
	}
	return fail
}

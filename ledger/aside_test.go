package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFilesKeptAsideCountTowardMaxBytes: the quarantine (damaged ranges a
// reader passed, kept for inspection) and damaged cursor files set aside
// at Open take space on the ledger's device, so they count in UsedBytes
// and in the full decision: the ledger refuses records at MaxBytes with
// them counted, and says so. Deleting them, as docs/operations.md tells,
// makes room again once the ledger has measured them again.
func TestFilesKeptAsideCountTowardMaxBytes(t *testing.T) {
	opts := testOpts(t, true) // 64 KiB segments
	opts.MaxBytes = 4 * opts.SegmentBytes
	now := t0
	opts.hooks.now = func() time.Time { return now }
	dir := t.TempDir()
	damagedCursor := filepath.Join(dir, cursorDir, "old"+cursorSuffix)
	if err := os.MkdirAll(filepath.Dir(damagedCursor), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damagedCursor, []byte("not a cursor"), 0o640); err != nil {
		t.Fatal(err)
	}
	l := mustOpen(t, dir, opts)
	defer l.Close()
	if got := l.UsedBytes(); got != int64(len("not a cursor")) || l.AsideBytes() != got {
		t.Fatalf("an empty ledger with a damaged cursor file set aside uses %d bytes (aside %d), want the file's %d",
			got, l.AsideBytes(), len("not a cursor"))
	}

	lsn := uint64(0)
	appendOne := func() error {
		if err := l.Append(lsn+1, rec(t, lsn+1, 3000)); err != nil {
			return err
		}
		lsn++
		return l.Sync()
	}
	for len(l.segs) < 2 {
		if err := appendOne(); err != nil {
			t.Fatal(err)
		}
	}
	sealed := l.segs[0]
	before := l.UsedBytes()
	d := Damage{Segment: sealed.path, Start: 0, End: sealed.size, FirstLSN: 1, LastLSN: l.segs[1].first - 1, Reason: "test: a whole damaged segment"}
	if _, err := l.Quarantine(d); err != nil {
		t.Fatal(err)
	}
	quarantined := dirBytes(t, filepath.Join(dir, QuarantineDir))
	if quarantined < sealed.size {
		t.Fatalf("the quarantine holds %d bytes, want at least the range's %d", quarantined, sealed.size)
	}
	if got := l.UsedBytes(); got != before+quarantined {
		t.Fatalf("after a quarantine of %d bytes the ledger uses %d, want %d", quarantined, got, before+quarantined)
	}

	var err error
	for err == nil {
		err = appendOne()
	}
	if !errors.Is(err, ErrFull) {
		t.Fatal(err)
	}
	// On disk, segments and the files kept aside together stay within
	// MaxBytes.
	var onDisk int64
	for _, pat := range []string{"*" + segmentSuffix, filepath.Join(QuarantineDir, "*"), filepath.Join(cursorDir, "*"+damagedSuffix)} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range files {
			onDisk += fileSize(t, f)
		}
	}
	if used := l.UsedBytes(); onDisk > opts.MaxBytes || used != onDisk {
		t.Fatalf("full with %d bytes on disk (UsedBytes %d, %d of them aside), max %d", onDisk, used, l.AsideBytes(), opts.MaxBytes)
	}
	if w := l.Waiting(); !strings.Contains(w, filepath.Join(dir, QuarantineDir)) || !strings.Contains(w, "delete them once inspected") {
		t.Fatalf("Waiting() = %q, want it to name the quarantine", w)
	}

	for _, pat := range []string{filepath.Join(dir, QuarantineDir, "*"), filepath.Join(dir, cursorDir, "*"+damagedSuffix)} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	now = now.Add(asideRecheck)
	if err := appendOne(); err != nil {
		t.Fatalf("after the files kept aside were deleted: %v", err)
	}
	if l.AsideBytes() != 0 || l.Waiting() != "" {
		t.Fatalf("after the files kept aside were deleted: aside %d bytes, waiting %q", l.AsideBytes(), l.Waiting())
	}
}

// dirBytes is the size of the files in dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func recycleOpts() Options {
	o := smallOpts()
	o.SpareSegments = 2
	return o
}

// diskBytes is the size of every journal file in dir (segments, spares,
// files being released): what the journal's used bytes must match at rest.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil // released while the walk ran
		}
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// recycler drives a journal and remembers what it acknowledged.
type recycler struct {
	t     *testing.T
	j     *Journal
	dir   string
	acked map[uint64][]byte
	n     int
}

// newRecycler opens a journal with opts in a new directory.
func newRecycler(t *testing.T, opts Options) *recycler {
	dir := t.TempDir()
	return &recycler{t: t, dir: dir, acked: map[uint64][]byte{}, j: mustOpen(t, dir, opts)}
}

func (r *recycler) append(pad int) uint64 {
	r.t.Helper()
	b := rec(r.t, 3, r.n, pad)
	r.n++
	lsn := mustAppend(r.t, r.j, b)
	r.acked[lsn] = b
	return lsn
}

// untilGenerations appends records of pad bytes until the journal has n
// generations.
func (r *recycler) untilGenerations(n, pad int) {
	r.t.Helper()
	for len(r.j.gensSnapshot()) < n {
		r.append(pad)
	}
}

// releaseOldest releases every generation but the newest k and waits for
// the releaser.
func (r *recycler) releaseOldest(k int) {
	r.t.Helper()
	gens := r.j.gensSnapshot()
	if err := r.j.Release(gens[len(gens)-k].base); err != nil {
		r.t.Fatal(err)
	}
	waitReleased(r.t, r.j)
}

// check verifies that every acknowledged record still in the journal reads
// back intact, and that used bytes match the files, less the stale rest of
// a recycled active file.
func (r *recycler) check() {
	r.t.Helper()
	got := readAll(r.t, r.j)
	first := r.j.FirstLSN()
	for lsn, b := range r.acked {
		if lsn >= first && !bytes.Equal(got[lsn], b) {
			r.t.Fatalf("LSN %d lost or changed", lsn)
		}
	}
	gens := r.j.gensSnapshot()
	active := gens[len(gens)-1]
	stale := stat(r.t, active.segment()).Size() - entriesBytes(r.t, active, 0)
	if used, disk := r.j.UsedBytes(), diskBytes(r.t, r.dir); used != disk-stale {
		r.t.Fatalf("journal counts %d bytes used, its files take %d, %d of them stale", used, disk, stale)
	}
}

// entriesBytes is how many bytes of g's segment hold its entries (up to
// LSN last, when not 0): where a scan stops, before any stale bytes.
func entriesBytes(t *testing.T, g generation, last uint64) int64 {
	t.Helper()
	data, err := os.ReadFile(g.segment())
	if err != nil {
		t.Fatal(err)
	}
	s := newScanner(g.segment(), data, g.base+1, last, false)
	for s.Next() {
	}
	return s.Offset()
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRecycledSegmentIsOverwritten: a released segment becomes a spare,
// the next generation writes into that very file, everything reads back,
// the space accounting matches the files at every step, and a clean
// restart finds nothing to repair.
func TestRecycledSegmentIsOverwritten(t *testing.T) {
	r := newRecycler(t, recycleOpts())
	dir := r.dir
	r.untilGenerations(3, 2000)
	released := stat(t, r.j.gensSnapshot()[0].segment())
	r.releaseOldest(2)
	spares, err := listSpares(dir)
	if err != nil || len(spares) != 1 {
		t.Fatalf("spares after a release: %v, %v; want one", spares, err)
	}
	if !os.SameFile(released, stat(t, spares[0].path)) {
		t.Fatal("the spare is not the released segment's file")
	}
	r.check()

	before := len(r.j.gensSnapshot())
	r.untilGenerations(before+1, 2000)
	gens := r.j.gensSnapshot()
	active := gens[len(gens)-1]
	if !os.SameFile(released, stat(t, active.segment())) {
		t.Fatal("the new generation did not overwrite the spare")
	}
	if spares, _ := listSpares(dir); len(spares) != 0 {
		t.Fatalf("spare still listed after it was used: %v", spares)
	}
	for range 5 {
		r.append(1000)
	}
	r.check()
	written := entriesBytes(t, active, 0)
	if size := stat(t, active.segment()).Size(); size <= written {
		t.Fatalf("recycled file is %d bytes, %d written: the test needs stale bytes after them", size, written)
	}

	if err := r.j.Close(); err != nil {
		t.Fatal(err)
	}
	if size := stat(t, active.segment()).Size(); size != written {
		t.Fatalf("after Close the recycled file is %d bytes, want the %d written", size, written)
	}
	r.j = mustOpen(t, dir, recycleOpts())
	defer r.j.Close()
	if rep := r.j.Recovery(); rep != nil {
		t.Fatalf("clean restart repaired %+v", rep)
	}
	r.check()
	r.append(10)
	r.check()
}

// TestRecycledGenerationIsCutAtRotation: a generation that rotates before
// overwriting all of its recycled file has the stale rest cut off, so that
// every closed generation's file ends at its last entry and counts in used
// as it is; only the active file holds stale bytes, in the spares' share
// of max_bytes.
func TestRecycledGenerationIsCutAtRotation(t *testing.T) {
	r := newRecycler(t, recycleOpts())
	defer func() { r.j.Close() }()
	r.untilGenerations(3, 2000)
	released := stat(t, r.j.gensSnapshot()[0].segment())
	r.releaseOldest(2)
	before := len(r.j.gensSnapshot())
	// Bigger records end the recycled generation before its file's end:
	// 12 of them fit in less than the spare, a 13th not in segment_bytes.
	r.untilGenerations(before+2, 5000)
	gens := r.j.gensSnapshot()
	recycled := gens[len(gens)-2]
	if !os.SameFile(released, stat(t, recycled.segment())) {
		t.Fatal("the generation did not overwrite the spare")
	}
	if size, written := stat(t, recycled.segment()).Size(), entriesBytes(t, recycled, gens[len(gens)-1].base); size != written || size >= released.Size() {
		t.Fatalf("closed recycled generation's file is %d bytes, %d written, spare was %d: want it cut to what was written", size, written, released.Size())
	}
	r.check()
}

// TestClosedGenerationWithStaleTail: a crash between a rotation and its
// cut leaves a closed generation with stale bytes of older generations
// after its last entry; every reader stops at its last LSN instead of
// calling them damage, also after a restart.
func TestClosedGenerationWithStaleTail(t *testing.T) {
	r := newRecycler(t, recycleOpts())
	dir := r.dir
	r.untilGenerations(3, 2000)
	r.append(10)
	if err := r.j.Close(); err != nil {
		t.Fatal(err)
	}
	gens, err := scanGenerations(dir, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Older frames, as a recycled file's stale rest holds them.
	old, err := os.ReadFile(gens[0].segment())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(gens[1].segment(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(old); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r.j = mustOpen(t, dir, recycleOpts())
	r.check()

	dr, err := NewDirReader(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for dr.Next() {
		n++
	}
	if dr.Err() != nil || n == 0 {
		t.Fatalf("DirReader read %d records: %v", n, dr.Err())
	}
	infos, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Damage != nil || (!info.Open && info.Tail != nil) {
			t.Fatalf("inspect %s: damage %v tail %+v", info.File, info.Damage, info.Tail)
		}
	}

	if err := r.j.Close(); err != nil {
		t.Fatal(err)
	}
	r.j = mustOpen(t, dir, recycleOpts())
	defer r.j.Close()
	r.check()
}

// TestRecycledTailAfterCrash copies a live journal (its files as a crash
// would leave them) while the active generation is a recycled file: Open
// cuts the stale rest as an unacknowledged tail and keeps every record,
// both right after the switch to the recycled file and after writes into
// it.
func TestRecycledTailAfterCrash(t *testing.T) {
	for _, writes := range []int{0, 7} {
		t.Run(fmt.Sprintf("%d more writes", writes), func(t *testing.T) {
			r := newRecycler(t, recycleOpts())
			dir := r.dir
			defer r.j.Close()
			r.untilGenerations(3, 2000)
			r.releaseOldest(2)
			before := len(r.j.gensSnapshot())
			r.untilGenerations(before+1, 2000)
			for range writes {
				r.append(500)
			}
			gens := r.j.gensSnapshot()
			written := entriesBytes(t, gens[len(gens)-1], 0)
			crashed := copyTree(t, dir)
			j2 := mustOpen(t, crashed, recycleOpts())
			defer j2.Close()
			rep := j2.Recovery()
			if rep == nil || rep.Offset != written {
				t.Fatalf("repair %+v, want the stale rest cut at %d", rep, written)
			}
			got := readAll(t, j2)
			for lsn, b := range r.acked {
				if lsn >= j2.FirstLSN() && !bytes.Equal(got[lsn], b) {
					t.Fatalf("LSN %d lost after the crash", lsn)
				}
			}
			if last := j2.LastLSN(); last != r.j.LastLSN() {
				t.Fatalf("after the crash the journal ends at %d, want %d", last, r.j.LastLSN())
			}
		})
	}
}

// TestSparesKeepTheirShareWhenFull: spares live in their own share of
// max_bytes (spare_segments × segment_bytes): records fill the rest, the
// files never take more than max_bytes, and segments released while the
// journal is full are kept as spares.
func TestSparesKeepTheirShareWhenFull(t *testing.T) {
	opts := recycleOpts()
	opts.MaxBytes = 1 << 20
	r := newRecycler(t, opts)
	defer func() { r.j.Close() }()
	dir := r.dir
	// Fill the journal without releasing anything.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	filled := make(chan error, 1)
	go func() {
		for {
			if _, err := r.j.Append(ctx, rec(t, 4, 0, 2000)); err != nil {
				filled <- err
				return
			}
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for r.j.Waiting() == "" {
		if disk := diskBytes(t, dir); disk > opts.MaxBytes {
			t.Fatalf("the journal's files take %d bytes, more than max_bytes %d", disk, opts.MaxBytes)
		}
		if time.Now().After(deadline) {
			t.Fatal("the journal never filled up")
		}
		time.Sleep(time.Millisecond)
	}
	records := opts.MaxBytes - 2*opts.SegmentBytes
	if used := r.j.UsedBytes(); used+entrySize(len(rec(t, 4, 0, 2000))) <= records {
		t.Fatalf("appends wait with %d bytes used: records did not get all of their %d", used, records)
	}
	cancel()
	if err := <-filled; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting append ended with %v, want its context's end", err)
	}
	r.releaseOldest(len(r.j.gensSnapshot()) - 2) // the journal stays more than half full
	if spares, _ := listSpares(dir); len(spares) != 2 {
		t.Fatalf("%d spares after a release from a full journal, want 2", len(spares))
	}
	if disk := diskBytes(t, dir); disk > opts.MaxBytes {
		t.Fatalf("the journal's files take %d bytes, more than max_bytes %d", disk, opts.MaxBytes)
	}
	r.check()
	r.untilGenerations(len(r.j.gensSnapshot())+1, 2000) // writes into a spare
	r.check()
}

// TestNoSparesWhenDisabled: with SpareSegments 0 released segments are
// deleted, as before recycling existed.
func TestNoSparesWhenDisabled(t *testing.T) {
	r := newRecycler(t, smallOpts())
	dir := r.dir
	defer r.j.Close()
	r.untilGenerations(4, 2000)
	r.releaseOldest(1)
	if spares, _ := listSpares(dir); len(spares) != 0 {
		t.Fatalf("spares with recycling off: %v", spares)
	}
	r.check()
}

// TestFewerSparesAfterRestart: spares beyond a lowered SpareSegments are
// deleted at Open, without waiting for a release.
func TestFewerSparesAfterRestart(t *testing.T) {
	r := newRecycler(t, recycleOpts())
	r.untilGenerations(3, 2000)
	r.releaseOldest(1)
	if spares, _ := listSpares(r.dir); len(spares) != 2 {
		t.Fatalf("%d spares, want 2", len(spares))
	}
	r.j.Close()
	opts := recycleOpts()
	opts.SpareSegments = 1
	r.j = mustOpen(t, r.dir, opts)
	defer r.j.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		spares, _ := listSpares(r.dir)
		if len(spares) == 1 && r.j.releasesPending() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spares after reopening with spare_segments 1, want 1", len(spares))
		}
	}
	r.check()
}

// TestSparesSurviveRestart: spare files are taken back at Open, counted,
// and overwritten by the next generation.
func TestSparesSurviveRestart(t *testing.T) {
	r := newRecycler(t, recycleOpts())
	dir := r.dir
	r.untilGenerations(3, 2000)
	r.releaseOldest(1)
	spares, _ := listSpares(dir)
	if len(spares) != 2 {
		t.Fatalf("%d spares, want 2", len(spares))
	}
	files := []os.FileInfo{stat(t, spares[0].path), stat(t, spares[1].path)}
	r.j.Close()
	r.j = mustOpen(t, dir, recycleOpts())
	defer r.j.Close()
	r.check()
	before := len(r.j.gensSnapshot())
	r.untilGenerations(before+1, 2000)
	gens := r.j.gensSnapshot()
	seg := stat(t, gens[len(gens)-1].segment())
	if !os.SameFile(seg, files[0]) && !os.SameFile(seg, files[1]) {
		t.Fatal("after a restart the new generation did not overwrite a spare")
	}
	r.check()
}

// TestSparesNeedTheirShare: max_bytes must hold two segments of records
// besides the spares' share, (2 + spare_segments) × segment_bytes.
func TestSparesNeedTheirShare(t *testing.T) {
	opts := recycleOpts()
	opts.MaxBytes = 4*opts.SegmentBytes - 1
	if _, err := Open(t.TempDir(), opts); err == nil || !strings.Contains(err.Error(), "(2 + spare segments 2)") {
		t.Fatalf("Open with max bytes below (2 + 2) × segment bytes: %v, want a refusal", err)
	}
	opts.MaxBytes++
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	if got, want := opts.MaxRecordBytes(), opts.SegmentBytes-frameHeader-uvarintLen(opts.SegmentBytes); got != want {
		t.Fatalf("MaxRecordBytes %d, want %d: what is left of max bytes after the spares and the active segment", got, want)
	}
}

// TestDamagedGenerationsCountTowardMaxBytes: the damaged-<base>
// directories kept aside in the journal directory are on its device: they
// count in UsedBytes and take their bytes from what records may use, so
// appends wait when they leave no room, and resume once an operator
// deletes them, without anything else freeing space.
func TestDamagedGenerationsCountTowardMaxBytes(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 256 << 10, MaxBytes: 2 << 20, MaxGroupBytes: 64 << 10}
	j := mustOpen(t, dir, opts)
	mustAppend(t, j, rec(t, 0, 0, 100))
	j.Close()

	aside := filepath.Join(dir, damagedPrefix+"00000000000000000007")
	if err := os.Mkdir(aside, 0o750); err != nil {
		t.Fatal(err)
	}
	big := opts.recordBytes() // leaves no room for any record
	if err := os.WriteFile(filepath.Join(aside, segmentFile), make([]byte, big), 0o640); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, dir, opts)
	defer j.Close()
	if used := j.UsedBytes(); used < big {
		t.Errorf("UsedBytes %d does not count the %d bytes kept aside", used, big)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := j.Append(ctx, rec(t, 0, 1, 100))
	cancel()
	if err == nil {
		t.Fatal("an append found room although what is kept aside fills max_bytes")
	}
	done := make(chan error, 1)
	go func() {
		_, err := j.Append(context.Background(), rec(t, 0, 2, 100))
		done <- err
	}()
	if err := os.RemoveAll(aside); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the append still waits after the directory kept aside was deleted")
	}
}

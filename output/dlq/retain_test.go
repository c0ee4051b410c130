package dlq

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// aged is entry i, dead-lettered i minutes after t0.
func aged(i int) Entry {
	e := entry("s", i)
	e.Failed = t0.Add(time.Duration(i) * time.Minute)
	return e
}

// fakeClock is a clock tests move by hand; safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}

func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// agedStore is a store of entries 1..n in files of a few entries each;
// the first half were appended before a reopen (so Open learned their
// times from the files), the rest after.
func agedStore(t *testing.T, n int, opts Options) (*Store, []Pos) {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, opts)
	for i := 1; i <= n/2; i++ {
		mustAppend(t, s, aged(i))
	}
	mustClose(t, s)
	s = mustOpen(t, dir, opts)
	for i := n/2 + 1; i <= n; i++ {
		mustAppend(t, s, aged(i))
	}
	ps, _, err := scanAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if files := dlqFiles(t, dir); len(files) < 4 {
		t.Fatalf("%d files, want several", len(files))
	}
	return s, ps
}

// survivors checks that the store holds exactly entries from..n, in
// whole files: from is the first entry of its file.
func survivors(t *testing.T, s *Store, ps []Pos, from, n int) {
	t.Helper()
	var want []Entry
	for i := from; i <= n; i++ {
		want = append(want, aged(i))
	}
	expectEntries(t, s.dir, want)
	if from > 1 && from <= n && ps[from-2].File == ps[from-1].File {
		t.Fatalf("entry %d was kept, and the one before it in the same file was not", from)
	}
}

// firstKept is the first entry that a purge of everything failed at or
// before entry k keeps: the first entry of the file after the last one
// made only of entries up to k.
func firstKept(ps []Pos, k int) int {
	i := k // index of entry k+1
	for i > 0 && i < len(ps) && ps[i].File == ps[i-1].File {
		i--
	}
	return i + 1
}

func TestPurgeFailedBefore(t *testing.T) {
	const n = 40
	opts, _ := testOpts(t, 1024, 1<<20)
	s, ps := agedStore(t, n, opts)
	defer mustClose(t, s)

	// Nothing failed that early.
	if p, err := s.PurgeFailedBefore(t0); err != nil || p != (Purged{}) {
		t.Fatalf("purged %+v, %v", p, err)
	}
	// Through entry 13: the files made only of entries 1..13 go; the file
	// holding 13 and 14 stays whole.
	k := 13
	want := firstKept(ps, k)
	p, err := s.PurgeFailedBefore(aged(k).Failed)
	if err != nil {
		t.Fatal(err)
	}
	if p.Entries != want-1 || p.Files == 0 {
		t.Fatalf("purged %+v, want the %d entries before entry %d", p, want-1, want)
	}
	survivors(t, s, ps, want, n)
	if got := s.UsedBytes(); got != diskBytes(t, s.dir) {
		t.Fatalf("UsedBytes %d, files %d", got, diskBytes(t, s.dir))
	}

	// A later Purge by time takes what was kept, up to the open file.
	k = n - 1
	p, err = s.PurgeFailedBefore(aged(k).Failed)
	if err != nil {
		t.Fatal(err)
	}
	want2 := firstKept(ps, k)
	if p.Entries != want2-want {
		t.Fatalf("purged %+v, want %d entries", p, want2-want)
	}
	survivors(t, s, ps, want2, n)

	// Everything: the open file goes too, after a new one is started, and
	// the store goes on.
	if _, err := s.PurgeFailedBefore(aged(n).Failed); err != nil {
		t.Fatal(err)
	}
	expectEntries(t, s.dir, nil)
	if p, err := s.PurgeFailedBefore(aged(n + 100).Failed); err != nil || p != (Purged{}) {
		t.Fatalf("purging an empty store: %+v, %v", p, err)
	}
	mustAppend(t, s, aged(n+1))
	expectEntries(t, s.dir, []Entry{aged(n + 1)})
}

func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var sum int64
	for _, name := range dlqFiles(t, dir) {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum += st.Size()
	}
	return sum
}

// TestPurgeCounts: Purge by position reports the files, entries and bytes
// it deleted, and a position no entry has is ErrNoEntry.
func TestPurgeCounts(t *testing.T) {
	opts, sink := testOpts(t, 1024, 1<<20)
	s, ps := agedStore(t, 30, opts)
	defer mustClose(t, s)
	k := 17
	want := firstKept(ps, k)
	before := s.UsedBytes()
	p, err := s.Purge(ps[k-1])
	if err != nil {
		t.Fatal(err)
	}
	if p.Entries != want-1 || p.Bytes != before-s.UsedBytes() || p.Files != countFilesBefore(ps, want) {
		t.Fatalf("purged %+v; want %d entries, %d bytes", p, want-1, before-s.UsedBytes())
	}
	if sink.count("entries="+itoa(want-1)) != 1 {
		t.Fatal("the purge's log line does not count its entries")
	}
	empty := mustOpen(t, t.TempDir(), opts)
	defer mustClose(t, empty)
	if _, err := empty.Purge(Pos{File: fileName(1), Offset: fileHeaderSize}); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("Purge of an empty store: %v, want ErrNoEntry", err)
	}
	for _, pos := range []Pos{{File: ps[k].File, Offset: ps[k].Offset + 1}, {File: fileName(999), Offset: fileHeaderSize}, {File: "../x", Offset: 20}} {
		if _, err := s.Purge(pos); !errors.Is(err, ErrNoEntry) {
			t.Fatalf("Purge(%+v): %v, want ErrNoEntry", pos, err)
		}
	}
}

// countFilesBefore counts the distinct files of the entries before entry
// i (1-based).
func countFilesBefore(ps []Pos, i int) int {
	n := 0
	for j := 0; j < i-1; j++ {
		if j == 0 || ps[j].File != ps[j-1].File {
			n++
		}
	}
	return n
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestMaxAge: with Options.MaxAge the store deletes the files whose
// entries all failed longer ago than that, by its clock, and logs it.
func TestMaxAge(t *testing.T) {
	const n = 40
	clock := newFakeClock(t0)
	opts, sink := testOpts(t, 1024, 1<<20)
	opts.MaxAge = time.Hour
	opts.hooks.now = clock.now
	opts.hooks.retainEvery = time.Hour // expire is called by hand below
	s, ps := agedStore(t, n, opts)
	defer mustClose(t, s)

	// At t0 + 1h10m, entries failed up to 10 minutes after t0 are older
	// than an hour.
	clock.set(t0.Add(time.Hour + 10*time.Minute))
	p, err := s.expire()
	if err != nil {
		t.Fatal(err)
	}
	want := firstKept(ps, 10)
	if p.Entries != want-1 {
		t.Fatalf("expired %+v, want %d entries", p, want-1)
	}
	survivors(t, s, ps, want, n)
	if sink.count("older than the maximum age") != 1 || sink.count("entries="+itoa(want-1)) != 1 {
		t.Fatal("the deletion was not logged with its count")
	}
	// Nothing more is old yet.
	if p, err := s.expire(); err != nil || p != (Purged{}) {
		t.Fatalf("expired %+v, %v", p, err)
	}
	// Much later, everything is old: the store empties and goes on.
	clock.set(t0.Add(48 * time.Hour))
	if _, err := s.expire(); err != nil {
		t.Fatal(err)
	}
	expectEntries(t, s.dir, nil)
	clock.set(t0.Add(49 * time.Hour))
	if p, err := s.expire(); err != nil || p != (Purged{}) {
		t.Fatalf("an empty open file: expired %+v, %v", p, err)
	}
	mustAppend(t, s, aged(n+1))
}

// TestMaxAgeWhileAppending runs the retention goroutine often while
// entries are appended: it deletes only files whose entries are all older
// than MaxAge, never one an Append just stored, and Close stops it (-race
// checks the locking, goleak the goroutine).
func TestMaxAgeWhileAppending(t *testing.T) {
	clock := newFakeClock(t0)
	opts, _ := testOpts(t, 1024, 1<<20)
	opts.MaxAge = time.Hour
	opts.hooks.now = clock.now
	opts.hooks.retainEvery = time.Millisecond
	s := mustOpen(t, t.TempDir(), opts)
	defer mustClose(t, s)
	const n = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= n; i++ {
			// Entry i fails at minute i, while the clock says minute
			// i+30: entries failed at minute i-30 or before are old.
			clock.set(t0.Add(time.Duration(i+30) * time.Minute))
			if err := s.Append(context.Background(), []Entry{aged(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	cutoff := clock.now().Add(-time.Hour)
	// The retention goroutine catches up with the last clock: the oldest
	// file left holds an entry newer than the cutoff. Polling: the test's
	// timeout bounds it.
	var ps []Pos
	var es []Entry
	until(func() bool {
		var err error
		ps, es, err = scanAll(t, s.dir)
		if err != nil || len(es) == 0 {
			return false
		}
		for i := range es {
			if ps[i].File != ps[0].File {
				return false
			}
			if es[i].Failed.After(cutoff) {
				return true
			}
		}
		return false
	})
	// What is left is a contiguous run up to the last entry, and what
	// went was old.
	for i, e := range es {
		if e.LSN != es[0].LSN+uint64(i) {
			t.Fatalf("entry %d follows %d: a gap", e.LSN, es[i-1].LSN)
		}
	}
	if last := es[len(es)-1].LSN; last != n {
		t.Fatalf("the newest entry is %d, want %d", last, n)
	}
	if first := int(es[0].LSN); first > 1 && aged(first-1).Failed.After(cutoff) {
		t.Fatalf("entry %d, failed after the cutoff, was deleted", first-1)
	}
	if es[0].LSN == 1 {
		t.Fatal("nothing was deleted")
	}
}

package ledger

import (
	"bytes"
	"fmt"
	"testing"
)

// cacheOpts are options for the read cache tests: segments of a few
// windows, so that readers straddle windows and segments.
func cacheOpts(t testing.TB, cacheBytes int64) Options {
	opts := testOpts(t, true)
	opts.SegmentBytes = 3 * cacheWindow
	opts.ReadCacheBytes = cacheBytes
	return opts
}

// readInStep reads every record with n Readers from LSN 1, interleaved one
// record each in turn (in one goroutine, so that the outcome does not
// depend on scheduling), checking each record's content, and returns the
// bytes the Readers consumed, summed.
func readInStep(t testing.TB, l *Ledger, n int, pad int, last uint64) int64 {
	t.Helper()
	rs := make([]*Reader, n)
	for i := range rs {
		rs[i] = l.Reader(1)
		defer rs[i].Close()
	}
	for lsn := uint64(1); lsn <= last; lsn++ {
		for i, r := range rs {
			if !r.Next() || r.LSN() != lsn || !bytes.Equal(r.Record(), rec(t, lsn, pad)) {
				t.Fatalf("reader %d: at LSN %d got LSN %d (err %v), or the wrong bytes", i, lsn, r.LSN(), r.Err())
			}
		}
	}
	var consumed int64
	for _, r := range rs {
		if r.Next() {
			t.Fatalf("a reader went past LSN %d", last)
		}
		consumed += r.BytesRead()
	}
	return consumed
}

// TestReadersInStepShareReads: three Readers reading the same records in
// step cost the device about what one costs (at most 1.5 times); without
// the cache, three times.
func TestReadersInStepShareReads(t *testing.T) {
	const pad, last = 3000, 3000 // about 9 MiB: several segments
	for _, tc := range []struct {
		name       string
		cacheBytes int64
		maxRatio   float64 // device bytes for three readers / for one
		minRatio   float64
	}{
		{name: "cache", cacheBytes: DefaultReadCacheBytes, maxRatio: 1.5},
		{name: "no cache", cacheBytes: 0, minRatio: 2.9, maxRatio: 3.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustOpen(t, t.TempDir(), cacheOpts(t, tc.cacheBytes))
			defer l.Close()
			fill(t, l, 1, last, pad, false)
			before := l.DeviceBytesRead()
			one := readInStep(t, l, 1, pad, last)
			oneDevice := l.DeviceBytesRead() - before
			before = l.DeviceBytesRead()
			three := readInStep(t, l, 3, pad, last)
			threeDevice := l.DeviceBytesRead() - before
			if three != 3*one {
				t.Fatalf("three readers consumed %d bytes, one %d: BytesRead must count what each consumed", three, one)
			}
			ratio := float64(threeDevice) / float64(oneDevice)
			t.Logf("device bytes: one reader %d (consumed %d), three readers %d: ratio %.2f", oneDevice, one, threeDevice, ratio)
			if oneDevice == 0 || ratio > tc.maxRatio || ratio < tc.minRatio {
				t.Fatalf("three readers in step read %d device bytes, one reader %d (ratio %.2f, want %.1f–%.1f)",
					threeDevice, oneDevice, ratio, tc.minRatio, tc.maxRatio)
			}
		})
	}
}

// TestReadCacheOpenSegmentTail: Readers following the open segment see
// every record once, in order, although the windows they share were
// cached while the tail was being written: a Reader caught up in the
// middle of a window, the writer adding records to that window, the
// Reader going on, and a Reader far behind reading everything from the
// start through the same windows.
func TestReadCacheOpenSegmentTail(t *testing.T) {
	const pad = 700
	opts := cacheOpts(t, 2*cacheWindow) // two windows: the far reader evicts
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	tail := l.Reader(1)
	defer tail.Close()
	next := uint64(1)
	readTail := func() {
		t.Helper()
		for tail.Next() {
			if tail.LSN() != next || !bytes.Equal(tail.Record(), rec(t, next, pad)) {
				t.Fatalf("tail reader: LSN %d (or its bytes) where %d was due", tail.LSN(), next)
			}
			next++
		}
		if tail.Err() != nil {
			t.Fatal(tail.Err())
		}
	}
	var last uint64
	// Small writes, each its own Sync, so that each read of the tail
	// finds a window only partly written; several windows and a segment
	// boundary along the way.
	for step := range 60 {
		n := uint64(1 + step%7*20)
		fill(t, l, last+1, last+n, pad, step%2 == 0)
		last += n
		readTail()
		if next != last+1 {
			t.Fatalf("step %d: the tail reader is at %d, the ledger at %d", step, next-1, last)
		}
		if step%10 == 9 {
			// A reader far behind reads every record, through windows
			// cached while they were partly written.
			if got := readAll(t, l, pad); len(got) != int(last) || got[len(got)-1] != last {
				t.Fatalf("step %d: the reader from the start read %d records, want %d", step, len(got), last)
			}
		}
	}
	if _, segs := l.snapshot(); len(segs) < 2 {
		t.Fatalf("%d segments: the test must cross a segment boundary", len(segs))
	}
	// Once sealed, a segment's windows are final: a cached partial window
	// of what was the open segment is not taken for its end.
	if got := readAll(t, l, pad); len(got) != int(last) {
		t.Fatalf("read %d records, want %d", len(got), last)
	}
}

// TestReadCacheDropsDeletedSegments: retention drops the cached windows
// of the segments it deletes.
func TestReadCacheDropsDeletedSegments(t *testing.T) {
	l := mustOpen(t, t.TempDir(), cacheOpts(t, DefaultReadCacheBytes))
	defer l.Close()
	fill(t, l, 1, 2000, 3000, false)
	readAll(t, l, 3000)
	_, segs := l.snapshot()
	cached := func(seg uint64) bool {
		l.cache.mu.Lock()
		defer l.cache.mu.Unlock()
		for k := range l.cache.windows {
			if k.seg == seg {
				return true
			}
		}
		return false
	}
	if !cached(segs[len(segs)-2].first) {
		t.Fatal("the last sealed segment read has no cached window")
	}
	l.Cursor("a")
	l.SetCursor("a", 2000)
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs[:len(segs)-1] {
		if cached(s.first) {
			t.Fatalf("segment %d was deleted, its windows are still cached", s.first)
		}
	}
}

// BenchmarkReadersInStep reports the device bytes per byte consumed for 1
// and 3 Readers reading the same records in step, with and without the
// shared read cache.
func BenchmarkReadersInStep(b *testing.B) {
	const pad, last = 3000, 3000
	for _, cacheBytes := range []int64{DefaultReadCacheBytes, 0} {
		l := mustOpen(b, b.TempDir(), cacheOpts(b, cacheBytes))
		fill(b, l, 1, last, pad, false)
		for _, n := range []int{1, 3} {
			b.Run(fmt.Sprintf("cache=%d/readers=%d", cacheBytes>>20, n), func(b *testing.B) {
				var consumed, device int64
				for b.Loop() {
					before := l.DeviceBytesRead()
					consumed += readInStep(b, l, n, pad, last)
					device += l.DeviceBytesRead() - before
				}
				b.ReportMetric(float64(device)/float64(consumed), "device-B/consumed-B")
				b.SetBytes(consumed / int64(b.N))
			})
		}
		l.Close()
	}
}

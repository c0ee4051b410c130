package journal

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/framelog"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestJournalHoldsItsShareOfMemory writes a quarter of a large segment and
// checks what the journal then holds in memory against its share of the
// memory formula (conf.Memory): its in-memory tail (TailBytes) and its
// write buffers (4 × MaxGroupBytes), not the active segment.
func TestJournalHoldsItsShareOfMemory(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 20, MaxBytes: 256 << 20, MaxGroupBytes: 1 << 20, TailBytes: 2 << 20}
	share := opts.TailBytes + 4*opts.MaxGroupBytes
	before := heapInUse()
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	r := rec(t, 1, 1, 64<<10)
	for written := 0; written < 16<<20; written += len(r) {
		mustAppend(t, j, r)
	}
	held := heapInUse() - before
	runtime.KeepAlive(j)
	if held > share {
		t.Fatalf("the journal holds %d MiB after writing 16 MiB, more than its share of %d MiB (tail + write buffers)", held>>20, share>>20)
	}
}

// TestReaderReadsInChunks reads a generation several times larger than
// framelog.ReadChunk, with records around and across the chunk boundaries and one
// larger than a chunk: every record comes back, and the Reader allocates
// about one chunk and the large record, not the file.
func TestReaderReadsInChunks(t *testing.T) {
	opts := Options{SegmentBytes: 64 << 20, MaxBytes: 256 << 20, MaxGroupBytes: 4 << 20}
	j := mustOpen(t, t.TempDir(), opts)
	defer j.Close()
	var want [][]byte
	total := 0
	for i := 0; total < 12*framelog.ReadChunk; i++ {
		pad := 100 + (i*7919)%(48<<10)
		if i == 40 {
			pad = 3 * framelog.ReadChunk / 2 // larger than a chunk
		}
		r := rec(t, 1, i, pad)
		mustAppend(t, j, r)
		want = append(want, r)
		total += len(r)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rd := j.Reader(1)
	n := 0
	for rd.Next() {
		if n < len(want) && !bytes.Equal(rd.Record(), want[n]) {
			t.Fatalf("LSN %d differs from what was written", rd.LSN())
		}
		n++
	}
	runtime.ReadMemStats(&ms1)
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("read %d records, wrote %d", n, len(want))
	}
	if alloc := int64(ms1.TotalAlloc - ms0.TotalAlloc); alloc > int64(4*framelog.ReadChunk) {
		t.Fatalf("reading %d MiB allocated %d MiB: more than a chunk and the largest record", total>>20, alloc>>20)
	}
}

// TestOpenReadsTheNewestSegmentInChunks opens a journal whose newest
// generation holds 48 MiB: verifying its tail and opening it for writing
// allocate what the memory formula gives the journal's writes and reads
// (conf.Memory's JournalWrite and JournalRead), not the segment: neither
// the journal nor tidwall reads it whole.
func TestOpenReadsTheNewestSegmentInChunks(t *testing.T) {
	if conf.JournalReadChunkBytes != framelog.ReadChunk {
		t.Fatalf("the memory formula counts journal reads of %d bytes, the journal reads %d", conf.JournalReadChunkBytes, framelog.ReadChunk)
	}
	const size = 48 << 20
	opts := Options{SegmentBytes: 64 << 20, MaxBytes: 256 << 20, MaxGroupBytes: 1 << 20}
	dir := t.TempDir()
	j := mustOpen(t, dir, opts)
	r := rec(t, 1, 1, 64<<10)
	var pending []*Pending
	for written := 0; written < size; written += len(r) {
		p, err := j.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	last := j.LastLSN()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	c := conf.Default()
	c.Journal.MaxGroupBytes = conf.Size(opts.MaxGroupBytes)
	m := c.Memory()
	share := m.JournalWrite + m.JournalRead
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	j = mustOpen(t, dir, opts)
	runtime.ReadMemStats(&ms1)
	defer j.Close()
	if j.LastLSN() != last {
		t.Fatalf("reopened at LSN %d, want %d", j.LastLSN(), last)
	}
	alloc := int64(ms1.TotalAlloc - ms0.TotalAlloc)
	t.Logf("Open allocated %.1f MiB over a %d MiB newest segment", float64(alloc)/(1<<20), size>>20)
	if alloc > share {
		t.Fatalf("opening a journal whose newest segment holds %d MiB allocated %.1f MiB, more than its share of %.1f MiB (write buffers and reads)",
			size>>20, float64(alloc)/(1<<20), float64(share)/(1<<20))
	}
}

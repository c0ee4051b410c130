package journal

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// naiveJournal is the baseline: every Append is one write and one fsync,
// serialized. It is what a journal without group commit costs.
type naiveJournal struct {
	mu     sync.Mutex
	f      *os.File
	lsn    uint64
	fsyncs int
	buf    []byte
}

func (n *naiveJournal) Append(rec []byte) (uint64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.buf = binary.AppendUvarint(n.buf[:0], uint64(len(rec)))
	n.buf = append(n.buf, rec...)
	if _, err := n.f.Write(n.buf); err != nil {
		return 0, err
	}
	if err := n.f.Sync(); err != nil {
		return 0, err
	}
	n.fsyncs++
	n.lsn++
	return n.lsn, nil
}

// drive runs total appends spread over workers goroutines and returns the
// elapsed time.
func drive(b *testing.B, workers, total int, rec []byte, appendFn func([]byte) error) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		n := total / workers
		if w < total%workers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := appendFn(rec); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkAppend measures group commit against the naive journal in the
// same run, on the file system of the test's temp directory (use a real
// disk: fsync on tmpfs costs nothing). Metrics: records/s and MB/s of both,
// the speedup, fsyncs/s and records per fsync (counted at the fsync call).
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, workers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("record=%dKiB/appenders=%d", size>>10, workers), func(b *testing.B) {
				r := rec(b, 0, 0, size-60)
				dir := b.TempDir()
				opts := Options{SegmentBytes: 64 << 20, MaxBytes: 64 << 30, MaxGroupBytes: 4 << 20}
				c := counting(&opts)
				j, err := Open(filepath.Join(dir, "journal"), opts)
				if err != nil {
					b.Fatal(err)
				}
				f, err := os.Create(filepath.Join(dir, "naive"))
				if err != nil {
					b.Fatal(err)
				}
				naive := &naiveJournal{f: f}
				ctx := context.Background()
				c.mu.Lock()
				c.perSync = nil
				c.mu.Unlock()

				// The naive journal runs first, so the journal is not
				// favoured by going first on a fresh file system area.
				b.SetBytes(int64(len(r)))
				b.StopTimer()
				nt := drive(b, workers, b.N, r, func(r []byte) error { _, err := naive.Append(r); return err })
				b.StartTimer()
				jt := drive(b, workers, b.N, r, func(r []byte) error { _, err := j.Append(ctx, r); return err })
				b.StopTimer()

				j.Close()
				f.Close()
				c.mu.Lock()
				syncs := len(c.perSync)
				c.mu.Unlock()
				jRate := float64(b.N) / jt.Seconds()
				nRate := float64(b.N) / nt.Seconds()
				b.ReportMetric(jRate, "records/s")
				b.ReportMetric(nRate, "naive-records/s")
				b.ReportMetric(jRate/nRate, "x-naive")
				b.ReportMetric(float64(syncs)/jt.Seconds(), "fsyncs/s")
				b.ReportMetric(float64(b.N)/float64(max(syncs, 1)), "records/fsync")
				b.ReportMetric(float64(naive.fsyncs)/nt.Seconds(), "naive-fsyncs/s")
			})
		}
	}
}

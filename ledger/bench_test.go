package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dropCaches empties the page cache so that a read measures the disk, not
// memory; it needs root, and the benchmark says so when it cannot.
func dropCaches(b *testing.B) {
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		b.Skipf("cannot drop the page cache (needs root): %v", err)
	}
}

// cachedMB is the page cache size (Cached in /proc/meminfo), in MB.
func cachedMB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		b.Skip("no /proc/meminfo")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Cached:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024 / 1e6
		}
	}
	return 0
}

// BenchmarkLedger writes 256 MiB of 64 KiB records (synced every 4 MiB,
// as the flusher would) and reads them back as a catch-up reader after
// dropping the page cache, with O_DIRECT and with buffered files in the
// same run. Metrics: write-MB/s and read-MB/s for each mode, and how much
// the page cache grew while writing (what O_DIRECT is for: ledger traffic
// must not push the journal's pages out).
func BenchmarkLedger(b *testing.B) {
	const total = 256 << 20
	const recSize = 64 << 10
	r := rec(b, 0, recSize-60)
	count := total / len(r)
	for _, direct := range []bool{true, false} {
		b.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(b *testing.B) {
			var wsec, rsec, cacheGrowth float64
			for i := 0; i < b.N; i++ {
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				l, err := Open(dir, Options{SegmentBytes: 64 << 20, DirectIO: direct})
				if err != nil {
					b.Fatal(err)
				}
				dropCaches(b)
				cachedBefore := cachedMB(b)
				start := time.Now()
				for lsn := uint64(1); lsn <= uint64(count); lsn++ {
					if err := l.Append(lsn, r); err != nil {
						b.Fatal(err)
					}
					if lsn%64 == 0 {
						if err := l.Sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
				wsec += time.Since(start).Seconds()
				cacheGrowth += cachedMB(b) - cachedBefore
				dropCaches(b)
				start = time.Now()
				rd := l.Reader(1)
				n := 0
				for rd.Next() {
					n++
				}
				if rd.Err() != nil || n != count {
					b.Fatalf("read %d of %d: %v", n, count, rd.Err())
				}
				rsec += time.Since(start).Seconds()
				rd.Close()
				l.Close()
				os.RemoveAll(dir)
			}
			mb := float64(b.N) * float64(count*len(r)) / 1e6
			b.ReportMetric(mb/wsec, "write-MB/s")
			b.ReportMetric(mb/rsec, "read-MB/s")
			b.ReportMetric(cacheGrowth/float64(b.N), "pagecache-growth-MB")
		})
	}
}

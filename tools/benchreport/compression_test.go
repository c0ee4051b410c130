package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// testLogs writes two small log files and returns their events.
func testLogs(t *testing.T) []filebeatlogs.LogFile {
	t.Helper()
	files, err := filebeatlogs.Load(testLogsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// testLogsDir writes two small log files in a folder and returns it.
func testLogsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for f, name := range []string{"web.log", "db.log"} {
		var b strings.Builder
		for i := range 3000 + f*500 { // more than one record's worth in each
			fmt.Fprintf(&b, "2026-12-02T10:%02d:%02d %s request %d took %d ms status=%d\n", i/60%60, i%60, name, i, i%97, 200+i%3*100)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMeasureCodecs: every codec of the table is measured on records of
// at most 2048 events of one file (3000 and 3500 lines: four records),
// gives its events back, stores less than the records for repetitive
// lines, and has positive speeds and CPU; logpond's codecs and levels
// come first.
func TestMeasureCodecs(t *testing.T) {
	files := testLogs(t)
	rows, err := measureCodecs(files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"zstd fastest", "zstd default", "zstd better", "zstd best", "s2 fastest", "s2 default", "s2 better", "zlib 3", "zstd per event"}
	if len(rows) != len(want) {
		t.Fatalf("%d codecs measured, want %v", len(rows), want)
	}
	for i, r := range rows {
		if r.Codec != want[i] || r.Records != 4 || r.Events != 6500 || r.Raw <= 0 {
			t.Errorf("row %d: %s, %d records of %d events, raw %d; want %s, 4 records of 6500 events", i, r.Codec, r.Records, r.Events, r.Raw, want[i])
		}
		// A record's block finds the repetition between events; an
		// event alone only the repetition within it.
		limit := 0.5
		if r.Codec == "zstd per event" {
			limit = 1
		}
		if r.Ratio() <= 0 || r.Ratio() >= limit || r.FileMean <= 0 || r.FileMean >= limit {
			t.Errorf("%s: ratio %.3f, per-file mean %.3f: want between 0 and %v for these lines", r.Codec, r.Ratio(), r.FileMean, limit)
		}
		if r.CompressMBps <= 0 || r.DecompressMBps <= 0 || r.CompressCPU <= 0 || r.DecompressCPU <= 0 {
			t.Errorf("%s: speeds %.0f / %.0f MB/s, CPU %.3f / %.3f ms", r.Codec, r.CompressMBps, r.DecompressMBps, r.CompressCPU, r.DecompressCPU)
		}
		if (i < 7) != (r.Memory > 0) { // logpond's own state a bound
			t.Errorf("%s: state bound %d", r.Codec, r.Memory)
		}
	}
	// Per event, a codec loses what repeats between events.
	if rows[8].Ratio() <= rows[1].Ratio() {
		t.Errorf("zstd per event stores %.3f, no more than a record's block at the same level (%.3f)", rows[8].Ratio(), rows[1].Ratio())
	}
}

// TestMeasureCodecsRefusesALossyCodec: a codec whose output does not
// give the events back fails the measurement instead of being timed.
func TestMeasureCodecsRefusesALossyCodec(t *testing.T) {
	lossy := codec{name: "lossy",
		compress: func(dst, rec []byte) ([]byte, error) { return append(dst, rec[:len(rec)/2]...), nil },
		decompress: func(stored, rec []byte) error {
			if rec != nil && len(stored) != len(rec) {
				return fmt.Errorf("%d bytes back for %d", len(stored), len(rec))
			}
			return nil
		},
		close: func() {}}
	if _, err := measureWith(testLogs(t), []codec{lossy}); err == nil || !strings.Contains(err.Error(), "does not give the record back") {
		t.Fatalf("a lossy codec was measured: %v", err)
	}
}

// TestCompressionMarkdown: the section shows every codec, the ledger
// settings with bytes per event byte, each ingest shape's default, zstd
// and none rows with the first two's ratios over none, the drains, a
// verdict per goal on the defaults (met and not met as the figures say,
// the ingest one naming the worst shape) and the command that reproduces
// it; a skipped part says why and nothing else.
func TestCompressionMarkdown(t *testing.T) {
	o := defaultOptions()
	c := &compressionResult{LogsDir: "/logs", Files: 10, Events: 1000, EventBytes: 700000,
		Codecs: []codecRow{
			{Codec: "zstd fastest", What: "ledger", Records: 12, Events: 1000, Raw: 1000, Stored: 80, FileMean: 0.1, CompressMBps: 400, DecompressMBps: 900, CompressCPU: 1.5, DecompressCPU: 0.5, Memory: 2 << 20},
			{Codec: "s2 fastest", What: "ledger", Records: 12, Events: 1000, Raw: 1000, Stored: 90, FileMean: 0.1, CompressMBps: 900, DecompressMBps: 900, CompressCPU: 0.5, DecompressCPU: 0.5, Memory: 128 << 10},
			{Codec: "zlib 3", What: "client window", Records: 12, Events: 1000, Raw: 1000, Stored: 120, FileMean: 0.15, CompressMBps: 60, DecompressMBps: 300, CompressCPU: 9, DecompressCPU: 2},
		},
		Ledger: []zLedgerRow{
			{Compression: zDefault, Events: 200000, EventBytes: 100 << 20, LedgerBytes: 7 << 20, RawBytes: 101 << 20, StoredBytes: 6 << 20, PeakRSS: 90 << 20, Formula: 300 << 20, MBPerSec: 80},
			{Compression: "zstd", Events: 200000, EventBytes: 100 << 20, LedgerBytes: 4 << 20, RawBytes: 101 << 20, StoredBytes: 3 << 20, PeakRSS: 95 << 20, Formula: 310 << 20, MBPerSec: 70},
			{Compression: "none", Events: 200000, EventBytes: 100 << 20, LedgerBytes: 102 << 20, RawBytes: 101 << 20, StoredBytes: 101 << 20, PeakRSS: 80 << 20, Formula: 290 << 20, MBPerSec: 85},
		},
		Ingest: []zIngestRow{
			{Shape: "1 KiB", Compression: 3, Connections: 4, Batch: 2048, Default: summarize([]lumberload.Result{fakeResult(950, time.Millisecond)}), Zstd: summarize([]lumberload.Result{fakeResult(700, time.Millisecond)}), None: summarize([]lumberload.Result{fakeResult(1000, time.Millisecond)}), VsNone: 0.95, ZstdVsNone: 0.7, Formula: 300 << 20},
			{Shape: "real logs", Compression: 3, Connections: 4, Batch: 2048, Default: summarize([]lumberload.Result{fakeResult(850, time.Millisecond)}), Zstd: summarize([]lumberload.Result{fakeResult(800, time.Millisecond)}), None: summarize([]lumberload.Result{fakeResult(1000, time.Millisecond)}), VsNone: 0.85, ZstdVsNone: 0.8, Formula: 300 << 20},
		},
		Drain: []zDrainRow{
			{Compression: zDefault, Events: 200000, Elapsed: 4 * time.Second, DeviceRead: 7 << 20, CPU: 3 * time.Second, PeakRSS: 100 << 20, Formula: 300 << 20, Rounds: 2, VsNone: 1.25},
			{Compression: "zstd", Events: 200000, Elapsed: 5 * time.Second, DeviceRead: 4 << 20, CPU: 3 * time.Second, PeakRSS: 100 << 20, Formula: 310 << 20, Rounds: 2, VsNone: 1.1},
			{Compression: "none", Events: 200000, Elapsed: 5 * time.Second, DeviceRead: 102 << 20, CPU: 3 * time.Second, PeakRSS: 95 << 20, Formula: 290 << 20, Rounds: 2},
		},
	}
	md := compressionMarkdown(c, o)
	for _, want := range []string{
		"| zstd fastest | ledger | 0.080 | 0.100 | 400 | 900 | 1.50 | 0.50 | 2 |",
		"| s2 fastest | ledger | 0.090 | 0.100 | 900 | 900 | 0.50 | 0.50 | 0.125 |",
		"| zlib 3 | client window | 0.120 | 0.150 | 60 | 300 | 9.00 | 2.00 | – |",
		"| " + defaultCompression() + " (default) | 200000 | 100.0 | 7.0 | 0.070 | 101.0 | 6.0 | 0.059 | 80.0 | 90 | 300 |",
		`| zstd fastest (compression = "zstd") | 200000 | 100.0 | 4.0 | 0.040 |`,
		`| none (compression = "none") | 200000 | 100.0 | 102.0 | 1.020 |`,
		"Verdict: **met** (0.070); moonshot **not met** (0.070)",
		"| 1 KiB | 3 | 4×2048 | **" + defaultCompression() + " (default)** | 950 | 0.9 | 1.10 | 1052.63 | 64 | 300 | **0.95×** |",
		`| 1 KiB | 3 | 4×2048 | zstd fastest (compression = "zstd") | 700 | 0.7 | 1.10 | 1428.57 | 64 |  | 0.70× |`,
		"| 1 KiB | 3 | 4×2048 | none (compression = \"none\") | 1000 |",
		"| real logs | 3 | 4×2048 | **" + defaultCompression() + " (default)** | 850 |",
		"Verdict: **not met** (lowest 0.85×, real logs zlib 3)",
		"| " + defaultCompression() + " (default) | 200000 | 4.00 | 50000 | **1.25×** | 7.0 | 3.00 | 100 | 300 |",
		`| zstd fastest (compression = "zstd") | 200000 | 5.00 | 40000 | 1.10× |`,
		`| none (compression = "none") | 200000 | 5.00 | 40000 |  | 102.0 |`,
		"Verdict: **met** (1.25×)",
		compressionCommand(o), "-parts compression -logs LOGS",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "Verdict:") != 3 {
		t.Errorf("want three verdicts:\n%s", md)
	}

	skipped := compressionMarkdown(&compressionResult{Skipped: "no folder of real log lines at /nowhere (-logs)"}, o)
	if !strings.Contains(skipped, "Not measured: no folder of real log lines at /nowhere") || strings.Contains(skipped, "Verdict") {
		t.Errorf("skipped section:\n%s", skipped)
	}
	r := &report{Opts: o, Compression: c}
	if full := r.markdown(); !strings.Contains(full, "## Compression: stored records") || !strings.Contains(full, "-compression-events 200000") {
		t.Errorf("the report has no compression section or its flags in the command")
	}
}

// TestCompressionSkipsWithoutLogs: with no folder of logs the part
// measures nothing (it starts no server) and says why.
func TestCompressionSkipsWithoutLogs(t *testing.T) {
	o := defaultOptions()
	o.logs = filepath.Join(t.TempDir(), "missing")
	var progress strings.Builder
	b := &bench{o: o, log: &progress}
	res, err := b.compression(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Skipped, o.logs) || res.Codecs != nil || !strings.Contains(progress.String(), "skipped") {
		t.Fatalf("result %+v, progress %q", res, progress.String())
	}
}

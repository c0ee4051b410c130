package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// syntheticEvents returns n small Filebeat-like events that differ in
// their message and offset only, as a file's lines do.
func syntheticEvents(n int) [][]byte {
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"@timestamp":"2026-12-02T10:57:%02d.000Z","message":"GET /api/items/%d HTTP/1.1 200 %d","log":{"offset":%d,"file":{"path":"/var/log/nginx/access.log"}},"host":{"name":"app-01"},"agent":{"type":"filebeat","version":"8.19.0"}}`,
			i%60, i*7, 100+i, i*120)
	}
	return evs
}

// TestPlacement runs every option once, briefly, and checks what the
// rows say is consistent with what each option does, never how fast.
func TestPlacement(t *testing.T) {
	o := placementOptions{
		JournalDir: t.TempDir(), LedgerDir: t.TempDir(),
		Events:    syntheticEvents(40),
		Producers: 2, BatchEvents: 64,
		Duration: 200 * time.Millisecond, Rounds: 1,
		Compression: record.Zstd(record.LevelFastest),
	}
	rows, err := measurePlacement(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	byKey := map[string]placementRun{}
	for _, r := range rows {
		if len(r.Runs) != 1 {
			t.Fatalf("option (%s): %d runs, want 1", r.Key, len(r.Runs))
		}
		run := r.Runs[0]
		byKey[r.Key] = run
		if run.Records <= 0 || run.Events != run.Records*int64(o.BatchEvents) || run.Raw <= 0 || run.Journal <= 0 || run.Stored <= 0 || run.Disk < run.Stored {
			t.Errorf("option (%s): counts not sane: %+v", r.Key, run)
		}
		if run.Elapsed < o.Duration || run.CPU <= 0 || run.P50 <= 0 || run.P99 < run.P50 || run.PeakHeap == 0 || run.PeakJournal <= 0 {
			t.Errorf("option (%s): times or heap not sane: %+v", r.Key, run)
		}
	}
	a, b, c := byKey["a"], byKey["b"], byKey["c"]
	if c.Stored != c.Raw || c.Journal != c.Raw {
		t.Errorf("(c) stores %d and journals %d bytes of %d raw: want them equal", c.Stored, c.Journal, c.Raw)
	}
	if a.Journal != a.Raw {
		t.Errorf("(a) journals %d bytes of %d raw: the journal must get them uncompressed", a.Journal, a.Raw)
	}
	for key, run := range map[string]placementRun{"a": a, "b": b} {
		if run.storedPerRaw() >= c.storedPerRaw() {
			t.Errorf("(%s) stores %.3f bytes per raw byte, not fewer than (c)'s %.3f", key, run.storedPerRaw(), c.storedPerRaw())
		}
	}
	if b.journalPerRaw() >= c.journalPerRaw() {
		t.Errorf("(b) journals %.3f bytes per raw byte, not fewer than (c)'s %.3f", b.journalPerRaw(), c.journalPerRaw())
	}
	// The stores are gone: only the directories given remain, empty.
	for _, dir := range []string{o.JournalDir, o.LedgerDir} {
		if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
			t.Errorf("%s holds %d entries after the runs (err %v), want none", dir, len(left), err)
		}
	}

	var out bytes.Buffer
	renderPlacement(&out, rows, o)
	md := out.String()
	for _, want := range []string{"| (a) |", "| (b) |", "| (c) |", "RSS is not measured per option", "1.00×"} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
}

// TestPlacementPaced checks a paced run starts no record before its
// time: at most Duration × Rate events per option, however fast the
// pipeline.
func TestPlacementPaced(t *testing.T) {
	o := placementOptions{
		JournalDir: t.TempDir(), LedgerDir: t.TempDir(),
		Events:    syntheticEvents(40),
		Producers: 3, BatchEvents: 16,
		Duration: 200 * time.Millisecond, Rounds: 1,
		Compression: record.Zstd(record.LevelFastest),
		Rate:        400, // 80 events, 5 records in 200 ms
	}
	rows, err := measurePlacement(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if got := r.Runs[0].Records; got < 1 || got > 5 {
			t.Errorf("option (%s): %d records acknowledged, want 1 to 5 at %v events/s", r.Key, got, o.Rate)
		}
	}
	var out bytes.Buffer
	renderPlacement(&out, rows, o)
	if !strings.Contains(out.String(), "paced together at 400 events/s") {
		t.Errorf("the method does not say the run was paced:\n%s", out.String())
	}
}

// TestPlacementRefusesNoEvents checks the options are checked before
// anything is opened.
func TestPlacementRefusesNoEvents(t *testing.T) {
	_, err := measurePlacement(context.Background(), placementOptions{
		JournalDir: t.TempDir(), LedgerDir: t.TempDir(), Producers: 1, BatchEvents: 1, Duration: time.Millisecond, Rounds: 1})
	if err == nil {
		t.Fatal("no events: want an error")
	}
}

// TestPlacementFlusherFromFiles checks the flusher moves records that
// are not in the journal's in-memory tail (here there is none) from its
// files, in order, and releases them.
func TestPlacementFlusherFromFiles(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	j, err := journal.Open(t.TempDir(), journal.Options{SegmentBytes: 1 << 20, MaxBytes: 8 << 20, MaxGroupBytes: 1 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	l, err := ledger.Open(t.TempDir(), ledger.Options{SegmentBytes: 4 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs, err := placementRecords(syntheticEvents(30), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if _, err := j.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	f := &placementFlusher{j: j, l: l}
	if err := f.move(); err != nil {
		t.Fatal(err)
	}
	if l.LastLSN() != uint64(len(recs)) || f.fileRecords != int64(len(recs)) {
		t.Fatalf("ledger at LSN %d, %d records read from files; want %d and %d", l.LastLSN(), f.fileRecords, len(recs), len(recs))
	}
	r := l.Reader(1)
	defer r.Close()
	for i, want := range recs {
		if !r.Next() {
			t.Fatalf("record %d: %v", i+1, r.Err())
		}
		if r.LSN() != uint64(i+1) || !bytes.Equal(r.Record(), want) {
			t.Fatalf("record %d differs (LSN %d)", i+1, r.LSN())
		}
	}
	if first := j.FirstLSN(); first > uint64(len(recs))+1 {
		t.Fatalf("journal first LSN %d after the release", first)
	}
}

// TestPlacementTrial measures the three options on real logs:
// LOGPOND_PLACEMENT_LOGS names a folder of *.log files (one log line per
// line, e.g. /work/shared/testdata/logs); it is skipped without it.
// LOGPOND_PLACEMENT_DURATION (e.g. 1s) and LOGPOND_PLACEMENT_RATE (events/s
// offered; unset: as fast as acknowledgements come) change the run. The
// figures are logged, never asserted.
func TestPlacementTrial(t *testing.T) {
	logs := os.Getenv("LOGPOND_PLACEMENT_LOGS")
	if logs == "" {
		t.Skip("set LOGPOND_PLACEMENT_LOGS to a folder of *.log files to measure")
	}
	files, err := filepath.Glob(filepath.Join(logs, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.log in %s (%v)", logs, err)
	}
	var events [][]byte
	for i, f := range files {
		evs, err := filebeatEvents(f, i+1)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	o := placementOptions{
		JournalDir: t.TempDir(), LedgerDir: t.TempDir(),
		Events: events, Producers: 4, BatchEvents: 2048,
		Duration: 5 * time.Second, Rounds: 3, Compression: record.Zstd(record.LevelDefault),
	}
	if d := os.Getenv("LOGPOND_PLACEMENT_DURATION"); d != "" {
		if o.Duration, err = time.ParseDuration(d); err != nil {
			t.Fatal(err)
		}
	}
	if r := os.Getenv("LOGPOND_PLACEMENT_RATE"); r != "" {
		if _, err := fmt.Sscan(r, &o.Rate); err != nil {
			t.Fatalf("LOGPOND_PLACEMENT_RATE %q: %v", r, err)
		}
	}
	rows, err := measurePlacement(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	renderPlacement(&out, rows, o)
	for _, r := range rows {
		for i, run := range r.Runs {
			fmt.Fprintf(&out, "(%s) round %d: %+v\n", r.Key, i+1, run)
		}
	}
	t.Log("\n" + out.String())
}

// filebeatEvents returns one event per line of the log file at path,
// shaped as Filebeat 8 ships a filestream line from host number host:
// the same host, agent and file fields on every event, the message,
// offset and timestamp varying.
func filebeatEvents(path string, host int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := fmt.Sprintf("web-%02d", host)
	type obj = map[string]any
	ev := struct {
		Timestamp string `json:"@timestamp"`
		Metadata  obj    `json:"@metadata"`
		Log       struct {
			Offset int64 `json:"offset"`
			File   obj   `json:"file"`
		} `json:"log"`
		Message string `json:"message"`
		Input   obj    `json:"input"`
		ECS     obj    `json:"ecs"`
		Host    obj    `json:"host"`
		Agent   obj    `json:"agent"`
	}{
		Metadata: obj{"beat": "filebeat", "type": "_doc", "version": "8.19.0"},
		Input:    obj{"type": "filestream"},
		ECS:      obj{"version": "8.0.0"},
		Host: obj{"name": name, "hostname": name, "architecture": "x86_64",
			"id":  fmt.Sprintf("5e0c2b7f41d9a8e6%016x", host),
			"ip":  []string{fmt.Sprintf("10.1.4.%d", 20+host), fmt.Sprintf("fe80::1c:42ff:fe0a:%x", host)},
			"mac": []string{fmt.Sprintf("02-1C-42-0A-00-%02X", host)},
			"os": obj{"platform": "ubuntu", "family": "debian", "name": "Ubuntu", "type": "linux",
				"version": "24.04.1 LTS (Noble Numbat)", "codename": "noble", "kernel": "6.8.0-49-generic"}},
		Agent: obj{"type": "filebeat", "version": "8.19.0", "name": name,
			"id":           fmt.Sprintf("9a6d3f10-2c4b-4e7a-b851-%012x", host),
			"ephemeral_id": fmt.Sprintf("71e4c0d2-8b3a-4f5e-9d06-%012x", host)},
	}
	ev.Log.File = obj{"path": "/var/log/" + strings.TrimSuffix(filepath.Base(path), ".log") + ".log"}
	at := time.Date(2026, 12, 2, 10, 57, 41, 0, time.UTC)
	var evs [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for off := int64(0); sc.Scan(); off += int64(len(sc.Bytes())) + 1 {
		ev.Message, ev.Log.Offset = sc.Text(), off
		ev.Timestamp = at.Format("2006-01-02T15:04:05.000Z")
		at = at.Add(2113 * time.Microsecond)
		b, err := json.Marshal(&ev)
		if err != nil {
			return nil, err
		}
		evs = append(evs, b)
	}
	return evs, sc.Err()
}

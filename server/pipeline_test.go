package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

func pipelineConfig(t *testing.T, root string) *conf.Config {
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 1<<20, 64<<20
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes = 1<<20, 1<<30
	cfg.Ledger.FlushInterval = conf.Duration(5 * time.Millisecond)
	return cfg
}

func testRecord(t testing.TB, n uint64) []byte {
	return testRecordText(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", int(n%2000))))
}

// testRecordText encodes one event into a record.
func testRecordText(event string) []byte {
	b, err := record.Encode(nil, time.Unix(1_800_000_000, 0), [][]byte{[]byte(event)})
	if err != nil {
		panic(err) // a one-event record always fits
	}
	return b
}

// running is a Server whose Run goroutine the test owns.
type running struct {
	s    *Server
	stop context.CancelFunc
	done chan error
	log  *syncbuf.Buffer
}

func start(t *testing.T, cfg *conf.Config) *running {
	t.Helper()
	lb := &syncbuf.Buffer{}
	s, err := Open(cfg, slog.New(slog.NewTextHandler(lb, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, stop: cancel, done: make(chan error, 1), log: lb}
	go func() { r.done <- s.Run(ctx) }()
	return r
}

func (r *running) shutdown(t *testing.T) {
	t.Helper()
	r.stop()
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendN appends records n..n+count-1 (content by number) and returns
// their LSNs in order.
func appendN(t *testing.T, j *journal.Journal, from, count uint64) []uint64 {
	t.Helper()
	var lsns []uint64
	for n := from; n < from+count; n++ {
		lsn, err := j.Append(context.Background(), testRecord(t, n))
		if err != nil {
			t.Fatal(err)
		}
		lsns = append(lsns, lsn)
	}
	return lsns
}

// ledgerContents reopens the stores read-only-ish (a fresh Open, no Run)
// and returns the ledger's records by LSN.
func ledgerContents(t *testing.T, cfg *conf.Config) map[uint64][]byte {
	t.Helper()
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[uint64][]byte{}
	r := s.ledger().Reader(1)
	defer r.Close()
	for r.Next() {
		if rec := r.Record(); rec[0] != record.VersionCompressed {
			out[r.LSN()] = bytes.Clone(rec)
		} else {
			out[r.LSN()] = version1(t, r.Decoded())
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// version1 is rec encoded as the input wrote it (record version 1), so
// that tests compare what the ledger holds, compressed or not, with the
// records they submitted.
func version1(t *testing.T, rec record.Record) []byte {
	t.Helper()
	var b record.Builder
	b.Reset(rec.Received())
	for ev := range rec.Events() {
		if err := b.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.FinishBatch(rec.Flags(), rec.Slot())
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func TestFlusherMovesRecordsAndReleasesJournal(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	r := start(t, cfg)
	lsns := appendN(t, r.s.journal(), 0, 3000) // ~3 MiB: several journal generations
	last := lsns[len(lsns)-1]
	deadline := time.Now().Add(30 * time.Second)
	for r.s.ledger().LastLSN() < last || r.s.journal().FirstLSN() <= 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the ledger holds up to %d of %d, journal first LSN %d", r.s.ledger().LastLSN(), last, r.s.journal().FirstLSN())
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	for i, lsn := range lsns {
		if !bytes.Equal(got[lsn], testRecord(t, uint64(i))) {
			t.Fatalf("LSN %d missing or wrong in the ledger", lsn)
		}
	}
}

// TestShutdownFlushesEverything: records acknowledged just before the stop
// are in the ledger when Run returns.
func TestShutdownFlushesEverything(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Ledger.FlushInterval = conf.Duration(time.Minute) // only the final flush moves them
	r := start(t, cfg)
	lsns := appendN(t, r.s.journal(), 0, 500)
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	if len(got) != len(lsns) {
		t.Fatalf("ledger holds %d records after shutdown, want %d", len(got), len(lsns))
	}
}

// TestRestartReplaysJournal: records that were only in the journal when
// the process stopped (no flush ran) reach the ledger after a restart, by
// reading the journal's files.
func TestRestartReplaysJournal(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	lsns := appendN(t, s.journal(), 0, 2000)
	s.Close() // no Run: nothing was flushed
	r := start(t, cfg)
	if !strings.Contains(r.log.String(), "to_replay=2000") {
		t.Errorf("restart log does not report the replay:\n%s", r.log.String())
	}
	waitUntil(t, "the replay", func() bool { return r.s.ledger().LastLSN() >= lsns[len(lsns)-1] })
	var m dto.Metric
	if err := r.s.metrics.fileRecords.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != float64(len(lsns)) {
		t.Errorf("logpond_flusher_journal_file_records_total = %v after replaying %d records from the files", n, len(lsns))
	}
	r.shutdown(t)
	if got := ledgerContents(t, cfg); len(got) != len(lsns) {
		t.Fatalf("ledger holds %d records after replay, want %d", len(got), len(lsns))
	}
}

// TestReplacedJournal: a deleted journal directory is recreated and LSNs
// continue after the ledger's last; the log says so.
func TestReplacedJournal(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	r := start(t, cfg)
	first := appendN(t, r.s.journal(), 0, 100)
	r.shutdown(t)
	if err := os.RemoveAll(cfg.Journal.Dir); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(cfg.Journal.Dir, 0o750)
	r = start(t, cfg)
	second := appendN(t, r.s.journal(), 100, 10)
	if second[0] != first[len(first)-1]+1 {
		t.Fatalf("after replacing the journal the first LSN is %d, want %d", second[0], first[len(first)-1]+1)
	}
	if !strings.Contains(r.log.String(), "journal directory is empty or new while the ledger holds data") {
		t.Errorf("log does not say the journal was replaced:\n%s", r.log.String())
	}
	r.shutdown(t)
	if got := ledgerContents(t, cfg); len(got) != 110 {
		t.Fatalf("ledger holds %d records, want 110", len(got))
	}
}

// TestGapRefusesToStart: a journal that starts beyond the ledger's last
// LSN + 1 means records are in neither store: the refusal names them and
// the command that accepts their loss.
func TestGapRefusesToStart(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	r := start(t, cfg)
	appendN(t, r.s.journal(), 0, 10)
	r.shutdown(t)
	// A journal from elsewhere, starting at LSN 21.
	os.RemoveAll(cfg.Journal.Dir)
	j, err := journal.Open(cfg.Journal.Dir, journal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20, StartAfter: 20})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, 0, 5)
	j.Close()
	_, err = Open(cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "journal starts at LSN 21 but the ledger ends at LSN 10") ||
		!strings.Contains(err.Error(), "records 11–20 (10 records, events unknown)") || !strings.Contains(err.Error(), " -ledger "+cfg.Ledger.Dir+" accept-loss`") {
		t.Fatalf("got %v, want a refusal naming the gap and the accept-loss command", err)
	}
}

// TestFlushIntoAFullLedger: a flush into a full ledger never waits for
// space while holding unsynced records (outputs read only synced ones, so
// no cursor could ever pass them to make room): it syncs what it appended,
// releases the journal up to it and returns ledger.ErrFull at once. Flushing
// again goes on after those records (the ledger takes no LSN twice), the
// final flush gives up on the full ledger without failing, and nothing is
// lost: with room again, every record reaches the ledger once.
func TestFlushIntoAFullLedger(t *testing.T) {
	root := t.TempDir()
	cfg := pipelineConfig(t, root)
	cfg.Ledger.MaxBytes = 2 << 20
	cfg.Journal.MaxGroupBytes = 256 << 10         // records of at most 512 KiB: the ledger holds two
	cfg.Ledger.Compression = conf.CompressionNone // records of their own size, not what their padding compresses to
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	const n = 40 // records of 100 KB: twice what the ledger may hold
	want := map[uint64][]byte{}
	for i := range n {
		rec := testRecordText(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 100_000)))
		lsn, err := s.journal().Append(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		want[lsn] = rec
	}
	f := newFlusher(flusher{flusherStores: s.stores, log: slog.New(slog.DiscardHandler)})
	// No deadline: a flush that waited for space would hang here.
	if err := f.flush(); !errors.Is(err, ledger.ErrFull) {
		t.Fatalf("first flush into a full ledger: %v, want ledger.ErrFull", err)
	}
	l := s.ledger()
	if l.AppendedLSN() != l.LastLSN() || l.LastLSN() == 0 {
		t.Fatalf("appended %d, synced %d: a full ledger must leave nothing unsynced", l.AppendedLSN(), l.LastLSN())
	}
	if first := s.journal().FirstLSN(); first > l.LastLSN()+1 {
		t.Fatalf("journal starts at %d, ledger synced %d: released records the ledger lacks", first, l.LastLSN())
	}
	if err := f.flush(); !errors.Is(err, ledger.ErrFull) {
		t.Fatalf("second flush: %v, want ledger.ErrFull again", err)
	}
	if err := f.finish(); err != nil {
		t.Fatalf("final flush into a full ledger: %v, want nil (the journal keeps the rest)", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.Ledger.MaxBytes = 1 << 30
	s, err = Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f = newFlusher(flusher{flusherStores: s.stores, log: slog.New(slog.DiscardHandler)})
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := ledgerContents(t, cfg)
	if len(got) != n {
		t.Fatalf("ledger holds %d records, want %d", len(got), n)
	}
	for lsn, rec := range want {
		if !bytes.Equal(got[lsn], rec) {
			t.Fatalf("LSN %d differs or is missing", lsn)
		}
	}
}

// TestRetentionWithoutOutputs: the flusher applies the ledger's retention
// whatever moved the cursors, here a cursor set directly with no output
// running: segments every cursor has passed are deleted.
func TestRetentionWithoutOutputs(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Ledger.SegmentBytes, cfg.Ledger.FlushInterval, cfg.Ledger.Retention = 1<<20, conf.Duration(5*time.Millisecond), 0
	cfg.Ledger.Compression = conf.CompressionNone // records of their own size, filling segments, not what their padding compresses to
	r := start(t, cfg)
	defer r.shutdown(t)
	var last uint64
	for n := range uint64(12) {
		rec := testRecordText(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", 300_000)))
		lsn, err := r.s.journal().Append(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		last = lsn
	}
	segments := func() int {
		m, _ := filepath.Glob(filepath.Join(cfg.Ledger.Dir, "*.seg"))
		return len(m)
	}
	deadline := time.Now().Add(30 * time.Second)
	for r.s.ledger().LastLSN() < last {
		if time.Now().After(deadline) {
			t.Fatalf("the ledger never reached LSN %d", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := segments()
	if before < 3 {
		t.Fatalf("%d segments: the test needs several", before)
	}
	if err := r.s.ledger().SetCursor("replay", last); err != nil {
		t.Fatal(err)
	}
	for segments() >= before {
		if time.Now().After(deadline) {
			t.Fatalf("still %d segments after the only cursor passed them all", segments())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// legacyOutput is the runner of the output named "elasticsearch" (the
// [output.elasticsearch] table), nil when it is not enabled.
func (s *Server) legacyOutput() *outputRunner { return s.outputs.byName(conf.LegacyOutputName) }

// legacyLag is the lag of the output named "elasticsearch".
func (s *Server) legacyLag() lag {
	st := s.snapshot()
	for _, o := range st.outputs {
		if o.out.name == conf.LegacyOutputName {
			return s.outputLag(st, o)
		}
	}
	return lag{}
}

// legacyNamed is the [output.elasticsearch] table of cfg as a named
// output, enabled or not.
func legacyNamed(cfg *conf.Config) conf.NamedOutput {
	return conf.NamedOutput{Name: conf.LegacyOutputName, Type: conf.TypeElasticsearch, Key: "output.elasticsearch", Elasticsearch: &cfg.Output.Elasticsearch}
}

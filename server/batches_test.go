package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/record"
)

// part encodes one record of a batch: its event, flags and slot.
func part(t testing.TB, event string, flags record.Flags, slot uint16) []byte {
	t.Helper()
	var b record.Builder
	b.Reset(time.Unix(1_800_000_000, 0))
	if err := b.Add([]byte(event)); err != nil {
		t.Fatal(err)
	}
	rec, err := b.FinishBatch(flags, slot)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(rec)
}

// TestFailedBatchReachesNoOutput: a batch spanning several records fails
// on an event that is not JSON after its first records are durable in the
// journal; the client sends it again, corrected. Elasticsearch holds every
// event of the batch exactly once: none of the failed copy's records
// reached it.
func TestFailedBatchReachesNoOutput(t *testing.T) {
	es := startES(t, estest.Options{Seed: 21})
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Journal.MaxGroupBytes = 4 << 10 // records of at most 8 KiB: a few events each
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval = conf.Duration(10 * time.Millisecond)
	r := start(t, cfg)
	defer r.shutdown(t)
	waitUntil(t, "the input", func() bool { return r.s.beats != nil && r.s.beats.Addr() != nil })

	const n = 40
	batch := func(bad int) []string {
		evs := make([]string, n)
		for i := range evs {
			evs[i] = fmt.Sprintf(`{"i":%d,"message":"%s"}`, i, strings.Repeat("m", 1000))
			if i == bad {
				evs[i] = `{"i":` + strings.Repeat("m", 1000)
			}
		}
		return evs
	}
	send := func(evs []string) (uint32, error) {
		conn, err := net.Dial("tcp", r.s.beats.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(lumbertest.Window(evs...))
		for {
			var ack [6]byte
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.ReadFull(conn, ack[:]); err != nil {
				return 0, err
			}
			if seq := binary.BigEndian.Uint32(ack[2:]); seq != 0 {
				return seq, nil
			}
		}
	}
	if seq, err := send(batch(30)); err == nil {
		t.Fatalf("the batch with an invalid event was acknowledged (%d)", seq)
	}
	failedRecords := r.s.journal().LastLSN()
	if failedRecords < 3 {
		t.Fatalf("the failed batch left %d records in the journal: it was not split, so this test proves nothing", failedRecords)
	}
	if seq, err := send(batch(-1)); err != nil || seq != n {
		t.Fatalf("the resent batch: ACK %d, %v", seq, err)
	}
	last := r.s.journal().LastLSN()
	waitUntil(t, "every record in the ledger", func() bool { return r.s.ledger().LastLSN() >= last })
	waitUntil(t, "the batch in Elasticsearch", func() bool { return es.Count() >= n })
	waitUntil(t, "the output past every record", func() bool { return r.s.legacyOutput().Stats().CursorLSN >= last })
	seen := map[int64]int{}
	for _, d := range es.Docs() {
		seen[gjson.GetBytes(d.Source, "i").Int()]++
	}
	for i := range n {
		if seen[int64(i)] != 1 {
			t.Errorf("event %d stored %d times", i, seen[int64(i)])
		}
	}
	if es.Count() != n {
		t.Fatalf("%d documents, want %d", es.Count(), n)
	}
}

// flushTo builds a flusher over s with its batch rules (a hold limit of
// limit) and a clock the test sets.
func flushTo(s *Server, limit time.Duration, now *time.Time) *flusher {
	f := newFlusher(flusher{flusherStores: s.stores, log: slog.New(slog.DiscardHandler),
		bat: newBatches(s.bootLSN, limit, slog.New(slog.DiscardHandler))})
	f.bat.now = func() time.Time { return *now }
	return f
}

// ledgerFlags returns the flags and event count of the ledger's records
// by LSN.
func ledgerFlags(t *testing.T, s *Server) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	r := s.ledger().Reader(1)
	defer r.Close()
	for r.Next() {
		rec := r.Decoded()
		out[r.LSN()] = fmt.Sprintf("%s/%d", rec.Flags(), rec.Count())
	}
	return out
}

func wantLedger(t *testing.T, s *Server, want map[uint64]string) {
	t.Helper()
	got := ledgerFlags(t, s)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ledger (LSN: flags/events)\n got %v\nwant %v", got, want)
	}
}

// TestBatchResolution: the flusher moves a complete batch and whatever
// sits between its parts only once its last part is in the journal, and
// voids a batch that an abort, or a new batch on its slot, proves failed.
func TestBatchResolution(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_800_000_000, 0)
	f := flushTo(s, time.Minute, &now)
	ctx := context.Background()
	add := func(rec []byte) {
		t.Helper()
		if _, err := s.journal().Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() {
		t.Helper()
		if err := f.flush(); err != nil {
			t.Fatal(err)
		}
	}
	add(part(t, `{"a":1}`, record.More, 1))             // 1: slot 1 opens a batch
	add(part(t, `{"b":1}`, 0, 2))                       // 2: a whole batch on slot 2
	add(part(t, `{"a":2}`, record.More|record.Cont, 1)) // 3
	flush()
	wantLedger(t, s, map[uint64]string{})   // held: 1 is open, 2 waits behind it
	add(part(t, `{"a":3}`, record.Cont, 1)) // 4: the last part
	flush()
	wantLedger(t, s, map[uint64]string{1: "more/1", 2: "-/1", 3: "more|cont/1", 4: "cont/1"})

	add(part(t, `{"c":1}`, record.More, 3))             // 5: slot 3 opens a batch
	add(part(t, `{"d":1}`, record.More, 4))             // 6: slot 4 too
	add(part(t, `{"c":2}`, record.More|record.Cont, 3)) // 7
	add(record.AppendAbort(nil, 3, now))                // 8: slot 3's batch failed
	flush()
	wantLedger(t, s, map[uint64]string{1: "more/1", 2: "-/1", 3: "more|cont/1", 4: "cont/1", 5: "void/0"}) // 6 holds 7 and 8
	add(part(t, `{"e":1}`, 0, 4))                                                                          // 9: a new batch on slot 4: its connection ended without an abort
	flush()
	wantLedger(t, s, map[uint64]string{1: "more/1", 2: "-/1", 3: "more|cont/1", 4: "cont/1",
		5: "void/0", 6: "void/0", 7: "void/0", 8: "abort/0", 9: "-/1"})
}

// TestOpenBatchIsVoidAfterRestart: a batch whose last part was never
// written when logpond stopped (its client got no ACK and sends it again)
// reaches no output after the restart; what sits between its parts does.
func TestOpenBatchIsVoidAfterRestart(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range [][]byte{
		part(t, `{"a":1}`, record.More, 5),
		part(t, `{"b":1}`, 0, 6),
		part(t, `{"a":2}`, record.More|record.Cont, 5),
	} {
		if _, err := s.journal().Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil { // a crash: nothing flushed
		t.Fatal(err)
	}
	s, err = Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_800_000_000, 0)
	f := flushTo(s, time.Minute, &now)
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	wantLedger(t, s, map[uint64]string{1: "void/0", 2: "-/1", 3: "void/0"})
}

// TestHoldEndsWhenJournalIsFull: a client waiting for journal space cannot
// finish its batch while the flusher holds records the journal cannot
// release; the flusher moves the held records as they are (delivered, not
// voided) and the waiting append goes through.
func TestHoldEndsWhenJournalIsFull(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 1<<20, 2<<20
	cfg.Journal.SpareSegments = 0
	cfg.Input.Beats.MaxEventBytes = 512 << 10 // what the small journal admits
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_800_000_000, 0)
	f := flushTo(s, time.Hour, &now)
	ctx := context.Background()
	if _, err := s.journal().Append(ctx, part(t, `{"open":1}`, record.More, 1)); err != nil {
		t.Fatal(err)
	}
	big := part(t, `{"pad":"`+strings.Repeat("x", 100_000)+`"}`, 0, 2)
	appended := make(chan error, 1)
	go func() {
		// 3 MiB into a journal of 2: the last appends wait for space.
		for range 30 {
			if _, err := s.journal().Append(ctx, big); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	// Fill the journal until an append waits for space.
	waitUntil(t, "the journal to be full", func() bool { return s.journal().Waiting() != "" })
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	got := ledgerFlags(t, s)
	if got[1] != "more/1" {
		t.Fatalf("the held part is %q in the ledger, want it moved as it is (more/1)", got[1])
	}
	waitUntil(t, "the waiting append", func() bool {
		if err := f.flush(); err != nil {
			t.Fatal(err)
		}
		return len(appended) > 0
	})
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if f.bat.movedOpen != 1 || f.bat.voidedRecords != 0 {
		t.Fatalf("%d holds cut, %d records voided; want 1 and 0", f.bat.movedOpen, f.bat.voidedRecords)
	}
}

// TestHoldEndsAfterTheLimit: a batch open for longer than the hold limit
// (its connection's abort could not be written) moves as it is, and its
// later parts move as they come.
func TestHoldEndsAfterTheLimit(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Unix(1_800_000_000, 0)
	f := flushTo(s, time.Minute, &now)
	ctx := context.Background()
	for _, rec := range [][]byte{part(t, `{"a":1}`, record.More, 1), part(t, `{"b":1}`, 0, 2)} {
		if _, err := s.journal().Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	wantLedger(t, s, map[uint64]string{})
	now = now.Add(time.Minute + time.Second)
	if _, err := s.journal().Append(ctx, part(t, `{"a":2}`, record.More|record.Cont, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	wantLedger(t, s, map[uint64]string{1: "more/1", 2: "-/1", 3: "more|cont/1"})
	// An abort after the cut voids nothing: the parts were delivered.
	if _, err := s.journal().Append(ctx, record.AppendAbort(nil, 1, now)); err != nil {
		t.Fatal(err)
	}
	if err := f.flush(); err != nil {
		t.Fatal(err)
	}
	wantLedger(t, s, map[uint64]string{1: "more/1", 2: "-/1", 3: "more|cont/1", 4: "abort/0"})
}

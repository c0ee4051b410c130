package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/record"
)

// TestStartsOverJournalDamageTheLedgerHolds: damage to a journal record
// the ledger already holds loses nothing. logpond sets it aside, logs it
// at ERROR and starts; the records the ledger lacks, after the damage in
// the same journal file, still reach it.
func TestStartsOverJournalDamageTheLedgerHolds(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	// LSNs 101–120, which the ledger lacks, in the same journal file.
	// Damage LSN 50's journal copy; later write groups follow it, so
	// without the ledger's word it is damage to acknowledged records.
	file, offsets := journalWithBacklog(t, cfg, 20, 50)
	off := offsets[50]
	storetest.Flip(t, file, off+40)

	r := start(t, cfg) // fails the test if Open refuses
	deadline := time.Now().Add(30 * time.Second)
	for r.s.ledger().LastLSN() < 120 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the ledger holds up to %d of 120", r.s.ledger().LastLSN())
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.shutdown(t)
	log := r.log.String()
	for _, want := range []string{"level=ERROR", "nothing is lost", file, "first_damaged_lsn=50", "ledger_last_lsn=100"} {
		if !strings.Contains(log, want) {
			t.Fatalf("no %q in the log:\n%s", want, log)
		}
	}
	got := ledgerContents(t, cfg)
	for lsn := uint64(1); lsn <= 120; lsn++ {
		if !bytes.Equal(got[lsn], testRecord(t, lsn-1)) {
			t.Fatalf("LSN %d missing or wrong in the ledger", lsn)
		}
	}
}

// journalWithBacklog leaves the stores of cfg with LSNs 1–100 in the
// ledger and 101–(100+backlog) in the journal only, all in one journal
// file, and returns where each journal record from LSN from on is.
func journalWithBacklog(t *testing.T, cfg *conf.Config, backlog int, from uint64) (file string, offsets map[uint64]int64) {
	t.Helper()
	r := start(t, cfg)
	appendN(t, r.s.journal(), 0, 100)
	r.shutdown(t) // the final flush: the ledger holds LSNs 1–100
	j, err := journal.Open(cfg.Journal.Dir, journal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, 100, uint64(backlog))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	offsets = map[uint64]int64{}
	dr, err := journal.NewDirReader(cfg.Journal.Dir, from)
	if err != nil {
		t.Fatal(err)
	}
	for dr.Next() {
		if file != "" && dr.File() != file {
			t.Fatalf("the journal has more than one generation: the test expects LSNs %d–%d in one file", from, 100+backlog)
		}
		file, offsets[dr.LSN()] = dr.File(), dr.Offset()
	}
	if want := 100 + backlog - int(from) + 1; dr.Err() != nil || len(offsets) != want {
		t.Fatalf("journal: %d records from LSN %d, want %d: %v", len(offsets), from, want, dr.Err())
	}
	return file, offsets
}

// TestFlusherMeetsJournalDamage: a journal record the ledger lacks stops
// verifying after logpond started (a media error). The flusher moves
// every record before it, logs one ERROR naming the lost LSN and the
// command that accepts the loss, counts it, and stops there; logpond keeps
// running (the journal still acknowledges) and /readyz says why it is not
// ready. After a stop, the next start is refused with that command;
// once the loss is accepted, every other record reaches the ledger.
func TestFlusherMeetsJournalDamage(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	file, offsets := journalWithBacklog(t, cfg, 200, 101)

	lb := &syncbuf.Buffer{}
	s, err := Open(cfg, slog.New(slog.NewTextHandler(lb, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Open verified the journal; now LSN 200 goes bad on disk.
	storetest.Flip(t, file, offsets[200]+40)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, stop: cancel, done: make(chan error, 1), log: lb}
	go func() { r.done <- s.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(lb.String(), "level=ERROR msg=\"flusher: journal records the ledger lacks do not verify") {
		select {
		case err := <-r.done:
			t.Fatalf("logpond stopped at the journal damage: %v\n%s", err, lb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ERROR after 30s; the ledger holds up to %d\n%s", s.ledger().LastLSN(), lb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.ledger().LastLSN(); got != 199 {
		t.Fatalf("the ledger holds up to %d, want 199: every record before the damage", got)
	}
	log := lb.String()
	cmd := acceptLossCommand(cfg.Journal.Dir, cfg.Ledger.Dir)
	for _, want := range []string{"LSNs 200–200 (1 record, events unknown)", file, cmd} {
		if !strings.Contains(log, want) {
			t.Fatalf("the ERROR does not name %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines, want one:\n%s", n, log)
	}
	var m dto.Metric
	if err := s.metrics.journalDamage.Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		v := m.GetCounter().GetValue()
		t.Fatalf("logpond_flusher_journal_damage_total = %v, want 1", v)
	}
	why := strings.Join(s.snapshot().notReady(), "\n")
	if !strings.Contains(why, "journal_damaged") || !strings.Contains(why, cmd) {
		t.Fatalf("not ready because %q; want journal_damaged naming %q", why, cmd)
	}
	// Still acknowledging, and still running.
	appendN(t, s.journal(), 300, 1)
	select {
	case err := <-r.done:
		t.Fatalf("logpond stopped: %v", err)
	default:
	}
	r.shutdown(t)

	// The next start is refused, before any port is bound, naming the
	// damaged LSN and the command.
	_, err = Open(cfg, slog.New(slog.DiscardHandler))
	var ce *journal.CorruptionError
	if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "LSNs 200–200") || !strings.Contains(err.Error(), cmd) {
		t.Fatalf("start after the damage: %v; want a refusal naming LSN 200 and %q", err, cmd)
	}
	if _, err := journal.AcceptLoss(cfg.Journal.Dir, 199); err != nil {
		t.Fatal(err)
	}
	r = start(t, cfg)
	deadline = time.Now().Add(30 * time.Second)
	for r.s.ledger().LastLSN() < 301 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the ledger holds up to %d of 301", r.s.ledger().LastLSN())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	for lsn := uint64(1); lsn <= 301; lsn++ {
		if lsn == 200 {
			dec, err := record.Decode(got[lsn])
			if err != nil || dec.Count() != 0 {
				t.Fatalf("the lost LSN 200 holds %d events (%v), want none", dec.Count(), err)
			}
			continue
		}
		if !bytes.Equal(got[lsn], testRecord(t, lsn-1)) {
			t.Fatalf("LSN %d missing or wrong in the ledger", lsn)
		}
	}
}

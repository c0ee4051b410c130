package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/storetest"
	"github.com/logpond/logpond/journal"
)

// TestStartsOverJournalDamageTheLedgerHolds: damage to a journal record
// the ledger already holds loses nothing. logpond sets it aside, logs it
// at ERROR and starts; the records the ledger lacks, after the damage in
// the same journal file, still reach it.
func TestStartsOverJournalDamageTheLedgerHolds(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	r := start(t, cfg)
	appendN(t, r.s.journal(), 0, 100)
	r.shutdown(t) // the final flush: the ledger holds LSNs 1–100
	// LSNs 101–120, which the ledger lacks, in the same journal file.
	j, err := journal.Open(cfg.Journal.Dir, journal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, j, 100, 20)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage LSN 50's journal copy; later write groups follow it, so
	// without the ledger's word it is damage to acknowledged records.
	dr, err := journal.NewDirReader(cfg.Journal.Dir, 50)
	if err != nil || !dr.Next() || dr.LSN() != 50 {
		t.Fatalf("finding LSN 50 in the journal: %v", err)
	}
	file, off := dr.File(), dr.Offset()
	for dr.Next() {
		if dr.File() != file {
			t.Fatal("the journal has more than one generation: the test expects LSNs 50–120 in one file")
		}
	}
	storetest.Flip(t, file, off+40)

	r = start(t, cfg) // fails the test if Open refuses
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

package server

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/ledger"
)

// TestOpenSegmentDamageIsCounted: a byte flipped in a record in the middle
// of the open ledger segment, later writes after it, the journal still
// holding it: logpond starts, replays the records from the journal, logs
// the damage at ERROR and counts it in logpond_ledger_damage_repaired_total.
// A torn tail (the same segment cut inside its last record) is not counted.
func TestOpenSegmentDamageIsCounted(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	r := start(t, cfg)
	// Two ledger writes at least: LSNs 1–60, then 61–100.
	appendN(t, r.s.journal(), 0, 60)
	waitUntil(t, "the ledger holds LSN 60", func() bool { return r.s.ledger().LastLSN() >= 60 })
	appendN(t, r.s.journal(), 60, 40)
	r.shutdown(t)

	at := func(lsn uint64) (string, int64) {
		t.Helper()
		dr, err := ledger.NewDirReader(cfg.Ledger.Dir, lsn, ledger.InspectOptions{})
		if err != nil || !dr.Next() || dr.LSN() != lsn {
			t.Fatalf("finding LSN %d in the ledger: %v", lsn, err)
		}
		defer dr.Close()
		return dr.Segment(), dr.Offset()
	}
	seg, off := at(50)
	if s100, _ := at(100); s100 != seg {
		t.Fatal("the test expects LSNs 50–100 in the open segment")
	}
	storetest.Flip(t, seg, off+16+30)

	cfg.Admin.Listen = "127.0.0.1:0"
	repaired := func(r *running) float64 {
		t.Helper()
		return value(scrape(t, "http://"+r.s.AdminAddr().String()+"/metrics"), "logpond_ledger_damage_repaired_total")
	}
	r = start(t, cfg)
	if got := repaired(r); got != 1 {
		t.Fatalf("logpond_ledger_damage_repaired_total = %v, want 1", got)
	}
	waitUntil(t, "the ledger holds LSN 100 again", func() bool { return r.s.ledger().LastLSN() >= 100 })
	log := r.log.String()
	for _, want := range []string{"level=ERROR", "damage in the middle of the open segment", seg, "first_lsn_cut=50"} {
		if !strings.Contains(log, want) {
			t.Fatalf("no %q in the log:\n%s", want, log)
		}
	}
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	for lsn := uint64(1); lsn <= 100; lsn++ {
		if !bytes.Equal(got[lsn], testRecord(t, lsn-1)) {
			t.Fatalf("LSN %d missing or wrong in the ledger", lsn)
		}
	}

	// A torn tail is what a crash leaves: cut, replayed, not counted.
	seg, off = at(100)
	if err := os.Truncate(seg, off+20); err != nil {
		t.Fatal(err)
	}
	r = start(t, cfg)
	defer r.shutdown(t)
	if got := repaired(r); got != 0 {
		t.Fatalf("a torn tail: logpond_ledger_damage_repaired_total = %v, want 0", got)
	}
	waitUntil(t, "the ledger holds LSN 100 again", func() bool { return r.s.ledger().LastLSN() >= 100 })
	if log := r.log.String(); !strings.Contains(log, "cut torn tail of the open segment") {
		t.Fatalf("no torn tail in the log:\n%s", log)
	}
}

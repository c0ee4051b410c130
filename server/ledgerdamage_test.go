package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/estest"
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

// TestOpenSegmentDamageWhileRunningIsPassed: a record of the open ledger
// segment, synced and not yet read by the output (Elasticsearch is down),
// changes on disk while logpond runs (a media error). The output passes it
// as damage, as in a sealed segment — quarantined, logged, counted — and
// delivers every other event once Elasticsearch is back; logpond keeps
// running and stops cleanly.
func TestOpenSegmentDamageWhileRunningIsPassed(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 5})
	cfg := lagConfig(t, srv.URL())
	cfg.Ledger.SegmentBytes = 64 << 20 // one open segment
	// A small read-ahead: the output reads about 1.5 MiB ahead of what
	// Elasticsearch took (its 1 MiB read window, a few requests), far less
	// than the ~3 MiB of records below.
	es := &cfg.Output.Elasticsearch
	es.Workers, es.FlushBytes = 1, 64<<10
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg)
	defer r.shutdown(t)
	running := func() {
		t.Helper()
		select {
		case err := <-r.done:
			r.done <- err // for shutdown
			t.Fatalf("logpond stopped: %v", err)
		default:
		}
	}
	const n = 3000
	appendN(t, r.s.journal(), 0, n)
	waitUntil(t, "the ledger holds every record", func() bool { running(); return r.s.ledger().LastLSN() >= n })

	const damaged = n - 100
	dr, err := ledger.NewDirReader(cfg.Ledger.Dir, damaged, ledger.InspectOptions{})
	if err != nil || !dr.Next() || dr.LSN() != damaged {
		t.Fatalf("finding LSN %d in the ledger: %v", damaged, err)
	}
	seg, off := dr.Segment(), dr.Offset()
	dr.Close()
	if seg != filepath.Join(cfg.Ledger.Dir, "00000000000000000001.seg") {
		t.Fatalf("LSN %d is in %s, want it in the open segment", damaged, seg)
	}
	if read := r.s.legacyOutput().Gauges().ReadLSN; read >= damaged {
		t.Fatalf("the output read LSN %d already: the test cannot tell", read)
	}
	storetest.Flip(t, seg, off+16+30)

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every other event in Elasticsearch", func() bool { running(); return srv.Count() >= n-1 })
	waitUntil(t, "the output done with every record", func() bool { running(); return r.s.legacyOutput().Gauges().DoneLSN >= n })
	if got := srv.Count(); got != n-1 {
		t.Fatalf("Elasticsearch holds %d events, want %d (all but the damaged record's)", got, n-1)
	}
	if st := r.s.legacyOutput().Stats(); st.DamagedRanges != 1 || st.DamagedRecords != 1 {
		t.Fatalf("damaged ranges %d, records %d; want 1, 1", st.DamagedRanges, st.DamagedRecords)
	}
	q, err := ledger.ReadQuarantine(cfg.Ledger.Dir)
	if err != nil || len(q) != 1 || q[0].FirstLSN != damaged || q[0].LastLSN != damaged || q[0].Segment != seg {
		t.Fatalf("quarantine %+v (%v), want LSN %d of %s", q, err, damaged, seg)
	}
	if log := r.log.String(); !strings.Contains(log, "damaged ledger records skipped") {
		t.Fatalf("no damage in the log:\n%s", log)
	}
	running()
}

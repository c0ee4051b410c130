package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/faultfs"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// rotateJournal appends to j a record larger than a journal segment
// (cfg's), which the journal writes in a generation of its own: every
// record before it can then be released. It returns the record.
func rotateJournal(t *testing.T, cfg *conf.Config, j *journal.Journal) []byte {
	t.Helper()
	big := testRecordText(fmt.Sprintf(`{"pad":"%s"}`, strings.Repeat("y", int(cfg.Journal.SegmentBytes))))
	if _, err := j.Append(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	return big
}

// TestFailedLedgerNotReopenedOverRecordsTheJournalLacks: the ledger
// fails with a record written after its last sync (its fdatasync failed),
// and the journal no longer holds that record. logpond never releases a
// journal record the ledger has not synced, so the test releases it behind
// the flusher's back: what a journal that lost it otherwise looks like.
// The record is acknowledged and in neither store for sure, so logpond
// does not reopen the ledger, neither cutting the record nor trusting its
// unsynced bytes, and does not retry for ever either: it says so once at
// ERROR with the LSNs and the command that accepts the loss, counts it,
// shows it in /readyz and GET /, and keeps acknowledging into the
// journal. A restart then opens the ledger as after a crash: the record's
// bytes still verify, so it is kept, and every record reaches the ledger.
func TestFailedLedgerNotReopenedOverRecordsTheJournalLacks(t *testing.T) {
	m := faultfs.Mount(t)
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Ledger.Dir = filepath.Join(m.Dir, "ledger")
	cfg.Ledger.SegmentBytes = 4 << 20 // holds the record larger than a journal segment
	cfg.Admin.Listen = "127.0.0.1:0"
	want := map[uint64][]byte{}
	r := start(t, cfg)
	j := r.s.journal()
	for i, lsn := range appendN(t, j, 0, 50) {
		want[lsn] = testRecord(t, uint64(i))
	}
	waitUntil(t, "the ledger to hold LSN 50", func() bool { r.mustRun(t); return r.s.ledger().LastLSN() == 50 })

	// The ledger's fdatasyncs fail, and so do its opens: no attempt to
	// reopen it gets as far as its segment while the journal still holds
	// LSN 51 (it would cut the record then).
	m.Fail(faultfs.Fault{Ops: faultfs.Fsync | faultfs.Open})
	want[appendN(t, j, 50, 1)[0]] = testRecord(t, 50) // LSN 51: written to the ledger, never synced
	waitUntil(t, "the ledger to fail", func() bool { r.mustRun(t); return r.s.ledger().Err() != nil })
	if got := r.s.ledger().AppendedLSN(); got != 51 {
		t.Fatalf("the failed ledger appended up to LSN %d, want 51", got)
	}
	want[52] = rotateJournal(t, cfg, j)
	if err := j.Release(51); err != nil {
		t.Fatal(err)
	}
	if got := j.FirstLSN(); got != 52 {
		t.Fatalf("the journal starts at LSN %d after the release, want 52", got)
	}
	m.Heal()

	waitUntil(t, "the refusal", func() bool { r.mustRun(t); return r.s.ledgerUnheld.Load() != nil })
	cmd := acceptLossCommand(cfg.Journal.Dir, cfg.Ledger.Dir)
	lost := "LSNs 51–51 (1 record, events unknown)"
	why := strings.Join(r.s.snapshot().notReady(), "\n")
	if !strings.Contains(why, "ledger_failed: the failed ledger cannot be reopened") || !strings.Contains(why, lost) || !strings.Contains(why, cmd) {
		t.Fatalf("not ready because %q; want ledger_failed naming %s and %q", why, lost, cmd)
	}
	if li := r.s.nodeInfo().Ledger; li.State != StateFailed || !strings.Contains(li.Error, "cannot be reopened") {
		t.Fatalf("GET / ledger: %+v, want failed, cannot be reopened", li)
	}
	if v := value(scrape(t, "http://"+r.s.AdminAddr().String()+"/metrics"), "logpond_ledger_reopen_refused_total"); v != 1 {
		t.Fatalf("logpond_ledger_reopen_refused_total = %v, want 1", v)
	}
	// Still acknowledging.
	want[appendN(t, j, 53, 1)[0]] = testRecord(t, 53)
	r.mustRun(t)
	r.shutdown(t)
	log := r.log.String()
	refusals := strings.Count(log, `level=ERROR msg="flusher: the failed ledger cannot be reopened`)
	if refusals != 1 || !strings.Contains(log, lost) || !strings.Contains(log, cmd) {
		t.Fatalf("%d refusals logged, want one at ERROR naming %s and %q:\n%s", refusals, lost, cmd, log)
	}

	// The restart keeps LSN 51, whose bytes verify, and moves the rest.
	r = start(t, cfg)
	waitUntil(t, "the ledger to hold LSN 53", func() bool { r.mustRun(t); return r.s.ledger().LastLSN() == 53 })
	r.shutdown(t)
	got := ledgerContents(t, cfg)
	for lsn := uint64(1); lsn <= 53; lsn++ {
		if !bytes.Equal(got[lsn], want[lsn]) {
			t.Fatalf("LSN %d missing or wrong in the ledger", lsn)
		}
	}
}

// TestReopenLedgerRefusesWhenTheJournalStartsPastIt: a failed ledger that
// reopens cleanly but ends before the journal's first LSN − 1 (the journal
// lost records the ledger never had) is not taken: as at every start, the
// journal must hold every record after the ledger's last. The reopened
// instance is closed again and the failed one stays in use.
func TestReopenLedgerRefusesWhenTheJournalStartsPastIt(t *testing.T) {
	cfg := pipelineConfig(t, t.TempDir())
	st := &stores{cfg: cfg, log: slog.New(slog.DiscardHandler), ledgerOpened: func(*ledger.Ledger) {}}
	if err := st.open(); err != nil {
		t.Fatal(err)
	}
	defer st.close()
	j, failed := st.journal(), st.ledger()
	appendN(t, j, 0, 3)
	rotateJournal(t, cfg, j)
	if err := j.Release(3); err != nil || j.FirstLSN() != 4 {
		t.Fatalf("release: %v; the journal starts at LSN %d, want 4", err, j.FirstLSN())
	}
	failed.Close()
	err := st.reopenLedger()
	var unheld *unheldError
	if !errors.As(err, &unheld) || unheld.first != 1 || unheld.journalFirst != 4 || !strings.Contains(err.Error(), "LSNs 1–3 (3 records") {
		t.Fatalf("reopen: %v, want the refusal of LSNs 1–3", err)
	}
	if st.ledger() != failed {
		t.Fatal("the refused ledger replaced the failed one")
	}
}

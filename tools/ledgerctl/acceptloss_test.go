package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/journal"
)

// TestAcceptLoss: a journal record after the ledger's last LSN is
// damaged, so the journal refuses to open. accept-loss refuses while the
// stores are locked; --dry-run reports the loss and changes nothing;
// accept-loss then names exactly the lost LSN and its events, and the
// journal opens again with every other record.
func TestAcceptLoss(t *testing.T) {
	s := buildStores(t)
	const damaged = 350
	at := journalOffsets(t, s.journal)[damaged]
	storetest.Flip(t, at.file, at.off+40)
	opts := journal.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		StartAfter: s.ledgerLast, Settled: s.ledgerLast, Logger: slog.New(slog.DiscardHandler)}
	if j, err := journal.Open(s.journal, opts); err == nil {
		j.Close()
		t.Fatal("the journal opens over damage past the ledger")
	}
	base := []string{"-journal", s.journal, "-ledger", s.ledger}
	// verify names the command.
	if out, _, code := ctl(t, append(base, "verify")...); code != exitFailed || !strings.Contains(out, "-ledger "+s.ledger+" accept-loss") {
		t.Fatalf("verify: exit %d, want 1 naming accept-loss:\n%s", code, out)
	}

	lock, err := dirlock.Acquire(s.journal)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := ctl(t, append(base, "accept-loss")...)
	lock.Release()
	if code != exitFailed || !strings.Contains(stderr, "logpond is running") {
		t.Fatalf("with the journal locked: exit %d, %q; want 1 saying logpond runs", code, stderr)
	}

	before, _ := os.ReadFile(at.file)
	out, _, code := ctl(t, append(base, "accept-loss", "--dry-run")...)
	after, _ := os.ReadFile(at.file)
	if code != exitOK || !strings.Contains(out, "LSNs 350–350 (1 record, events unknown)") || string(before) != string(after) {
		t.Fatalf("dry run: exit %d, changed %v:\n%s", code, string(before) != string(after), out)
	}

	out, _, code = ctl(t, append(base, "--json", "accept-loss")...)
	var rep struct {
		LedgerLastLSN uint64 `json:"ledger_last_lsn"`
		Lost          []struct {
			FirstLSN uint64 `json:"first_lsn"`
			LastLSN  uint64 `json:"last_lsn"`
			Events   *int   `json:"events"`
		} `json:"lost"`
		LostRecords uint64   `json:"lost_records"`
		SetAside    []string `json:"set_aside"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if rep.LedgerLastLSN != s.ledgerLast || len(rep.Lost) != 1 || rep.Lost[0].FirstLSN != damaged || rep.Lost[0].LastLSN != damaged ||
		rep.Lost[0].Events != nil || rep.LostRecords != 1 || len(rep.SetAside) != 1 {
		t.Fatalf("report %+v", rep)
	}
	j, err := journal.Open(s.journal, opts)
	if err != nil {
		t.Fatalf("after accept-loss: %v", err)
	}
	defer j.Close()
	n := 0
	r := j.Reader(s.ledgerLast + 1)
	for r.Next() {
		n++
	}
	if r.Err() != nil || n != int(s.journalLast-s.ledgerLast) {
		t.Fatalf("after accept-loss the journal reads %d records after the ledger, want %d: %v", n, s.journalLast-s.ledgerLast, r.Err())
	}
	// Nothing more to accept.
	out, _, code = ctl(t, append(base, "accept-loss")...)
	if code != exitOK || !strings.Contains(out, "nothing to accept") {
		t.Fatalf("second run: exit %d:\n%s", code, out)
	}
}

package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// TestDamagedLastLedgerRecordEndToEnd: a backlog waits in the ledger (the
// output off), the journal has released all of it, and the last record of
// the open ledger segment is damaged on disk: acknowledged, and in neither
// store. logpond refuses to start, before binding any port, with one
// message naming the lost LSN and the ledgerctl command that accepts the
// loss. That command, run as printed, lets the next start succeed: every
// event but those of the damaged record reaches Elasticsearch exactly
// once, the lost record is reported as quarantined, and logpond keeps
// running.
func TestDamagedLastLedgerRecordEndToEnd(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rig := newDamageRig(t, srv)

	// The backlog: 40 batches of 250 events, output off (two segments).
	rig.backlog("b", 40, 250, 200)

	// The journal has released every record the ledger holds: it goes on
	// after the ledger's last LSN and holds none.
	segs, err := ledger.Segments(rig.ldir, ledger.InspectOptions{})
	if err != nil || len(segs) < 2 {
		t.Fatalf("ledger: %d segments, %v", len(segs), err)
	}
	last := segs[len(segs)-1].LastLSN
	if err := os.RemoveAll(rig.jdir); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(rig.jdir, journal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20,
		StartAfter: last, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage the open segment's last record: the end of its last write.
	r, err := ledger.NewDirReader(rig.ldir, last, ledger.InspectOptions{})
	if err != nil || !r.Next() || r.LSN() != last {
		t.Fatalf("reading LSN %d: %v", last, err)
	}
	seg, off := r.Segment(), r.Offset()
	lost := payloads(t, r.Record())
	r.Close()
	storetest.Flip(t, seg, off+16+100)
	t.Logf("damaged LSN %d (%d events), the ledger's last, in %s at offset %d", last, len(lost), seg, off)

	withES := rig.config("10ms", rig.withES())
	rig.refusedThenAcceptLoss(withES, fmt.Sprintf("LSNs %d–%d", last, last))
	if text := rig.deliveredAllBut(withES, lost); !strings.Contains(text, fmt.Sprintf("first_lsn=%d last_lsn=%d", last, last)) {
		t.Errorf("the lost record is not reported as skipped damage:\n%s", text)
	}
}

package main

import (
	"fmt"
	"testing"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// TestDamagedJournalRecordEndToEnd: a backlog waits in the journal, not
// yet in the ledger (logpond was killed before its flusher moved it), and
// one of its records is damaged on disk: acknowledged, and in neither
// store. logpond refuses to start, before binding any port, with one
// message naming the lost LSN and the ledgerctl command that accepts the
// loss. That command, run as printed, lets the next start succeed, and
// every event but those of the damaged record reaches Elasticsearch
// exactly once.
func TestDamagedJournalRecordEndToEnd(t *testing.T) {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rig := newDamageRig(t, srv)

	// Some events in the ledger (the output off), then a backlog that
	// only the journal holds: the flusher waits a minute, and logpond is
	// killed before.
	rig.backlog("a", 10, 100, 100)
	cmd, log := started(t, rig.config("1m", "enabled = false"))
	rig.send(log.String(), "b", 10, 100, 100)
	cmd.Process.Kill()
	cmd.Wait()

	segs, err := ledger.Segments(rig.ldir, ledger.InspectOptions{})
	if err != nil || len(segs) == 0 {
		t.Fatalf("ledger: %v", err)
	}
	ledgerLast := segs[len(segs)-1].LastLSN
	r, err := journal.NewDirReader(rig.jdir, ledgerLast+1)
	if err != nil {
		t.Fatal(err)
	}
	var backlog []uint64
	where := map[uint64][2]any{}
	recs := map[uint64][]byte{}
	for r.Next() {
		backlog = append(backlog, r.LSN())
		where[r.LSN()] = [2]any{r.File(), r.Offset()}
		recs[r.LSN()] = append([]byte(nil), r.Record()...)
	}
	if r.Err() != nil || len(backlog) < 3 {
		t.Fatalf("the journal holds %d records after the ledger's last LSN %d: %v", len(backlog), ledgerLast, r.Err())
	}
	mid := backlog[len(backlog)/2]
	lost := payloads(t, recs[mid])
	storetest.Flip(t, where[mid][0].(string), where[mid][1].(int64)+60)
	t.Logf("damaged journal LSN %d (%d events); the ledger ends at %d", mid, len(lost), ledgerLast)

	withES := rig.config("20ms", rig.withES())
	rig.refusedThenAcceptLoss(withES, fmt.Sprintf("LSNs %d–%d", mid, mid))
	rig.deliveredAllBut(withES, lost)
}

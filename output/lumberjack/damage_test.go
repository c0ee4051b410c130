package lumberjack

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/ledger"
)

// TestDamagedRecordIsQuarantinedAndTheRestForwarded: one record in a
// sealed segment damaged on disk is passed, quarantined and counted;
// every other event arrives once and the cursor reaches the end.
func TestDamagedRecordIsQuarantinedAndTheRestForwarded(t *testing.T) {
	r := newRig(t)
	pad := strings.Repeat("y", 300)
	for i := range 600 {
		var evs [][]byte
		for j := range 5 {
			evs = append(evs, fmt.Appendf(nil, `{"message":"%d-%d %s"}`, i, j, pad))
		}
		r.store(evs...)
	}
	const damaged = 150
	ldir := r.dir + "/ledger"
	r.ledger.Close()
	dr, err := ledger.NewDirReader(ldir, damaged, ledger.InspectOptions{})
	if err != nil || !dr.Next() || dr.LSN() != damaged {
		t.Fatalf("finding LSN %d: %v", damaged, err)
	}
	seg, off := dr.Segment(), dr.Offset()
	dr.Close()
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[off+16+40] ^= 0xff // inside the record's events: its CRC no longer matches
	if err := os.WriteFile(seg, b, 0o640); err != nil {
		t.Fatal(err)
	}
	r.open()
	if segs, _ := ledger.Segments(ldir, ledger.InspectOptions{}); segs[len(segs)-1].Path == seg {
		t.Fatalf("LSN %d is in the open segment; the test wants a sealed one", damaged)
	}
	for i := range 5 {
		delete(r.want, r.id(damaged, i))
	}

	p := startPeer(t, peerOptions{})
	run := r.start(r.options([]string{p.Addr()}, nil))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	r.checkAllOnce(p.Received())
	if st := run.Out.Stats(); st.DamagedRanges != 1 || st.DamagedRecords != 1 {
		t.Fatalf("stats %+v", st)
	}
	q, err := ledger.ReadQuarantine(ldir)
	if err != nil || len(q) != 1 {
		t.Fatalf("quarantine: %d entries, %v", len(q), err)
	}
}

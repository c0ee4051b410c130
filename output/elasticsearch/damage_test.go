package elasticsearch

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
)

// TestDamagedRecordIsQuarantinedAndTheRestDelivered: a backlog over
// several segments, one record in the middle of a sealed segment damaged
// on disk. The output quarantines that record, logs it once as an ERROR
// naming the range and the ledgerctl command, and delivers every other
// event exactly once; a restart (mid-way, and after the drain) neither
// loses nor repeats anything.
func TestDamagedRecordIsQuarantinedAndTheRestDelivered(t *testing.T) {
	r := newRig(t, estest.Options{})
	n := 0
	for range 600 {
		evs := make([][]byte, 5)
		for i := range evs {
			evs[i] = filebeatEvent(n, strings.Repeat("y", 300))
			n++
		}
		r.store(time.Now(), evs...)
	}
	const damaged = 150
	ldir := r.dir + "/ledger"
	seg, off, b, l := r.damageRecord(t, damaged)
	segs, _ := ledger.Segments(ldir, ledger.InspectOptions{})
	if segs[len(segs)-1].Path == seg {
		t.Fatalf("LSN %d is in the open segment; the test wants a sealed one", damaged)
	}
	prefix, _ := idPrefix(l.StreamID())
	for i := range 5 {
		delete(r.events, string(appendDocID(nil, prefix, damaged, i)))
	}
	want := n - 5

	var logs syncbuf.Buffer
	opts := r.options(func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.FlushBytes = 16 << 10
	})
	first := r.start(opts)
	waitFor(t, "a third of the events", func() bool { return r.es.Count() >= want/3 })
	first.Stop(t)
	second := r.start(opts)
	waitFor(t, "every undamaged event", func() bool { return r.es.Count() >= want })
	waitFor(t, "the cursor", func() bool { c, _ := l.Cursor("elasticsearch"); return c == r.lsn })
	second.Stop(t)
	r.checkAllStoredOnce(t)

	st := first.Out.Stats()
	st2 := second.Out.Stats()
	if st.DamagedRecords+st2.DamagedRecords < 1 || st.DamagedRanges+st2.DamagedRanges < 1 {
		t.Errorf("damage not counted: %+v / %+v", st, st2)
	}
	var errLines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			errLines = append(errLines, line)
		}
	}
	if len(errLines) < 1 || len(errLines) > 2 {
		t.Fatalf("%d ERROR lines, want one per run that met the damage:\n%s", len(errLines), logs.String())
	}
	for _, want := range []string{"first_lsn=150", "last_lsn=150", "records_lost=1", "ledgerctl -ledger " + ldir + " verify", "segment=" + seg} {
		if !strings.Contains(errLines[0], want) {
			t.Errorf("ERROR line lacks %q: %s", want, errLines[0])
		}
	}
	q, err := ledger.ReadQuarantine(ldir)
	if err != nil || len(q) != 1 || q[0].FirstLSN != damaged || q[0].LastLSN != damaged || q[0].Segment != seg {
		t.Fatalf("quarantine: %+v, %v", q, err)
	}
	raw, _ := os.ReadFile(ldir + "/" + ledger.QuarantineDir + "/" + q[0].Bytes)
	if !bytes.Contains(raw, b[off:off+64]) {
		t.Errorf("quarantined bytes do not hold the damaged frame")
	}
}

// damageRecord closes the rig's ledger, flips a byte in the body of the
// record at lsn on disk, opens the ledger again as the rig's and returns
// the segment holding the record, the record's offset in it, the
// segment's bytes as damaged, and the ledger.
func (r *rig) damageRecord(t *testing.T, lsn uint64) (seg string, off int64, damaged []byte, l *ledger.Ledger) {
	t.Helper()
	ldir := r.dir + "/ledger"
	r.ledger.Close()
	dr, err := ledger.NewDirReader(ldir, lsn, ledger.InspectOptions{})
	if err != nil || !dr.Next() || dr.LSN() != lsn {
		t.Fatalf("finding LSN %d: %v", lsn, err)
	}
	seg, off = dr.Segment(), dr.Offset()
	dr.Close()
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[off+16+40] ^= 0xff
	if err := os.WriteFile(seg, b, 0o640); err != nil {
		t.Fatal(err)
	}
	if l, err = ledger.Open(ldir, ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, DirectIO: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r.ledger = l
	return seg, off, b, l
}

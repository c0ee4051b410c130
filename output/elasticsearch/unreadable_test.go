package elasticsearch

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/faultfs"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
)

// faultRig is a rig whose ledger is on a fault-injecting mount, holding
// 600 records of 5 events over several segments.
func faultRig(t *testing.T) (*rig, *faultfs.FS, []ledger.SegmentInfo) {
	m := faultfs.Mount(t)
	r := newRig(t, estest.Options{})
	r.ledger.Close()
	l, err := ledger.Open(filepath.Join(m.Dir, "ledger"), ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r.ledger = l
	n := 0
	for range 600 {
		evs := make([][]byte, 5)
		for i := range evs {
			evs[i] = filebeatEvent(n, strings.Repeat("y", 300))
			n++
		}
		r.store(time.Now(), evs...)
	}
	segs, err := ledger.Segments(l.Dir(), ledger.InspectOptions{})
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments (%v), want 3 or more", len(segs), err)
	}
	return r, m, segs
}

// TestUnreadableLedgerBytesArePassedAfterTheirSpan: a block of a sealed
// ledger segment that the device never returns holds the output back for
// UnreadableAfter, retried and counted; then only the records touching it
// are passed as damage (counted, not sent) and every other event is
// delivered once.
func TestUnreadableLedgerBytesArePassedAfterTheirSpan(t *testing.T) {
	r, m, segs := faultRig(t)
	seg := segs[1]
	bad := int64(100 * ledger.BlockSize)
	m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: filepath.Join("ledger", filepath.Base(seg.Path)), Off: bad, Len: 1})
	var logs syncbuf.Buffer
	const after = 500 * time.Millisecond
	run := r.start(r.options(func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.UnreadableAfter = after
	}))
	started := time.Now()
	waitFor(t, "the output to report the unreadable ledger", func() bool { return run.Out.LedgerUnreadable() != "" })
	waitFor(t, "the damage to be passed", func() bool { return run.Out.Stats().DamagedRanges > 0 })
	if waited := time.Since(started); waited < after {
		t.Errorf("passed after %v, before UnreadableAfter (%v)", waited, after)
	}
	st := run.Out.Stats()
	if st.DamagedRanges != 1 || st.DamagedRecords < 1 || st.DamagedRecords > 5 || st.LedgerReadErrors < 2 {
		t.Fatalf("stats %+v: want one range of the few records around the block, after several failed reads", st)
	}
	want := len(r.events) - 5*int(st.DamagedRecords)
	waitFor(t, "every other event", func() bool { return r.es.Count() >= want })
	waitFor(t, "the cursor", func() bool { c, _ := r.ledger.Cursor("elasticsearch"); return c == r.lsn })
	if run.Out.LedgerUnreadable() != "" {
		t.Errorf("still unreadable after the pass: %s", run.Out.LedgerUnreadable())
	}
	run.Stop(t)
	if n := r.es.Count(); n != want {
		t.Errorf("%d documents, want %d", n, want)
	}
	if log := logs.String(); !strings.Contains(log, "failed every read of these bytes") || strings.Count(log, "reading the ledger failed:") != 1 ||
		strings.Count(log, "are passed as damage") != 1 {
		t.Errorf("log does not say once that reads fail, and what was passed:\n%s", log)
	}
}

// TestUnreadableLedgerWaitsWithoutUnreadableAfter: without
// UnreadableAfter nothing is ever passed: the output retries until the
// device returns the bytes, then delivers every event once.
func TestUnreadableLedgerWaitsWithoutUnreadableAfter(t *testing.T) {
	r, m, segs := faultRig(t)
	m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: filepath.Join("ledger", filepath.Base(segs[1].Path)), Off: 100 * ledger.BlockSize, Len: 1})
	run := r.start(r.options(nil))
	waitFor(t, "reads failing", func() bool { return run.Out.Stats().LedgerReadErrors >= 5 })
	if n := r.es.Count(); n >= len(r.events) {
		t.Fatalf("%d events delivered while the ledger failed reads", n)
	}
	m.Heal()
	waitFor(t, "every event", func() bool { return r.es.Count() >= len(r.events) })
	run.Stop(t)
	r.checkAllStoredOnce(t)
	if st := run.Out.Stats(); st.DamagedRanges != 0 {
		t.Errorf("stats %+v: damage passed without UnreadableAfter", st)
	}
}

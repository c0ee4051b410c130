package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
)

// TestDamagedLedgerRecordEndToEnd: a backlog waits in the ledger (the
// output off), one record in the middle of a segment is damaged on disk,
// logpond starts with the output on. Each row says where the record is and
// what must happen: every event but those of the damaged record reaches
// Elasticsearch exactly once (all of them when the journal still holds the
// record and replays it), the damage is logged as an ERROR naming the
// ledgerctl command, and logpond keeps running (and stops cleanly on
// SIGTERM).
func TestDamagedLedgerRecordEndToEnd(t *testing.T) {
	cases := []struct {
		name string
		open bool // damage the open segment (else the first, sealed, one)
		// dropJournal removes the journal before the restart, so that it
		// no longer holds the damaged record.
		dropJournal bool
		lost        bool     // the damaged record's events are lost
		log         []string // more the log must say (%[1]d: the damaged LSN)
	}{
		{"sealed segment", false, false, true, []string{"first_lsn=%[1]d last_lsn=%[1]d"}},
		{"open segment, the journal still holds the record", true, false, false,
			[]string{"damage in the middle of the open segment", "first_lsn_cut=%[1]d"}},
		{"open segment, the journal no longer holds the record", true, true, true,
			[]string{"the segment is sealed as it is and a new one started", "first_damaged_lsn=%[1]d", "first_lsn=%[1]d last_lsn=%[1]d"}},
	}
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv.Reset()
			damagedRecordEndToEnd(t, srv, tc.open, tc.dropJournal, tc.lost, tc.log)
		})
	}
}

func damagedRecordEndToEnd(t *testing.T, srv *estest.Server, open, dropJournal, lostForGood bool, wantLog []string) {
	rig := newDamageRig(t, srv)

	// The backlog: 64 batches of 250 events, output off: records of about
	// 25 KiB compressed, two 1 MiB segments, the open one holding a score.
	rig.backlog("b", 64, 250, 200)

	// Damage one record in the middle of a segment.
	segs, err := ledger.Segments(rig.ldir, ledger.InspectOptions{})
	if err != nil || len(segs) < 2 {
		t.Fatalf("ledger: %d segments, %v", len(segs), err)
	}
	s := segs[0]
	if open {
		s = segs[len(segs)-1]
	}
	mid := damageTarget(t, rig.ldir, s)
	r, err := ledger.NewDirReader(rig.ldir, mid, ledger.InspectOptions{})
	if err != nil || !r.Next() || r.LSN() != mid {
		t.Fatalf("reading LSN %d: %v", mid, err)
	}
	seg, off := r.Segment(), r.Offset()
	lost := payloads(t, r.Record())
	r.Close()
	b, _ := os.ReadFile(seg)
	for i := range 4 {
		b[off+16+100+int64(i)] ^= 0xff
	}
	if err := os.WriteFile(seg, b, 0o640); err != nil {
		t.Fatal(err)
	}
	t.Logf("damaged LSN %d (%d events) in %s at offset %d", mid, len(lost), seg, off)
	if dropJournal {
		if err := os.RemoveAll(rig.jdir); err != nil {
			t.Fatal(err)
		}
	}
	if !lostForGood {
		lost = map[string]bool{}
	}

	text := rig.deliveredAllBut(rig.config("10ms", rig.withES()), lost)
	if !strings.Contains(text, "level=ERROR") || !strings.Contains(text, "ledgerctl -ledger "+rig.ldir+" verify") {
		t.Errorf("no ERROR naming the ledgerctl command:\n%s", text)
	}
	for _, w := range wantLog {
		if strings.Contains(w, "%") {
			w = fmt.Sprintf(w, mid)
		}
		if !strings.Contains(text, w) {
			t.Errorf("no %q in the log:\n%s", w, text)
		}
	}
}

// damageTarget is the record of segment s to damage: the middle one of
// those written before the segment's last write. A write is what one Sync
// wrote: its frames follow each other, and the next write starts at the
// next block boundary. Open can tell damage from a torn write only when a
// later complete write follows it, and how the flusher grouped the
// backlog into writes depends on timing: so the target is chosen among
// the records a later write follows, whatever the grouping was.
func damageTarget(t *testing.T, ldir string, s ledger.SegmentInfo) uint64 {
	t.Helper()
	r, err := ledger.NewDirReader(ldir, s.FirstLSN, ledger.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lsns []uint64
	lastWrite := 0 // index in lsns of the first record of the last write
	var end int64 = -1
	for r.Next() && r.Segment() == s.Path {
		if r.Offset() != end {
			lastWrite = len(lsns)
		}
		lsns = append(lsns, r.LSN())
		end = r.Offset() + 16 + int64(len(r.Record())) // the frame's 16-byte header, then the record
	}
	if lastWrite < 1 {
		t.Fatalf("segment %s holds %d records in one write: the test wants a record a later write follows", s.Path, len(lsns))
	}
	return lsns[(lastWrite-1)/2]
}

// startedFull runs logpond with its whole stderr kept in the returned
// buffer, and returns once it logged that its input listens.
func startedFull(t *testing.T, config string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	cmd, log := startKept(t, "-config", config)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), "beats input listening") {
		if time.Now().After(deadline) {
			t.Fatalf("logpond did not start:\n%s", log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd, log
}

// startKept starts logpond with args, its whole stderr kept in the
// returned buffer; a process still running when the test ends is
// killed.
func startKept(t *testing.T, args ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	log := new(syncbuf.Buffer)
	cmd := exec.Command(binary, args...)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, log
}

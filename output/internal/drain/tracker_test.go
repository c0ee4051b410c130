package drain

import (
	"testing"
	"time"
)

func TestTrackerAdvancesOverContiguousDoneRecords(t *testing.T) {
	tr := NewTracker(10)
	steps := []struct {
		add    bool
		lsn    uint64
		n      int
		wantAt uint64
	}{
		{true, 11, 2, 10},
		{true, 12, 0, 10}, // empty record: done, but behind a pending one
		{true, 13, 1, 10},
		{true, 14, 3, 10},
		{false, 13, 1, 10}, // 13 done, 11 still pending
		{false, 14, 3, 10},
		{false, 11, 1, 10}, // one event of 11 still pending
		{false, 11, 1, 14}, // now everything up to 14
		{true, 15, 0, 15},
	}
	for i, s := range steps {
		var err error
		if s.add {
			err = tr.Add(s.lsn, s.n, time.Time{})
		} else {
			err = tr.Finish(s.lsn, s.n)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := tr.Done(); got != s.wantAt {
			t.Fatalf("step %d: done at %d, want %d", i, got, s.wantAt)
		}
	}
	if tr.Inflight() != 0 {
		t.Fatalf("%d records still tracked", tr.Inflight())
	}
}

func TestTrackerRefusesWhatWasNeverAdded(t *testing.T) {
	tr := NewTracker(0)
	if err := tr.Add(2, 1, time.Time{}); err == nil {
		t.Error("gap accepted")
	}
	if err := tr.Add(1, 1, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(1, 2); err == nil {
		t.Error("finished more events than the record has")
	}
	if err := tr.Finish(5, 1); err == nil {
		t.Error("finished an unknown record")
	}
	if got := tr.Done(); got != 0 {
		t.Errorf("done moved to %d", got)
	}
}

// TestTrackerMovesOverTheDonePrefixOnly: a record finished out of order
// holds the done LSN until the records before it are done.
func TestTrackerMovesOverTheDonePrefixOnly(t *testing.T) {
	tr := NewTracker(10)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tr.Add(11, 2, time.Time{}))
	must(tr.Add(12, 0, time.Time{}))
	must(tr.Add(13, 1, time.Time{}))
	must(tr.Finish(13, 1))
	if d := tr.Done(); d != 10 {
		t.Fatalf("done %d, want 10", d)
	}
	must(tr.Finish(11, 1))
	if d := tr.Done(); d != 10 {
		t.Fatalf("done %d, want 10", d)
	}
	must(tr.Finish(11, 1))
	if d := tr.Done(); d != 13 {
		t.Fatalf("done %d, want 13", d)
	}
	if err := tr.Add(15, 1, time.Time{}); err == nil {
		t.Fatal("a gap in LSNs accepted")
	}
	if err := tr.Finish(13, 1); err == nil {
		t.Fatal("finishing a done record accepted")
	}
}

// TestTrackerAddDonePassesARange: records passed without events are done
// at once, but never move the done LSN over a pending record before them.
func TestTrackerAddDonePassesARange(t *testing.T) {
	tr := NewTracker(0)
	if err := tr.Add(1, 1, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddDone(2, 5); err != nil {
		t.Fatal(err)
	}
	if d := tr.Done(); d != 0 {
		t.Fatalf("done %d with record 1 pending, want 0", d)
	}
	if err := tr.Finish(1, 1); err != nil {
		t.Fatal(err)
	}
	if d := tr.Done(); d != 5 {
		t.Fatalf("done %d, want 5", d)
	}
	if err := tr.AddDone(7, 8); err == nil {
		t.Fatal("a range after a gap accepted")
	}
}

// TestTrackerLag: the lag is the pending records' view: the oldest one's
// receive time, the done and last read LSNs, the pending events and the
// mean events per record added.
func TestTrackerLag(t *testing.T) {
	tr := NewTracker(10)
	if l := tr.Lag(); l != (Lag{DoneLSN: 10, ReadLSN: 10}) {
		t.Fatalf("empty tracker: %+v", l)
	}
	t1 := time.Unix(100, 0)
	t2 := time.Unix(200, 0)
	for _, a := range []struct {
		lsn uint64
		n   int
		at  time.Time
	}{{11, 3, t1}, {12, 1, t2}, {13, 0, t2}, {14, 4, t2}} {
		if err := tr.Add(a.lsn, a.n, a.at); err != nil {
			t.Fatal(err)
		}
	}
	want := Lag{OldestPending: t1, DoneLSN: 10, ReadLSN: 14, PendingEvents: 8, EventsPerRecord: 2}
	if l := tr.Lag(); !l.OldestPending.Equal(want.OldestPending) || l.DoneLSN != want.DoneLSN || l.ReadLSN != want.ReadLSN ||
		l.PendingEvents != want.PendingEvents || l.EventsPerRecord != want.EventsPerRecord {
		t.Fatalf("lag %+v, want %+v", l, want)
	}
	if err := tr.Finish(11, 3); err != nil {
		t.Fatal(err)
	}
	if l := tr.Lag(); !l.OldestPending.Equal(t2) || l.DoneLSN != 11 || l.PendingEvents != 5 {
		t.Fatalf("after finishing 11: %+v", l)
	}
	if err := tr.Finish(12, 1); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(14, 4); err != nil {
		t.Fatal(err)
	}
	if l := tr.Lag(); !l.OldestPending.IsZero() || l.DoneLSN != 14 || l.ReadLSN != 14 || l.PendingEvents != 0 {
		t.Fatalf("all done: %+v", l)
	}
}

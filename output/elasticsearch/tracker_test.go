package elasticsearch

import (
	"testing"
	"time"
)

func TestTrackerAdvancesOverContiguousDoneRecords(t *testing.T) {
	tr := newTracker(10)
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
			err = tr.add(s.lsn, s.n, time.Time{})
		} else {
			err = tr.finish(s.lsn, s.n)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got, _ := tr.Done(); got != s.wantAt {
			t.Fatalf("step %d: done at %d, want %d", i, got, s.wantAt)
		}
	}
	if tr.inflight() != 0 {
		t.Fatalf("%d records still tracked", tr.inflight())
	}
}

func TestTrackerRefusesWhatWasNeverAdded(t *testing.T) {
	tr := newTracker(0)
	if err := tr.add(2, 1, time.Time{}); err == nil {
		t.Error("gap accepted")
	}
	if err := tr.add(1, 1, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := tr.finish(1, 2); err == nil {
		t.Error("finished more events than the record has")
	}
	if err := tr.finish(5, 1); err == nil {
		t.Error("finished an unknown record")
	}
	if got, _ := tr.Done(); got != 0 {
		t.Errorf("done moved to %d", got)
	}
}

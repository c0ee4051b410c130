package input

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/record"
)

// journalRecords returns the flags, slot and event count of every record
// in the journal, in LSN order.
type recordMeta struct {
	flags  record.Flags
	slot   uint16
	events int
}

func journalRecords(t *testing.T, j *journal.Journal) []recordMeta {
	t.Helper()
	var out []recordMeta
	r := j.Reader(1)
	for r.Next() {
		rec, err := record.Decode(r.Record())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recordMeta{rec.Flags(), rec.Slot(), rec.Count()})
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// events returns n JSON events of about 1 KiB; bad, when in range, is
// not JSON.
func events(n, bad int) []string {
	evs := make([]string, n)
	for i := range evs {
		evs[i] = fmt.Sprintf(`{"i":%d,"message":"%s"}`, i, strings.Repeat("x", 1000))
		if i == bad {
			evs[i] = `{"i":` + strings.Repeat("x", 1000)
		}
	}
	return evs
}

// readACK reads one non-keepalive ACK.
func readACK(t *testing.T, conn net.Conn) uint32 {
	t.Helper()
	for {
		var ack [6]byte
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(conn, ack[:]); err != nil {
			t.Fatalf("reading the ACK: %v", err)
		}
		if seq := binary.BigEndian.Uint32(ack[2:]); seq != 0 {
			return seq
		}
	}
}

// checkBatch checks that recs are the parts of one batch on slot: more on
// every part but the last, cont on every part but the first.
func checkBatch(t *testing.T, recs []recordMeta, slot uint16, complete bool) {
	t.Helper()
	if len(recs) < 2 {
		t.Fatalf("%d records: the batch was not split (%v)", len(recs), recs)
	}
	for i, r := range recs {
		var want record.Flags
		if i > 0 {
			want |= record.Cont
		}
		if i < len(recs)-1 || !complete {
			want |= record.More
		}
		if r.flags != want || r.slot != slot {
			t.Fatalf("part %d of %d: flags %s slot %d, want %s slot %d (%v)", i+1, len(recs), r.flags, r.slot, want, slot, recs)
		}
	}
}

// TestFailedBatchIsAborted: a batch split into several records fails on an
// event that is not JSON after its first records were submitted. Its
// records say more follow, and an abort record for its slot follows them,
// so the flusher can drop them. The batch before it is complete: its last
// record has no more.
func TestFailedBatchIsAborted(t *testing.T) {
	j := openJournal(t)
	opts := testOptions()
	opts.MaxRecordBytes = 4 << 10 // about 3 events per record
	b := startBeats(t, opts, journalInput{j})
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(lumbertest.Window(events(20, -1)...))
	if seq := readACK(t, conn); seq != 20 {
		t.Fatalf("ACK %d, want 20", seq)
	}
	good := len(journalRecords(t, j))
	conn.Write(lumbertest.Window(events(20, 15)...))
	// The input closes the connection and writes the abort record.
	var recs []recordMeta
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs = journalRecords(t, j)
		if n := len(recs); n > good && recs[n-1].flags == record.Abort {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no abort record after the failed batch: %v", recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkBatch(t, recs[:good], 0, true)
	failed := recs[good : len(recs)-1]
	checkBatch(t, failed, 0, false)
	if abort := recs[len(recs)-1]; abort.slot != 0 || abort.events != 0 {
		t.Fatalf("abort record %+v, want slot 0 and no event", abort)
	}
	if v := b.Violations(); v["invalid_json"] != 1 {
		t.Fatalf("violations %v, want one invalid_json", v)
	}
}

// refusingAppender refuses the first abort record, as a journal that is
// closed or failed does, and takes everything else.
type refusingAppender struct {
	journalInput
	mu      sync.Mutex
	refused int
}

func (a *refusingAppender) Submit(ctx context.Context, rec []byte) (Durable, error) {
	if f, _, err := record.Peek(rec); err == nil && f == record.Abort {
		a.mu.Lock()
		first := a.refused == 0
		a.refused++
		a.mu.Unlock()
		if first {
			return nil, errors.New("journal refused the record")
		}
	}
	return a.journalInput.Submit(ctx, rec)
}

// TestAbortIsRetried: when the journal refuses the abort record, the input
// writes it later.
func TestAbortIsRetried(t *testing.T) {
	j := openJournal(t)
	opts := testOptions()
	opts.MaxRecordBytes = 4 << 10
	app := &refusingAppender{journalInput: journalInput{j}}
	b := startBeats(t, opts, app)
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(lumbertest.Window(events(20, 15)...))
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := journalRecords(t, j)
		if n := len(recs); n > 0 && recs[n-1].flags == record.Abort {
			checkBatch(t, recs[:n-1], 0, false)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused abort record was never written again: %v", recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	if app.refused < 2 {
		t.Fatalf("%d abort submits, want the refused one and a retry", app.refused)
	}
}

func TestSlotTable(t *testing.T) {
	var st slotTable
	take := func(want uint16, wantDirty bool) {
		t.Helper()
		s, dirty, err := st.take()
		if err != nil || s != want || dirty != wantDirty {
			t.Fatalf("take = %d (dirty %v), %v; want %d (dirty %v)", s, dirty, err, want, wantDirty)
		}
	}
	take(0, false)
	take(1, false)
	take(2, false)
	st.put(1, false)
	take(1, false) // lowest free first
	st.put(0, true)
	take(3, false) // a dirty slot only when no clean one is free
	if d := st.takeDirty(); len(d) != 1 || d[0] != 0 {
		t.Fatalf("takeDirty = %v, want [0]", d)
	}
	take(4, false) // the retrier holds slot 0
	st.put(0, true)
	for w := range st.used {
		st.used[w] = ^uint64(0)
	}
	st.used[0] &^= 1 // only the dirty slot is free
	take(0, true)    // no clean slot left: the dirty one, which its first record settles
	if _, _, err := st.take(); !errors.Is(err, errNoSlot) {
		t.Fatalf("take with every slot used: %v", err)
	}
	if st.ndirty != 0 {
		t.Fatalf("%d dirty slots, want 0", st.ndirty)
	}
	if _, err := ListenBeats(BeatsOptions{Listen: "127.0.0.1:0", MaxConnections: MaxSlots + 1, MaxInflightBytes: 1, MaxRecordBytes: 1}, nil); err == nil {
		t.Fatal("ListenBeats accepted more connections than there are slots")
	}
}

// TestDirtySlotOwesItsAbort: a connection that takes a dirty slot (an
// earlier connection's failed batch is open on it, its abort not written)
// and ends before any record of its own is durable still owes that abort:
// it writes it, instead of giving the slot back clean.
func TestDirtySlotOwesItsAbort(t *testing.T) {
	j := openJournal(t)
	b := startBeats(t, testOptions(), journalInput{j})
	b.slotIDs.mu.Lock()
	for w := range b.slotIDs.used {
		b.slotIDs.used[w] = ^uint64(0)
	}
	b.slotIDs.used[0] &^= 1 << 7 // only slot 7 is free, and it is dirty
	b.slotIDs.setDirty(7, true)
	b.slotIDs.mu.Unlock()
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close() // no batch at all
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := journalRecords(t, j)
		if len(recs) == 1 && recs[0].flags == record.Abort && recs[0].slot == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal holds %v, want the abort record of slot 7", recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failingDurable is a record the journal never makes durable.
type failingDurable struct{}

func (failingDurable) Wait() (uint64, error) { return 0, errors.New("journal failed") }

// failingAppender fails every record but aborts, which it counts.
type failingAppender struct {
	mu     sync.Mutex
	aborts int
}

func (a *failingAppender) Submit(ctx context.Context, rec []byte) (Durable, error) {
	if f, _, err := record.Peek(rec); err == nil && f == record.Abort {
		a.mu.Lock()
		a.aborts++
		a.mu.Unlock()
	}
	return failingDurable{}, nil
}

// TestOneRecordBatchNeedsNoAbort: a batch of one record (no part said more
// would follow) that fails leaves nothing open on its slot: no abort
// record is written for it.
func TestOneRecordBatchNeedsNoAbort(t *testing.T) {
	app := &failingAppender{}
	b := startBeats(t, testOptions(), app)
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(lumbertest.Window(events(3, -1)...))
	// The input closes the connection when the record fails.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("waiting for the input to close the connection: %v", err)
	}
	b.Close()
	app.mu.Lock()
	defer app.mu.Unlock()
	if app.aborts != 0 {
		t.Fatalf("%d abort records for a one-record batch", app.aborts)
	}
}

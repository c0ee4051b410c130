package input

import (
	"encoding/json"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestThousandIdleConnections: memory per connection is small and fixed
// (a 16 KiB read buffer and a goroutine), however many connect; a client
// is still served among them.
func TestThousandIdleConnections(t *testing.T) {
	opts := testOptions()
	opts.MaxConnections = 1100
	opts.IdleTimeout = time.Minute
	b := startBeats(t, opts, journalInput{openJournal(t)})
	before := heapInUse()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Skipf("cannot open 1000 connections here: %v", err)
		}
		conns = append(conns, c)
	}
	// Half of them start a batch and stall inside it.
	for _, c := range conns[:500] {
		c.Write(lumbertest.Window(`{"a":1}`)[:12])
	}
	time.Sleep(200 * time.Millisecond)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("heap grew %d KiB for 1000 idle connections (%d bytes each)", grew>>10, grew/1000)
	if grew > 64<<20 {
		t.Fatalf("1000 idle connections took %d MiB of heap", grew>>20)
	}
	if err := sendOne(b.Addr().String(), net.Dial); err != nil {
		t.Fatalf("a client among 1000 idle connections: %v", err)
	}
}

// TestSlowloris: a client that starts a batch and trickles it is closed
// after the batch timeout.
func TestSlowloris(t *testing.T) {
	opts := testOptions()
	opts.BatchTimeout = 300 * time.Millisecond
	b := startBeats(t, opts, journalInput{openJournal(t)})
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	batch := lumbertest.Window(`{"message":"` + strings.Repeat("s", 100) + `"}`)
	closed := false
	for i := range batch {
		if _, err := conn.Write(batch[i : i+1]); err != nil {
			closed = true
			break
		}
		time.Sleep(50 * time.Millisecond)
		if b.Violations()["batch_timeout"] > 0 {
			closed = true
			break
		}
	}
	if !closed {
		t.Fatal("a trickling client sent a whole batch without being closed")
	}
}

// TestInflightBudgetIsShared: with a budget smaller than two batches and a
// slow journal, connections wait for budget (reading nothing) instead of
// buffering, and all of them are served in the end.
func TestInflightBudgetIsShared(t *testing.T) {
	opts := testOptions()
	opts.MaxInflightBytes = 64 << 10
	opts.MaxRecordBytes = 16 << 10
	app := &slowAppender{delay: 20 * time.Millisecond}
	b := startBeats(t, opts, app)
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := lj.SyncDial(b.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			var data []interface{}
			for i := range 50 {
				data = append(data, json.RawMessage(`{"c":`+string(rune('0'+c))+`,"i":`+strings.Repeat("1", 1+i%3)+`,"pad":"`+strings.Repeat("p", 1000)+`"}`))
			}
			if n, err := cl.Send(data); err != nil || n != 50 {
				t.Errorf("client %d: acked %d: %v", c, n, err)
			}
		}()
	}
	wg.Wait()
	// The server counts a batch after its ACK is written, so the client
	// can see the ACK first: wait for the count.
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().Events != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("%d events acknowledged, want 200", b.Stats().Events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Handlers return their budget as the clients hang up.
	deadline = time.Now().Add(5 * time.Second)
	for {
		b.budget.mu.Lock()
		free := b.budget.free
		b.budget.mu.Unlock()
		if free == opts.MaxInflightBytes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget leaked: %d of %d free after all batches", free, opts.MaxInflightBytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBudgetFreeBetweenBatches: a connection holds budget only while it
// reads a batch and until the batch is durable, including what it took
// ahead of its events (reserveChunk): between batches, with the
// connection still open, the whole budget is free again.
func TestBudgetFreeBetweenBatches(t *testing.T) {
	opts := testOptions()
	b := startBeats(t, opts, &slowAppender{})
	cl, err := lj.SyncDial(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var data []interface{}
	for i := range 300 {
		data = append(data, json.RawMessage(`{"i":`+strconv.Itoa(i)+`,"pad":"`+strings.Repeat("p", 500)+`"}`))
	}
	for round := range 3 {
		if n, err := cl.Send(data); err != nil || n != len(data) {
			t.Fatalf("acked %d: %v", n, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for b.Stats().Events != int64((round+1)*len(data)) {
			if time.Now().After(deadline) {
				t.Fatalf("%d events acknowledged", b.Stats().Events)
			}
			time.Sleep(time.Millisecond)
		}
		if st := b.Stats(); st.InflightBytes != 0 {
			t.Fatalf("after batch %d: %d bytes of budget held by an idle connection", round+1, st.InflightBytes)
		}
	}
}

package input

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/ackwatch"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/record"
)

// fakeClock is a clock that moves only when the test moves it, so that
// latencies are exact whatever the machine's load.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startClocked starts a Beats input whose latencies are measured with
// clk, and returns it with a channel that receives a value each time a
// handler sets its read deadline: once before it waits for a batch, once
// when the batch's window frame has been read.
func startClocked(t *testing.T, opts BeatsOptions, app Appender, clk *fakeClock) (*Beats, <-chan struct{}) {
	t.Helper()
	b, err := ListenBeats(opts, app)
	if err != nil {
		t.Fatal(err)
	}
	deadlines := make(chan struct{}, 64)
	b.now = clk.now
	b.testHookDeadline = func() { deadlines <- struct{}{} }
	go b.Serve()
	t.Cleanup(func() { b.Close() })
	return b, deadlines
}

// drainACKs reads and drops what the server sends on c until it closes.
func drainACKs(c net.Conn) {
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// TestAckLatencyExcludesTransfer: a client whose batch takes 40 ms to
// cross the network (the window frame first, the events 40 ms later) is
// reported with the latency logpond added after the batch's last byte,
// not with the 40 ms of transfer; otherwise ackwatch takes a slow link for
// a busy logpond and the output's drain gives way to it for good.
func TestAckLatencyExcludesTransfer(t *testing.T) {
	const transfer = 40 * time.Millisecond
	got := make(chan time.Duration, 64)
	opts := testOptions()
	opts.Acked = func(latency time.Duration, events int) { got <- latency }
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	b, deadlines := startClocked(t, opts, &slowAppender{}, clk)
	c, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go drainACKs(c)
	w := ackwatch.New(ackwatch.DefaultSlack)
	w.Fsynced(500 * time.Microsecond) // a fast journal device
	for i := range 10 {
		win := lumbertest.Window(`{"a":1}`, `{"a":2}`)
		<-deadlines // the handler waits for the batch
		c.Write(win[:6])
		<-deadlines // it has read the window frame
		clk.advance(transfer)
		c.Write(win[6:]) // the events, one transfer time later
		lat := <-got
		if lat >= transfer {
			t.Fatalf("batch %d: acknowledgement latency %s includes the %s the batch took to arrive", i, lat, transfer)
		}
		w.Acked(lat, 2)
	}
	if busy, _ := w.Pressure(); busy {
		t.Errorf("a slow link is judged as logpond being busy")
	}
}

// gatedAppender's records become durable only once the test opens the
// gate; waiting tells when a handler waits for one.
type gatedAppender struct {
	gate    chan struct{}
	waiting chan struct{}
}

func (g *gatedAppender) Submit(ctx context.Context, rec []byte) (Durable, error) { return g, nil }

func (g *gatedAppender) Wait() (uint64, error) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	<-g.gate
	return 1, nil
}

// TestAckLatencyCountsWaitsForLogpond: while a batch arrives, the time its
// handler stops reading to wait for logpond (for memory budget, which only
// records becoming durable free) is logpond's latency, not the link's, and
// counts in the acknowledgement latency.
func TestAckLatencyCountsWaitsForLogpond(t *testing.T) {
	const stall = 40 * time.Millisecond
	got := make(chan time.Duration, 4)
	opts := testOptions()
	ev := `{"message":"0123456789"}`
	// Budget for one event: the second waits until the first is durable.
	opts.MaxInflightBytes = int64(record.EventOverhead + len(ev))
	opts.Acked = func(latency time.Duration, events int) { got <- latency }
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	app := &gatedAppender{gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
	b, _ := startClocked(t, opts, app, clk)
	c, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go drainACKs(c)
	c.Write(lumbertest.Window(ev, ev)) // arrives at once
	<-app.waiting                      // the handler waits for the first event to be durable
	clk.advance(stall)
	close(app.gate)
	if lat := <-got; lat < stall {
		t.Fatalf("acknowledgement latency %s leaves out the %s the batch's handler waited for memory budget", lat, stall)
	}
}

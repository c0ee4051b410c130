package input

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// flakyListener fails Accept with err while failing is set, then accepts
// from the real listener.
type flakyListener struct {
	net.Listener
	err error

	mu      sync.Mutex
	failing bool
	calls   int // failed accepts
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.failing {
		l.calls++
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

func (l *flakyListener) set(failing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing = failing
}

func (l *flakyListener) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// listenFlaky is an input whose listener fails every accept with err until
// the test lets it accept; logs go to the returned buffer.
func listenFlaky(t *testing.T, err error) (*Beats, *flakyListener, *syncbuf.Buffer) {
	t.Helper()
	var logs syncbuf.Buffer
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, lerr := ListenBeats(opts, journalInput{openJournal(t)})
	if lerr != nil {
		t.Fatal(lerr)
	}
	fl := &flakyListener{Listener: b.ln, err: err, failing: true}
	b.ln = fl
	return b, fl, &logs
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a hang guard, not a speed assertion
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestAcceptErrorsAreRetried: an accept that fails with EMFILE must not
// end the input: it retries with backoff, says why it is not accepting,
// logs the failures once rather than per attempt, and serves the client
// that connected meanwhile once accepting works again.
func TestAcceptErrorsAreRetried(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	b, fl, logs := listenFlaky(t, emfile)
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	closed := false
	defer func() {
		if !closed {
			b.Close()
			<-served
		}
	}()

	waitCond(t, "a few failed accepts", func() bool { return fl.failed() >= 3 || len(served) > 0 })
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v on a failed accept; want it to retry", err)
	default:
	}
	if w := b.Waiting(); !strings.Contains(w, "too many open files") {
		t.Errorf("Waiting() = %q while accepts fail", w)
	}
	if b.Err() != nil {
		t.Errorf("Err() = %v while accepts are retried", b.Err())
	}
	// The backoff grows to 1s: accepts are not retried in a busy loop.
	time.Sleep(300 * time.Millisecond)
	if n := fl.failed(); n > 50 {
		t.Errorf("%d accepts in about 300ms: no backoff", n)
	}

	// A client connects while accepts fail (it waits in the backlog) and
	// is served once they work again.
	sent := make(chan error, 1)
	go func() { sent <- sendOne(b.Addr().String(), net.Dial) }()
	time.Sleep(20 * time.Millisecond)
	fl.set(false)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("the client after the accept failures: %v", err)
		}
	case err := <-served:
		t.Fatalf("Serve returned %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never served")
	}
	if w := b.Waiting(); w != "" {
		t.Errorf("Waiting() = %q once accepting works", w)
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	closed = true
	if err := <-served; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
	log := logs.String()
	if n := strings.Count(log, "accepting a connection failed"); n != 1 {
		t.Errorf("%d lines for the failed accepts, want 1 (the rest summarized):\n%s", n, log)
	}
	if !strings.Contains(log, "accepting connections failed again") || !strings.Contains(log, "accepting connections again") {
		t.Errorf("no summary of the failed accepts or no recovery line:\n%s", log)
	}
}

// TestListenerClosedUnderServe: a listener closed by someone else ends
// Serve with an error that Err keeps, so that health checks fail.
func TestListenerClosedUnderServe(t *testing.T) {
	b, _, _ := listenFlaky(t, fmt.Errorf("accept tcp: %w", net.ErrClosed))
	defer b.Close()
	if err := b.Serve(); err == nil || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve = %v, want the closed listener", err)
	}
	if err := b.Err(); err == nil {
		t.Fatal("Err() = nil after the accept loop ended")
	}
}

// TestCloseWhileAHandlerSetsItsIdleDeadline: Close lands between a
// handler's start of its next wait for a batch and the idle deadline it
// sets. Close must still interrupt the read at once, not after
// idle_timeout.
func TestCloseWhileAHandlerSetsItsIdleDeadline(t *testing.T) {
	opts := testOptions()
	opts.IdleTimeout = time.Hour
	b, err := ListenBeats(opts, journalInput{openJournal(t)})
	if err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.testHookDeadline = func() {
		once.Do(func() {
			close(reached)
			<-release
		})
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	<-reached // the handler is about to set its idle deadline
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	waitCond(t, "Close to begin", b.isClosed) // it set every read deadline to now
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second): // idle_timeout is an hour
		t.Error("Close still waits for a handler that set its idle deadline after Close interrupted reads")
		conn.Close() // ends the read, and the test
		<-closed
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// TestViolationLinesAreLimited: a flood of refused connections logs one
// line, then a summary with the count, while the counter stays exact.
func TestViolationLinesAreLimited(t *testing.T) {
	var logs syncbuf.Buffer
	opts := testOptions()
	opts.MaxConnections = 1
	opts.IdleTimeout = time.Minute
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := ListenBeats(opts, journalInput{openJournal(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.logs.interval = time.Hour // every later line goes into the summary at Close
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	held, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitCond(t, "the held connection", func() bool { return b.Stats().Connections == 1 })
	const refused = 30
	for range refused {
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	waitCond(t, "every refusal counted", func() bool { return b.Violations()["max_connections"] == refused })
	if n := strings.Count(logs.String(), "beats: closing connection"); n != 1 {
		t.Errorf("%d lines for %d refused connections before the summary, want 1", n, refused)
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
	log := logs.String()
	if !strings.Contains(log, "closed more connections for this reason") || !strings.Contains(log, fmt.Sprintf("suppressed=%d", refused-1)) {
		t.Errorf("no summary of the %d refusals not logged:\n%s", refused-1, log)
	}
	if n := b.Violations()["max_connections"]; n != refused {
		t.Errorf("counted %d refusals, want %d", n, refused)
	}
}

// TestLogLimiterSummarizesEachInterval: a flood that goes on is
// summarized once per interval by the limiter's timer, and every event is
// either logged or counted in a summary.
func TestLogLimiterSummarizesEachInterval(t *testing.T) {
	var logs syncbuf.Buffer
	l := newLogLimiter(slog.New(slog.NewTextHandler(&logs, nil)), 20*time.Millisecond)
	logged := 0
	deadline := time.Now().Add(200 * time.Millisecond)
	events := 0
	for time.Now().Before(deadline) {
		events++
		if l.allow("k", slog.LevelWarn, "more k", "reason", "k") {
			logged++
		}
		time.Sleep(time.Millisecond)
	}
	waitCond(t, "a summary from the timer", func() bool { return strings.Contains(logs.String(), "more k") })
	l.close()
	suppressed := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		var n int
		if i := strings.Index(line, "suppressed="); i >= 0 {
			fmt.Sscanf(line[i:], "suppressed=%d", &n)
			suppressed += n
		}
	}
	if logged+suppressed != events {
		t.Errorf("%d events: %d logged, %d in summaries", events, logged, suppressed)
	}
	if logged == 0 || suppressed == 0 {
		t.Errorf("%d logged, %d suppressed: want both", logged, suppressed)
	}
}

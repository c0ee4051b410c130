// Package input holds logpond's inputs. The Beats input speaks Lumberjack
// v2 to Beats' output.logstash (package input/lumberjack reads the frames)
// and acknowledges a batch only after the journal has made every record of
// it durable (docs/design.md, §6).
package input

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/record"
)

// Appender is where the input writes records: the journal. Submit queues
// rec (a copy: the caller may reuse rec once it returns) and returns what
// tells when it is durable; records submitted one after the other are
// stored in that order. A batch's records are submitted as they are built
// and waited for together, so that writing the first ones overlaps reading
// the rest.
type Appender interface {
	Submit(ctx context.Context, rec []byte) (Durable, error)
}

// Durable is a submitted record: Wait returns its LSN once it is durable,
// or why it never will be.
type Durable interface {
	Wait() (uint64, error)
}

// BeatsOptions configure the Beats input; they mirror [input.beats].
type BeatsOptions struct {
	Listen         string
	MaxConnections int
	// IdleTimeout closes a connection that starts no batch for this long.
	IdleTimeout time.Duration
	// BatchTimeout closes a connection that takes longer to send one batch
	// (slowloris).
	BatchTimeout time.Duration
	// Keepalive is how often ACK(0) is sent while a batch waits for the
	// journal, so that clients under backpressure do not time out.
	Keepalive time.Duration
	// MaxInflightBytes is one budget shared by all connections for event
	// bytes read but not yet durable; a connection that cannot get budget
	// stops reading (TCP backpressure).
	MaxInflightBytes int64
	// MaxRecordBytes splits a larger batch into consecutive records.
	MaxRecordBytes int
	// Compression, when set, compresses each record before it is
	// submitted (record version 2: its events as one block of its codec), with
	// CompressorCount compressors shared by the connections; the zero value submits
	// records as built. Acknowledgements still wait for the journal's
	// fsync of the record, compressed.
	Compression record.Compression
	Limits      lumberjack.Limits
	// TLS, when set, wraps the listener.
	TLS    *tls.Config
	Logger *slog.Logger
	// Acked, when set, is called after each batch is acknowledged with
	// the latency logpond added, and its events: the time from the
	// batch's last byte to its ACK, plus the time reading the batch
	// stood still waiting for logpond (memory budget, journal space). The
	// time the batch took to cross the network is left out: a slow link
	// is not a busy logpond. It is called from connection handlers,
	// concurrently, and must not block.
	Acked func(latency time.Duration, events int)
}

// Beats is a running Beats input.
type Beats struct {
	opts    BeatsOptions
	log     *slog.Logger
	ln      net.Listener
	journal Appender
	budget  *budget
	zs      *compressors  // nil without Compression
	slots   chan struct{} // one per allowed connection
	slotIDs slotTable     // the slot number each connection's records carry
	// stop ends with Close: handlers' waits for budget, journal space or a
	// journal queue slot end with it (a batch not yet queued in the journal
	// is not acknowledged; the client sends it again).
	stop       context.Context
	cancelStop context.CancelFunc

	mu         sync.Mutex // guards the fields below
	conns      map[net.Conn]struct{}
	violations map[string]int64
	closes     map[string]int64 // connections that ended without a violation, by reason (closeWith)
	events     int64
	batches    int64
	bytes      int64 // event bytes acknowledged
	closed     bool
	acceptErr  error     // the last accept failed with it; nil once one succeeds
	acceptFrom time.Time // when accepting started to fail
	failed     error     // the accept loop ended without Close

	wg   sync.WaitGroup // the accept loop and every connection handler
	logs *logLimiter    // lines about violations and accept failures

	// now is the clock acknowledgement latencies are measured with
	// (Acked); tests set a clock of their own before Serve.
	now func() time.Time

	// testHookDeadline, when set, runs before a handler sets its
	// connection's read deadline: tests widen the window a Close can hit.
	testHookDeadline func()
}

// errClosing ends a connection's handler before its next read once Close
// has begun.
var errClosing = errors.New("input: closing")

// ListenBeats binds the listener; Serve starts accepting.
func ListenBeats(opts BeatsOptions, journal Appender) (*Beats, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConnections <= 0 || opts.MaxInflightBytes <= 0 || opts.MaxRecordBytes <= 0 {
		return nil, errors.New("input: max connections, inflight bytes and record bytes must be positive")
	}
	if err := checkSlots(opts.MaxConnections); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("input: beats listen %s: %w", opts.Listen, err)
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	stop, cancel := context.WithCancel(context.Background())
	b := &Beats{opts: opts, log: opts.Logger, ln: ln, journal: journal, stop: stop, cancelStop: cancel,
		budget: newBudget(opts.MaxInflightBytes), slots: make(chan struct{}, opts.MaxConnections),
		conns: map[net.Conn]struct{}{}, violations: map[string]int64{}, closes: map[string]int64{},
		logs: newLogLimiter(opts.Logger, logInterval), now: time.Now}
	if opts.Compression.Enabled() {
		b.zs = newCompressors(opts.Compression, CompressorCount())
	}
	return b, nil
}

// Addr is the address the input listens on.
func (b *Beats) Addr() net.Addr { return b.ln.Addr() }

// Serve accepts connections until Close. It returns nil after Close. A
// failed accept (too many open files, say) is retried after a backoff
// that doubles from 5ms to 1s, as net/http's Server does, and logged at
// most once per interval; meanwhile Waiting says why nothing is accepted.
// Only a listener closed by someone else ends Serve before Close, with an
// error that Err also returns.
func (b *Beats) Serve() error {
	// Add under the lock and only while open: Close sets closed under the
	// same lock before it waits, so no Add can race with its Wait.
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.wg.Add(1)
	b.mu.Unlock()
	defer b.wg.Done()
	var delay time.Duration // before the next accept; 0 while accepting works
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			if b.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				// Nothing will ever be accepted again: a stage that
				// stopped, which health checks report (Err).
				err = fmt.Errorf("input: accept: the listener was closed: %w", err)
				b.mu.Lock()
				b.failed = err
				b.mu.Unlock()
				b.log.Error("beats: the input stopped accepting connections", "addr", b.ln.Addr().String(), "err", err)
				return err
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			b.acceptFailed(err, delay)
			if !b.pause(delay) {
				return nil // Close
			}
			continue
		}
		if delay > 0 {
			delay = 0
			b.acceptWorks()
		}
		select {
		case b.slots <- struct{}{}:
		default:
			b.violation(conn, "max_connections", fmt.Errorf("already %d connections (max_connections)", b.opts.MaxConnections))
			conn.Close()
			continue
		}
		if !b.track(conn) { // also adds the handler to wg, under the lock
			conn.Close()
			<-b.slots
			return nil
		}
		go func() {
			defer b.wg.Done()
			defer func() { <-b.slots }()
			defer b.untrack(conn)
			b.handle(conn)
		}()
	}
}

// acceptFailed records and logs (at most once per interval) a failed
// accept that is retried after delay.
func (b *Beats) acceptFailed(err error, delay time.Duration) {
	b.mu.Lock()
	if b.acceptErr == nil {
		b.acceptFrom = time.Now()
	}
	b.acceptErr = err
	b.mu.Unlock()
	if b.logs.allow("accept", slog.LevelError, "beats: accepting connections failed again; retrying", "addr", b.ln.Addr().String(), "err", err.Error()) {
		b.log.Error("beats: accepting a connection failed: retrying with backoff; clients cannot connect meanwhile",
			"addr", b.ln.Addr().String(), "err", err, "retry_in", delay.String())
	}
}

// acceptWorks ends a series of failed accepts.
func (b *Beats) acceptWorks() {
	b.mu.Lock()
	from := b.acceptFrom
	b.acceptErr = nil
	b.mu.Unlock()
	b.log.Info("beats: accepting connections again", "addr", b.ln.Addr().String(),
		"failed_for", time.Since(from).Round(time.Millisecond).String())
}

// pause waits d; false when Close ended the wait.
func (b *Beats) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.stop.Done():
		return false
	}
}

func (b *Beats) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Err returns why the input stopped accepting connections before Close
// (its listener was closed under it): the process no longer takes Beats
// connections and should be restarted. Nil while the input accepts, or
// retries failed accepts, and after Close. Safe for concurrent use.
func (b *Beats) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed
}

// Waiting says why the input accepts no connection right now, or "":
// accepting fails (too many open files, say) and is retried with backoff.
// Safe for concurrent use.
func (b *Beats) Waiting() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.acceptErr == nil {
		return ""
	}
	return fmt.Sprintf("accepting Beats connections fails since %s: %v; retrying", b.acceptFrom.Format(time.RFC3339), b.acceptErr)
}

func (b *Beats) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	b.wg.Add(1)
	return true
}

func (b *Beats) untrack(c net.Conn) {
	c.Close()
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// Close stops accepting, interrupts reads on every connection (a batch
// already read keeps going until its records are durable and acknowledged,
// or the journal refuses), and waits for every handler.
func (b *Beats) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.SetReadDeadline(time.Now()) // wakes a reader
	}
	b.mu.Unlock()
	// Without this, a batch waiting for journal space would hold Close
	// (and the server's shutdown) for as long as the journal stays full.
	// Appends already queued in the journal still finish.
	b.cancelStop()
	err := b.ln.Close()
	b.wg.Wait()
	b.logs.close() // logs what was counted but not yet logged
	if b.zs != nil {
		b.zs.close() // every handler has returned
	}
	return err
}

// readDeadline sets conn's read deadline d from now, unless Close has
// begun: then it returns errClosing and leaves the deadline Close set
// (now), which interrupts the read. The check and the set happen under
// mu, where Close sets its deadlines, so a deadline set here never
// outlasts Close's.
func (b *Beats) readDeadline(conn net.Conn, d time.Duration) error {
	if b.testHookDeadline != nil {
		b.testHookDeadline()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosing
	}
	return conn.SetReadDeadline(time.Now().Add(d))
}

// Violations counts closed connections by reason.
func (b *Beats) Violations() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.violations))
	for k, v := range b.violations {
		out[k] = v
	}
	return out
}

// Reasons a connection ends without a violation (BeatsStats.Closed).
const (
	// CloseIdle: logpond closed a connection on which no batch began
	// within IdleTimeout after the last one (Logstash's
	// client_inactivity_timeout). Beats send nothing while they have
	// nothing to send, so this is normal on a quiet client.
	CloseIdle = "idle_timeout"
	// CloseClient: the client closed the connection between batches.
	CloseClient = "client_closed"
)

// BeatsStats is a snapshot of the input's counters and state.
type BeatsStats struct {
	Events, Batches, Bytes int64 // acknowledged
	Connections            int   // open now
	InflightBytes          int64 // budget held by events read but not yet durable
	MaxInflightBytes       int64
	BudgetWaiters          int // connections waiting for budget (backpressure)
	// Closed counts the connections that ended without a violation, by
	// reason (CloseIdle, CloseClient); violations are counted apart
	// (Violations). Connections that Close ends are in neither.
	Closed map[string]int64
}

// Stats returns the input's counters and state. Safe for concurrent use.
func (b *Beats) Stats() BeatsStats {
	b.mu.Lock()
	st := BeatsStats{Events: b.events, Batches: b.batches, Bytes: b.bytes, Connections: len(b.conns),
		Closed: make(map[string]int64, len(b.closes))}
	for k, v := range b.closes {
		st.Closed[k] = v
	}
	b.mu.Unlock()
	st.InflightBytes, st.MaxInflightBytes, st.BudgetWaiters = b.budget.state()
	return st
}

// closedNormally counts a connection that ended without a violation.
func (b *Beats) closedNormally(reason string) {
	b.mu.Lock()
	b.closes[reason]++
	b.mu.Unlock()
}

func (b *Beats) violation(c net.Conn, reason string, err error) {
	b.mu.Lock()
	b.violations[reason]++
	b.mu.Unlock()
	if b.logs.allow("violation "+reason, slog.LevelWarn, "beats: closed more connections for this reason", "reason", reason) {
		b.log.Warn("beats: closing connection", "remote", c.RemoteAddr().String(), "reason", reason, "err", err)
	}
}

// closeWith logs and counts why a connection ends. A clean close by the
// client between batches, and an idle connection closed after
// IdleTimeout, are normal ends, not violations; a batch that stops
// arriving (slowloris) is one.
func (b *Beats) closeWith(conn net.Conn, err error) {
	var pe *lumberjack.ProtocolError
	var ne net.Error
	switch {
	case errors.Is(err, errClosing):
	case errors.Is(err, errEOF):
		b.closedNormally(CloseClient)
	case errors.As(err, &pe):
		b.violation(conn, pe.Reason, err)
	case errors.Is(err, errNoBudget):
		b.violation(conn, "inflight_budget", err)
	case errors.As(err, &ne) && ne.Timeout():
		b.mu.Lock()
		closed := b.closed
		b.mu.Unlock()
		switch {
		case closed: // Close interrupted the read
		case errors.Is(err, lumberjack.ErrBetweenBatches):
			// Nothing arrived since the last ACK: a quiet client. Beats
			// have no keepalive of their own; a Filebeat finds the
			// connection closed when it next sends, and sends again on
			// a new one (docs/filebeat.md).
			b.closedNormally(CloseIdle)
			b.log.Debug("beats: closing idle connection", "remote", conn.RemoteAddr().String(),
				"reason", CloseIdle, "idle_timeout", b.opts.IdleTimeout.String())
		default:
			b.violation(conn, "batch_timeout", err)
		}
	default:
		if b.logs.allow("ended", slog.LevelWarn, "beats: more connections ended on errors") {
			b.log.Warn("beats: connection ended", "remote", conn.RemoteAddr().String(), "err", err)
		}
	}
}

// builders lends record builders to connections for the length of a batch,
// so that idle connections hold no record-sized buffer.
var builders = sync.Pool{New: func() any { return new(record.Builder) }}

// keepalive writes ACK(0) every Keepalive until the returned stop is
// called, as Logstash does, so that a client whose batch waits for the
// journal does not time out. It is a timer, not a goroutine: it runs for
// every batch, and a goroutine started per batch had to be scheduled once
// before stop could return, behind every connection busy reading — on a
// loaded machine that wait was in each ACK's latency. No ACK(0) is written
// once stop has returned (stopped is checked under wmu, which the batch's
// own ACK also takes).
func (b *Beats) keepalive(conn net.Conn, wmu *sync.Mutex) (stop func()) {
	if b.opts.Keepalive <= 0 {
		return func() {}
	}
	var (
		t       *time.Timer // guarded by wmu, like stopped
		stopped bool
	)
	wmu.Lock()
	defer wmu.Unlock()
	t = time.AfterFunc(b.opts.Keepalive, func() {
		wmu.Lock()
		defer wmu.Unlock()
		if stopped {
			return
		}
		writeACK(conn, 0)
		t.Reset(b.opts.Keepalive)
	})
	return func() {
		wmu.Lock()
		stopped = true
		t.Stop()
		wmu.Unlock()
	}
}

// writeACK sends an ACK, bounded in time: a client that stops reading
// must not hold this connection's handler forever.
func writeACK(conn net.Conn, seq uint32) error {
	conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return lumberjack.WriteACK(conn, seq)
}

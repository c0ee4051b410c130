package lumberjack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	v2 "github.com/elastic/go-lumber/client/v2"
	"github.com/logpond/logpond/output/internal/drain"
)

// sender is one connection's worth of sending: it connects to its host
// when the host set lets it, takes a batch (one failed earlier first),
// sends it and waits for its ACK. A batch that fails goes back to the
// retry queue whole, or without the events ACKed before the failure, for
// any sender to take; the connection is closed and the host backs off.
// A batch the receiver refuses repeatedly is isolated by the sender
// holding it (isolate.go). One batch at a time per sender: Workers ×
// hosts in flight at most.
type sender struct {
	o     *Output
	h     *host
	tr    *drain.Tracker
	queue <-chan *batch
	retry chan *batch // never full: see Run
	// senders is how many senders the output runs: a sender takes a new
	// window ahead of a retry only while the retry queue holds fewer.
	senders int

	conn    net.Conn
	client  *v2.Client
	opened  time.Time
	dialled bool // a connection was opened before: the next one is a reconnect
}

// run sends until ctx ends. An error is a failure retrying cannot fix
// (the tracker refusing: a bug), which stops the output.
func (s *sender) run(ctx context.Context) error {
	defer s.close()
	hs := s.o.hosts
	for {
		ok, wait, changed := hs.turn(s.h)
		if !ok {
			// Not this host's turn (failover), or it backs off.
			s.close()
			if err := sleep(ctx, wait, changed); err != nil {
				return nil
			}
			continue
		}
		if s.conn != nil && s.o.opts.TTL > 0 && time.Since(s.opened) >= s.o.opts.TTL {
			s.close() // its time is up: a new one before the next batch
		}
		if s.conn == nil {
			if err := s.dial(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.o.log.Debug("connecting failed", "host", s.h.addr, "err", err)
				hs.failed(s.h, err)
				continue
			}
		}
		var b *batch
		select { // a failed batch goes before new ones
		case b = <-s.retry:
			if b.awaitsEvidence(s.o.acks.Load()) && len(s.retry) < s.senders {
				// Sending it again shows nothing new; a new window
				// ACKed would show that the receiver refuses it, not
				// everything (isolate.go). It goes back, after the new
				// one: there is room, this sender just took it.
				select {
				case fresh := <-s.queue:
					s.retry <- b
					b = fresh
				default:
				}
			}
		default:
			select {
			case b = <-s.retry:
			case b = <-s.queue:
			case <-changed:
				continue // the host set changed: is it still this host's turn?
			case <-ctx.Done():
				return nil
			}
		}
		if err := s.send(ctx, b); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// send sends b and waits for its ACK. Whatever is not ACKed goes back to
// the retry queue (also when ctx ends: then nobody takes it, and the
// cursor stays before it), unless the receiver refused the window
// repeatedly: then the sender isolates what it refuses (isolate).
func (s *sender) send(ctx context.Context, b *batch) error {
	err, fatal := s.window(ctx, b)
	switch {
	case fatal != nil:
		return fatal
	case err == nil:
		return nil
	case ctx.Err() == nil && s.refusedAgain(b, err):
		return s.isolate(ctx, b)
	}
	s.retry <- b
	return nil
}

// window sends b once and waits for its ACK. The events the receiver
// ACKed, all or the first ones of a window that then failed, leave b and
// are done. It returns err when the window was not wholly ACKed (the
// connection is then closed, and the host backs off), and fatal when the
// tracker refused an ACKed event (a bug, which stops the output).
func (s *sender) window(ctx context.Context, b *batch) (err, fatal error) {
	o := s.o
	o.stats.batches.Add(1)
	o.stats.bytesSent.Add(int64(b.bytes))
	if b.sent {
		o.stats.resent.Add(int64(len(b.events)))
	}
	b.sent = true
	o.inFlight.Add(1)
	// go-lumber's calls block up to Timeout each: closing the connection
	// is what interrupts them when the output stops. The callback closes
	// this connection, captured here: it may still run after stop()
	// returns, when close below has already cleared s.conn.
	conn := s.conn
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	acked, err := sendWindow(s.client, b.events)
	stop()
	o.inFlight.Add(-1)
	if err == nil {
		acked = len(b.events)
	} else if acked >= len(b.events) {
		acked = 0 // a sequence number beyond the window: trust none of it
	}
	for _, sp := range b.drop(acked) {
		if ferr := s.tr.Finish(sp.lsn, sp.n); ferr != nil {
			return nil, fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, ferr)
		}
	}
	o.stats.delivered.Add(int64(acked))
	if err == nil {
		o.acks.Add(1)
		o.hosts.acked(s.h)
		return nil, nil
	}
	if acked > 0 {
		b.refused = 0 // the receiver took part of it: no refusal
	}
	s.close()
	if ctx.Err() != nil {
		return err, nil
	}
	o.stats.failedBatches.Add(1)
	var refused *refusedError
	if errors.As(err, &refused) {
		o.stats.closedUnacked.Add(1)
	}
	wait := o.hosts.failed(s.h, err)
	o.log.Debug("a batch failed: sent again", "host", s.h.addr, "events", len(b.events), "acked_before_failure", acked,
		"err", err, "host_retry_in", wait.Round(time.Millisecond).String())
	return err, nil
}

// sendWindow sends events as one window and waits for its ACKs. It returns
// how many events the receiver acknowledged: all of them, or, when the
// connection fails first, the last sequence number a partial ACK gave
// (Logstash ACKs a window in parts as it queues it, logpond sends ACK(0)
// as a keepalive), so that only the rest is sent again. go-lumber's
// SyncClient cannot do that: its AwaitACK returns 0 whenever the wait
// fails, whatever was ACKed before.
func sendWindow(cl *v2.Client, events []any) (int, error) {
	if err := cl.Send(events); err != nil {
		return 0, err
	}
	var last uint32
	for int(last) < len(events) {
		seq, err := cl.ReceiveACK()
		if err != nil {
			if last == 0 && closedByPeer(err) {
				// A Lumberjack receiver closes the connection, without a
				// word, on a window it refuses.
				return 0, &refusedError{events: len(events), err: err}
			}
			return int(last), err
		}
		last = max(last, seq) // sequence numbers only grow within a window
	}
	if int(last) > len(events) {
		return int(last), fmt.Errorf("lumberjack: ACK of sequence number %d for a window of %d events", last, len(events))
	}
	return int(last), nil
}

// refusedError is a window the receiver took whole and then closed the
// connection on, acknowledging none of it: what a Lumberjack receiver
// does with a window it refuses (too many events, too many bytes, an event
// it cannot take), as much as what a network failure does.
type refusedError struct {
	events int
	err    error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("the receiver closed the connection after the whole window of %d events was sent, acknowledging none of it: it may refuse the window (see the receiver's log for its max_window, max_batch_bytes or max_event_bytes, or an event it cannot take), or the network failed: %v", e.events, e.err)
}

func (e *refusedError) Unwrap() error { return e.err }

// closedByPeer reports whether err says the other end closed the
// connection (EOF, reset, broken pipe), rather than a timeout.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dial opens a connection to the sender's host, TLS included.
func (s *sender) dial(ctx context.Context) error {
	o := s.o
	nd := &net.Dialer{Timeout: o.opts.Timeout, KeepAlive: 30 * time.Second}
	var conn net.Conn
	var err error
	if o.opts.CurrentTLS != nil {
		conn, err = (&tls.Dialer{NetDialer: nd, Config: o.opts.CurrentTLS()}).DialContext(ctx, "tcp", s.h.addr)
	} else {
		conn, err = nd.DialContext(ctx, "tcp", s.h.addr)
	}
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	client, err := v2.NewWithConn(conn,
		v2.JSONEncoder(rawEncoder), v2.CompressionLevel(o.opts.CompressionLevel), v2.Timeout(o.opts.Timeout))
	if err != nil {
		conn.Close()
		return fmt.Errorf("lumberjack client: %w", err)
	}
	if s.dialled {
		o.stats.reconnects.Add(1)
	}
	s.conn, s.client, s.opened, s.dialled = conn, client, time.Now(), true
	o.hosts.connected(s.h, 1)
	return nil
}

// close closes the sender's connection, if open.
func (s *sender) close() {
	if s.conn == nil {
		return
	}
	if err := s.client.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		s.o.log.Debug("closing a connection", "host", s.h.addr, "err", err)
	}
	s.conn, s.client = nil, nil
	s.o.hosts.connected(s.h, -1)
}

// sleep waits for d (0: no bound), changed or ctx, whichever comes
// first; it returns ctx's error when ctx ended.
func sleep(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-changed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

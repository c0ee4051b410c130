package lumbertest

import (
	"crypto/tls"
	"encoding/json"
	"io"
	stdlog "log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/elastic/go-lumber/lj"
	lumberlog "github.com/elastic/go-lumber/log"
	server "github.com/elastic/go-lumber/server/v2"
)

// PeerOptions shape a Peer.
type PeerOptions struct {
	// TLS, when set, makes the Peer a TLS server.
	TLS *tls.Config
	// Ack decides whether a batch is acknowledged; nil acknowledges every
	// batch. It runs on the Peer's one receiving goroutine, after the
	// batch's events are kept, and may block until Stopping is closed.
	Ack func(*Peer) bool
	// Wrap, when set, wraps the loopback listener (before TLS), to drop
	// or delay connections.
	Wrap func(net.Listener) net.Listener
}

// Peer is go-lumber's Lumberjack v2 server on 127.0.0.1 (a port of its
// own): the destination of a Lumberjack output or a logpond in a test. It
// keeps every event it receives, as the raw JSON bytes sent, in order of
// arrival. Safe for concurrent use; the test's cleanup closes it.
type Peer struct {
	srv  *server.Server
	addr string
	ack  func(*Peer) bool
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	events []json.RawMessage
}

// quietOnce silences go-lumber's logger, which logs every connection's
// start and end, once for the process.
var quietOnce sync.Once

// StartPeer starts a Peer and registers its Close with t.
func StartPeer(t testing.TB, o PeerOptions) *Peer {
	t.Helper()
	quietOnce.Do(func() { lumberlog.Logger = stdlog.New(io.Discard, "", 0) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Peer{addr: ln.Addr().String(), ack: o.Ack, stop: make(chan struct{}), done: make(chan struct{})}
	if o.Wrap != nil {
		ln = o.Wrap(ln)
	}
	if o.TLS != nil {
		ln = tls.NewListener(ln, o.TLS)
	}
	// The Peer's own channel: the server then never closes it under a
	// sender.
	ch := make(chan *lj.Batch)
	raw := func(b []byte, v any) error {
		*(v.(*any)) = json.RawMessage(append([]byte(nil), b...))
		return nil
	}
	p.srv, err = server.NewWithListener(ln, server.JSONDecoder(raw), server.Channel(ch), server.Keepalive(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case b := <-ch:
				p.mu.Lock()
				for _, e := range b.Events {
					p.events = append(p.events, e.(json.RawMessage))
				}
				p.mu.Unlock()
				if p.ack == nil || p.ack(p) {
					b.ACK()
				}
			case <-p.stop:
				return
			}
		}
	}()
	t.Cleanup(p.Close)
	return p
}

// Addr is the Peer's host:port.
func (p *Peer) Addr() string { return p.addr }

// Received returns a copy of the events received so far, in order.
func (p *Peer) Received() []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]json.RawMessage(nil), p.events...)
}

// Count is how many events were received so far.
func (p *Peer) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// Stopping is closed when the Peer starts closing: an Ack that blocks
// must return by then.
func (p *Peer) Stopping() <-chan struct{} { return p.stop }

// Close stops receiving and closes the server; a second Close does
// nothing (go-lumber's server panics on a second Close).
func (p *Peer) Close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	<-p.done
	p.srv.Close()
}

package lumberjack

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/processors"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForwardsEveryEventOnceWithIDs: every event arrives once, with the
// id the Elasticsearch output would derive, or its own @metadata._id
// untouched; other @metadata members and every other byte travel as
// stored; the cursor reaches the last record.
func TestForwardsEveryEventOnceWithIDs(t *testing.T) {
	r := newRig(t)
	p := startPeer(t, peerOptions{})
	r.storeMany(230, 7)
	own := []byte(`{"message":"mine","@metadata":{"beat":"filebeat","_id":"my-own-id","pipeline":"p1"}}`)
	bare := []byte(`{"message":"no metadata"}`)
	text := []byte(`not json at all`)
	lsn := r.store(own, bare, text)
	delete(r.want, r.id(lsn, 0))
	r.want["my-own-id"] = own
	delete(r.want, r.id(lsn, 2)) // checked below: it has no id
	run := r.start(r.options([]string{p.Addr()}, func(o *Options) { o.CompressionLevel = 3 }))
	waitFor(t, "every event", func() bool { return p.Count() >= 233 })
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	if c := r.cursor(); c != r.lsn {
		t.Fatalf("cursor %d, want %d", c, r.lsn)
	}
	var rest []json.RawMessage
	var texts int
	for _, ev := range p.Received() {
		if bytes.Equal(ev, text) {
			texts++
			continue
		}
		rest = append(rest, ev)
	}
	r.checkAllOnce(rest)
	if texts != 1 {
		t.Fatalf("the non-JSON event arrived %d times", texts)
	}
	for _, ev := range rest {
		if idOf(t, ev) == "my-own-id" && !bytes.Equal(ev, own) {
			t.Fatalf("an event with its own id changed: %s", ev)
		}
	}
	st := run.Out.Stats()
	if st.Delivered != 233 || st.EventsWithoutID != 1 || st.CursorLSN != r.lsn || st.FailedBatches != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCursorStaysBeforeUnACKedEvents: a host that receives windows but
// never ACKs them holds the cursor where it was, also through the final
// persist of a stop, and no event counts as delivered.
func TestCursorStaysBeforeUnACKedEvents(t *testing.T) {
	r := newRig(t)
	p := startPeer(t, peerOptions{Ack: func(p *peer) bool { return false }})
	r.storeMany(100, 10)
	run := r.start(r.options([]string{p.Addr()}, func(o *Options) { o.Workers = 2 }))
	waitFor(t, "two windows received", func() bool { return p.Count() >= 100 })
	if g := run.Out.Gauges(); g.InFlight != 2 || g.DoneLSN != 0 || g.PendingEvents != 100 {
		t.Fatalf("gauges %+v", g)
	}
	run.Stop(t)
	if c := r.cursor(); c != 0 {
		t.Fatalf("cursor %d: it passed events never ACKed", c)
	}
	if st := run.Out.Stats(); st.Delivered != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFailoverToAnotherHost: without load balancing, a host refusing
// connections makes the other take every event, whichever is tried first;
// with both answering, one of them takes them all.
func TestFailoverToAnotherHost(t *testing.T) {
	t.Run("first down", func(t *testing.T) {
		r := newRig(t)
		down := closedPort(t)
		p := startPeer(t, peerOptions{})
		r.storeMany(300, 10)
		run := r.start(r.options([]string{down, p.Addr()}, func(o *Options) { o.Workers = 2 }))
		waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
		run.Stop(t)
		r.checkAllOnce(p.Received())
	})
	t.Run("both up", func(t *testing.T) {
		r := newRig(t)
		p1, p2 := startPeer(t, peerOptions{}), startPeer(t, peerOptions{})
		r.storeMany(300, 10)
		run := r.start(r.options([]string{p1.Addr(), p2.Addr()}, func(o *Options) { o.Workers = 2 }))
		waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
		run.Stop(t)
		taker, other := p1, p2
		if p2.Count() > 0 {
			taker, other = p2, p1
		}
		r.checkAllOnce(taker.Received())
		if n := other.Count(); n != 0 {
			t.Fatalf("both hosts took events (%d and %d) without load balancing", taker.Count(), n)
		}
	})
}

// TestLoadBalanceSpreadsOverHosts: with load balancing, both hosts take
// windows. Each host holds its first ACK until both have received one:
// an output that used one host only would hang here.
func TestLoadBalanceSpreadsOverHosts(t *testing.T) {
	r := newRig(t)
	var both sync.WaitGroup
	both.Add(2)
	gate := func() func(*peer) bool {
		var once sync.Once
		return func(p *peer) bool {
			once.Do(func() {
				both.Done()
				waitGroup(&both, p.Stopping())
			})
			return true
		}
	}
	p1, p2 := startPeer(t, peerOptions{Ack: gate()}), startPeer(t, peerOptions{Ack: gate()})
	r.storeMany(500, 10)
	run := r.start(r.options([]string{p1.Addr(), p2.Addr()}, func(o *Options) { o.LoadBalance = true }))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	r.checkAllOnce(p1.Received(), p2.Received())
	if p1.Count() == 0 || p2.Count() == 0 {
		t.Fatalf("events per host: %d, %d", p1.Count(), p2.Count())
	}
}

// waitGroup waits for wg, or for stop.
func waitGroup(wg *sync.WaitGroup, stop <-chan struct{}) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-stop:
	}
}

// TestDroppedConnectionIsResent: the host drops its first connections
// part-way through a window; the window is sent again and every event
// arrives, none lost.
func TestDroppedConnectionIsResent(t *testing.T) {
	r := newRig(t)
	var drops atomic.Int32
	drops.Store(3)
	p := startPeer(t, peerOptions{Wrap: func(ln net.Listener) net.Listener { return &droppingListener{Listener: ln, drops: &drops} }})
	r.storeMany(400, 20)
	run := r.start(r.options([]string{p.Addr()}, nil))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	r.checkAllOnce(p.Received())
	if st := run.Out.Stats(); st.FailedBatches < 3 || st.Reconnects < 3 || st.Resent == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// droppingListener closes each of its first drops connections after
// reading 100 bytes from it: in the middle of the first window.
type droppingListener struct {
	net.Listener
	drops *atomic.Int32
}

func (l *droppingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.drops.Add(-1) < 0 {
		return c, err
	}
	return &droppingConn{Conn: c, left: 100}, nil
}

type droppingConn struct {
	net.Conn
	left int
}

func (c *droppingConn) Read(b []byte) (int, error) {
	if c.left <= 0 {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b[:min(len(b), c.left)])
	c.left -= n
	return n, err
}

// closedPort is a 127.0.0.1 address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRestartResumesFromTheCursor: a second Run starts after the cursor
// the first persisted: nothing it ACKed is sent again, and the rest, with
// records stored meanwhile, arrives.
func TestRestartResumesFromTheCursor(t *testing.T) {
	r := newRig(t)
	p := startPeer(t, peerOptions{})
	r.storeMany(200, 10)
	opts := r.options([]string{p.Addr()}, nil)
	first := r.start(opts)
	waitFor(t, "the first run's events", func() bool { return first.Out.Gauges().DoneLSN == r.lsn })
	first.Stop(t)
	cursor := r.cursor()
	if cursor != r.lsn {
		t.Fatalf("cursor %d, want %d", cursor, r.lsn)
	}
	before := p.Count()
	r.storeMany(150, 10)
	second := r.start(opts)
	waitFor(t, "the second run's events", func() bool { return second.Out.Gauges().DoneLSN == r.lsn })
	second.Stop(t)
	for _, ev := range p.Received()[before:] {
		if lsn := lsnOf(t, idOf(t, ev)); lsn <= cursor {
			t.Fatalf("record %d sent again after the cursor %d persisted it", lsn, cursor)
		}
	}
	r.checkAllOnce(p.Received())
}

// TestTLSWithClientCertificate: the output verifies the host's
// certificate against the CA and presents its client certificate, which
// the host requires.
func TestTLSWithClientCertificate(t *testing.T) {
	pki := newTestPKI(t)
	srvCert, err := tls.LoadX509KeyPair(pki.serverCert, pki.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, peerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: pki.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}})
	r := newRig(t)
	r.storeMany(100, 10)

	// Without the client certificate the host refuses: nothing passes.
	noCert, err := TLSConfig([]string{pki.ca}, "", "", "full")
	if err != nil {
		t.Fatal(err)
	}
	refused := r.start(r.options([]string{p.Addr()}, func(o *Options) { o.TLS = noCert }))
	waitFor(t, "the refusal", func() bool {
		return refused.Out.Stats().FailedBatches+refused.Out.Stats().Reconnects > 0 || refused.Out.Waiting() != ""
	})
	refused.Stop(t)
	if p.Count() != 0 || r.cursor() != 0 {
		t.Fatalf("events passed without a client certificate: %d, cursor %d", p.Count(), r.cursor())
	}

	cfg, err := TLSConfig([]string{pki.ca}, pki.clientCert, pki.clientKey, "full")
	if err != nil {
		t.Fatal(err)
	}
	run := r.start(r.options([]string{p.Addr()}, func(o *Options) { o.TLS = cfg }))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	r.checkAllOnce(p.Received())
}

// TestWaitingWhileNoHostAnswers: with every host down, Waiting names the
// output and the hosts' errors; nothing moves.
func TestWaitingWhileNoHostAnswers(t *testing.T) {
	r := newRig(t)
	r.storeMany(10, 10)
	a, b := closedPort(t), closedPort(t)
	run := r.start(r.options([]string{a, b}, nil))
	waitFor(t, "the wait", func() bool { return run.Out.Waiting() != "" })
	w := run.Out.Waiting()
	for _, s := range []string{"output.lumberjack.test", a, b} {
		if !bytes.Contains([]byte(w), []byte(s)) {
			t.Fatalf("Waiting %q does not name %s", w, s)
		}
	}
	run.Stop(t)
	if r.cursor() != 0 {
		t.Fatal("the cursor moved")
	}
}

// TestTTLReconnects: with a TTL shorter than the drain, connections are
// replaced between windows, and nothing is lost or repeated.
func TestTTLReconnects(t *testing.T) {
	r := newRig(t)
	p := startPeer(t, peerOptions{Ack: func(*peer) bool { time.Sleep(2 * time.Millisecond); return true }})
	r.storeMany(300, 10)
	run := r.start(r.options([]string{p.Addr()}, func(o *Options) { o.TTL = time.Millisecond; o.BulkMaxSize = 10 }))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	run.Stop(t)
	r.checkAllOnce(p.Received())
	if st := run.Out.Stats(); st.Reconnects == 0 || st.FailedBatches != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTLSVerificationModes: a host reached by a name its certificate does
// not hold is refused by "full" and accepted by "certificate" (chain
// only); a certificate from another CA is refused by "certificate".
func TestTLSVerificationModes(t *testing.T) {
	pki, other := newTestPKI(t), newTestPKI(t)
	srvCert, err := tls.LoadX509KeyPair(pki.serverCert, pki.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, peerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{srvCert}, MinVersion: tls.VersionTLS12}})
	_, port, _ := net.SplitHostPort(p.Addr())
	byName := "localhost:" + port // the certificate names 127.0.0.1 only
	dial := func(cas []string, mode string) error {
		cfg, err := TLSConfig(cas, "", "", mode)
		if err != nil {
			t.Fatal(err)
		}
		c, err := (&tls.Dialer{Config: cfg}).Dial("tcp", byName)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial([]string{pki.ca}, "full"); err == nil {
		t.Fatal("full: a certificate without the host's name accepted")
	}
	if err := dial([]string{pki.ca}, "certificate"); err != nil {
		t.Fatalf("certificate: %v", err)
	}
	if err := dial([]string{other.ca}, "certificate"); err == nil {
		t.Fatal("certificate: a certificate of another CA accepted")
	}
	if _, err := TLSConfig(nil, pki.clientCert, "", "full"); err == nil {
		t.Fatal("a certificate without its key accepted")
	}
	if _, err := TLSConfig(nil, "", "", "strict-ish"); err == nil {
		t.Fatal("an unknown verification mode accepted")
	}
}

// TestCheckOptions: New refuses options out of range, naming them.
func TestCheckOptions(t *testing.T) {
	r := newRig(t)
	good := r.options([]string{"127.0.0.1:5044"}, nil)
	if err := CheckOptions(good); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"Hosts":            func(o *Options) { o.Hosts = nil },
		"host:port":        func(o *Options) { o.Hosts = []string{"nohostport"} },
		"Workers":          func(o *Options) { o.Workers = 0 },
		"BulkMaxSize":      func(o *Options) { o.BulkMaxSize = 0 },
		"CompressionLevel": func(o *Options) { o.CompressionLevel = 10 },
		"Timeout":          func(o *Options) { o.Timeout = 0 },
		"BackoffMax":       func(o *Options) { o.BackoffMax = o.BackoffInit / 2 },
		"Cursor":           func(o *Options) { o.Cursor = "" },
	} {
		o := good
		o.Hosts = append([]string(nil), good.Hosts...)
		mod(&o)
		if _, err := New(r.ledger, o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCursorLSNReportedAfterRestart: an output restarted over a ledger
// where its cursor is at 5, whose destination is down, reports CursorLSN 5
// (GET /'s outputs[].cursor_lsn), not 0 until it first persists, which
// never happens while the destination is down.
func TestCursorLSNReportedAfterRestart(t *testing.T) {
	r := newRig(t)
	r.storeMany(10, 1)
	if err := r.ledger.SetCursor("lumberjack", 5); err != nil {
		t.Fatal(err)
	}
	run := r.start(r.options([]string{closedPort(t)}, nil))
	deadline := time.Now().Add(10 * time.Second)
	for run.Out.Waiting() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // until it has tried the destination
	}
	if c := run.Out.Stats().CursorLSN; c != 5 {
		t.Errorf("Stats().CursorLSN = %d while the persisted cursor is 5", c)
	}
}

// TestFailoverChoosesAtRandom: without load balancing no host has
// precedence, as in Filebeat: the first host is chosen at random, a
// failed host hands over to another one (never itself, one out of its
// backoff when there is one), and every host gets its turn.
func TestFailoverChoosesAtRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opts := &Options{Hosts: []string{"a:1", "b:1", "c:1"}, BackoffInit: time.Minute, BackoffMax: time.Hour}
	first := map[int]int{}
	for range 300 {
		s := newHostSet(opts, slog.New(slog.DiscardHandler))
		first[s.active]++
	}
	if len(first) != 3 {
		t.Errorf("the first host chosen in 300 starts: %v, want every host", first)
	}
	s := newHostSet(opts, slog.New(slog.DiscardHandler))
	s.pick = rng.IntN
	next := map[int]int{}
	for range 300 {
		failed := s.hosts[s.active]
		s.failed(failed, errors.New("refused"))
		if s.active == failed.i {
			t.Fatalf("host %s failed and stays active", failed.addr)
		}
		next[s.active]++
		// Every other host out of its backoff again: the choice is free.
		for _, h := range s.hosts {
			h.retryAt = time.Time{}
		}
	}
	if len(next) != 3 {
		t.Errorf("hosts taking over in 300 failovers: %v, want every host", next)
	}
	// Two hosts backing off, one ready: the ready one takes over.
	now := time.Now()
	s.active = 0
	s.hosts[1].retryAt = now.Add(time.Hour)
	s.hosts[2].retryAt = time.Time{}
	s.failed(s.hosts[0], errors.New("refused"))
	if s.active != 2 {
		t.Errorf("host %d took over from a failed host while host 2 was out of its backoff", s.active)
	}
}

// TestProcessorChain: the output forwards events as its chain leaves them
// (docs/configuration.md, "Processors"), each with the id of its ledger
// position; dropped events count as forwarded and reach nobody; an event
// that is not a JSON object is a dead letter.
func TestProcessorChain(t *testing.T) {
	r := newRig(t)
	d, err := dlq.Open(r.dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	list, err := processors.Compile("processors", []map[string]any{
		{"drop_event": map[string]any{"when": map[string]any{"equals": map[string]any{"level": "debug"}}}},
		{"add_tags": map[string]any{"tags": []any{"forwarded"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var evs [][]byte
	for i := range 40 {
		level := "info"
		if i%4 == 0 {
			level = "debug"
		}
		evs = append(evs, fmt.Appendf(nil, `{"n":%d,"level":"%s"}`, i, level))
	}
	lsn := r.store(append(evs, []byte(`"just a string"`))...)
	p := startPeer(t, peerOptions{})
	run := r.start(r.options([]string{p.Addr()}, func(o *Options) {
		o.Chain = processors.NewChain(list)
		o.DeadLetters = d
	}))
	waitFor(t, "the cursor", func() bool { return run.Out.Gauges().DoneLSN == r.lsn })
	st := run.Out.Stats()
	run.Stop(t)
	if st.Delivered != 40 || st.DeadLettered != 1 {
		t.Errorf("delivered %d (dropped ones included), dead-lettered %d; want 40 and 1", st.Delivered, st.DeadLettered)
	}
	seen := map[int]bool{}
	for _, ev := range p.Received() {
		var got struct {
			N     int      `json:"n"`
			Level string   `json:"level"`
			Tags  []string `json:"tags"`
		}
		if err := json.Unmarshal(ev, &got); err != nil {
			t.Fatal(err)
		}
		if got.Level == "debug" || len(got.Tags) != 1 || idOf(t, ev) != r.id(lsn, got.N) || seen[got.N] {
			t.Errorf("forwarded %s: want the chain's event once, under its position's id", ev)
		}
		seen[got.N] = true
	}
	if len(seen) != 30 {
		t.Errorf("%d events forwarded, want 30", len(seen))
	}
}

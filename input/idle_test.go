package input

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// waitClosed reads from c until the server closes it; it fails the test
// if the server answers instead, or keeps the connection open past a
// deadline that only catches a hang.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server did not close the connection")
			}
			return
		}
		if n > 0 && n != 6 { // anything but an ACK
			t.Fatalf("the server sent %q instead of closing", buf[:n])
		}
	}
}

// loggedBeats starts a Beats input logging at every level into logs.
func loggedBeats(t *testing.T, opts BeatsOptions, logs *syncbuf.Buffer) *Beats {
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return startBeats(t, opts, journalInput{openJournal(t)})
}

// TestIdleConnectionIsNoViolation: a client that sends nothing after its
// last acknowledged batch (Filebeat on a quiet host) is closed after
// idle_timeout as a normal event: counted under idle_timeout among the
// connections closed without a violation, logged below WARN, and not
// counted as a violation.
func TestIdleConnectionIsNoViolation(t *testing.T) {
	var logs syncbuf.Buffer
	opts := testOptions()
	opts.IdleTimeout = 200 * time.Millisecond
	b := loggedBeats(t, opts, &logs)
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl, err := lj.NewSyncClientWithConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cl.Send([]interface{}{json.RawMessage(`{"a":1}`)}); err != nil || n != 1 {
		t.Fatalf("acked %d: %v", n, err)
	}
	waitClosed(t, conn) // idle after its ACK
	// The handler logs and counts before it closes the connection.
	log := logs.String()
	if strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") {
		t.Errorf("an idle close logged at WARN or above:\n%s", log)
	}
	if !strings.Contains(log, "level=DEBUG") || !strings.Contains(log, "reason=idle_timeout") {
		t.Errorf("no DEBUG line says the connection was closed for idle_timeout:\n%s", log)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Errorf("an idle connection counted as a violation: %v", v)
	}
	if n := b.Stats().Closed[CloseIdle]; n != 1 {
		t.Errorf("%d idle closes counted, want 1", n)
	}
}

// TestStalledBatchIsAViolation: a client that stops in the middle of a
// batch (slowloris), or of its window frame, is closed after batch_timeout
// and counted and logged (WARN) as a violation, batch_timeout, not as an
// idle close.
func TestStalledBatchIsAViolation(t *testing.T) {
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"inside the events", lumbertest.Window(`{"a":1}`, `{"a":2}`)[:12]},
		{"inside the window frame", []byte("2W\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			opts := testOptions()
			opts.IdleTimeout = 200 * time.Millisecond
			opts.BatchTimeout = 200 * time.Millisecond
			b := loggedBeats(t, opts, &logs)
			conn, err := net.Dial("tcp", b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(tc.send)
			waitClosed(t, conn)
			expectViolation(t, b, &logs, "batch_timeout")
		})
	}
}

// TestClientCloseIsCounted: a client that closes its connection between
// batches is counted under client_closed, not as a violation.
func TestClientCloseIsCounted(t *testing.T) {
	var logs syncbuf.Buffer
	b := loggedBeats(t, testOptions(), &logs)
	cl, err := lj.SyncDial(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cl.Send([]interface{}{json.RawMessage(`{"a":1}`)}); err != nil || n != 1 {
		t.Fatalf("acked %d: %v", n, err)
	}
	cl.Close()
	waitCond(t, "the close counted", func() bool { return b.Stats().Closed[CloseClient] == 1 })
	if v := b.Violations(); len(v) != 0 {
		t.Errorf("a client's close counted as a violation: %v", v)
	}
}

// TestStalledTLSHandshakeIsAViolation: a client that opens a TLS
// connection and stalls its handshake (sends part of a ClientHello, or
// nothing) is closed after batch_timeout and counted and logged as a
// violation, tls_handshake_timeout, not as a quiet client closed for
// idle_timeout.
func TestStalledTLSHandshakeIsAViolation(t *testing.T) {
	pki := newTestPKI(t)
	cfg, err := TLSConfig(pki.certFile, pki.keyFile, "", "none")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"nothing sent", nil},
		{"half a ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			opts := testOptions()
			opts.TLS = cfg
			opts.IdleTimeout = time.Hour // a stalled handshake must not wait for it
			opts.BatchTimeout = 200 * time.Millisecond
			b := loggedBeats(t, opts, &logs)
			conn, err := net.Dial("tcp", b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(tc.send)
			waitClosedAny(t, conn)
			expectViolation(t, b, &logs, "tls_handshake_timeout")
		})
	}
}

// expectViolation checks that the one connection b served was closed for
// the violation reason: counted once, logged at WARN, and not counted as
// an idle close.
func expectViolation(t *testing.T, b *Beats, logs *syncbuf.Buffer, reason string) {
	t.Helper()
	if n := b.Violations()[reason]; n != 1 {
		t.Errorf("%d %s violations counted, want 1: %v", n, reason, b.Violations())
	}
	if n := b.Stats().Closed[CloseIdle]; n != 0 {
		t.Errorf("a %s counted as %d idle closes", reason, n)
	}
	if log := logs.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "reason="+reason) {
		t.Errorf("no WARN line with reason=%s:\n%s", reason, log)
	}
}

// waitClosedAny reads from c until the server closes it, whatever it sends
// first (a TLS alert, say); it fails the test only if the connection stays
// open past a deadline that catches a hang.
func waitClosedAny(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server did not close the connection")
			}
			return
		}
	}
}

package lumberjack

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	inlj "github.com/logpond/logpond/input/lumberjack"
)

// ljServer is a Lumberjack v2 receiver built on logpond's own input reader
// (the limits of a default logpond), whose ACKs a test shapes.
type ljServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	got   map[string]int  // id → times received
	acked map[string]bool // ids the receiver ACKed
	// ackedThenAgain counts the events received again after the
	// receiver had ACKed them.
	ackedThenAgain int
	errs           []string
	// ack returns how many of a window of n events to ACK on connection
	// c (1-based), and whether to close the connection after.
	ack func(c, n int) (int, bool)
	// refuse, when set, says which events the receiver cannot take: it
	// closes the connection on a window holding one, acknowledging none
	// of it, as a receiver refuses a window. refused counts those.
	refuse  func(ev []byte) bool
	refused int
}

func startLJServer(t *testing.T, limits inlj.Limits, ack func(c, n int) (int, bool)) *ljServer {
	return startLJServerRefusing(t, limits, ack, nil)
}

func startLJServerRefusing(t *testing.T, limits inlj.Limits, ack func(c, n int) (int, bool), refuse func(ev []byte) bool) *ljServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &ljServer{ln: ln, got: map[string]int{}, acked: map[string]bool{}, ack: ack, refuse: refuse}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			cn := s.conns
			s.mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				r := inlj.NewReader(c, limits)
				defer r.Release()
				for {
					var ids []string
					refused := false
					n, seq, err := r.ReadBatch(func(ev []byte) error {
						refused = refused || s.refuse != nil && s.refuse(ev)
						ids = append(ids, idOf(t, ev))
						return nil
					})
					if err != nil {
						s.mu.Lock()
						s.errs = append(s.errs, err.Error())
						s.mu.Unlock()
						return
					}
					if refused {
						s.mu.Lock()
						s.refused++
						s.mu.Unlock()
						return // closes the connection, nothing ACKed
					}
					k, closeAfter := s.ack(cn, n)
					s.mu.Lock()
					for _, id := range ids {
						if s.acked[id] {
							s.ackedThenAgain++
						}
						s.got[id]++
					}
					for _, id := range ids[:k] {
						s.acked[id] = true
					}
					s.mu.Unlock()
					_ = seq
					var a [6]byte
					a[0], a[1] = '2', 'A'
					binary.BigEndian.PutUint32(a[2:], uint32(k))
					c.Write(a[:])
					if closeAfter {
						time.Sleep(20 * time.Millisecond)
						return
					}
				}
			})
		}
	})
	return s
}

// TestPartialACKIsCredited: a receiver ACKs the first half of a window (a
// partial ACK, as Logstash sends) and then the connection breaks. The
// events it ACKed are done and never sent again; only the rest of the
// window is.
func TestPartialACKIsCredited(t *testing.T) {
	r := newRig(t)
	r.storeMany(100, 100)
	srv := startLJServer(t, inlj.DefaultLimits(), func(c, n int) (int, bool) {
		if c == 1 {
			return n / 2, true // half, then the connection breaks
		}
		return n, false
	})
	run := r.start(r.options([]string{srv.ln.Addr().String()}, func(o *Options) { o.BulkMaxSize = 100 }))
	waitFor(t, "the cursor", func() bool { return run.Out.Stats().CursorLSN == r.lsn })
	st := run.Out.Stats()
	srv.mu.Lock()
	twice, ackedTwice := 0, srv.ackedThenAgain
	for _, n := range srv.got {
		if n > 1 {
			twice++
		}
	}
	srv.mu.Unlock()
	t.Logf("stats: delivered %d resent %d failed batches %d; events received twice: %d, of them ACKed before: %d", st.Delivered, st.Resent, st.FailedBatches, twice, ackedTwice)
	if ackedTwice > 0 || twice == 0 {
		t.Errorf("%d events ACKed in the partial ACK were sent again (Resent %d), and %d received twice in all; want none ACKed sent again, and the rest of the window sent again", ackedTwice, st.Resent, twice)
	}
}

package lumberjack

import (
	"context"
	"net"
	"sync"
	"testing"

	inlj "github.com/logpond/logpond/input/lumberjack"
)

// TestStopAsTheReceiverCloses stops the output at the moment the receiver
// closes the connection after reading a window, many times over: the
// output's stop callback closes the connection while the send path, whose
// window just failed, closes it too and forgets it. The callback must
// close the connection it was set up for, not read the sender's, which the
// send path clears at the same time: run under -race this finds that data
// race, and without -race the callback's Close of a nil connection (a
// panic that ends the process) in some of the rounds.
func TestStopAsTheReceiverCloses(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	for range rounds {
		stopAsTheReceiverCloses(t)
	}
}

func stopAsTheReceiverCloses(t *testing.T) {
	r := newRig(t)
	r.storeMany(1, 10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		rd := inlj.NewReader(c, inlj.DefaultLimits())
		defer rd.Release()
		_, _, err = rd.ReadBatch(func([]byte) error { return nil })
		// The window is in: stop the output and close the connection
		// at once, unacknowledged.
		cancel()
		c.Close()
		if err != nil {
			t.Errorf("reading the window: %v", err)
		}
	})
	out, err := New(r.ledger, r.options([]string{ln.Addr().String()}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if c := r.cursor(); c != 0 {
		t.Errorf("the cursor passed the unacknowledged window: %d", c)
	}
}

package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/lumbertest"
)

// TestIngestStaysWithinItsMemoryShare loads the pipeline (input, journal,
// flusher, ledger; output off) with several times more data than its
// bounded buffers hold, and compares the most live heap the collector saw
// meanwhile with the parts of the memory formula (conf.Memory) that those
// components make up. Bytes, not time: the figures do not depend on how
// fast this machine is.
func TestIngestStaysWithinItsMemoryShare(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	cfg.Journal.MaxGroupBytes = 1 << 20
	cfg.Input.Beats.MaxInflightBytes = 16 << 20
	cfg.Input.Beats.MaxEventBytes = 1 << 20
	cfg.Ledger.DirectIO = false
	m := cfg.Memory()
	// The test's own clients: each holds one encoded window.
	const conns, perWindow, eventSize = 4, 256, 1024
	clients := int64(conns * perWindow * (eventSize + 64))
	share := m.Input + m.InputCompression + m.JournalTail + m.JournalWrite + m.JournalRead + m.Ledger + clients
	const total = 96 << 20 // several times the share: a backlog would show
	r := start(t, cfg)
	defer r.shutdown(t)
	s := r.s

	// The live heap is measured at each collection: collect now, or the
	// first samples would be what earlier tests in this process held.
	runtime.GC()
	var peak uint64
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			rtmetrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	ev := `{"message":"` + strings.Repeat("x", eventSize-14) + `"}`
	evs := make([]string, perWindow)
	for i := range evs {
		evs[i] = ev
	}
	window := lumbertest.Window(evs...)
	windows := total / conns / (perWindow * eventSize)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Go(func() {
			conn, err := net.Dial("tcp", s.BeatsAddr().String())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			ack := make([]byte, 6)
			for range windows {
				if _, err := conn.Write(window); err != nil {
					errs <- err
					return
				}
				for { // ACK(0) keepalives come first when the journal is slow
					if _, err := io.ReadFull(conn, ack); err != nil {
						errs <- fmt.Errorf("read ack: %w", err)
						return
					}
					if binary.BigEndian.Uint32(ack[2:]) == perWindow {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("live heap peaked at %.1f MiB; share of input, journal and ledger %.1f MiB", float64(peak)/(1<<20), float64(share)/(1<<20))
	if int64(peak) > share {
		t.Fatalf("the live heap reached %d MiB under load, beyond the %d MiB the formula gives the input, the journal and the ledger (with the test's clients)", peak>>20, share>>20)
	}
}

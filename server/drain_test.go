package server

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// distinctEvents counts the distinct events (by their "n" field) p
// received.
func distinctEvents(p *lumbertest.Peer) int {
	var ns []int64
	for _, e := range p.Received() {
		ns = append(ns, gjson.GetBytes(e, "n").Int())
	}
	slices.Sort(ns)
	return len(slices.Compact(ns))
}

// TestDrainBothOutputTypes: events acknowledged while an Elasticsearch and
// a Lumberjack output could not deliver are in the ledger; a Server opened
// by OpenDrain binds no Beats listener, refuses Run, and Drain returns
// Done once both outputs' destinations have every event, with each
// output's cursor at the ledger's last record.
func TestDrainBothOutputTypes(t *testing.T) {
	es := startES(t, estest.Options{Seed: 7})
	if err := es.Pause(); err != nil {
		t.Fatal(err)
	}
	// The Lumberjack destination is down: a port that closes every
	// connection.
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var downWG sync.WaitGroup
	downWG.Go(func() {
		for {
			c, err := down.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	defer func() { down.Close(); downWG.Wait() }()

	cfg := pipelineConfig(t, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch.Enabled = false
	cfg.Output.NamedElasticsearch = map[string]*conf.Elasticsearch{"es": namedES(es.URL())}
	ljc := conf.DefaultLumberjack()
	ljc.Hosts = []string{down.Addr().String()}
	ljc.Backoff = conf.LumberjackBackoff{Init: conf.Duration(10 * time.Millisecond), Max: conf.Duration(100 * time.Millisecond)}
	cfg.Output.Lumberjack = map[string]*conf.Lumberjack{"lj": &ljc}

	const events = 1000
	r := start(t, cfg)
	if err := sendFanout(t, r.s.BeatsAddr().String(), 0, events); err != nil {
		t.Fatal(err)
	}
	r.shutdown(t)
	if es.Count() != 0 {
		t.Fatalf("%d documents stored while Elasticsearch was paused", es.Count())
	}

	if err := es.Resume(); err != nil {
		t.Fatal(err)
	}
	rcv := lumbertest.StartPeer(t, lumbertest.PeerOptions{})
	ljc.Hosts = []string{rcv.Addr()}
	var log syncbuf.Buffer
	s, err := OpenDrain(cfg, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if a := s.BeatsAddr(); a != nil {
		t.Errorf("a Server opened by OpenDrain listens for Beats on %s", a)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Error("Run of a Server opened by OpenDrain returned nil")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure deadline only
	defer cancel()
	left, err := s.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !left.Done || left.LedgerLastLSN == 0 || left.JournalRecords != 0 || len(left.Outputs) != 2 {
		t.Fatalf("drain left %+v, want done with both outputs:\n%s", left, log.String())
	}
	for _, o := range left.Outputs {
		if o.CursorLSN != left.LedgerLastLSN || o.Records != 0 || o.Bytes != 0 {
			t.Errorf("output %s: cursor %d, %d records (%d bytes) left; want the cursor at the ledger's last LSN %d", o.Name, o.CursorLSN, o.Records, o.Bytes, left.LedgerLastLSN)
		}
	}
	if n := es.Count(); n != events {
		t.Errorf("Elasticsearch holds %d documents, want %d", n, events)
	}
	if n := distinctEvents(rcv); n != events {
		t.Errorf("the Lumberjack receiver got %d distinct events, want %d", n, events)
	}
}

// TestOpenDrainNeedsAnOutput: with no output enabled, nothing would send
// what the ledger holds: OpenDrain refuses, and opens nothing.
func TestOpenDrainNeedsAnOutput(t *testing.T) {
	root := t.TempDir()
	cfg := pipelineConfig(t, root)
	if s, err := OpenDrain(cfg, slog.New(slog.DiscardHandler)); err == nil {
		s.Close()
		t.Fatal("OpenDrain without any output enabled succeeded")
	}
}

// TestDrainingNotReady: while draining, readiness says so first, and not
// that the Beats input is missing (it is, on purpose); liveness is fine.
func TestDrainingNotReady(t *testing.T) {
	st := state{draining: true, waiting: map[string]string{}}
	if why := st.notReady(); !slices.Equal(why, []string{drainingReason}) {
		t.Errorf("not ready while draining: %q, want only %q", why, drainingReason)
	}
	if why := st.notAlive(); len(why) > 0 {
		t.Errorf("not alive while draining: %q", why)
	}
	st.draining = false
	if why := st.notReady(); !slices.Contains(why, "the Beats input is not running") {
		t.Errorf("not ready without an input, not draining: %q", why)
	}
}

// TestPartialRequestGoesWhenEventsStop: with a flush_interval far longer
// than the test, a burst smaller than flush_bytes still reaches
// Elasticsearch while logpond runs: once the ledger has stopped growing
// (for two ledger.flush_interval), the output sends the request it holds
// rather than wait out flush_interval for events that are not coming.
func TestPartialRequestGoesWhenEventsStop(t *testing.T) {
	es := startES(t, estest.Options{Seed: 7})
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Output.Elasticsearch.Enabled = false
	o := namedES(es.URL())
	o.FlushInterval = conf.Duration(time.Hour)
	cfg.Output.NamedElasticsearch = map[string]*conf.Elasticsearch{"es": o}
	r := start(t, cfg)
	defer r.shutdown(t)
	const events = 300 // 300 KiB, in 2 batches: less than flush_bytes
	if err := sendFanout(t, r.s.BeatsAddr().String(), 0, events); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for es.Count() < events {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s Elasticsearch holds %d of %d events: the partial request waits for flush_interval", es.Count(), events)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startES starts a test Elasticsearch with opts, closed when the test
// ends (after the test's own deferred calls: a Server it ran has shut
// down by then).
func startES(t *testing.T, opts estest.Options) *estest.Server {
	t.Helper()
	es, err := estest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	return es
}

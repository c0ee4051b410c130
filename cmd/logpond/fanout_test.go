package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// relay accepts on 127.0.0.1 port 0 and forwards each connection to the
// address target returns at that moment: the edge's Lumberjack output
// keeps one host while the central logpond it reaches restarts on a new
// port.
type relay struct {
	ln     net.Listener
	target atomic.Pointer[string]
	wg     sync.WaitGroup
}

func newRelay(t *testing.T) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			to := r.target.Load()
			if to == nil {
				c.Close()
				continue
			}
			r.wg.Go(func() {
				defer c.Close()
				d, err := net.Dial("tcp", *to)
				if err != nil {
					return
				}
				defer d.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(d, c); done <- struct{}{} }()
				go func() { io.Copy(c, d); done <- struct{}{} }()
				<-done
			})
		}
	})
	t.Cleanup(func() { ln.Close() })
	return r
}

// payloadCopies counts the documents of srv by payload.
func payloadCopies(srv *estest.Server) map[string]int {
	n := map[string]int{}
	for _, d := range srv.Docs() {
		n[gjson.GetBytes(d.Source, "payload").String()]++
	}
	return n
}

// TestFanOutEndToEnd: an edge logpond drains one ledger into three
// outputs: Elasticsearch "a", Elasticsearch "b" (down for the whole load)
// and Lumberjack "central" into a second logpond that drains into its own
// Elasticsearch. During a paced load the edge is killed with SIGKILL
// twice and the central logpond once, and clients resend what was not
// acknowledged, as Filebeat does. Within a minute of the load's end "a"
// and the central Elasticsearch hold every acknowledged event; "b" catches
// up once it answers; and every event is stored as many times at each
// destination as at the others: ids derived from the edge's ledger travel
// with the events through the hop, so resends inside logpond add no
// copies anywhere.
func TestFanOutEndToEnd(t *testing.T) {
	skipLong(t)
	esA, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer esA.Close()
	esB, err := estest.Start(estest.Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer esB.Close()
	esC, err := estest.Start(estest.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer esC.Close()
	if err := esB.Pause(); err != nil {
		t.Fatal(err)
	}
	rl := newRelay(t)
	root := t.TempDir()
	stores := func(name string) string {
		if err := os.MkdirAll(filepath.Join(root, name), 0o750); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`
[journal]
dir = %q
segment_bytes = "1MiB"
max_bytes = "64MiB"
max_group_bytes = "256KiB"
[ledger]
dir = %q
segment_bytes = "1MiB"
flush_interval = "5ms"
[input.beats]
listen = "127.0.0.1:0"
[admin]
listen = ""
`, filepath.Join(root, name, "journal"), filepath.Join(root, name, "ledger"))
	}
	fast := `flush_interval = "10ms"
retry_initial_interval = "2ms"
retry_max_interval = "50ms"
`
	edge := filepath.Join(root, "edge.toml")
	if err := os.WriteFile(edge, fmt.Appendf(nil, "%s\n[output.elasticsearch.a]\nhosts = [%q]\n%s\n[output.elasticsearch.b]\nhosts = [%q]\n%s\n[output.lumberjack.central]\nhosts = [%q]\ntimeout = \"5s\"\n[output.lumberjack.central.backoff]\ninit = \"10ms\"\nmax = \"200ms\"\n",
		stores("edge"), esA.URL(), fast, esB.URL(), fast, rl.ln.Addr().String()), 0o644); err != nil {
		t.Fatal(err)
	}
	central := filepath.Join(root, "central.toml")
	if err := os.WriteFile(central, fmt.Appendf(nil, "%s\n[output.elasticsearch]\nhosts = [%q]\n%s", stores("central"), esC.URL(), fast), 0o644); err != nil {
		t.Fatal(err)
	}
	startCentral := func() *exec.Cmd {
		cmd, log := started(t, central)
		a := beatsAddr(t, log.String())
		rl.target.Store(&a)
		return cmd
	}
	kill := func(cmd *exec.Cmd) {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
	}

	// Three clients of 50-event batches, 60 batches each, paced: about
	// 600 events/s in all.
	clients := newResenders(3, 50, 60, 250*time.Millisecond)

	c := startCentral()
	// The edge runs four times: killed after 1.5 s, then the central
	// logpond is killed during the second run and restarted, the second
	// run is killed after 2.5 s, and the last run takes the rest of the
	// load.
	for run := range 4 {
		cmd, log := started(t, edge)
		addr := beatsAddr(t, log.String())
		sent := make(chan struct{})
		go func() { defer close(sent); clients.send(addr) }()
		switch run {
		case 0:
			time.Sleep(1500 * time.Millisecond)
		case 1:
			time.Sleep(1000 * time.Millisecond)
			kill(c)
			c = startCentral()
			time.Sleep(1500 * time.Millisecond)
		case 2:
			time.Sleep(1500 * time.Millisecond)
		default:
			<-sent
		}
		if run < 3 {
			kill(cmd)
			<-sent
			t.Logf("edge run %d killed: %d events acknowledged; a %d, central %d documents", run+1, len(clients.ackedPayloads()), esA.Count(), esC.Count())
			continue
		}
		if !clients.done() {
			t.Fatal("the clients could not send every batch in the last run")
		}
		loadEnd := time.Now()
		var want []string
		for p := range clients.ackedPayloads() {
			want = append(want, p)
		}
		holdsAll := func(srv *estest.Server) bool {
			have := payloadCopies(srv)
			for _, p := range want {
				if have[p] == 0 {
					return false
				}
			}
			return true
		}
		for !holdsAll(esA) || !holdsAll(esC) {
			if time.Since(loadEnd) > time.Minute {
				t.Fatalf("a minute after the load: a holds %d, central %d of %d acknowledged events", len(payloadCopies(esA)), len(payloadCopies(esC)), len(want))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("a and central hold all %d acknowledged events %s after the load's end", len(want), time.Since(loadEnd).Round(10*time.Millisecond))
		if err := esB.Resume(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(2 * time.Minute); !holdsAll(esB); {
			if time.Now().After(deadline) {
				t.Fatalf("b holds %d of %d acknowledged events two minutes after it answered again", len(payloadCopies(esB)), len(want))
			}
			time.Sleep(50 * time.Millisecond)
		}
		// Let every output finish what it has in flight, then compare.
		time.Sleep(time.Second)
		a, b, cc := payloadCopies(esA), payloadCopies(esB), payloadCopies(esC)
		for _, p := range want {
			if a[p] != b[p] || a[p] != cc[p] {
				t.Errorf("event %s stored %d times at a, %d at b, %d at central: want the same at each", p, a[p], b[p], cc[p])
			}
		}
		if len(a) != len(b) || len(a) != len(cc) {
			t.Errorf("distinct events: a %d, b %d, central %d", len(a), len(b), len(cc))
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd); code != 0 {
			t.Errorf("edge exit code %d after SIGTERM", code)
		}
	}
	kill(c)
}

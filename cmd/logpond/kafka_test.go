package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/kafkatest"
)

// TestKafkaExactlyOnceEndToEnd: the real binary drains one ledger into a
// three-broker in-process Kafka cluster through an [output.kafka.k]
// output, and into Elasticsearch beside it (fan-out from one copy), while Beats-like clients (resending what was not acknowledged)
// feed it, it is killed with SIGKILL several times, a tenth of produce
// requests fail with NOT_LEADER_FOR_PARTITION, and partition leaders
// move. Afterwards a read_committed consumer reads every acknowledged
// event, as its JSON; every ledger event (its logpond-id header) once; an
// event at most as many times as its client sent it; Elasticsearch holds
// every acknowledged event under the same ids; and SIGTERM exits 0.
func TestKafkaExactlyOnceEndToEnd(t *testing.T) {
	skipLong(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	produces := kafkatest.RefuseProduce(cluster, 10)
	stopMoves := make(chan struct{})
	movesDone := make(chan struct{})
	go func() {
		defer close(movesDone)
		for {
			select {
			case <-stopMoves:
				return
			case <-time.After(300 * time.Millisecond):
				cluster.ShufflePartitionLeaders()
			}
		}
	}()
	movesStopped := false
	stopMovesOnce := func() {
		if !movesStopped {
			movesStopped = true
			close(stopMoves)
			<-movesDone
		}
	}
	defer stopMovesOnce()

	srv, err := estest.Start(estest.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	config := filepath.Join(root, "logpond.toml")
	hosts := `"` + strings.Join(cluster.ListenAddrs(), `", "`) + `"`
	if err := os.WriteFile(config, fmt.Appendf(nil, `
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
[output.kafka.k]
hosts = [%s]
topic = "logs"
compression = "snappy"
bulk_max_size = 500
bulk_flush_frequency = "10ms"
[output.kafka.k.backoff]
init = "5ms"
max = "100ms"
[output.elasticsearch.es]
hosts = [%q]
flush_interval = "10ms"
retry_initial_interval = "2ms"
retry_max_interval = "50ms"
[admin]
listen = ""
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), hosts, srv.URL()), 0o644); err != nil {
		t.Fatal(err)
	}

	clients := newResenders(3, 100, 1<<30, 5*time.Millisecond)
	const kills = 5
	for k := range kills {
		cmd, log := started(t, config)
		addr := beatsAddr(t, log.String())
		sent := make(chan struct{})
		go func() { defer close(sent); clients.send(addr) }()
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		<-sent
		t.Logf("kill %d: %d events acknowledged", k+1, len(clients.ackedPayloads()))
	}
	total := clients.endAfterNext()
	cmd, log := started(t, config)
	clients.send(beatsAddr(t, log.String()))
	acked := clients.ackedPayloads()
	if len(acked) != total {
		t.Errorf("%d events acknowledged, want %d: a client could not finish", len(acked), total)
	}

	stopMovesOnce()
	// Read everything committed until every acknowledged event is there
	// (the drain catches up meanwhile), then a little longer: a
	// duplicate would come after.
	consumer, err := kafkatest.ReadCommitted(cluster.ListenAddrs(), "logs")
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	copies := map[string]int{}
	ids := map[string]int{}
	badValues := 0
	poll := func(d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "logpond-id" {
					ids[string(h.Value)]++
				}
			}
			p := gjson.GetBytes(r.Value, "payload")
			if !p.Exists() || gjson.GetBytes(r.Value, "@metadata.beat").String() != "filebeat" {
				badValues++
			}
			copies[p.String()]++
		})
	}
	deadline := time.Now().Add(2 * time.Minute)
	for missing := len(acked); missing > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged events are not in Kafka after the last run:\n%s", missing, log.String())
		}
		poll(500 * time.Millisecond)
		missing = 0
		for p := range acked {
			if copies[p] == 0 {
				missing++
			}
		}
	}
	for range 4 {
		poll(250 * time.Millisecond)
	}
	for !allStored(srv, acked) {
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged events missing from Elasticsearch after the last run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	esIDs := map[string]bool{}
	for _, d := range srv.Docs() {
		esIDs[d.ID] = true
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("ledger event %s is in Kafka %d times", id, n)
		}
		if !esIDs[id] {
			t.Errorf("ledger event %s is in Kafka but not in Elasticsearch under that id", id)
		}
	}
	for p := range acked {
		if c := copies[p]; c > clients.sent(p) {
			t.Errorf("event %s is in Kafka %d times, sent only %d times", p, c, clients.sent(p))
		}
	}
	if badValues > 0 {
		t.Errorf("%d records are not the events' JSON", badValues)
	}
	t.Logf("%d events acknowledged, %d records read, %d produce requests (a tenth refused)", len(acked), len(ids), produces.Load())
}

// TestKafkaDrain: logpond -drain with a Kafka output delivers a backlog
// left in the journal and the ledger while the cluster was unreachable,
// and exits with the dead-letter code, naming the output, when one event
// was too large for the topic: what a retiring instance must report
// before its directories are deleted.
func TestKafkaDrain(t *testing.T) {
	skipLong(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	// An address nothing listens on: the output cannot deliver while the
	// backlog is built.
	down := closedAddr(t)
	root := t.TempDir()
	config := filepath.Join(root, "logpond.toml")
	write := func(hosts, flush string) {
		if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
flush_interval = %q
[input.beats]
listen = "127.0.0.1:0"
[output.kafka.k]
hosts = [%q]
topic = "logs"
max_message_bytes = "2KiB"
timeout = "2s"
broker_timeout = "1s"
[output.kafka.k.backoff]
init = "10ms"
max = "100ms"
[admin]
listen = "127.0.0.1:0"
`, filepath.Join(root, "journal"), filepath.Join(root, "ledger"), flush, hosts), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(down, "1m")
	cmd, log := started(t, config)
	c, err := lj.SyncDial(beatsAddr(t, log.String()))
	if err != nil {
		t.Fatal(err)
	}
	const events = 500
	var data []any
	for i := range events {
		pad := ""
		if i == 7 {
			pad = strings.Repeat("x", 4<<10) // more than max_message_bytes
		}
		data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"payload":"p%d","pad":%q}`, i, pad)))
	}
	if n, err := c.Send(data); err != nil || n != events {
		t.Fatalf("acked %d of %d: %v", n, events, err)
	}
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	write(cluster.ListenAddrs()[0], "5ms")
	drain, dlog := startKept(t, "-config", config, "-drain")
	if code := exitWithin(t, drain, 2*time.Minute, dlog); code != exitDrainDeadLetters {
		t.Fatalf("logpond -drain exited %d, want %d (dead letters left):\n%s", code, exitDrainDeadLetters, dlog.String())
	}
	if text := dlog.String(); !strings.Contains(text, "drain done, but dead letters remain") || strings.Contains(text, "the directories can be deleted") {
		t.Errorf("the drain's log does not say dead letters remain:\n%s", text)
	}
	consumer, err := kafkatest.ReadCommitted(cluster.ListenAddrs(), "logs")
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); len(got) < events-1 && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[gjson.GetBytes(r.Value, "payload").String()]++ })
		cancel()
	}
	for i := range events {
		p := fmt.Sprintf("p%d", i)
		want := 1
		if i == 7 {
			want = 0
		}
		if got[p] != want {
			t.Errorf("event %s is in Kafka %d times, want %d", p, got[p], want)
		}
	}
}

// closedAddr is a 127.0.0.1 address nothing listens on: a listener's,
// closed.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

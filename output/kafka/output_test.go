package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/logpond/logpond/internal/testkit/kafkatest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/output/processors"
	"github.com/logpond/logpond/output/sprintf"
	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rig is a ledger with events stored in it, a dead-letter store, and an
// in-process Kafka cluster of three brokers.
type rig struct {
	t      *testing.T
	dir    string
	ledger *ledger.Ledger
	dlq    *dlq.Store
	kafka  *kfake.Cluster
	lsn    uint64
	want   map[string][]byte // id → the event as stored
}

func newRig(t *testing.T, opts ...kfake.Opt) *rig {
	t.Helper()
	dir := t.TempDir()
	l, err := ledger.Open(dir+"/ledger", ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dlq.Open(dir+"/dlq", dlq.Options{MaxBytes: 64 << 20, SegmentBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, ledger: l, dlq: d, kafka: c, want: map[string][]byte{}}
	t.Cleanup(func() {
		c.Close()
		d.Close()
		l.Close()
	})
	return r
}

func (r *rig) id(lsn uint64, pos int) string {
	p, err := eventid.Prefix(r.ledger.StreamID())
	if err != nil {
		r.t.Fatal(err)
	}
	return string(eventid.Append(nil, p, lsn, pos))
}

// store appends a record of events and syncs it.
func (r *rig) store(events ...[]byte) uint64 {
	r.t.Helper()
	rec, err := record.Encode(nil, time.Now(), events)
	if err != nil {
		r.t.Fatal(err)
	}
	r.lsn++
	if err := r.ledger.Append(r.lsn, rec); err != nil {
		r.t.Fatal(err)
	}
	if err := r.ledger.Sync(); err != nil {
		r.t.Fatal(err)
	}
	for i, ev := range events {
		r.want[r.id(r.lsn, i)] = ev
	}
	return r.lsn
}

// storeMany stores n events, per to a record, each naming its service
// (one of three) for routing.
func (r *rig) storeMany(n, per int) {
	for i := 0; i < n; i += per {
		var evs [][]byte
		for j := i; j < min(i+per, n); j++ {
			evs = append(evs, fmt.Appendf(nil, `{"@timestamp":"2026-12-05T00:00:00Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"service":"svc%d","message":"event %d"}`, j%3, j))
		}
		r.store(evs...)
	}
}

func (r *rig) options(mod func(*Options)) Options {
	o := Options{
		Name: "k", Cursor: "kafka", Hosts: r.kafka.ListenAddrs(), Topic: sprintf.MustCompile("logs"),
		RequiredAcks: -1, Compression: "none", MaxMessageBytes: 1 << 20, BulkMaxSize: 100,
		FlushInterval: 10 * time.Millisecond, Timeout: 10 * time.Second, BrokerTimeout: 5 * time.Second,
		BackoffInit: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond, ExactlyOnce: true,
		DeadLetters: r.dlq, Logger: testLogger(),
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

type running = draintest.Running[*Output]

func (r *rig) start(opts Options) *running {
	r.t.Helper()
	out, err := New(r.ledger, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return draintest.Start(r.t, out)
}

// consumed is a record read back from the cluster.
type consumed struct {
	topic string
	value []byte
	key   []byte
	id    string
}

// readAll reads every committed record of topics (read_committed, as a
// consumer of an exactly-once output must), until want records were
// read or a few seconds passed with nothing new.
func (r *rig) readAll(want int, topics ...string) []consumed {
	r.t.Helper()
	cl, err := kafkatest.ReadCommitted(r.kafka.ListenAddrs(), topics...)
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	var out []consumed
	idle := time.Now()
	for time.Since(idle) < 3*time.Second && len(out) < want+1 {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			idle = time.Now()
			c := consumed{topic: rec.Topic, value: rec.Value, key: rec.Key}
			for _, h := range rec.Headers {
				if h.Key == IDHeader {
					c.id = string(h.Value)
				}
			}
			out = append(out, c)
		})
		if len(out) >= want {
			// Read a little longer: a duplicate would come after.
			if time.Since(idle) > 300*time.Millisecond {
				break
			}
		}
	}
	return out
}

// checkExactlyOnce checks that got holds every stored event once, by id,
// with the event as its value.
func (r *rig) checkExactlyOnce(got []consumed) {
	r.t.Helper()
	seen := map[string]int{}
	for _, c := range got {
		seen[c.id]++
		want, ok := r.want[c.id]
		if !ok {
			r.t.Errorf("a record with id %q that was never stored: %s", c.id, c.value)
			continue
		}
		if !bytes.Equal(c.value, want) {
			r.t.Errorf("record %s: value %s, want the event as stored %s", c.id, c.value, want)
		}
	}
	missing, twice := 0, 0
	for id := range r.want {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	if missing > 0 || twice > 0 {
		r.t.Errorf("%d events stored: %d records read, %d events missing, %d read more than once", len(r.want), len(got), missing, twice)
	}
}

func (r *rig) cursor() uint64 {
	c, err := r.ledger.Cursor("kafka")
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// TestProducesEveryEventOnce: a backlog in records of several events
// reaches Kafka whole, each event once as its stored JSON with its id in
// the logpond-id header, routed to topics by field, and the cursor passes
// it all.
func TestProducesEveryEventOnce(t *testing.T) {
	for _, exactly := range []bool{true, false} {
		t.Run(fmt.Sprintf("exactly_once=%v", exactly), func(t *testing.T) {
			r := newRig(t)
			r.storeMany(1000, 37)
			run := r.start(r.options(func(o *Options) {
				o.ExactlyOnce = exactly
				o.Topic = sprintf.MustCompile("logs-%{[service]}")
				o.Key = sprintf.MustCompile("%{[service]}")
				o.Compression = "zstd"
			}))
			draintest.WaitFor(t, "every event produced", func() bool { return run.Out.Stats().Delivered == 1000 })
			draintest.WaitFor(t, "the cursor at the end", func() bool { return r.cursor() == r.lsn })
			run.Stop(t)
			got := r.readAll(1000, "logs-svc0", "logs-svc1", "logs-svc2")
			r.checkExactlyOnce(got)
			for _, c := range got {
				if svc := c.topic[len("logs-"):]; !bytes.Contains(c.value, []byte(`"service":"`+svc+`"`)) || string(c.key) != svc {
					t.Errorf("record in %s with key %q: %s", c.topic, c.key, c.value)
					break
				}
			}
		})
	}
}

// TestCursorFileBehindKafka: with exactly-once, a cursor file that lags
// the position committed in Kafka (a crash after a transaction committed
// and before the file was persisted) causes no resend: the output reads
// its position from Kafka and skips what Kafka holds.
func TestCursorFileBehindKafka(t *testing.T) {
	r := newRig(t)
	r.storeMany(500, 50)
	run := r.start(r.options(nil))
	draintest.WaitFor(t, "every event produced", func() bool { return run.Out.Stats().Delivered == 500 })
	run.Stop(t)
	// The crash: the cursor file back at the start.
	if err := r.ledger.DeleteCursor("kafka"); err != nil {
		t.Fatal(err)
	}
	r.storeMany(100, 50)
	run = r.start(r.options(nil))
	draintest.WaitFor(t, "the new events produced", func() bool { return run.Out.Stats().Delivered == 600 })
	st := run.Out.Stats()
	run.Stop(t)
	if st.Skipped != 500 {
		t.Errorf("%d events skipped as already in Kafka, want 500", st.Skipped)
	}
	r.checkExactlyOnce(r.readAll(600, "logs"))
}

// TestRefusedEventsAreDeadLetters: an event larger than max_message_bytes
// and one whose topic is no valid name go to the dead letters with the
// reason, and every other event of their batches reaches Kafka once.
func TestRefusedEventsAreDeadLetters(t *testing.T) {
	r := newRig(t)
	big := fmt.Appendf(nil, `{"service":"svc0","message":"%s"}`, strings.Repeat("x", 8<<10))
	r.store([]byte(`{"service":"svc0","message":"a"}`), big, []byte(`{"service":"svc1","message":"b"}`))
	r.store([]byte(`{"service":"bad topic!","message":"c"}`), []byte(`{"service":"svc2","message":"d"}`))
	r.store([]byte(`{"message":"no service"}`))
	run := r.start(r.options(func(o *Options) {
		o.MaxMessageBytes = 4 << 10
		o.Topic = sprintf.MustCompile("logs-%{[service]}")
	}))
	draintest.WaitFor(t, "every event done", func() bool { return r.cursor() == r.lsn })
	st := run.Out.Stats()
	run.Stop(t)
	if st.DeadLettered != 3 || st.Delivered != 3 {
		t.Errorf("dead-lettered %d, delivered %d; want 3 and 3", st.DeadLettered, st.Delivered)
	}
	reasons := map[string]string{}
	if err := dlq.Scan(r.dir+"/dlq", func(_ dlq.Pos, e dlq.Entry) error {
		reasons[string(e.Event)] = e.ErrType + ": " + e.Reason
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for ev, want := range map[string]string{string(big): "message_too_large", `{"service":"bad topic!","message":"c"}`: "invalid_topic", `{"message":"no service"}`: "topic_unresolved"} {
		if !strings.HasPrefix(reasons[ev], want) {
			t.Errorf("dead letter of %.40s: %q, want %s", ev, reasons[ev], want)
		}
		for id, w := range r.want {
			if string(w) == ev {
				delete(r.want, id)
			}
		}
	}
	r.checkExactlyOnce(r.readAll(3, "logs-svc0", "logs-svc1", "logs-svc2"))
}

// TestProduceErrorsAndLeaderMoves: produce requests failing with
// retriable errors, transactions whose end is lost, and partition leaders moving while
// the output drains lose nothing and duplicate nothing for a
// read_committed consumer.
func TestProduceErrorsAndLeaderMoves(t *testing.T) {
	r := newRig(t, kfake.SeedTopics(3, "logs"))
	r.storeMany(3000, 100)
	produces := kafkatest.RefuseProduce(r.kafka, 7)
	var commits atomic.Int64
	// Every fifth EndTxn is answered UNKNOWN_SERVER_ERROR without being
	// applied: the producer cannot know the outcome.
	r.kafka.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r.kafka.KeepControl()
		if commits.Add(1)%5 != 0 {
			return nil, nil, false
		}
		resp := req.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil, true
	})
	run := r.start(r.options(nil))
	for i := 0; run.Out.Stats().Delivered < 3000 && i < 200; i++ {
		r.kafka.ShufflePartitionLeaders()
		time.Sleep(20 * time.Millisecond)
	}
	draintest.WaitFor(t, "every event produced", func() bool { return run.Out.Stats().Delivered == 3000 })
	st := run.Out.Stats()
	run.Stop(t)
	if st.FailedBatches == 0 {
		t.Errorf("no batch failed: the injected errors were not met (%d produce requests, %d transaction ends)", produces.Load(), commits.Load())
	}
	r.checkExactlyOnce(r.readAll(3000, "logs"))
}

// TestSecondProducerFencesTheFirst: two outputs with the same
// transactional id (two logpond processes on one ledger, say) never both
// commit: opening the second fences the first, which stands down when its
// next transaction is refused, saying why, instead of taking the id back;
// the second produces everything, and Kafka holds each event once.
func TestSecondProducerFencesTheFirst(t *testing.T) {
	r := newRig(t)
	r.storeMany(200, 20)
	first := r.start(r.options(nil))
	draintest.WaitFor(t, "every event produced", func() bool { return first.Out.Stats().Delivered == 200 })
	second := r.start(r.options(func(o *Options) { o.Cursor = "kafka2" }))
	draintest.WaitFor(t, "the second output to find the events in Kafka", func() bool { return second.Out.Stats().Skipped == 200 })
	r.storeMany(100, 20)
	draintest.WaitFor(t, "the first output to stand down", func() bool { return strings.Contains(first.Out.Waiting(), "fenced") })
	draintest.WaitFor(t, "the second output to produce the new events", func() bool { return second.Out.Stats().Delivered == 300 })
	if d := first.Out.Stats().Delivered; d > 200 {
		t.Logf("the first output committed %d new events before the second took the id", d-200)
	}
	first.Stop(t)
	second.Stop(t)
	r.checkExactlyOnce(r.readAll(300, "logs"))
}

// testLogger discards the output's log, or writes it to stderr with
// LOGPOND_TEST_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("LOGPOND_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// TestProcessorChain: the output runs its chain (docs/configuration.md,
// "Processors") between the ledger and Kafka: records hold the events as
// the chain leaves them, under the ids of their ledger positions;
// dropped events count as delivered and reach no topic; an event that is
// not a JSON object is a dead letter (unprocessable_event); a topic the
// chain routes to an invalid name is one too (invalid_topic).
func TestProcessorChain(t *testing.T) {
	r := newRig(t)
	list, err := processors.Compile("processors", []map[string]any{
		{"drop_event": map[string]any{"when": map[string]any{"equals": map[string]any{"level": "debug"}}}},
		{"add_fields": map[string]any{"target": "", "fields": map[string]any{"via": "logpond"}}},
		{"copy_fields": map[string]any{"fields": []any{map[string]any{"from": "route", "to": "service"}}, "ignore_missing": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var evs [][]byte
	for i := range 60 {
		level, service := "info", fmt.Sprintf(`"service":"svc%d"`, i%2)
		switch {
		case i%3 == 0:
			level = "debug"
		case i == 10:
			service = `"route":"bad topic!"` // copied into service by the chain
		}
		evs = append(evs, fmt.Appendf(nil, `{"n":%d,"level":"%s",%s}`, i, level, service))
	}
	evs = append(evs, []byte(`[1]`))
	r.store(evs[:31]...)
	r.store(evs[31:]...)
	run := r.start(r.options(func(o *Options) {
		o.Topic = sprintf.MustCompile("logs-%{[service]}")
		o.Chain = processors.NewChain(list)
	}))
	draintest.WaitFor(t, "every event done", func() bool { return r.cursor() == r.lsn })
	st := run.Out.Stats()
	run.Stop(t)
	if st.Delivered != 59 || st.DeadLettered != 2 {
		t.Errorf("delivered %d (dropped ones included), dead-lettered %d; want 59 and 2", st.Delivered, st.DeadLettered)
	}
	got := r.readAll(39, "logs-svc0", "logs-svc1")
	seen := map[string]bool{}
	for _, c := range got {
		var ev struct {
			N     int    `json:"n"`
			Level string `json:"level"`
			Via   string `json:"via"`
		}
		if err := json.Unmarshal(c.value, &ev); err != nil {
			t.Fatal(err)
		}
		stored := evs[ev.N]
		lsn, pos := uint64(1), ev.N
		if ev.N >= 31 {
			lsn, pos = 2, ev.N-31
		}
		if c.id != r.id(lsn, pos) || ev.Level == "debug" || ev.Via != "logpond" || seen[c.id] {
			t.Errorf("record %s %s (stored %s): want the chain's event once, under its position's id", c.id, c.value, stored)
		}
		seen[c.id] = true
	}
	if len(seen) != 39 {
		t.Errorf("%d events produced, want 39", len(seen))
	}
	kinds := map[string]int{}
	if err := dlq.Scan(r.dir+"/dlq", func(_ dlq.Pos, e dlq.Entry) error {
		kinds[e.ErrType]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if kinds["unprocessable_event"] != 1 || kinds["invalid_topic"] != 1 {
		t.Errorf("dead letters by type: %v", kinds)
	}
}

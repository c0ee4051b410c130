package kafka

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logpond/logpond/internal/testkit/kafkatest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/output/sprintf"
)

// TestPartitioning: Filebeat's partitioners. hash puts the records of one
// key (or of one value of the hashed fields) in one partition and spreads
// different ones; round_robin and random use every partition, a group of
// group_events records at a time for round_robin.
func TestPartitioning(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		// check gets the partition of each event, in order.
		check func(t *testing.T, parts []int32)
	}{
		{"hash of the key", func(o *Options) { o.Key = sprintf.MustCompile("%{[service]}") }, sameForSame},
		{"hash of fields", func(o *Options) { o.HashFields = []string{"service"} }, sameForSame},
		{"round_robin, 2 at a time", func(o *Options) { o.Partitioning, o.GroupEvents = PartitionRoundRobin, 2 }, func(t *testing.T, parts []int32) {
			for i := 0; i+1 < len(parts); i += 2 {
				if parts[i] != parts[i+1] || parts[i] == parts[(i+2)%len(parts)] {
					t.Fatalf("round robin 2 at a time: partitions %v", parts[:min(len(parts), 12)])
				}
			}
			allUsed(t, parts)
		}},
		{"random", func(o *Options) { o.Partitioning = PartitionRandom }, allUsed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, kfake.SeedTopics(3, "logs"))
			r.storeMany(300, 300) // one record: one batch, in order
			run := r.start(r.options(func(o *Options) { o.BulkMaxSize = 1000; tc.mod(o) }))
			draintest.WaitFor(t, "every event produced", func() bool { return run.Out.Stats().Delivered == 300 })
			run.Stop(t)
			parts := make([]int32, 300)
			for _, c := range r.readAllRecords(300, "logs") {
				var n int
				if _, err := fmt.Sscanf(string(c.Value[bytes.Index(c.Value, []byte(`"message":"event `))+len(`"message":"event `):]), "%d", &n); err != nil {
					t.Fatal(err)
				}
				parts[n] = c.Partition
			}
			tc.check(t, parts)
		})
	}
}

// sameForSame: event i names service i%3; the events of one service share
// a partition, and the three services do not all share one.
func sameForSame(t *testing.T, parts []int32) {
	t.Helper()
	for i := range parts {
		if parts[i] != parts[i%3] {
			t.Fatalf("events of service %d in partitions %d and %d", i%3, parts[i%3], parts[i])
		}
	}
	if parts[0] == parts[1] && parts[1] == parts[2] {
		t.Errorf("three services hashed to one partition of three")
	}
}

func allUsed(t *testing.T, parts []int32) {
	t.Helper()
	used := map[int32]bool{}
	for _, p := range parts {
		used[p] = true
	}
	if len(used) != 3 {
		t.Errorf("%d of 3 partitions used", len(used))
	}
}

// readAllRecords reads want committed records of topics.
func (r *rig) readAllRecords(want int, topics ...string) []*kgo.Record {
	r.t.Helper()
	cl, err := kafkatest.ReadCommitted(r.kafka.ListenAddrs(), topics...)
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for deadline := time.Now().Add(10 * time.Second); len(out) < want && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { out = append(out, rec) })
		cancel()
	}
	if len(out) != want {
		r.t.Fatalf("read %d records, want %d", len(out), want)
	}
	return out
}

// TestAtLeastOnceSaysSo: with exactly_once off, the output says at start
// that consumers may read an event twice.
func TestAtLeastOnceSaysSo(t *testing.T) {
	r := newRig(t)
	var log syncbuf.Buffer
	run := r.start(r.options(func(o *Options) {
		o.ExactlyOnce = false
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	}))
	draintest.WaitFor(t, "the start-up lines", func() bool { return bytes.Contains([]byte(log.String()), []byte("exactly_once is off")) })
	run.Stop(t)
}

// TestUnknownTopicIsADeadLetter: with topic auto-creation off, the events
// routed to a topic the cluster does not have go to the dead letters with
// the broker's reason, and every other event of their batches reaches
// Kafka once.
func TestUnknownTopicIsADeadLetter(t *testing.T) {
	r := newRig(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs-svc0", "logs-svc1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.kafka = c
	r.storeMany(90, 30)
	run := r.start(r.options(func(o *Options) { o.Topic = sprintf.MustCompile("logs-%{[service]}") }))
	draintest.WaitFor(t, "every event done", func() bool { return r.cursor() == r.lsn })
	st := run.Out.Stats()
	run.Stop(t)
	if st.DeadLettered != 30 || st.Delivered != 60 {
		t.Errorf("dead-lettered %d, delivered %d; want the 30 events of the missing topic and the 60 others", st.DeadLettered, st.Delivered)
	}
	for id, ev := range r.want {
		if bytes.Contains(ev, []byte(`"service":"svc2"`)) {
			delete(r.want, id)
		}
	}
	r.checkExactlyOnce(r.readAll(60, "logs-svc0", "logs-svc1"))
}

// TestPermanentErrors: which produce errors make a record a dead letter
// (retrying cannot help) and which make its batch be retried.
func TestPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		dead string // the dead letter's error type; "" for retried
	}{
		{kerr.MessageTooLarge, "message_too_large"},
		{fmt.Errorf("wrapped: %w", kerr.MessageTooLarge), "message_too_large"},
		{kerr.RecordListTooLarge, "record_list_too_large"},
		{kerr.InvalidRecord, "invalid_record"},
		{kerr.CorruptMessage, "corrupt_message"},
		{kerr.TopicAuthorizationFailed, "topic_authorization_failed"},
		{kerr.UnknownTopicOrPartition, "unknown_topic_or_partition"},
		{kerr.InvalidTopicException, "invalid_topic_exception"},
		{kerr.PolicyViolation, "policy_violation"},
		{kerr.NotLeaderForPartition, ""},
		{kerr.NotEnoughReplicas, ""},
		{kerr.NotEnoughReplicasAfterAppend, ""},
		{kerr.RequestTimedOut, ""},
		{kerr.CoordinatorNotAvailable, ""},
		{kerr.NotCoordinator, ""},
		{kgo.ErrRecordTimeout, ""},
		{context.DeadlineExceeded, ""},
	} {
		typ, dead := permanent(tc.err)
		if dead != (tc.dead != "") || typ != tc.dead {
			t.Errorf("%v: dead letter %v (%q), want %q", tc.err, dead, typ, tc.dead)
		}
	}
}

// Package kafkatest fails requests of an in-process Kafka cluster
// (kfake) and reads what it holds, for the tests of the Kafka output and
// of the whole server, and for the benchmark report. Only tests and tools
// import it.
package kafkatest

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RefuseProduce makes c answer every nth produce request with
// NOT_LEADER_FOR_PARTITION for each of its partitions, without storing
// anything, as a broker does while a partition's leadership moves. It
// returns the count of produce requests seen, for the test's report.
func RefuseProduce(c *kfake.Cluster, every int64) *atomic.Int64 {
	var n atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n.Add(1)%every != 0 {
			return nil, nil, false
		}
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return &n
}

// ReadCommitted returns a consumer of topics on the brokers hosts that
// reads from the start of each partition with isolation level
// read_committed: what a consumer of an exactly-once output must use, as
// it sees only committed transactions.
func ReadCommitted(hosts []string, topics ...string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(hosts...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
}

package kafka

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// newClient opens a producer with the output's settings. It contacts
// the brokers lazily, except that a transactional client asks for its
// producer id at the first transaction.
func (o *Output) newClient() (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.opts.Hosts...),
		kgo.ClientID(o.opts.ClientID),
		kgo.ProducerBatchMaxBytes(int32(o.opts.MaxMessageBytes)),
		kgo.ProduceRequestTimeout(o.opts.BrokerTimeout),
		// A record not produced by then fails, and its batch is retried
		// from the output (a new transaction): the output, not the
		// client, decides how long to keep trying and says why it waits.
		kgo.RecordDeliveryTimeout(o.opts.Timeout),
		kgo.RecordPartitioner(o.partitioner()),
		kgo.ProducerBatchCompression(o.codec()),
		// Unknown topics are retried a few times (metadata may lag a
		// topic just created), then fail: with auto-creation off, such
		// a record is a dead letter, not a reason to wait for ever.
		kgo.UnknownTopicRetries(4),
		// Ask brokers to create a topic that does not exist, as
		// Filebeat's client does: whether they do is the cluster's
		// auto.create.topics.enable.
		kgo.AllowAutoTopicCreation(),
		// After a leader moves, new metadata is asked for within a
		// quarter second (Filebeat's metadata.retry.backoff), not the
		// client's default 5 s: a batch waits on it.
		kgo.MetadataMinAge(250 * time.Millisecond),
		// A batch is flushed whole before its transaction ends: no
		// linger beyond what the output's batching already does.
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(max(o.opts.BulkMaxSize, 1)),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(o.opts.BackoffInit<<min(tries, 16), o.opts.BackoffMax)
		}),
	}
	switch o.opts.RequiredAcks {
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if o.opts.ExactlyOnce {
		opts = append(opts, kgo.TransactionalID(o.txnID), kgo.TransactionTimeout(txnTimeout(o.opts.Timeout)))
	}
	if o.opts.CurrentTLS != nil {
		// A dialer that asks for the current TLS configuration at each
		// connection, so that renewed certificates are used.
		current := o.opts.CurrentTLS
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			cfg := current().Clone()
			if cfg.ServerName == "" {
				if h, _, err := net.SplitHostPort(host); err == nil {
					cfg.ServerName = h
				}
			}
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: cfg}
			return d.DialContext(ctx, network, host)
		}))
	}
	user, pass := o.opts.Username, o.opts.Password
	switch o.opts.SASLMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return kgo.NewClient(opts...)
}

// txnTimeout is the transaction timeout Kafka is told: a transaction left
// open by a producer that died is aborted by the coordinator after it. It
// must outlast a batch's produce and commit (timeout), and Kafka's
// default cap (transaction.max.timeout.ms) is 15 minutes.
func txnTimeout(timeout time.Duration) time.Duration {
	return min(max(2*timeout, time.Minute), 15*time.Minute)
}

// codec is the record batches' compression.
func (o *Output) codec() kgo.CompressionCodec {
	var c kgo.CompressionCodec
	switch o.opts.Compression {
	case "gzip":
		c = kgo.GzipCompression()
	case "snappy":
		c = kgo.SnappyCompression()
	case "lz4":
		c = kgo.Lz4Compression()
	case "zstd":
		c = kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
	// Only gzip takes a level, as in Filebeat: lz4's levels above its
	// fast mode are its high-compression mode, several times slower.
	if l := o.opts.CompressionLevel; l != 0 && o.opts.Compression == "gzip" {
		c = c.WithLevel(l)
	}
	return c
}

// partitioner spreads records as Filebeat's partition setting says.
func (o *Output) partitioner() kgo.Partitioner {
	group := max(o.opts.GroupEvents, 1)
	switch o.opts.Partitioning {
	case PartitionRoundRobin:
		return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			next, left := 0, group
			return func(_ *kgo.Record, n int) int {
				if left == 0 {
					next, left = next+1, group
				}
				left--
				return next % n
			}
		})
	case PartitionRandom:
		return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			cur, left := 0, 0
			return func(_ *kgo.Record, n int) int {
				if left == 0 {
					cur, left = rand.IntN(n), group
				}
				left--
				return cur % n
			}
		})
	}
	fields := make([]hashField, len(o.opts.HashFields))
	for i, name := range o.opts.HashFields {
		fields[i] = compileHashField(name)
	}
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int { return hashPartition(fields, r.Key, r.Value, n) }
	})
}

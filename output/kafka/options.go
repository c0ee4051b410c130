package kafka

import (
	"crypto/tls"
	"fmt"
	"github.com/logpond/logpond/output/processors"
	"log/slog"
	"strings"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/internal/drain"
	"github.com/logpond/logpond/output/sprintf"
)

// Partitioning says how records are spread over a topic's partitions, as
// Filebeat's output.kafka partition setting does.
type Partitioning int

const (
	// PartitionHash hashes HashFields' values, or the record key when
	// there are none, to the partition Filebeat's hash partitioner picks
	// (hashPartition); a record with neither, or with a field that cannot
	// be hashed, goes to a random partition. Filebeat's default.
	PartitionHash Partitioning = iota
	// PartitionRandom picks a random partition, changing every
	// GroupEvents records.
	PartitionRandom
	// PartitionRoundRobin takes the partitions in turn, GroupEvents
	// records each.
	PartitionRoundRobin
)

// Header is a static record header, sent with every record.
type Header struct{ Key, Value string }

// IDHeader is the record header holding the event's id.
const IDHeader = "logpond-id"

// Options configure an Output. Name and Cursor are required, and so are
// Hosts and Topic; New fills in what is left zero with Filebeat's
// defaults where it says so.
type Options struct {
	Name   string // the output's name, for logs and errors
	Cursor string // the ledger cursor it drains from

	Hosts         []string        // bootstrap brokers, "host:port"
	Topic         *sprintf.Format // the record's topic, per event
	FallbackTopic string          // where events go whose topic does not resolve; "" dead-letters them
	Key           *sprintf.Format // the record's key; nil for none

	Partitioning Partitioning
	HashFields   []string // PartitionHash: the fields hashed (Filebeat's field names); none: the key
	GroupEvents  int      // PartitionRandom, PartitionRoundRobin: records per partition before the next (1 when 0)

	RequiredAcks     int    // -1 (all in-sync replicas), 1 or 0
	Compression      string // none, gzip, snappy, lz4, zstd
	CompressionLevel int    // gzip's level, 1…9 (0: its default); the other codecs take none
	MaxMessageBytes  int    // the largest record; larger ones are dead letters
	ClientID         string
	Headers          []Header

	BulkMaxSize   int           // the most events in a batch (one transaction)
	FlushInterval time.Duration // how long a partial batch waits for more events; 0: none
	Timeout       time.Duration // a batch not produced and committed by then is retried
	BrokerTimeout time.Duration // how long a broker waits for the required acks
	BackoffInit   time.Duration // backoff after a failed batch, doubling to BackoffMax
	BackoffMax    time.Duration

	// ExactlyOnce uses transactions, with the ledger position committed
	// in Kafka in the same transaction; false: the idempotent producer,
	// at least once.
	ExactlyOnce bool
	// TransactionalID names the output's transactions (and the consumer
	// group its position is committed under). "" derives one from the
	// ledger's stream id and Name, stable across restarts and unique to
	// this ledger.
	TransactionalID string

	SASLMechanism      string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; "" none
	Username, Password string
	// TLS, when not nil, speaks TLS to the brokers; CurrentTLS, when set,
	// is asked for it at each connection (files reloaded).
	TLS        *tls.Config
	CurrentTLS func() *tls.Config

	// Chain is the processor chain run on every event before it is
	// sent (docs/configuration.md, "Processors"); nil sends events as
	// stored.
	Chain           *processors.Chain
	DeadLetters     *dlq.Store    // required: refused events go there
	UnreadableAfter time.Duration // see drain.SourceOptions
	Logger          *slog.Logger
}

// CheckOptions reports what is missing or wrong in opts, as New would,
// without a ledger.
func CheckOptions(opts Options) error { return opts.check() }

func (o *Options) check() error {
	var bad drain.Unset
	bad.Check("Name", o.Name != "")
	bad.Check("Cursor", o.Cursor != "")
	bad.Check("Hosts", len(o.Hosts) > 0)
	bad.Check("Topic", o.Topic != nil)
	bad.Check("BulkMaxSize", o.BulkMaxSize >= 1)
	bad.Check("MaxMessageBytes", o.MaxMessageBytes >= 1)
	bad.Check("Timeout", o.Timeout > 0)
	bad.Check("BrokerTimeout", o.BrokerTimeout > 0)
	bad.Check("BackoffInit", o.BackoffInit > 0)
	bad.Check("BackoffMax", o.BackoffMax >= o.BackoffInit)
	if len(bad) > 0 {
		return fmt.Errorf("kafka: output %q: options not set or out of range: %s", o.Name, strings.Join(bad, ", "))
	}
	switch o.RequiredAcks {
	case -1:
	case 0, 1:
		if o.ExactlyOnce {
			return fmt.Errorf("kafka: output %q: exactly_once needs required_acks = -1 (all in-sync replicas), not %d", o.Name, o.RequiredAcks)
		}
	default:
		return fmt.Errorf("kafka: output %q: required_acks %d: use -1, 1 or 0", o.Name, o.RequiredAcks)
	}
	switch o.Compression {
	case "", "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("kafka: output %q: compression %q: use none, gzip, snappy, lz4 or zstd", o.Name, o.Compression)
	}
	switch o.SASLMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("kafka: output %q: sasl.mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", o.Name, o.SASLMechanism)
	}
	for _, h := range o.Headers {
		if h.Key == IDHeader {
			return fmt.Errorf("kafka: output %q: the header %q is the event's id, set by the output", o.Name, IDHeader)
		}
	}
	return nil
}

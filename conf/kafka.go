package conf

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Kafka configures an output that produces events to Apache Kafka. Key
// names and defaults are Filebeat's output.kafka where one exists; see
// docs/configuration.md for where logpond differs.
type Kafka struct {
	// Enabled runs the output.
	Enabled bool `toml:"enabled"`
	// MaxLag and StartAt mean what they mean for Elasticsearch.
	MaxLag  Size   `toml:"max_lag"`
	StartAt string `toml:"start_at"`
	// Processors run on the events this output drains, after the global
	// ones.
	Processors Processors `toml:"processors"`
	// Hosts are the bootstrap brokers, "host:port"; the port is required.
	Hosts []string `toml:"hosts"`
	// Topic is the record's topic: a format string with the syntax of the
	// Elasticsearch output's index (%{[field][sub]}, %{+yyyy.MM.dd}).
	// Required. Its text outside references must be characters of Kafka
	// topic names (conf checks that); the references' syntax is checked
	// where templates are compiled (server.ConfigChecks).
	Topic string `toml:"topic"`
	// FallbackTopic receives the events whose topic cannot be resolved
	// (a field the topic refers to is missing): a literal topic name. ""
	// sends such events to the dead letters.
	FallbackTopic string `toml:"fallback_topic"`
	// Key is the record key, a format string as Topic; "" sends records
	// without a key.
	Key string `toml:"key"`
	// Partition says how records are spread over a topic's partitions.
	Partition KafkaPartition `toml:"partition"`
	// RequiredAcks is the acknowledgement the producer waits for: -1 (all
	// in-sync replicas), 1 (the leader) or 0 (none). ExactlyOnce needs -1.
	RequiredAcks int `toml:"required_acks"`
	// Compression is the codec of record batches: none, gzip, snappy, lz4
	// or zstd.
	Compression string `toml:"compression"`
	// CompressionLevel is gzip's level (1 to 9), as Filebeat's: the other
	// codecs ignore it (lz4 runs in its fast mode).
	CompressionLevel int `toml:"compression_level"`
	// MaxMessageBytes is the largest record the output produces (Kafka's
	// max.message.bytes): a larger event goes to the dead letters.
	MaxMessageBytes Size `toml:"max_message_bytes"`
	// ClientID is the Kafka client id the brokers see (quotas, logs).
	ClientID string `toml:"client_id"`
	// Headers are static headers on every record.
	Headers []KafkaHeader `toml:"headers"`
	// BulkMaxSize is the most events in one batch (one transaction with
	// ExactlyOnce).
	BulkMaxSize int `toml:"bulk_max_size"`
	// BulkFlushFrequency is how long a partial batch waits for more
	// events before it is produced; 0 produces it at once.
	BulkFlushFrequency Duration `toml:"bulk_flush_frequency"`
	// Timeout is how long to wait for a batch to be produced (and, with
	// ExactlyOnce, committed) before it is retried.
	Timeout Duration `toml:"timeout"`
	// BrokerTimeout is how long a broker waits for the RequiredAcks
	// before it answers a produce request with an error.
	BrokerTimeout Duration `toml:"broker_timeout"`
	// Backoff bounds the wait before retrying after a failure: it doubles
	// from Init to Max while the cluster keeps failing.
	Backoff LumberjackBackoff `toml:"backoff"`
	// ExactlyOnce produces each batch in a Kafka transaction that also
	// commits the output's ledger position; false uses the idempotent
	// producer (at least once; with RequiredAcks 1 or 0, a plain one).
	ExactlyOnce bool `toml:"exactly_once"`
	// TransactionalID names the output's transactions when ExactlyOnce;
	// "" lets the output derive one from the ledger's identity and the
	// output's name.
	TransactionalID string `toml:"transactional_id"`
	// Username and Password are SASL credentials (see SASL).
	Username string `toml:"username"`
	Password string `toml:"password"`
	// SASL chooses the SASL mechanism.
	SASL KafkaSASL `toml:"sasl"`
	// SSL configures TLS to the brokers, as for Lumberjack outputs.
	SSL LumberjackSSL `toml:"ssl"`
	// DeadLetterMaxBytes and DeadLetterMaxAge mean what they mean for
	// Elasticsearch: the dead-letter store keeps the events Kafka refuses
	// for good.
	DeadLetterMaxBytes Size     `toml:"dead_letter_max_bytes"`
	DeadLetterMaxAge   Duration `toml:"dead_letter_max_age"`
}

// KafkaHeader is a static record header, Filebeat's headers entry
// {key, value}; in TOML an [[output.kafka.NAME.headers]] table or an
// inline table in a headers list.
type KafkaHeader struct {
	Key   string `toml:"key"`
	Value string `toml:"value"`
}

// KafkaSASL is the SASL mechanism of a Kafka output.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" means PLAIN
	// when a username is set, no SASL otherwise (Filebeat's rule). See
	// Kafka.SASLMechanism.
	Mechanism string `toml:"mechanism"`
}

// KafkaPartition is Filebeat's partition setting: at most one of its
// tables may be set; none means hash with its defaults (Filebeat's
// default).
type KafkaPartition struct {
	Hash       *KafkaHashPartition       `toml:"hash"`
	Random     *KafkaRandomPartition     `toml:"random"`
	RoundRobin *KafkaRoundRobinPartition `toml:"round_robin"`
}

// KafkaHashPartition picks a record's partition by a hash.
type KafkaHashPartition struct {
	// Hash are the fields whose values are hashed, Filebeat's dotted
	// names ("host.name" is the field name of the object host). Empty:
	// the record key, or a random partition for a record without a key.
	Hash []string `toml:"hash"`
	// ReachableOnly picks among the partitions whose leader is reachable
	// only.
	ReachableOnly bool `toml:"reachable_only"`
}

// KafkaRandomPartition picks a random partition.
type KafkaRandomPartition struct {
	ReachableOnly bool `toml:"reachable_only"`
	// GroupEvents is how many records go to one partition before another
	// is picked; 1 when the table leaves it out.
	GroupEvents int `toml:"group_events"`
}

// KafkaRoundRobinPartition takes the partitions in turn.
type KafkaRoundRobinPartition struct {
	ReachableOnly bool `toml:"reachable_only"`
	// GroupEvents is how many records go to one partition before the
	// next; 1 when the table leaves it out.
	GroupEvents int `toml:"group_events"`
}

// setDefaults give a partition table the defaults of the keys it leaves
// out (the decoder calls them when a file sets the table).
func (p *KafkaRandomPartition) setDefaults()     { p.GroupEvents = 1 }
func (p *KafkaRoundRobinPartition) setDefaults() { p.GroupEvents = 1 }

// Partitioners, what KafkaPartition.Kind returns.
const (
	KafkaPartitionHash       = "hash"
	KafkaPartitionRandom     = "random"
	KafkaPartitionRoundRobin = "round_robin"
)

// Kind is the partitioner the table chooses: KafkaPartitionHash (also
// when no table is set), KafkaPartitionRandom or KafkaPartitionRoundRobin.
// Load guarantees at most one table is set.
func (p KafkaPartition) Kind() string {
	switch {
	case p.Random != nil:
		return KafkaPartitionRandom
	case p.RoundRobin != nil:
		return KafkaPartitionRoundRobin
	}
	return KafkaPartitionHash
}

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLMechanism is the mechanism the output authenticates with: "" (no
// SASL) when no username is set, else sasl.mechanism, PLAIN when that is
// "".
func (k *Kafka) SASLMechanism() string {
	if k.Username == "" {
		return ""
	}
	if k.SASL.Mechanism == "" {
		return SASLPlain
	}
	return k.SASL.Mechanism
}

// KafkaIDHeader is the record header the Kafka output puts each event's id
// in; a headers entry may not use it.
const KafkaIDHeader = "logpond-id"

// UnnamedKafkaName is the name of the output configured directly in
// [output.kafka]: its cursor and dead-letter directory have this name.
const UnnamedKafkaName = "kafka"

// DefaultKafka returns the defaults of one Kafka output. It has no hosts
// and no topic: a Kafka output must set them.
func DefaultKafka() Kafka {
	return Kafka{
		Enabled:            true,
		StartAt:            "oldest",
		RequiredAcks:       -1,
		Compression:        "gzip",
		CompressionLevel:   4,
		MaxMessageBytes:    1000000,
		ClientID:           "logpond",
		BulkMaxSize:        2048,
		Timeout:            Duration(30 * time.Second),
		BrokerTimeout:      Duration(10 * time.Second),
		Backoff:            LumberjackBackoff{Init: Duration(time.Second), Max: Duration(60 * time.Second)},
		ExactlyOnce:        true,
		SSL:                LumberjackSSL{VerificationMode: "full"},
		DeadLetterMaxBytes: 1 << 30,
	}
}

// Bounds of a Kafka output's keys; each is explained where it is checked.
const (
	maxKafkaBulkMaxSize        = 1 << 20
	minKafkaMaxMessageBytes    = Size(1 << 10)
	maxKafkaMaxMessageBytes    = Size(100 << 20)
	maxKafkaBulkFlushFrequency = Duration(10 * time.Second)
	maxKafkaTopicBytes         = 249
)

// validateKafka checks one Kafka output; k is its key with a trailing dot
// ("output.kafka.events.").
func (c *Config) validateKafka(bad badFunc, k string, kc *Kafka) {
	c.validateDeadLetters(bad, k, kc.DeadLetterMaxBytes, kc.DeadLetterMaxAge)
	if len(kc.Hosts) == 0 {
		bad(k+"hosts", "is empty: list at least one Kafka broker as \"host:port\", e.g. [\"kafka1.example.com:9092\"] (the others are found from it)")
	}
	for i, h := range kc.Hosts {
		if err := validHostPort(h, "kafka1.example.com", 9092); err != nil {
			bad(k+"hosts", "entry %d: %v", i+1, err)
		}
	}
	if strings.TrimSpace(kc.Topic) == "" {
		bad(k+"topic", "is empty: name the topic events go to, e.g. %q or %q", "logs", "logs-%{[@metadata][beat]}")
	} else if err := validTopicFormat(kc.Topic); err != nil {
		bad(k+"topic", "%v", err)
	}
	if kc.FallbackTopic != "" {
		if err := validTopicName(kc.FallbackTopic); err != nil {
			bad(k+"fallback_topic", "%v (a literal topic name; \"\" sends events whose topic cannot be resolved to the dead letters)", err)
		}
	}
	validateKafkaPartition(bad, k, kc.Partition)
	switch kc.RequiredAcks {
	case -1:
	case 0, 1:
		// Transactions need the idempotent producer, which needs
		// every in-sync replica's acknowledgement.
		if kc.ExactlyOnce {
			bad(k+"required_acks", "%d: exactly_once (Kafka transactions) needs -1, all in-sync replicas: set required_acks = -1, or exactly_once = false", kc.RequiredAcks)
		}
	default:
		bad(k+"required_acks", "%d: use -1 (all in-sync replicas acknowledge, the default), 1 (the leader only) or 0 (no acknowledgement)", kc.RequiredAcks)
	}
	switch kc.Compression {
	case "none", "gzip", "snappy", "lz4", "zstd":
	default:
		bad(k+"compression", "%q: use none, gzip, snappy, lz4 or zstd", kc.Compression)
	}
	switch kc.Compression {
	case "gzip":
		if kc.CompressionLevel < 1 || kc.CompressionLevel > 9 {
			bad(k+"compression_level", "%d is outside 1…9 for gzip (1 fastest, 9 smallest; 4, the default, is Filebeat's); for no compression set compression = \"none\"", kc.CompressionLevel)
		}
	}
	// A record must hold a real event, and a produce request of one
	// record must stay far below what brokers accept at all.
	if kc.MaxMessageBytes < minKafkaMaxMessageBytes || kc.MaxMessageBytes > maxKafkaMaxMessageBytes {
		bad(k+"max_message_bytes", "%s is outside %s…%s (Filebeat's default is 1000000, Kafka's own limit message.max.bytes is about 1MiB unless the topic raises it)", kc.MaxMessageBytes, minKafkaMaxMessageBytes, maxKafkaMaxMessageBytes)
	}
	for i, h := range kc.Headers {
		switch {
		case h.Key == "":
			bad(k+"headers", "entry %d has no key: each header is {key = \"…\", value = \"…\"}", i+1)
		case h.Key == KafkaIDHeader:
			bad(k+"headers", "entry %d: the key %q is reserved: the output puts each event's id in it; choose another key", i+1, KafkaIDHeader)
		}
	}
	// A batch is held in memory until Kafka acknowledges it (one
	// transaction with exactly_once).
	if kc.BulkMaxSize < 1 || kc.BulkMaxSize > maxKafkaBulkMaxSize {
		bad(k+"bulk_max_size", "%d is outside 1…%d events per batch (Filebeat's default is 2048)", kc.BulkMaxSize, maxKafkaBulkMaxSize)
	}
	// Every event of a partial batch may wait this long: more than a few
	// seconds delays delivery for nothing.
	if kc.BulkFlushFrequency > maxKafkaBulkFlushFrequency {
		bad(k+"bulk_flush_frequency", "%s is more than %s: a partial batch waits this long for more events; use 0 (Filebeat's default) or a few hundred milliseconds", kc.BulkFlushFrequency, maxKafkaBulkFlushFrequency)
	}
	if kc.Timeout <= 0 {
		bad(k+"timeout", "must be more than 0s: it is how long to wait for a batch to be produced before it is retried, e.g. 30s")
	}
	switch {
	case kc.BrokerTimeout <= 0:
		bad(k+"broker_timeout", "must be more than 0s: it is how long a broker waits for the required acks, e.g. 10s")
	case kc.Timeout > 0 && kc.BrokerTimeout > kc.Timeout:
		// The producer would give up on a request the broker is still
		// working on, and retry it while it may yet succeed.
		bad(k+"broker_timeout", "%s is more than timeout (%s): the output would give up on a request before the broker answers it; lower broker_timeout or raise timeout", kc.BrokerTimeout, kc.Timeout)
	}
	validateBackoff(bad, k, kc.Backoff)
	switch kc.SASL.Mechanism {
	case "", SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		bad(k+"sasl.mechanism", "%q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (upper case), or leave it out for PLAIN", kc.SASL.Mechanism)
	}
	switch {
	case kc.Username != "" && kc.Password == "":
		bad(k+"password", "is empty while username is set: SASL needs both (use ${VAR} to keep the password out of the file)")
	case kc.Username == "" && kc.Password != "":
		bad(k+"username", "is empty while password is set: SASL needs both")
	case kc.Username == "" && kc.SASL.Mechanism != "":
		bad(k+"sasl.mechanism", "%q is set without username and password: set both, or remove sasl.mechanism", kc.SASL.Mechanism)
	}
	validateSSL(bad, k, kc.SSL)
}

// validateKafkaPartition checks a Kafka output's partition table.
func validateKafkaPartition(bad badFunc, k string, p KafkaPartition) {
	var set []string
	if p.Hash != nil {
		set = append(set, "partition.hash")
	}
	if p.Random != nil {
		set = append(set, "partition.random")
	}
	if p.RoundRobin != nil {
		set = append(set, "partition.round_robin")
	}
	if len(set) > 1 {
		bad(k+"partition", "sets %s: set one of them (none means hash, Filebeat's default)", strings.Join(set, " and "))
	}
	if p.Hash != nil {
		for i, f := range p.Hash.Hash {
			if !hashField.MatchString(f) {
				bad(k+"partition.hash.hash", "entry %d: %q is not a field name: write Filebeat's dotted names, e.g. \"host.name\" for the field name of the object host", i+1, f)
			}
		}
	}
	if p.Random != nil && p.Random.GroupEvents < 1 {
		bad(k+"partition.random.group_events", "%d: at least 1 record goes to a partition before another is picked (1, the default, picks one for each)", p.Random.GroupEvents)
	}
	if p.RoundRobin != nil && p.RoundRobin.GroupEvents < 1 {
		bad(k+"partition.round_robin.group_events", "%d: at least 1 record goes to a partition before the next (1 is the default)", p.RoundRobin.GroupEvents)
	}
}

// hashField is a field name of partition.hash.hash: dot-separated
// non-empty parts without brackets or braces.
var hashField = regexp.MustCompile(`^[^.\[\]{}\s]+(\.[^.\[\]{}\s]+)*$`)

// validTopicName applies Kafka's rules for topic names to a literal name:
// 1 to 249 of a-z, A-Z, 0-9, '.', '_' and '-', and not "." or "..".
func validTopicName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("%q is not a Kafka topic name", name)
	case len(name) > maxKafkaTopicBytes:
		return fmt.Errorf("%q is longer than %d bytes, the longest Kafka topic name", shorten(name), maxKafkaTopicBytes)
	}
	if r, ok := badTopicRune(name); ok {
		return fmt.Errorf("%q: Kafka topic names are made of a-z, A-Z, 0-9, '.', '_' and '-', not %q", shorten(name), r)
	}
	return nil
}

// badTopicRune returns the first character of s that Kafka topic names
// cannot hold.
func badTopicRune(s string) (rune, bool) {
	for _, r := range s {
		if !topicRune(r) {
			return r, true
		}
	}
	return 0, false
}

func topicRune(r rune) bool {
	return r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// validTopicFormat checks what conf can tell of a topic format: a literal
// (no "%{") is a valid topic name, and the text between references holds
// only characters of topic names, as no event could make a topic of it
// otherwise. The references themselves (and an unclosed "%{") are checked
// where formats are compiled, server.ConfigChecks.
func validTopicFormat(format string) error {
	if !strings.Contains(format, "%{") {
		return validTopicName(format)
	}
	s := format
	for s != "" {
		lit, rest, ref := strings.Cut(s, "%{")
		if r, ok := badTopicRune(lit); ok {
			return fmt.Errorf("%q: the text around its %%{…} references makes no Kafka topic name: topic names are made of a-z, A-Z, 0-9, '.', '_' and '-', not %q", shorten(format), r)
		}
		if !ref {
			break
		}
		_, after, closed := strings.Cut(rest, "}")
		if !closed {
			break // unclosed: the format's compiler says so
		}
		s = after
	}
	return nil
}

// kafkaWarnings lists the insecure or ignored settings of one Kafka
// output; k is its key with a trailing dot.
func kafkaWarnings(k string, kc *Kafka) []Warning {
	var ws []Warning
	if !kc.ExactlyOnce && (kc.RequiredAcks == 0 || kc.RequiredAcks == 1) {
		what := "the partition leader alone acknowledges a record"
		if kc.RequiredAcks == 0 {
			what = "no broker acknowledges a record"
		}
		ws = append(ws, Warning{k + "required_acks",
			fmt.Sprintf("%d: %s, so events the output counts as delivered (and the ledger then drops) can be lost by a broker failure; use -1 (all in-sync replicas), which exactly_once also needs", kc.RequiredAcks, what)})
	}
	if kc.SSL.Enabled && kc.SSL.VerificationMode == "none" {
		ws = append(ws, Warning{k + "ssl.verification_mode",
			`"none": logpond checks no certificate of the brokers, so anyone on the network path can pose as them and read the events and the credentials; use "full" (with ssl.certificate_authorities for a private CA)`})
	}
	if kc.SASLMechanism() == SASLPlain && !kc.SSL.Enabled {
		ws = append(ws, Warning{k + "sasl.mechanism",
			"PLAIN sends the username and password in clear text, and TLS is off (ssl): anyone on the network path can read them; turn TLS on (ssl.enabled, or any ssl key), or use SCRAM-SHA-512"})
	}
	if kc.Compression != "gzip" && kc.CompressionLevel != DefaultKafka().CompressionLevel {
		ws = append(ws, Warning{k + "compression_level",
			fmt.Sprintf("%d is ignored: compression is %q, and only gzip takes a level (as in Filebeat); remove compression_level", kc.CompressionLevel, kc.Compression)})
	}
	if !kc.ExactlyOnce && kc.TransactionalID != "" {
		ws = append(ws, Warning{k + "transactional_id",
			fmt.Sprintf("%q is ignored: exactly_once is false, so the output uses no transactions; remove transactional_id, or set exactly_once = true", kc.TransactionalID)})
	}
	return ws
}

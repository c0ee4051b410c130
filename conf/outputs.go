package conf

import (
	"regexp"
	"slices"
	"time"
)

// Lumberjack configures an output that sends events to a Lumberjack v2
// server (Logstash's beats input, or another logpond). Key names and
// defaults are those of Filebeat's output.logstash.
type Lumberjack struct {
	// Enabled runs the output.
	Enabled bool `toml:"enabled"`
	// MaxLag and StartAt mean what they mean for Elasticsearch.
	MaxLag  Size   `toml:"max_lag"`
	StartAt string `toml:"start_at"`
	// Processors run on the events this output drains, after the global
	// ones.
	Processors Processors `toml:"processors"`
	// Hosts are "host:port" addresses; the port is required.
	Hosts []string `toml:"hosts"`
	// LoadBalance false sends to one host at a time, failing over to the
	// next when it fails; true spreads batches over every host.
	LoadBalance bool `toml:"loadbalance"`
	// Workers is the number of connections per host.
	Workers int `toml:"workers"`
	// BulkMaxSize is the most events in one batch (one Lumberjack window).
	BulkMaxSize int `toml:"bulk_max_size"`
	// CompressionLevel is the zlib level of batches, 0 (none) to 9.
	CompressionLevel int `toml:"compression_level"`
	// Timeout is how long to wait for a batch's ACK before the connection
	// is taken for broken and the batch is sent again.
	Timeout Duration `toml:"timeout"`
	// TTL, when more than 0, closes a connection after this long and opens
	// a new one, so that a load balancer in front of the hosts rebalances
	// connections. 0 keeps connections open.
	TTL Duration `toml:"ttl"`
	// Backoff bounds the wait before reconnecting to a failed host.
	Backoff LumberjackBackoff `toml:"backoff"`
	// SSL configures TLS to the hosts.
	SSL LumberjackSSL `toml:"ssl"`
	// DeadLetterMaxBytes and DeadLetterMaxAge mean what they mean for
	// Elasticsearch: the dead-letter store keeps the events a receiver
	// refuses alone while it takes others.
	DeadLetterMaxBytes Size     `toml:"dead_letter_max_bytes"`
	DeadLetterMaxAge   Duration `toml:"dead_letter_max_age"`
}

// LumberjackBackoff is the exponential backoff between reconnections to a
// host: it doubles from Init to Max while the host keeps failing.
type LumberjackBackoff struct {
	Init Duration `toml:"init"`
	Max  Duration `toml:"max"`
}

// LumberjackSSL configures TLS to a Lumberjack output's hosts, spelled as
// Filebeat's ssl.* settings.
type LumberjackSSL struct {
	// Enabled speaks TLS. When a file leaves it out, it is true if the
	// file sets any other ssl key.
	Enabled bool `toml:"enabled"`
	// CertificateAuthorities are PEM files the hosts' certificates are
	// verified against, instead of the system roots.
	CertificateAuthorities []string `toml:"certificate_authorities"`
	// Certificate and Key are the PEM client certificate and its key: both
	// or neither.
	Certificate string `toml:"certificate"`
	Key         string `toml:"key"`
	// VerificationMode is full (verify chain and host name) or none.
	VerificationMode string `toml:"verification_mode"`
}

// DefaultElasticsearch returns the defaults of one Elasticsearch output,
// legacy or named.
func DefaultElasticsearch() Elasticsearch {
	return Elasticsearch{
		Enabled:              true,
		StartAt:              "oldest",
		Hosts:                []string{"http://127.0.0.1:9200"},
		Index:                "%{[@metadata][beat]}-%{[@metadata][version]}",
		FallbackIndex:        "logpond-fallback",
		DataStream:           DataStreamAuto,
		DataStreamType:       "logs",
		DataStreamDataset:    "generic",
		DataStreamNamespace:  "default",
		DataStreamSyncFields: true,
		DocumentID:           "auto",
		Workers:              4,
		Concurrency:          "adaptive",
		FlushBytes:           1 << 20,
		FlushInterval:        Duration(time.Second),
		MaxRequestBytes:      100 << 20,
		Compression:          "none",
		Timeout:              Duration(60 * time.Second),
		RetryInitialInterval: Duration(2 * time.Second),
		RetryMaxInterval:     Duration(64 * time.Second),
		DeadLetterMaxBytes:   1 << 30,
		TLS:                  ElasticsearchTLS{VerificationMode: "full"},
	}
}

// DefaultLumberjack returns the defaults of one Lumberjack output. It has
// no hosts: a Lumberjack output must list them.
func DefaultLumberjack() Lumberjack {
	return Lumberjack{
		Enabled:            true,
		StartAt:            "oldest",
		Workers:            1,
		BulkMaxSize:        2048,
		CompressionLevel:   3,
		Timeout:            Duration(30 * time.Second),
		Backoff:            LumberjackBackoff{Init: Duration(time.Second), Max: Duration(60 * time.Second)},
		SSL:                LumberjackSSL{VerificationMode: "full"},
		DeadLetterMaxBytes: 1 << 30,
	}
}

// Output types, NamedOutput.Type.
const (
	TypeElasticsearch = "elasticsearch"
	TypeLumberjack    = "lumberjack"
	TypeKafka         = "kafka"
)

// LegacyOutputName is the name of the output configured directly in
// [output.elasticsearch]: its cursor and dead-letter directory keep this
// name.
const LegacyOutputName = "elasticsearch"

// NamedOutput is one output of a configuration, with its name.
type NamedOutput struct {
	// Name names the output's cursor (and dead-letter directory): unique
	// across kinds in a loaded configuration. LegacyOutputName for the
	// legacy [output.elasticsearch] table, UnnamedKafkaName for the
	// settings written directly in [output.kafka].
	Name string
	// Type is TypeElasticsearch, TypeLumberjack or TypeKafka.
	Type string
	// Key is the output's table, for messages: "output.elasticsearch"
	// (legacy), "output.elasticsearch.siem", "output.lumberjack.edge",
	// "output.kafka" (unnamed), "output.kafka.events".
	Key string
	// Elasticsearch is set when Type is TypeElasticsearch, Lumberjack when
	// it is TypeLumberjack, Kafka when it is TypeKafka. They point into
	// the Config.
	Elasticsearch *Elasticsearch
	Lumberjack    *Lumberjack
	Kafka         *Kafka
}

// Outputs lists the enabled outputs, sorted by name; the legacy
// [output.elasticsearch] is included, as LegacyOutputName, when
// Output.Elasticsearch.Enabled, and the unnamed [output.kafka], as
// UnnamedKafkaName, when Output.Kafka is set and enabled. Load guarantees names are unique and valid;
// a Config built in code must keep them so.
func (c *Config) Outputs() []NamedOutput {
	var out []NamedOutput
	for _, o := range c.allOutputs() {
		if o.enabled() {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b NamedOutput) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// MaxLagBytes is the output's max_lag in bytes, 0 for none, whatever its
// type.
func (o NamedOutput) MaxLagBytes() int64 {
	switch {
	case o.Lumberjack != nil:
		return int64(o.Lumberjack.MaxLag)
	case o.Kafka != nil:
		return int64(o.Kafka.MaxLag)
	}
	return int64(o.Elasticsearch.MaxLag)
}

// DeadLetterLimits are the output's dead_letter_max_bytes and
// dead_letter_max_age, whatever its type.
func (o NamedOutput) DeadLetterLimits() (Size, Duration) {
	switch {
	case o.Lumberjack != nil:
		return o.Lumberjack.DeadLetterMaxBytes, o.Lumberjack.DeadLetterMaxAge
	case o.Kafka != nil:
		return o.Kafka.DeadLetterMaxBytes, o.Kafka.DeadLetterMaxAge
	}
	return o.Elasticsearch.DeadLetterMaxBytes, o.Elasticsearch.DeadLetterMaxAge
}

// StartAt is the output's start_at ("oldest" or "newest"), whatever its
// type.
func (o NamedOutput) StartAt() string {
	switch {
	case o.Lumberjack != nil:
		return o.Lumberjack.StartAt
	case o.Kafka != nil:
		return o.Kafka.StartAt
	}
	return o.Elasticsearch.StartAt
}

func (o NamedOutput) enabled() bool {
	switch {
	case o.Elasticsearch != nil:
		return o.Elasticsearch.Enabled
	case o.Lumberjack != nil:
		return o.Lumberjack.Enabled
	case o.Kafka != nil:
		return o.Kafka.Enabled
	}
	return false
}

// allOutputs lists every output, enabled or not, in a fixed order: the
// legacy one, then the named Elasticsearch outputs, then the Lumberjack
// ones, then the unnamed Kafka one when set, then the named Kafka ones,
// each kind by name. Checks go through it so that each output's problems
// name its own key.
func (c *Config) allOutputs() []NamedOutput {
	out := []NamedOutput{{Name: LegacyOutputName, Type: TypeElasticsearch, Key: "output.elasticsearch", Elasticsearch: &c.Output.Elasticsearch}}
	out = append(out, c.namedElasticsearch()...)
	for _, name := range sortedNames(c.Output.Lumberjack) {
		out = append(out, NamedOutput{Name: name, Type: TypeLumberjack, Key: "output.lumberjack." + name, Lumberjack: c.Output.Lumberjack[name]})
	}
	return append(out, c.kafkaOutputs()...)
}

// kafkaOutputs lists the Kafka outputs: the unnamed one ([output.kafka])
// when set, then the named ones by name.
func (c *Config) kafkaOutputs() []NamedOutput {
	var out []NamedOutput
	if c.Output.Kafka != nil {
		out = append(out, NamedOutput{Name: UnnamedKafkaName, Type: TypeKafka, Key: "output.kafka", Kafka: c.Output.Kafka})
	}
	for _, name := range sortedNames(c.Output.NamedKafka) {
		out = append(out, NamedOutput{Name: name, Type: TypeKafka, Key: "output.kafka." + name, Kafka: c.Output.NamedKafka[name]})
	}
	return out
}

// namedElasticsearch lists the [output.elasticsearch.NAME] outputs by name.
func (c *Config) namedElasticsearch() []NamedOutput {
	var out []NamedOutput
	for _, name := range sortedNames(c.Output.NamedElasticsearch) {
		out = append(out, NamedOutput{Name: name, Type: TypeElasticsearch, Key: "output.elasticsearch." + name, Elasticsearch: c.Output.NamedElasticsearch[name]})
	}
	return out
}

// elasticsearchOutputs lists every Elasticsearch output, legacy first.
func (c *Config) elasticsearchOutputs() []NamedOutput {
	return append([]NamedOutput{{Name: LegacyOutputName, Type: TypeElasticsearch, Key: "output.elasticsearch", Elasticsearch: &c.Output.Elasticsearch}}, c.namedElasticsearch()...)
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// outputName is what an output may be called. The name becomes a cursor
// file and a dead-letter directory name and appears in metrics labels, so
// it is kept to characters that are safe in all three.
var outputName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// ValidOutputName reports whether name may name an output: 1 to 64 of
// a-z, 0-9, _ and -.
func ValidOutputName(name string) bool { return outputName.MatchString(name) }

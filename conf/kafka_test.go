package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// kafkaMin is the least a Kafka output sets.
const kafkaMin = "hosts = [\"k1:9092\"]\ntopic = \"logs\"\n"

// TestKafkaDefaults: Filebeat's defaults, except where logpond differs on
// purpose (required_acks, client_id), and a table starts from them.
func TestKafkaDefaults(t *testing.T) {
	d := DefaultKafka()
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"enabled", d.Enabled, true},
		{"max_lag", d.MaxLag, Size(0)},
		{"start_at", d.StartAt, "oldest"},
		{"processors", d.Processors, Processors(nil)},
		{"hosts", d.Hosts, []string(nil)},
		{"topic", d.Topic, ""},
		{"fallback_topic", d.FallbackTopic, ""},
		{"key", d.Key, ""},
		{"partition", d.Partition, KafkaPartition{}},
		{"required_acks", d.RequiredAcks, -1},
		{"compression", d.Compression, "gzip"},
		{"compression_level", d.CompressionLevel, 4},
		{"max_message_bytes", d.MaxMessageBytes, Size(1000000)},
		{"client_id", d.ClientID, "logpond"},
		{"headers", d.Headers, []KafkaHeader(nil)},
		{"bulk_max_size", d.BulkMaxSize, 2048},
		{"bulk_flush_frequency", d.BulkFlushFrequency, Duration(0)},
		{"timeout", d.Timeout, Duration(30 * time.Second)},
		{"broker_timeout", d.BrokerTimeout, Duration(10 * time.Second)},
		{"backoff", d.Backoff, LumberjackBackoff{Init: Duration(time.Second), Max: Duration(time.Minute)}},
		{"exactly_once", d.ExactlyOnce, true},
		{"transactional_id", d.TransactionalID, ""},
		{"username", d.Username, ""},
		{"password", d.Password, ""},
		{"sasl", d.SASL, KafkaSASL{}},
		{"ssl", d.SSL, LumberjackSSL{VerificationMode: "full"}},
		{"dead_letter_max_bytes", d.DeadLetterMaxBytes, Size(1 << 30)},
		{"dead_letter_max_age", d.DeadLetterMaxAge, Duration(0)},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %#v, want %#v", c.key, c.got, c.want)
		}
	}
	if n := reflect.TypeFor[Kafka]().NumField(); n != 28 {
		t.Errorf("Kafka has %d keys, this test checks the defaults of 28", n)
	}
	if d.Partition.Kind() != KafkaPartitionHash || d.SASLMechanism() != "" {
		t.Errorf("defaults: partition %q, SASL mechanism %q; want hash and none", d.Partition.Kind(), d.SASLMechanism())
	}

	cfg, err := Parse("x.toml", []byte("[output.kafka.events]\n"+kafkaMin+"[output.kafka]\n"+kafkaMin))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultKafka()
	want.Hosts, want.Topic = []string{"k1:9092"}, "logs"
	if got := cfg.Output.NamedKafka["events"]; got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("events = %+v, want the defaults with its hosts and topic %+v", got, want)
	}
	if got := cfg.Output.Kafka; got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("unnamed = %+v, want the defaults with its hosts and topic %+v", got, want)
	}
}

// TestKafkaDecodesEveryKey: a file that sets every key of a named Kafka
// output, in TOML as a user writes it, loads to those values.
func TestKafkaDecodesEveryKey(t *testing.T) {
	const text = `[output.kafka.events]
enabled = false
max_lag = "2GiB"
start_at = "newest"
hosts = ["kafka1.example.com:9092", "[2001:db8::1]:9093"]
topic = "logs-%{[@metadata][beat]}-%{+yyyy.MM.dd}"
fallback_topic = "logs-unrouted"
key = "%{[host][name]}"
required_acks = 1
compression = "lz4"
compression_level = 0
max_message_bytes = "4MiB"
client_id = "logpond-dc1"
bulk_max_size = 4096
bulk_flush_frequency = "200ms"
timeout = "60s"
broker_timeout = "5s"
exactly_once = false
transactional_id = "tx-events"
username = "logpond"
password = "secret"
dead_letter_max_bytes = "4GiB"
dead_letter_max_age = "168h"
[[output.kafka.events.headers]]
key = "env"
value = "prod"
[[output.kafka.events.headers]]
key = "dc"
[output.kafka.events.partition.round_robin]
reachable_only = true
group_events = 100
[output.kafka.events.backoff]
init = "500ms"
max = "2m"
[output.kafka.events.sasl]
mechanism = "SCRAM-SHA-256"
[output.kafka.events.ssl]
certificate_authorities = ["/ca.pem"]
certificate = "/c.pem"
key = "/k.pem"
verification_mode = "full"
`
	cfg, err := Parse("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := Kafka{
		Enabled: false, MaxLag: 2 << 30, StartAt: "newest",
		Hosts: []string{"kafka1.example.com:9092", "[2001:db8::1]:9093"},
		Topic: "logs-%{[@metadata][beat]}-%{+yyyy.MM.dd}", FallbackTopic: "logs-unrouted", Key: "%{[host][name]}",
		Partition:    KafkaPartition{RoundRobin: &KafkaRoundRobinPartition{ReachableOnly: true, GroupEvents: 100}},
		RequiredAcks: 1, Compression: "lz4", CompressionLevel: 0, MaxMessageBytes: 4 << 20, ClientID: "logpond-dc1",
		Headers:     []KafkaHeader{{Key: "env", Value: "prod"}, {Key: "dc"}},
		BulkMaxSize: 4096, BulkFlushFrequency: Duration(200 * time.Millisecond), Timeout: Duration(time.Minute), BrokerTimeout: Duration(5 * time.Second),
		Backoff:     LumberjackBackoff{Init: Duration(500 * time.Millisecond), Max: Duration(2 * time.Minute)},
		ExactlyOnce: false, TransactionalID: "tx-events", Username: "logpond", Password: "secret",
		SASL:               KafkaSASL{Mechanism: SASLScramSHA256},
		SSL:                LumberjackSSL{Enabled: true, CertificateAuthorities: []string{"/ca.pem"}, Certificate: "/c.pem", Key: "/k.pem", VerificationMode: "full"},
		DeadLetterMaxBytes: 4 << 30, DeadLetterMaxAge: Duration(168 * time.Hour),
	}
	got := cfg.Output.NamedKafka["events"]
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("events =\n%+v\nwant\n%+v", got, want)
	}
	if got.Partition.Kind() != KafkaPartitionRoundRobin || got.SASLMechanism() != SASLScramSHA256 {
		t.Errorf("partition %q, SASL %q", got.Partition.Kind(), got.SASLMechanism())
	}
	if cfg.Output.Kafka != nil {
		t.Errorf("the unnamed output is set: %+v", cfg.Output.Kafka)
	}
}

// TestKafkaTableDefaults: a partition table set empty takes its defaults;
// headers may be inline tables; SASL is PLAIN when a username is set.
func TestKafkaTableDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		check      func(*Kafka) bool
	}{
		{"random, empty", "[output.kafka.k.partition.random]\n", func(k *Kafka) bool {
			return k.Partition.Kind() == KafkaPartitionRandom && *k.Partition.Random == KafkaRandomPartition{GroupEvents: 1}
		}},
		{"round robin, empty", "[output.kafka.k.partition.round_robin]\n", func(k *Kafka) bool {
			return k.Partition.Kind() == KafkaPartitionRoundRobin && *k.Partition.RoundRobin == KafkaRoundRobinPartition{GroupEvents: 1}
		}},
		{"hash with fields", "[output.kafka.k.partition.hash]\nhash = [\"host.name\", \"@metadata.beat\"]\n", func(k *Kafka) bool {
			return k.Partition.Kind() == KafkaPartitionHash && slices.Equal(k.Partition.Hash.Hash, []string{"host.name", "@metadata.beat"})
		}},
		{"inline headers", "[output.kafka.k]\nheaders = [{ key = \"a\", value = \"1\" }, { key = \"b\" }]\n", func(k *Kafka) bool {
			return reflect.DeepEqual(k.Headers, []KafkaHeader{{"a", "1"}, {"b", ""}})
		}},
		{"empty headers", "[output.kafka.k]\nheaders = []\n", func(k *Kafka) bool { return len(k.Headers) == 0 }},
		{"PLAIN by default", "[output.kafka.k]\nusername = \"u\"\npassword = \"p\"\n[output.kafka.k.ssl]\nenabled = true\n", func(k *Kafka) bool {
			return k.SASLMechanism() == SASLPlain && k.SASL.Mechanism == ""
		}},
		{"ssl on by another key", "[output.kafka.k.ssl]\ncertificate_authorities = [\"/ca.pem\"]\n", func(k *Kafka) bool { return k.SSL.Enabled }},
		{"ssl off when said so", "[output.kafka.k.ssl]\nenabled = false\nverification_mode = \"full\"\n", func(k *Kafka) bool { return !k.SSL.Enabled }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte("[output.kafka.k]\n"+kafkaMin+strings.Replace(tc.toml, "[output.kafka.k]\n", "", 1)))
			if err != nil {
				t.Fatal(err)
			}
			if k := cfg.Output.NamedKafka["k"]; !tc.check(k) {
				t.Errorf("loaded %+v", k)
			}
		})
	}
}

// TestKafkaOutputs: which outputs a file with Kafka outputs defines, and
// whether the legacy Elasticsearch output still runs.
func TestKafkaOutputs(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []string
		legacy     bool // Output.Elasticsearch.Enabled
		unnamed    bool // Output.Kafka set
	}{
		{"no kafka", "", []string{"elasticsearch:elasticsearch:output.elasticsearch"}, true, false},
		{"named only", "[output.kafka.events]\n" + kafkaMin,
			[]string{"events:kafka:output.kafka.events"}, false, false},
		{"unnamed only", "[output.kafka]\n" + kafkaMin,
			[]string{"kafka:kafka:output.kafka"}, false, true},
		{"unnamed and named", "[output.kafka]\n" + kafkaMin + "[output.kafka.events]\n" + kafkaMin + "[output.kafka.audit]\n" + kafkaMin,
			[]string{"audit:kafka:output.kafka.audit", "events:kafka:output.kafka.events", "kafka:kafka:output.kafka"}, false, true},
		{"unnamed by its ssl table", "[output.kafka]\n" + kafkaMin + "[output.kafka.ssl]\nverification_mode = \"full\"\n",
			[]string{"kafka:kafka:output.kafka"}, false, true},
		{"with the legacy output", "[output.elasticsearch]\nworkers = 2\n[output.kafka.events]\n" + kafkaMin,
			[]string{"elasticsearch:elasticsearch:output.elasticsearch", "events:kafka:output.kafka.events"}, true, false},
		{"every kind", "[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n[output.kafka]\n" + kafkaMin,
			[]string{"edge:lumberjack:output.lumberjack.edge", "kafka:kafka:output.kafka", "siem:elasticsearch:output.elasticsearch.siem"}, false, true},
		{"named kafka called elasticsearch", "[output.kafka.elasticsearch]\n" + kafkaMin,
			[]string{"elasticsearch:kafka:output.kafka.elasticsearch"}, false, false},
		{"named kafka called kafka", "[output.kafka.kafka]\n" + kafkaMin,
			[]string{"kafka:kafka:output.kafka.kafka"}, false, false},
		{"disabled ones left out", "[output.kafka]\nenabled = false\n" + kafkaMin + "[output.kafka.events]\nenabled = false\n" + kafkaMin,
			nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range cfg.Outputs() {
				got = append(got, o.Name+":"+o.Type+":"+o.Key)
				if (o.Type == TypeKafka) != (o.Kafka != nil) || o.Kafka != nil && (o.Elasticsearch != nil || o.Lumberjack != nil) {
					t.Errorf("%s: bad pointers %+v", o.Name, o)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Outputs() = %q, want %q", got, tc.want)
			}
			if cfg.Output.Elasticsearch.Enabled != tc.legacy {
				t.Errorf("legacy output enabled = %v, want %v", cfg.Output.Elasticsearch.Enabled, tc.legacy)
			}
			if (cfg.Output.Kafka != nil) != tc.unnamed {
				t.Errorf("unnamed Kafka output = %+v, want set: %v", cfg.Output.Kafka, tc.unnamed)
			}
		})
	}
}

// TestKafkaNamedOutputAccessors: MaxLagBytes and StartAt read a Kafka
// output's keys.
func TestKafkaNamedOutputAccessors(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[output.kafka.k]\n"+kafkaMin+"max_lag = \"1GiB\"\nstart_at = \"newest\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	outs := cfg.Outputs()
	if len(outs) != 1 || outs[0].MaxLagBytes() != 1<<30 || outs[0].StartAt() != "newest" {
		t.Errorf("outputs %+v", outs)
	}
}

// TestKafkaProblems: each file has a problem of a Kafka output, reported
// with its full key, its line and what to change.
func TestKafkaProblems(t *testing.T) {
	const k = "[output.kafka.k]\n" + kafkaMin // lines 1-3
	const kt = "[output.kafka.k]\nhosts = [\"k1:9092\"]\nmax_lag = \"0B\"\n"
	for _, tc := range []struct {
		name, toml string
		key        string
		line       int
		want       string
	}{
		{"missing hosts", "[output.kafka.k]\ntopic = \"logs\"\n", "output.kafka.k.hosts", 0, "list at least one Kafka broker"},
		{"empty hosts", "[output.kafka.k]\nhosts = []\ntopic = \"logs\"\n", "output.kafka.k.hosts", 2, "is empty"},
		{"host without port", "[output.kafka.k]\nhosts = [\"k1:9092\", \"k2\"]\ntopic = \"logs\"\n", "output.kafka.k.hosts", 2, `entry 2: "k2" is not host:port: the port is required (e.g. "kafka1.example.com:9092"`},
		{"bad port", "[output.kafka.k]\nhosts = [\"k1:99999\"]\ntopic = \"logs\"\n", "output.kafka.k.hosts", 2, "not a number from 1 to 65535"},
		{"missing topic", "[output.kafka.k]\nhosts = [\"k1:9092\"]\n", "output.kafka.k.topic", 0, "is empty: name the topic"},
		{"blank topic", "[output.kafka.k]\nhosts = [\"k1:9092\"]\ntopic = \" \"\n", "output.kafka.k.topic", 3, "is empty"},
		{"literal topic not a name", kt + "topic = \"my logs\"\n", "output.kafka.k.topic", 4, `Kafka topic names are made of a-z, A-Z, 0-9, '.', '_' and '-', not ' '`},
		{"topic format around references", kt + "topic = \"logs/%{[@metadata][beat]}\"\n", "output.kafka.k.topic", 4, `the text around its %{…} references makes no Kafka topic name`},
		{"topic too long", kt + "topic = \"" + strings.Repeat("a", 250) + "\"\n", "output.kafka.k.topic", 4, "longer than 249 bytes"},
		{"topic dot", kt + "topic = \"..\"\n", "output.kafka.k.topic", 4, "is not a Kafka topic name"},
		{"fallback topic", k + "fallback_topic = \"%{[x]}\"\n", "output.kafka.k.fallback_topic", 4, "a literal topic name"},
		{"compression", k + "compression = \"brotli\"\n", "output.kafka.k.compression", 4, "use none, gzip, snappy, lz4 or zstd"},
		{"gzip level", k + "compression_level = 0\n", "output.kafka.k.compression_level", 4, "outside 1…9 for gzip"},
		{"gzip level high", k + "compression_level = 10\n", "output.kafka.k.compression_level", 4, "outside 1…9 for gzip"},
		{"required_acks 2", k + "required_acks = 2\n", "output.kafka.k.required_acks", 4, "use -1 (all in-sync replicas acknowledge, the default), 1"},
		{"required_acks -2", k + "required_acks = -2\n", "output.kafka.k.required_acks", 4, "use -1"},
		{"required_acks 1 with exactly_once", k + "required_acks = 1\n", "output.kafka.k.required_acks", 4, "exactly_once (Kafka transactions) needs -1"},
		{"max_message_bytes low", k + "max_message_bytes = 100\n", "output.kafka.k.max_message_bytes", 4, "outside 1KiB…100MiB"},
		{"max_message_bytes high", k + "max_message_bytes = \"1GiB\"\n", "output.kafka.k.max_message_bytes", 4, "outside 1KiB…100MiB"},
		{"reserved header", k + "[[output.kafka.k.headers]]\nkey = \"logpond-id\"\nvalue = \"x\"\n", "output.kafka.k.headers", 4, `entry 1: the key "logpond-id" is reserved`},
		{"empty header key", k + "headers = [{ key = \"a\" }, { value = \"x\" }]\n", "output.kafka.k.headers", 4, "entry 2 has no key"},
		{"unknown header key", k + "headers = [{ name = \"a\" }]\n", "output.kafka.k.headers", 4, `entry 1: unknown key "name"; known keys there: key, value`},
		{"header not a table", k + "headers = [\"a\"]\n", "output.kafka.k.headers", 4, "entry 1 is a string: want a table"},
		{"headers not a list", k + "headers = \"a=b\"\n", "output.kafka.k.headers", 4, "want a list of tables"},
		{"header value type", k + "headers = [{ key = \"a\", value = 1 }]\n", "output.kafka.k.headers", 4, "entry 1: value: is an integer: want a string"},
		{"two partition tables", k + "[output.kafka.k.partition.hash]\n[output.kafka.k.partition.random]\n", "output.kafka.k.partition", 0, "sets partition.hash and partition.random: set one of them"},
		{"three partition tables", k + "[output.kafka.k.partition.hash]\n[output.kafka.k.partition.random]\n[output.kafka.k.partition.round_robin]\n", "output.kafka.k.partition", 0, "partition.hash and partition.random and partition.round_robin"},
		{"hash field", k + "[output.kafka.k.partition.hash]\nhash = [\"host.name\", \"[host][name]\"]\n", "output.kafka.k.partition.hash.hash", 5, `entry 2: "[host][name]" is not a field name`},
		{"hash field dots", k + "[output.kafka.k.partition.hash]\nhash = [\"host..name\"]\n", "output.kafka.k.partition.hash.hash", 5, "is not a field name"},
		{"random group_events", k + "[output.kafka.k.partition.random]\ngroup_events = 0\n", "output.kafka.k.partition.random.group_events", 5, "at least 1 record"},
		{"round_robin group_events", k + "[output.kafka.k.partition.round_robin]\ngroup_events = -1\n", "output.kafka.k.partition.round_robin.group_events", 5, "at least 1 record"},
		{"partition typo", k + "[output.kafka.k.partition.roundrobin]\n", "output.kafka.k.partition.roundrobin", 4, `unknown key in [output.kafka.k.partition] (did you mean "round_robin"?)`},
		{"bulk_max_size", k + "bulk_max_size = 0\n", "output.kafka.k.bulk_max_size", 4, "outside 1…1048576"},
		{"bulk_flush_frequency", k + "bulk_flush_frequency = \"1m\"\n", "output.kafka.k.bulk_flush_frequency", 4, "more than 10s"},
		{"timeout", k + "timeout = \"0s\"\n", "output.kafka.k.timeout", 4, "must be more than 0s"},
		{"broker_timeout", k + "broker_timeout = \"0s\"\n", "output.kafka.k.broker_timeout", 4, "must be more than 0s"},
		{"broker_timeout above timeout", k + "timeout = \"5s\"\n", "output.kafka.k.broker_timeout", 0, "is more than timeout (5s)"},
		{"backoff", k + "[output.kafka.k.backoff]\ninit = \"10s\"\nmax = \"5s\"\n", "output.kafka.k.backoff.max", 6, "less than backoff.init"},
		{"sasl mechanism unknown", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.sasl]\nmechanism = \"GSSAPI\"\n", "output.kafka.k.sasl.mechanism", 7, "use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"sasl mechanism lower case", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.sasl]\nmechanism = \"plain\"\n", "output.kafka.k.sasl.mechanism", 7, "(upper case)"},
		{"sasl mechanism without credentials", k + "[output.kafka.k.sasl]\nmechanism = \"PLAIN\"\n", "output.kafka.k.sasl.mechanism", 5, "is set without username and password"},
		{"username without password", k + "username = \"u\"\n", "output.kafka.k.password", 0, "is empty while username is set"},
		{"password without username", k + "password = \"p\"\n", "output.kafka.k.username", 0, "is empty while password is set"},
		{"ssl key without certificate", k + "[output.kafka.k.ssl]\nkey = \"/k.pem\"\n", "output.kafka.k.ssl.key", 0, "go together"},
		{"ssl verification_mode", k + "[output.kafka.k.ssl]\nverification_mode = \"strict\"\n", "output.kafka.k.ssl.verification_mode", 5, "use full"},
		{"dead_letter_max_bytes", k + "dead_letter_max_bytes = \"1MiB\"\n", "output.kafka.k.dead_letter_max_bytes", 4, "less than 4 × (input.beats.max_event_bytes + 1MiB)"},
		{"dead_letter_max_age", k + "dead_letter_max_age = \"10s\"\n", "output.kafka.k.dead_letter_max_age", 4, "less than 1m0s"},
		{"max_lag", k + "max_lag = \"16GiB\"\n", "output.kafka.k.max_lag", 4, "not less than ledger.max_bytes"},
		{"start_at", k + "start_at = \"latest\"\n", "output.kafka.k.start_at", 4, "use oldest"},
		{"wrong type", k + "exactly_once = \"yes\"\n", "output.kafka.k.exactly_once", 4, "want true or false"},
		{"typo", k + "required_ack = 1\n", "output.kafka.k.required_ack", 4, `did you mean "required_acks"`},
		{"typo in ssl", k + "[output.kafka.k.ssl]\ncertificate_authority = [\"/ca.pem\"]\n", "output.kafka.k.ssl.certificate_authority", 5, `did you mean "certificate_authorities"`},
		{"environment", k + "password = \"${LP_TEST_UNSET_KAFKA}\"\nusername = \"u\"\n", "output.kafka.k.password", 4, "environment variable LP_TEST_UNSET_KAFKA is not set"},
		{"transactional_id shared", k + "transactional_id = \"tx\"\n[output.kafka.m]\n" + kafkaMin + "transactional_id = \"tx\"\n", "output.kafka.m.transactional_id", 8, `"tx" is also the transactional_id of [output.kafka.k]`},
		// Names.
		{"name taken by elasticsearch", "[output.elasticsearch.k]\nhosts = [\"https://es:9200\"]\n" + k, "output.kafka.k", 3, `the name "k" is taken by [output.elasticsearch.k]: output names are unique across kinds`},
		{"name taken by lumberjack", "[output.lumberjack.k]\nhosts = [\"ls:5044\"]\n" + k, "output.kafka.k", 3, `the name "k" is taken by [output.lumberjack.k]`},
		{"name taken by the legacy output", "[output.elasticsearch]\nworkers = 2\n[output.kafka.elasticsearch]\n" + kafkaMin, "output.kafka.elasticsearch", 3, "directly in [output.elasticsearch]"},
		{"name taken by the unnamed kafka", "[output.kafka]\n" + kafkaMin + "[output.lumberjack.kafka]\nhosts = [\"ls:5044\"]\n", "output.lumberjack.kafka", 4, `the name "kafka" is taken by the output whose settings are directly in [output.kafka]`},
		{"named kafka beside the unnamed", "[output.kafka]\n" + kafkaMin + "[output.kafka.kafka]\n" + kafkaMin, "output.kafka.kafka", 4, "choose another name, or move those settings into this table"},
		{"bad name", "[output.kafka.Events]\n" + kafkaMin, "output.kafka.Events", 1, "cannot name an output"},
		{"ambiguous setting name", "[output.kafka.topic]\n" + kafkaMin, "output.kafka.topic", 1, "is ambiguous"},
		{"output named ssl", "[output.kafka.ssl]\n" + kafkaMin, "output.kafka.ssl", 1, `an output cannot be named "ssl"`},
		// The unnamed output's problems name its keys.
		{"unnamed required_acks", "[output.kafka]\n" + kafkaMin + "required_acks = 2\n", "output.kafka.required_acks", 4, "use -1"},
		{"unnamed without topic", "[output.kafka]\nhosts = [\"k1:9092\"]\n", "output.kafka.topic", 0, "is empty"},
		{"unnamed typo", "[output.kafka]\n" + kafkaMin + "hostss = [\"k1:9092\"]\n", "output.kafka.hostss", 4, `unknown key in [output.kafka] (did you mean "hosts"?)`},
		{"unnamed ssl typo", "[output.kafka]\n" + kafkaMin + "[output.kafka.ssl]\nverificaton_mode = \"none\"\n", "output.kafka.ssl.verificaton_mode", 5, `unknown key in [output.kafka.ssl] (did you mean "verification_mode"?)`},
		{"unnamed partition", "[output.kafka]\n" + kafkaMin + "[output.kafka.partition.random]\ngroup_events = 0\n", "output.kafka.partition.random.group_events", 5, "at least 1 record"},
		{"unnamed ssl alone", "[output.kafka.ssl]\nenabled = true\n", "output.kafka.hosts", 0, "list at least one Kafka broker"},
		{"kafka section not a table", "[output]\nkafka = 1\n", "output.kafka", 2, "is a section"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.toml))
			if err == nil {
				t.Fatal("loaded without error")
			}
			ke := problemOf(err, tc.key)
			if ke == nil {
				t.Fatalf("no problem with %s in %v", tc.key, err)
			}
			if !strings.Contains(ke.Msg, tc.want) {
				t.Errorf("%s: %q does not say %q", tc.key, ke.Msg, tc.want)
			}
			if tc.line != 0 && ke.Line != tc.line {
				t.Errorf("%s: line %d, want %d", tc.key, ke.Line, tc.line)
			}
		})
	}
}

// TestKafkaValid: settings that look odd but are fine.
func TestKafkaValid(t *testing.T) {
	const k = "[output.kafka.k]\n" + kafkaMin
	for _, tc := range []struct{ name, toml string }{
		{"topic format", "[output.kafka.k]\nhosts = [\"k1:9092\"]\ntopic = \"logs-%{[@metadata][beat]}.%{+yyyy.MM.dd}\"\n"},
		{"topic of one reference", "[output.kafka.k]\nhosts = [\"k1:9092\"]\ntopic = \"%{[fields][topic]}\"\n"},
		{"IPv6 broker", "[output.kafka.k]\nhosts = [\"[::1]:9092\"]\ntopic = \"logs\"\n"},
		{"key with any text", k + "key = \"%{[host][name]} / %{[log][file][path]}\"\n"},
		{"acks 0 at least once", k + "required_acks = 0\nexactly_once = false\n"},
		{"acks 1 at least once", k + "required_acks = 1\nexactly_once = false\n"},
		{"snappy with the default level", k + "compression = \"snappy\"\n"},
		{"zstd with another level", k + "compression = \"zstd\"\ncompression_level = 9\n"},
		{"none", k + "compression = \"none\"\n"},
		{"gzip 9", k + "compression_level = 9\n"},
		{"duplicate header keys", k + "headers = [{ key = \"a\", value = \"1\" }, { key = \"a\", value = \"2\" }]\n"},
		{"header logpond-id in other case", k + "headers = [{ key = \"Logpond-ID\" }]\n"},
		{"broker_timeout equal to timeout", k + "broker_timeout = \"30s\"\n"},
		{"flush frequency 10s", k + "bulk_flush_frequency = \"10s\"\n"},
		{"max sizes", k + "bulk_max_size = 1048576\nmax_message_bytes = \"100MiB\"\n"},
		{"one partition table with values", k + "[output.kafka.k.partition.hash]\nhash = [\"@metadata.beat\", \"host.name\"]\nreachable_only = true\n"},
		{"empty partition table", k + "[output.kafka.k.partition]\n"},
		{"scram", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.sasl]\nmechanism = \"SCRAM-SHA-512\"\n"},
		{"plain over tls", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.ssl]\nenabled = true\n"},
		{"one transactional_id, exactly_once off for the other", k + "transactional_id = \"tx\"\n[output.kafka.m]\n" + kafkaMin + "transactional_id = \"tx\"\nexactly_once = false\n"},
		{"disabled output still valid", k + "enabled = false\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("x.toml", []byte(tc.toml)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestKafkaAllProblemsAtOnce: the problems of several Kafka outputs, the
// unnamed one included, come out of one load.
func TestKafkaAllProblemsAtOnce(t *testing.T) {
	const text = `[output.kafka]
hosts = ["k1"]
[output.kafka.a]
topic = "a b"
required_acks = 3
[output.kafka.a.partition.hash]
[output.kafka.a.partition.round_robin]
[output.kafka.b]
hosts = ["k1:9092"]
topic = "b"
compression = "zip"
headers = [{ key = "" }]
[output.lumberjack.b]
hosts = ["ls:5044"]
`
	_, err := Parse("x.toml", []byte(text))
	if err == nil {
		t.Fatal("loaded without error")
	}
	for _, key := range []string{
		"output.kafka.hosts", "output.kafka.topic",
		"output.kafka.a.hosts", "output.kafka.a.topic", "output.kafka.a.required_acks", "output.kafka.a.partition",
		"output.kafka.b.compression", "output.kafka.b.headers", "output.kafka.b",
	} {
		if problemOf(err, key) == nil {
			t.Errorf("no problem reported with %s in:\n%v", key, err)
		}
	}
}

// TestKafkaWarnings: the insecure and ignored settings of Kafka outputs,
// each under its own key; none for safe ones.
func TestKafkaWarnings(t *testing.T) {
	const safe = "[input.beats]\nlisten = \"127.0.0.1:5044\"\n"
	const k = safe + "[output.kafka.k]\n" + kafkaMin
	for _, tc := range []struct {
		name, toml string
		want       map[string]string // key → a phrase of its message; nil: no warning
	}{
		{"defaults", k, nil},
		{"scram without tls", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.sasl]\nmechanism = \"SCRAM-SHA-256\"\n", nil},
		{"plain with tls", k + "username = \"u\"\npassword = \"p\"\n[output.kafka.k.ssl]\ncertificate_authorities = [\"/ca.pem\"]\n", nil},
		{"zstd with the default level", k + "compression = \"zstd\"\n", nil},
		{"verification none without tls", k + "[output.kafka.k.ssl]\nenabled = false\nverification_mode = \"none\"\n", nil},

		{"required_acks 1", k + "required_acks = 1\nexactly_once = false\n",
			map[string]string{"output.kafka.k.required_acks": "1: the partition leader alone acknowledges a record, so events the output counts as delivered (and the ledger then drops) can be lost by a broker failure; use -1 (all in-sync replicas), which exactly_once also needs"}},
		{"required_acks 0", k + "required_acks = 0\nexactly_once = false\n",
			map[string]string{"output.kafka.k.required_acks": "0: no broker acknowledges a record"}},
		{"plain without tls", k + "username = \"u\"\npassword = \"p\"\n",
			map[string]string{"output.kafka.k.sasl.mechanism": "PLAIN sends the username and password in clear text"}},
		{"verification none", k + "[output.kafka.k.ssl]\nverification_mode = \"none\"\n",
			map[string]string{"output.kafka.k.ssl.verification_mode": "checks no certificate of the brokers"}},
		{"level with snappy", k + "compression = \"snappy\"\ncompression_level = 6\n",
			map[string]string{"output.kafka.k.compression_level": `6 is ignored: compression is "snappy"`}},
		{"transactional_id without exactly_once", k + "exactly_once = false\ntransactional_id = \"tx\"\n",
			map[string]string{"output.kafka.k.transactional_id": `"tx" is ignored: exactly_once is false`}},
		{"unnamed output", safe + "[output.kafka]\n" + kafkaMin + "required_acks = 0\nexactly_once = false\n",
			map[string]string{"output.kafka.required_acks": "no broker acknowledges"}},
		{"disabled output too", k + "enabled = false\nrequired_acks = 1\nexactly_once = false\n",
			map[string]string{"output.kafka.k.required_acks": "lost by a broker failure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			ws := cfg.Warnings()
			got := map[string]string{}
			for _, w := range ws {
				got[w.Key] = w.Msg
			}
			if len(got) != len(ws) || len(ws) != len(tc.want) {
				t.Fatalf("warnings %q, want one for each of %v", ws, tc.want)
			}
			for key, phrase := range tc.want {
				if msg, ok := got[key]; !ok || !strings.Contains(msg, phrase) {
					t.Errorf("warning for %s: %q, want one saying %q", key, msg, phrase)
				}
			}
		})
	}
}

// TestKafkaRoundTrip: a configuration with Kafka outputs prints (as
// -check-config does) to TOML that loads back the same; the legacy
// Elasticsearch table is left out when the file did not define it.
func TestKafkaRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		legacy     bool // the printed file has an [output.elasticsearch] table
	}{
		{"named only", "[output.kafka.events]\n" + kafkaMin + "[[output.kafka.events.headers]]\nkey = \"a\"\nvalue = \"b\"\n[output.kafka.events.partition.random]\ngroup_events = 5\n", false},
		{"unnamed only", "[output.kafka]\n" + kafkaMin + "headers = [{ key = \"a\" }]\n[output.kafka.ssl]\ncertificate_authorities = [\"/ca.pem\"]\n[output.kafka.partition.hash]\nhash = [\"host.name\"]\n", false},
		{"unnamed and named", "[output.kafka]\n" + kafkaMin + "[output.kafka.events]\n" + kafkaMin + "[output.kafka.events.backoff]\nmax = \"2m\"\n", false},
		{"with the legacy output", "[output.elasticsearch]\nworkers = 2\n[output.kafka]\n" + kafkaMin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := toml.NewEncoder(&b).Encode(want); err != nil {
				t.Fatal(err)
			}
			got, err := Parse("printed", []byte(b.String()))
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("printed configuration loads back otherwise:\n got %+v\nwant %+v\n%s", got, want, b.String())
			}
			if has := strings.Contains(b.String(), "\n[output.elasticsearch]\n"); has != tc.legacy {
				t.Errorf("printed [output.elasticsearch]: %v, want %v\n%s", has, tc.legacy, b.String())
			}
		})
	}
}

// TestKafkaPrintable: values from the environment are printed as
// references in Kafka outputs (header values too), the password is
// redacted, and neither touches the loaded configuration.
func TestKafkaPrintable(t *testing.T) {
	t.Setenv("LP_KAFKA_USER", "svc-logpond")
	t.Setenv("LP_KAFKA_PASSWORD", "pa55word")
	t.Setenv("LP_KAFKA_DC", "eu-west-1")
	text := "[output.kafka]\n" + kafkaMin + "username = \"${LP_KAFKA_USER}\"\npassword = \"${LP_KAFKA_PASSWORD}\"\nheaders = [{ key = \"dc\", value = \"${LP_KAFKA_DC}\" }]\n" +
		"[output.kafka.ssl]\nenabled = true\n" +
		"[output.kafka.events]\n" + kafkaMin + "username = \"${LP_KAFKA_USER}\"\npassword = \"${LP_KAFKA_PASSWORD}\"\n[output.kafka.events.ssl]\nenabled = true\n"
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, kc := range []*Kafka{l.Config.Output.Kafka, l.Config.Output.NamedKafka["events"]} {
		if kc.Username != "svc-logpond" || kc.Password != "pa55word" {
			t.Fatalf("loaded %+v: want the variables' values", kc)
		}
	}
	if h := l.Config.Output.Kafka.Headers; len(h) != 1 || h[0].Value != "eu-west-1" {
		t.Fatalf("headers %+v", h)
	}
	p := l.Printable()
	for _, kc := range []*Kafka{p.Output.Kafka, p.Output.NamedKafka["events"]} {
		if kc.Username != "${LP_KAFKA_USER}" || kc.Password != "${LP_KAFKA_PASSWORD}" {
			t.Errorf("printed username %q, password %q", kc.Username, kc.Password)
		}
	}
	if h := p.Output.Kafka.Headers; h[0].Value != "${LP_KAFKA_DC}" {
		t.Errorf("printed header %+v", h)
	}
	p.Output.NamedKafka["events"].Password = "literal"
	if !p.RedactSecrets() {
		t.Error("RedactSecrets says nothing is hidden")
	}
	if p.Output.Kafka.Password != Redacted || p.Output.NamedKafka["events"].Password != Redacted {
		t.Errorf("RedactSecrets left %q and %q", p.Output.Kafka.Password, p.Output.NamedKafka["events"].Password)
	}
	if l.Config.Output.Kafka.Password != "pa55word" || l.Config.Output.Kafka.Headers[0].Value != "eu-west-1" || l.Config.Output.NamedKafka["events"].Password != "pa55word" {
		t.Error("Printable or RedactSecrets changed the loaded configuration")
	}
}

// TestKafkaClone: a clone shares nothing with the original.
func TestKafkaClone(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[output.kafka]\n"+kafkaMin+"headers = [{ key = \"a\" }]\n[output.kafka.partition.hash]\nhash = [\"x\"]\n"+
		"[output.kafka.r]\n"+kafkaMin+"[output.kafka.r.partition.random]\n[output.kafka.rr]\n"+kafkaMin+"[output.kafka.rr.partition.round_robin]\n"+
		"[output.kafka.r.ssl]\ncertificate_authorities = [\"/ca.pem\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Clone()
	if !reflect.DeepEqual(c, *cfg) {
		t.Fatal("the clone differs")
	}
	c.Output.Kafka.Hosts[0] = "x:1"
	c.Output.Kafka.Headers[0].Key = "b"
	c.Output.Kafka.Partition.Hash.Hash[0] = "y"
	c.Output.NamedKafka["r"].Partition.Random.GroupEvents = 9
	c.Output.NamedKafka["rr"].Partition.RoundRobin.GroupEvents = 9
	c.Output.NamedKafka["r"].SSL.CertificateAuthorities[0] = "/other.pem"
	c.Output.NamedKafka["r"].Topic = "other"
	u, r, rr := cfg.Output.Kafka, cfg.Output.NamedKafka["r"], cfg.Output.NamedKafka["rr"]
	if u.Hosts[0] != "k1:9092" || u.Headers[0].Key != "a" || u.Partition.Hash.Hash[0] != "x" || r.Partition.Random.GroupEvents != 1 ||
		rr.Partition.RoundRobin.GroupEvents != 1 || r.SSL.CertificateAuthorities[0] != "/ca.pem" || r.Topic != "logs" {
		t.Errorf("changing the clone changed the original: %+v %+v %+v", u, r, rr)
	}
}

// TestKafkaChanged: Changed names Kafka keys as written in the file, the
// unnamed output by its table, and partition tables set on one side by
// theirs.
func TestKafkaChanged(t *testing.T) {
	a := Default()
	events := DefaultKafka()
	events.Hosts, events.Topic = []string{"k1:9092"}, "logs"
	a.Output.NamedKafka = map[string]*Kafka{"events": &events}
	if got := Changed(&a, &a); len(got) != 0 {
		t.Fatalf("Changed(a, a) = %v", got)
	}
	b := Default()
	events2 := events
	events2.Hosts = slices.Clone(events.Hosts)
	events2.Password = "new"
	events2.Headers = []KafkaHeader{{Key: "a"}}
	events2.Partition.Random = &KafkaRandomPartition{GroupEvents: 1}
	unnamed := DefaultKafka()
	b.Output.NamedKafka = map[string]*Kafka{"events": &events2}
	b.Output.Kafka = &unnamed
	want := []string{
		"output.kafka",
		"output.kafka.events.headers",
		"output.kafka.events.partition.random",
		"output.kafka.events.password",
	}
	if got := Changed(&a, &b); !reflect.DeepEqual(got, want) {
		t.Errorf("Changed = %v\nwant      %v", got, want)
	}
	c := b
	unnamed2 := unnamed
	unnamed2.BulkMaxSize = 10
	c.Output.Kafka = &unnamed2
	events3 := events2
	events3.Partition.Random = &KafkaRandomPartition{GroupEvents: 2}
	c.Output.NamedKafka = map[string]*Kafka{"events": &events3}
	if got, want := Changed(&b, &c), []string{"output.kafka.bulk_max_size", "output.kafka.events.partition.random.group_events"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Changed = %v\nwant      %v", got, want)
	}
}

// TestKafkaKeys: Keys and the unknown-key messages know Kafka's tables,
// the unnamed output's included.
func TestKafkaKeys(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    string // one key it must list; "" for none at all
	}{
		{"output", "kafka"},
		{"output.kafka", ""},
		{"output.kafka.events", "topic"},
		{"output.kafka.events.partition", "round_robin"},
		{"output.kafka.events.partition.hash", "reachable_only"},
		{"output.kafka.events.partition.random", "group_events"},
		{"output.kafka.events.sasl", "mechanism"},
		{"output.kafka.events.ssl", "certificate_authorities"},
		{"output.kafka.events.backoff", "init"},
		{"output.kafka.events.headers", ""},
		{"output.kafka.ssl", "verification_mode"},
		{"output.kafka.partition", "hash"},
		{"output.kafka.partition.random", "group_events"},
		{"output.kafka.events.x", ""},
	} {
		got := Keys(tc.section)
		if tc.want == "" && got != nil || tc.want != "" && !slices.Contains(got, tc.want) {
			t.Errorf("Keys(%q) = %q, want it to list %q", tc.section, got, tc.want)
		}
	}
	if got := Keys("output.kafka.ssl"); slices.Contains(got, "topic") {
		t.Errorf("Keys(output.kafka.ssl) = %q: the unnamed output's ssl table, not an output called ssl", got)
	}
}

// TestKafkaHostChecks: the TLS files of Kafka outputs are checked on the
// host, under their own keys, when TLS is on.
func TestKafkaHostChecks(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `[journal]
dir = "` + filepath.Join(dir, "j") + `"
[ledger]
dir = "` + filepath.Join(dir, "l") + `"
[input.beats]
listen = "127.0.0.1:0"
[admin]
listen = ""
[output.kafka]
` + kafkaMin + `[output.kafka.ssl]
certificate_authorities = ["` + notPEM + `"]
[output.kafka.events]
` + kafkaMin + `[output.kafka.events.ssl]
certificate = "` + missing + `"
key = "` + missing + `"
[output.kafka.off]
` + kafkaMin + `[output.kafka.off.ssl]
enabled = false
certificate_authorities = ["` + missing + `"]
`
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	err = l.CheckHost()
	for _, key := range []string{"output.kafka.ssl.certificate_authorities", "output.kafka.events.ssl.certificate"} {
		if problemOf(err, key) == nil {
			t.Errorf("no host problem with %s in %v", key, err)
		}
	}
	if problemOf(err, "output.kafka.off.ssl.certificate_authorities") != nil {
		t.Errorf("the files of an output without TLS were checked: %v", err)
	}
}

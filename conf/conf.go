// Package conf loads logpond's TOML configuration: defaults for every key,
// strict decoding (an unknown key is an error naming it and its line), and
// cross-key checks whose messages say what to change.
//
// The key names are a public contract (users' files depend on them): rename
// nothing; add keys with defaults.
package conf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/record"
)

// Config is the whole configuration. Every field has a default (Default);
// Load overlays a file on it and validates the result.
type Config struct {
	// Processors run on every event each output drains, before its own
	// (docs/configuration.md, "Processors"); the ledger keeps the events
	// as received. First, as a TOML file writes it: before any table.
	Processors Processors `toml:"processors"`
	Journal    Journal    `toml:"journal"`
	Ledger     Ledger     `toml:"ledger"`
	Input      Input      `toml:"input"`
	Output     Output     `toml:"output"`
	Admin      Admin      `toml:"admin"`
	Log        Log        `toml:"log"`
}

// Journal configures the write-ahead journal that acknowledgements wait on.
type Journal struct {
	// Dir holds the journal's segment files; put it on its own device.
	Dir string `toml:"dir"`
	// SegmentBytes is the size at which the journal starts a new segment
	// file; front truncation drops whole segments.
	SegmentBytes Size `toml:"segment_bytes"`
	// MaxBytes bounds the journal on disk; appends wait when it is full.
	MaxBytes Size `toml:"max_bytes"`
	// MaxGroupWait is how long the committer may wait for more appends
	// before writing a group; 0 writes as soon as the queue is empty.
	MaxGroupWait Duration `toml:"max_group_wait"`
	// MaxGroupBytes caps the bytes written and waiting for one fsync.
	MaxGroupBytes Size `toml:"max_group_bytes"`
	// SpareSegments is how many released segment files the journal keeps
	// to overwrite instead of deleting them; 0 deletes them. They take
	// SpareSegments × SegmentBytes of MaxBytes.
	SpareSegments int `toml:"spare_segments"`
}

// Ledger configures the large direct-IO store that outputs drain.
type Ledger struct {
	// Dir holds the ledger's segments, cursors and stream id; put it on its
	// own device.
	Dir string `toml:"dir"`
	// SegmentBytes is the size at which the ledger seals a segment.
	SegmentBytes Size `toml:"segment_bytes"`
	// MaxBytes bounds the ledger on disk; the flusher waits when it is full.
	MaxBytes Size `toml:"max_bytes"`
	// FlushInterval is the longest a record waits in the journal before the
	// flusher writes and syncs it to the ledger.
	FlushInterval Duration `toml:"flush_interval"`
	// Retention keeps drained segments this long after every cursor passed
	// them; 0 deletes them as soon as they are drained.
	Retention Duration `toml:"retention"`
	// DirectIO reads and writes segments with O_DIRECT, keeping the ledger
	// out of the page cache.
	DirectIO bool `toml:"direct_io"`
	// Compression is how records are stored: "s2" or "zstd" (each
	// record's events as one S2 or Zstandard block, compressed by the
	// input before the journal, so the journal and the ledger both hold
	// it compressed; zstd stores less, s2 costs less CPU) or "none" (as
	// the input built them). Records already stored keep their form
	// whatever it is changed to.
	Compression string `toml:"compression"`
	// CompressionLevel is the codec's level: "fastest", "default",
	// "better" or "best" (record.ParseLevel, record.NewCompressor).
	// Ignored, with a warning when changed, with "none".
	CompressionLevel CompressionLevel `toml:"compression_level"`
}

// Input holds the inputs.
type Input struct {
	Beats Beats `toml:"beats"`
}

// Beats configures the Lumberjack v2 listener that Beats' output.logstash
// sends to.
type Beats struct {
	// Listen is the host:port to accept Beats connections on.
	Listen string `toml:"listen"`
	// MaxConnections bounds concurrent client connections.
	MaxConnections int `toml:"max_connections"`
	// MaxWindow is the most events a client may announce for one batch.
	MaxWindow int `toml:"max_window"`
	// MaxEventBytes is the largest single event.
	MaxEventBytes Size `toml:"max_event_bytes"`
	// MaxBatchBytes bounds one batch after decompression.
	MaxBatchBytes Size `toml:"max_batch_bytes"`
	// MaxInflightBytes is the memory budget, shared by all connections, for
	// events read but not yet durable.
	MaxInflightBytes Size `toml:"max_inflight_bytes"`
	// IdleTimeout closes a connection that starts no batch for this long.
	IdleTimeout Duration `toml:"idle_timeout"`
	// BatchTimeout closes a connection that takes longer to send a batch.
	BatchTimeout Duration `toml:"batch_timeout"`
	// Keepalive is the interval of ACK(0) while a batch waits for the
	// journal.
	Keepalive Duration `toml:"keepalive"`
	// TLS, when Cert is set, makes the listener speak TLS.
	TLS BeatsTLS `toml:"tls"`
}

// BeatsTLS configures TLS for the Beats input (Filebeat's ssl.* settings on
// output.logstash are the other side).
type BeatsTLS struct {
	// Cert and Key are PEM files; TLS is on when Cert is set.
	Cert string `toml:"cert"`
	Key  string `toml:"key"`
	// ClientCA is a PEM bundle that client certificates are verified
	// against.
	ClientCA string `toml:"client_ca"`
	// ClientAuth is none, optional or required.
	ClientAuth string `toml:"client_auth"`
}

// Output holds the outputs. Each drains the one ledger from its own
// cursor, named after the output, at its own pace; the ledger keeps a
// record until every enabled output has passed it (or, with max_lag, until
// retention may skip a lagging output past it). Outputs lists them.
type Output struct {
	// Elasticsearch is the output named "elasticsearch": the settings
	// written directly in [output.elasticsearch]. A file that defines named
	// outputs and sets no key directly there leaves it disabled; a file
	// with no output at all leaves it enabled, with its defaults.
	Elasticsearch Elasticsearch `toml:"elasticsearch"`
	// NamedElasticsearch are the [output.elasticsearch.NAME] tables, by
	// name. They share the TOML key of Elasticsearch, so the TOML encoder
	// skips this field (its conf tag names its key); Config.MarshalTOML
	// writes them.
	NamedElasticsearch map[string]*Elasticsearch `toml:"-" conf:"elasticsearch"`
	// Lumberjack are the [output.lumberjack.NAME] tables, by name.
	Lumberjack map[string]*Lumberjack `toml:"lumberjack"`
	// Kafka is the output named "kafka" (UnnamedKafkaName): the settings
	// written directly in [output.kafka]. nil unless the file sets a key
	// there: unlike the legacy Elasticsearch output, it does not run by
	// default. It shares the TOML key of NamedKafka, so the TOML encoder
	// skips this field (its conf tag names its key); Config.MarshalTOML
	// writes it.
	Kafka *Kafka `toml:"-" conf:"kafka"`
	// NamedKafka are the [output.kafka.NAME] tables, by name. A NAME that
	// is a table setting of [output.kafka] (partition, sasl, ssl,
	// backoff) is that setting of Kafka instead.
	NamedKafka map[string]*Kafka `toml:"kafka"`
}

// Elasticsearch configures a bulk output that drains the ledger into one
// Elasticsearch cluster. Names follow Logstash's elasticsearch output where
// one exists.
type Elasticsearch struct {
	// Enabled runs the output; false leaves the ledger undrained by it
	// (ledger.max_bytes then stops ingest once reached, unless max_lag
	// lets retention pass it).
	Enabled bool `toml:"enabled"`
	// MaxLag, when more than 0, lets retention delete records this output
	// has not delivered once it is more than MaxLag behind and the ledger
	// is full: the output skips them (counted and logged) rather than stop
	// ingest for every output. 0 never skips.
	MaxLag Size `toml:"max_lag"`
	// StartAt is where the output starts when it has no cursor yet:
	// "oldest" (the oldest record the ledger holds) or "newest" (records
	// written from then on).
	StartAt string `toml:"start_at"`
	// Processors run on the events this output drains, after the global
	// ones.
	Processors Processors `toml:"processors"`
	// Hosts are the URLs of one cluster; requests fail over between them.
	// Hosts of different clusters are refused at connect: use one named
	// output per cluster. With CloudID, Load sets it to the one URL the
	// Cloud ID decodes to.
	Hosts []string `toml:"hosts"`
	// Username and Password are HTTP basic credentials.
	Username string `toml:"username"`
	Password string `toml:"password"`
	// APIKey is an Elasticsearch API key in its encoded (base64 id:key)
	// form; it overrides username and password.
	APIKey string `toml:"api_key"`
	// CloudID is an Elastic Cloud deployment's Cloud ID
	// ("[label:]base64(host$es_id$kibana_id)"). Load decodes it into Hosts
	// (one https URL); a file that sets it sets no hosts.
	CloudID string `toml:"cloud_id"`
	// CloudAuth is "username:password" for an Elastic Cloud deployment.
	// Load splits it into Username and Password; a file that sets it sets
	// neither of them, nor api_key. It is a secret, like Password.
	CloudAuth string `toml:"cloud_auth"`
	// Index names the target index, data stream or alias: Logstash sprintf
	// syntax, %{[field][sub]} and %{+yyyy.MM.dd}.
	Index string `toml:"index"`
	// FallbackIndex receives events that lack a field Index refers to.
	FallbackIndex string `toml:"fallback_index"`
	// Pipeline is the ingest pipeline (sprintf syntax); "" for none. An
	// event's @metadata.pipeline overrides it.
	Pipeline string `toml:"pipeline"`
	// DataStream says which events go to a data stream rather than to
	// Index: "auto" (those that carry a data_stream object), true (all)
	// or false (none).
	DataStream DataStreamMode `toml:"data_stream"`
	// DataStreamType, DataStreamDataset and DataStreamNamespace name the
	// data stream "{type}-{dataset}-{namespace}" of an event that does not
	// name it (in whole or in part) in its data_stream object.
	DataStreamType      string `toml:"data_stream_type"`
	DataStreamDataset   string `toml:"data_stream_dataset"`
	DataStreamNamespace string `toml:"data_stream_namespace"`
	// DataStreamSyncFields completes each data stream event's data_stream
	// object with the type, dataset and namespace it was routed by.
	DataStreamSyncFields bool `toml:"data_stream_sync_fields"`
	// DocumentID is "auto" (@metadata._id, else an id derived from the
	// event's place in the ledger) or "none" (Elasticsearch assigns ids;
	// replays after a crash then write duplicates).
	DocumentID string `toml:"document_id"`
	// Workers is the most bulk requests in flight.
	Workers int `toml:"workers"`
	// Concurrency is "adaptive" (between 1 and workers requests in
	// flight, fewer while Elasticsearch pushes back) or "fixed" (always
	// workers).
	Concurrency string `toml:"concurrency"`
	// FlushBytes is the bulk request size to aim for.
	FlushBytes Size `toml:"flush_bytes"`
	// FlushInterval is the longest a request that is not full waits for
	// more events (it goes sooner once the ledger stops growing), and
	// how often the output's cursor is persisted.
	FlushInterval Duration `toml:"flush_interval"`
	// MaxRequestBytes is the largest request Elasticsearch accepts (its
	// http.max_content_length); a bigger event is dead-lettered.
	MaxRequestBytes Size `toml:"max_request_bytes"`
	// Compression is none or gzip (request bodies).
	Compression string `toml:"compression"`
	// Timeout bounds one bulk request.
	Timeout Duration `toml:"timeout"`
	// RetryInitialInterval and RetryMaxInterval bound the exponential
	// backoff between retries.
	RetryInitialInterval Duration `toml:"retry_initial_interval"`
	RetryMaxInterval     Duration `toml:"retry_max_interval"`
	// DeadLetterMaxBytes bounds the dead-letter store (in the ledger
	// directory); when full the drain waits instead of dropping events.
	DeadLetterMaxBytes Size `toml:"dead_letter_max_bytes"`
	// DeadLetterMaxAge, when more than 0, is how long dead letters are
	// kept: whole dead-letter files whose entries all failed longer ago
	// are deleted. 0 keeps them until they are purged.
	DeadLetterMaxAge Duration `toml:"dead_letter_max_age"`
	// TLS configures https hosts.
	TLS ElasticsearchTLS `toml:"tls"`
}

// ElasticsearchTLS configures TLS to https hosts: how the output verifies
// them, and the client certificate it presents.
type ElasticsearchTLS struct {
	// CA is a PEM bundle to verify the cluster's certificate against
	// instead of the system roots.
	CA string `toml:"ca"`
	// VerificationMode is full (verify chain and host name) or none.
	VerificationMode string `toml:"verification_mode"`
	// Cert and Key are the PEM client certificate and its key, presented
	// to hosts that ask for one: both or neither.
	Cert string `toml:"cert"`
	Key  string `toml:"key"`
}

// Admin configures the HTTP endpoint for metrics and health.
type Admin struct {
	// Listen is the host:port of the admin endpoint; "" disables it.
	Listen string `toml:"listen"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the admin endpoint.
	Pprof bool `toml:"pprof"`
}

// Log configures logpond's own log.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `toml:"level"`
	// Format is text (logfmt-like) or json.
	Format string `toml:"format"`
	// SummaryInterval is how often one INFO line sums up the pipeline
	// (events in and out, lag, store fill, rejections); 0 disables it.
	SummaryInterval Duration `toml:"summary_interval"`
}

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	return Config{
		Journal: Journal{
			Dir:           "/var/lib/logpond/journal",
			SegmentBytes:  64 << 20,
			MaxBytes:      1 << 30,
			MaxGroupWait:  0,
			MaxGroupBytes: 2 << 20,
			SpareSegments: 2,
		},
		Ledger: Ledger{
			Dir:           "/var/lib/logpond/ledger",
			SegmentBytes:  256 << 20,
			MaxBytes:      16 << 30,
			FlushInterval: Duration(100e6), // 100ms
			Retention:     0,
			DirectIO:      true,
			// S2 at its fastest level: log events repeat their metadata
			// from one to the next, so even S2 makes the same ledger
			// hold a ten to twenty times longer outage, and it costs
			// the input a fraction of zstd's CPU on the acknowledgement
			// path (docs/benchmarks.md, "Compression").
			Compression:      CompressionS2,
			CompressionLevel: CompressionLevel(record.LevelFastest.String()),
		},
		Input: Input{Beats: Beats{
			Listen:           "0.0.0.0:5044",
			MaxConnections:   1000,
			MaxWindow:        16384,
			MaxEventBytes:    16 << 20,
			MaxBatchBytes:    256 << 20,
			MaxInflightBytes: 48 << 20,
			IdleTimeout:      Duration(60e9),
			BatchTimeout:     Duration(60e9),
			Keepalive:        Duration(5e9),
			TLS:              BeatsTLS{ClientAuth: "none"},
		}},
		Output: Output{Elasticsearch: DefaultElasticsearch()},
		Admin:  Admin{Listen: "127.0.0.1:9600"},
		Log:    Log{Level: "info", Format: "text", SummaryInterval: Duration(30e9)},
	}
}

// Load reads the TOML file at path over the defaults and validates it. The
// error, if any, lists every problem found, each naming the file, the line
// where known, the key, and what to change, ordered by line and key.
func Load(path string, checks ...Check) (*Config, error) {
	l, err := LoadFile(path, checks...)
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// Parse is Load for bytes already read; name is used in messages.
func Parse(name string, data []byte, checks ...Check) (*Config, error) {
	l, err := ParseFile(name, data, checks...)
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// Loaded is a configuration file as loaded: the configuration, and what is
// needed to check it further and to print it (Printable, CheckHost).
type Loaded struct {
	Config *Config
	name   string
	data   []byte
	subst  []substitution
	// liftedCreds holds the keys of the outputs ("output.elasticsearch",
	// "output.elasticsearch.siem") whose username and password were taken
	// from a host URL.
	liftedCreds map[string]bool
}

// LoadFile is Load, keeping what Loaded's methods need.
func LoadFile(path string, checks ...Check) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conf: %w", err)
	}
	return ParseFile(path, data, checks...)
}

// Check is a check of a whole configuration that needs more than conf
// knows: how the stores lay out records, how index names are templated.
// Its problems are reported with conf's own, by file and line, in the same
// order. A check runs also when conf found problems (every problem of a
// file is reported at once), so it must cope with any value: a negative
// size, a segment larger than the store. A key that did not decode keeps
// its default, so a problem that involves one is left out until it is
// fixed: a problem involves the key it is about and every key its message
// names, dotted ("journal.segment_bytes") or, for a key of the problem's
// own section, by its last part ("segment_bytes"). A message must
// therefore name every key the check compared.
type Check func(*Config) []*KeyError

// ParseFile is LoadFile for bytes already read; name is used in messages.
//
// String values may refer to environment variables (${NAME},
// ${NAME:default}; see substitute). Keys whose defaults depend on other
// keys follow the file's values of those keys when the file leaves them
// out: journal.max_group_bytes defaults to the smaller of 2MiB and
// journal.segment_bytes.
func ParseFile(name string, data []byte, checks ...Check) (*Loaded, error) {
	l, ps, err := parse(name, data, checks)
	if err != nil {
		return nil, err
	}
	if len(ps) > 0 {
		return nil, joinProblems(ps)
	}
	return l, nil
}

// CheckFile is what logpond -check-config does: it loads the file at path
// as LoadFile does and, with host, checks what the configuration needs from
// this host as CheckHost does, so that one run reports every problem. The
// host checks run also when the file has problems, each one whose key the
// file sets without a problem (the value of a key with a problem is about
// to change, or is its default when it did not decode). fileErr is
// LoadFile's error; hostErr lists the host's problems. l is nil when
// fileErr is set.
func CheckFile(path string, host bool, checks ...Check) (l *Loaded, fileErr, hostErr error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conf: %w", err), nil
	}
	l, ps, err := parse(path, data, checks)
	if err != nil {
		return nil, err, nil
	}
	if host {
		withProblem := map[string]bool{}
		for _, p := range ps {
			withProblem[p.Key] = true
		}
		hostErr = l.checkHost(withProblem)
	}
	if len(ps) > 0 {
		return nil, joinProblems(ps), hostErr
	}
	return l, nil, hostErr
}

// parse decodes and validates a document. err is a syntax error, which
// leaves no document to check further: it is the one problem reported
// alone. Otherwise l holds the configuration as far as it decoded
// (defaults for keys that did not) and ps every problem, with file and
// line, ordered by line and key.
func parse(name string, data []byte, checks []Check) (l *Loaded, ps []*KeyError, err error) {
	var raw map[string]any
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		return nil, nil, decodeError(name, data, err)
	}
	cfg := Default()
	d := &decoder{env: os.LookupEnv, defined: map[string]bool{}, keys: md.Keys()}
	d.decodeTable(reflect.ValueOf(&cfg).Elem(), nil, raw)
	if !d.defined["journal.max_group_bytes"] {
		cfg.Journal.MaxGroupBytes = min(cfg.Journal.MaxGroupBytes, cfg.Journal.SegmentBytes)
	}
	ps = d.problems
	lifted, liftedCreds := cfg.liftHostCredentials()
	found := append(lifted, cfg.applyCloud(d.defined)...)
	found = append(found, cfg.checkDataStreamIndex(d.defined)...)
	found = append(found, cfg.validate()...)
	for _, check := range checks {
		found = append(found, check(&cfg)...)
	}
	for _, p := range found {
		// A key that did not decode kept its default: a check about it, or
		// one that compares another key with it, would report a problem
		// of the default, not of the file. Those checks wait until it is
		// fixed; every other one is reported now.
		if !involvesAny(p, d.failed) {
			ps = append(ps, p)
		}
	}
	for _, p := range ps {
		p.File = name
		p.Line = keyLine(data, splitKey(p.Key))
	}
	sortProblems(ps)
	return &Loaded{Config: &cfg, name: name, data: data, subst: d.subst, liftedCreds: liftedCreds}, ps, nil
}

// joinProblems is the error listing ps, one per line.
func joinProblems(ps []*KeyError) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}

// involvesAny reports whether p involves one of keys (see Check): it is
// about one, or its message names one, dotted, or by its last part when
// the key is in p's section. The last part alone says nothing about a key
// of another section: "lower segment_bytes" in a problem of
// ledger.max_bytes means ledger.segment_bytes, not journal.segment_bytes.
func involvesAny(p *KeyError, keys []string) bool {
	for _, k := range keys {
		if p.Key == k || strings.Contains(p.Msg, k) {
			return true
		}
		if section(k) == section(p.Key) && containsWord(p.Msg, k[strings.LastIndexByte(k, '.')+1:]) {
			return true
		}
	}
	return false
}

// section is the section of a dotted key: "journal" for
// "journal.segment_bytes", "" for a top-level key.
func section(key string) string {
	return key[:max(strings.LastIndexByte(key, '.'), 0)]
}

// containsWord reports whether s contains w not as part of a longer
// key-like word (letters, digits, _ and .).
func containsWord(s, w string) bool {
	wordByte := func(c byte) bool {
		return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !wordByte(s[j-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

// KeyError is one problem with one key of a configuration file.
type KeyError struct {
	File string
	Line int    // 0 when the key is not in the file (a default was used)
	Key  string // dotted path, e.g. "journal.max_bytes"
	Msg  string
}

func (e *KeyError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("conf: %s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("conf: %s: %s: %s", loc, e.Key, e.Msg)
}

// decodeError turns a TOML syntax or type error into a KeyError with the
// line and key the decoder reported.
func decodeError(name string, data []byte, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &KeyError{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	return fmt.Errorf("conf: %s: %w", name, err)
}

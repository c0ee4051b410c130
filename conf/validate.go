package conf

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/hosturl"
	"github.com/logpond/logpond/record"
)

// Limits that make a configuration safe to run. Each is explained where it
// is checked.
const (
	minSegmentBytes     Size = 1 << 20
	maxSegmentBytes     Size = 1 << 30
	minGroupBytes       Size = 4 << 10
	maxGroupWait             = Duration(time.Second)
	maxFlushInterval         = Duration(time.Minute)
	minDeadLetterMaxAge      = Duration(time.Minute)
	maxSpareSegments         = 16
)

// validate returns one KeyError per problem, without file or line, section
// by section.
func (c *Config) validate() []*KeyError {
	var ps []*KeyError
	bad := func(key, format string, args ...any) {
		ps = append(ps, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c.validateStores(bad)
	c.validateInput(bad)
	validateListen(bad, "admin.listen", c.Admin.Listen, true)
	c.validateOutputs(bad)
	c.validateLog(bad)
	return ps
}

// badFunc reports a problem with a key.
type badFunc func(key, format string, args ...any)

// validateListen checks the form of a listen address; optional allows ""
// (disabled).
func validateListen(bad badFunc, key, addr string, optional bool) {
	if addr == "" && optional {
		return
	}
	if err := validListen(addr); err != nil {
		bad(key, "%v", err)
	}
}

// validateStores checks [journal] and [ledger].
func (c *Config) validateStores(bad badFunc) {
	j, l := c.Journal, c.Ledger
	checkDir := func(key, dir string) {
		if strings.TrimSpace(dir) == "" {
			bad(key, "is empty: set it to the directory to keep this store in, e.g. %q", defaultDir(key))
		}
	}
	checkDir("journal.dir", j.Dir)
	checkDir("ledger.dir", l.Dir)
	if j.Dir != "" && l.Dir != "" {
		jd, ld := filepath.Clean(j.Dir), filepath.Clean(l.Dir)
		if jd == ld || within(jd, ld) || within(ld, jd) {
			bad("ledger.dir", "%q overlaps journal.dir %q: give each store its own directory, ideally on its own device", l.Dir, j.Dir)
		}
	}

	// Segments below 1 MiB make the journal and ledger juggle thousands of
	// files; above 1 GiB front truncation and retention free space too
	// coarsely.
	checkSegment := func(key string, v Size) {
		if v < minSegmentBytes || v > maxSegmentBytes {
			bad(key, "%s is outside %s…%s: pick a size in that range, e.g. %s", v, minSegmentBytes, maxSegmentBytes, defaultSize(key))
		}
	}
	checkSegment("journal.segment_bytes", j.SegmentBytes)
	checkSegment("ledger.segment_bytes", l.SegmentBytes)

	// Front truncation drops whole segments: with fewer than two segments of
	// room for records, a full journal would have nothing it could drop and
	// appends would wait forever; the spares have a segment each of their
	// own besides (docs/design.md, §4).
	if spares := max(j.SpareSegments, 0); j.MaxBytes < Size(2+spares)*j.SegmentBytes {
		bad("journal.max_bytes", "%s is less than (2 + journal.spare_segments %d) × journal.segment_bytes (%s): raise max_bytes to at least %s, lower spare_segments or lower segment_bytes",
			j.MaxBytes, spares, j.SegmentBytes, Size(2+spares)*j.SegmentBytes)
	}
	if j.MaxGroupBytes < minGroupBytes {
		bad("journal.max_group_bytes", "%s is below %s: a group must hold at least a few records", j.MaxGroupBytes, minGroupBytes)
	} else if j.MaxGroupBytes > j.SegmentBytes {
		bad("journal.max_group_bytes", "%s is more than journal.segment_bytes (%s): lower max_group_bytes or raise segment_bytes", j.MaxGroupBytes, j.SegmentBytes)
	}
	if j.SpareSegments < 0 || j.SpareSegments > maxSpareSegments {
		bad("journal.spare_segments", "%d is outside 0…%d: spares only save the cost of freeing and allocating segment files, a few are enough", j.SpareSegments, maxSpareSegments)
	}
	// Every acknowledgement may wait this long: more than a second is a
	// misconfiguration (clients time out), not a tuning choice.
	if j.MaxGroupWait > maxGroupWait {
		bad("journal.max_group_wait", "%s is more than %s: every acknowledgement can wait this long; use a few milliseconds, or 0 to write as soon as the queue is empty", j.MaxGroupWait, maxGroupWait)
	}

	// The open segment plus one sealed segment is the least the ledger
	// needs to keep writing while outputs drain.
	if l.MaxBytes < 2*l.SegmentBytes {
		bad("ledger.max_bytes", "%s is less than 2 × ledger.segment_bytes (%s): raise max_bytes to at least %s or lower segment_bytes", l.MaxBytes, l.SegmentBytes, 2*l.SegmentBytes)
	}
	switch l.Compression {
	case CompressionZstd, CompressionS2, CompressionNone:
	default:
		bad("ledger.compression", "%q: use s2 (records stored compressed, fastest), zstd (compressed smallest, more of the input's CPU) or none (stored as received)", l.Compression)
	}
	if _, err := record.ParseLevel(string(l.CompressionLevel)); err != nil {
		bad("ledger.compression_level", "%q: use fastest, default, better or best (each smaller records for more of the input's CPU; best also holds %dMiB per CPU for the input's compressors)", l.CompressionLevel, record.CompressorMemory(record.Zstd(record.LevelBest))>>20)
	}
	if l.FlushInterval <= 0 || l.FlushInterval > maxFlushInterval {
		bad("ledger.flush_interval", "%s is outside (0, %s]: records wait this long in the journal before reaching the ledger; e.g. 100ms", l.FlushInterval, maxFlushInterval)
	}
}

// validateInput checks [input.beats].
func (c *Config) validateInput(bad badFunc) {
	validateListen(bad, "input.beats.listen", c.Input.Beats.Listen, false)
	ib := c.Input.Beats
	if ib.MaxConnections < 1 {
		bad("input.beats.max_connections", "%d: allow at least 1 connection", ib.MaxConnections)
	}
	if ib.MaxConnections > 1<<16 {
		bad("input.beats.max_connections", "%d: at most 65536 (each connection's records carry a 16-bit slot number)", ib.MaxConnections)
	}
	if ib.MaxWindow < 1 {
		bad("input.beats.max_window", "%d: allow at least 1 event per batch (Filebeat sends up to bulk_max_size, 2048 by default)", ib.MaxWindow)
	}
	if ib.MaxEventBytes < 1<<10 {
		bad("input.beats.max_event_bytes", "%s is below 1KiB: real events are bigger (use 16MiB to accept 10 MiB lines)", ib.MaxEventBytes)
	}
	// A batch must hold its largest event, and the shared budget a batch's
	// largest event, or such an event could never be accepted.
	if ib.MaxBatchBytes < ib.MaxEventBytes {
		bad("input.beats.max_batch_bytes", "%s is less than input.beats.max_event_bytes (%s): raise it", ib.MaxBatchBytes, ib.MaxEventBytes)
	}
	if ib.MaxInflightBytes < ib.MaxEventBytes {
		bad("input.beats.max_inflight_bytes", "%s is less than input.beats.max_event_bytes (%s): raise it", ib.MaxInflightBytes, ib.MaxEventBytes)
	}
	tc := ib.TLS
	switch tc.ClientAuth {
	case "none", "optional", "required":
	default:
		bad("input.beats.tls.client_auth", "%q: use none, optional or required", tc.ClientAuth)
	}
	switch {
	case tc.Cert != "" && tc.Key == "", tc.Cert == "" && tc.Key != "":
		bad("input.beats.tls.key", "cert and key go together: set both (PEM files) or neither")
	case tc.Cert == "" && (tc.ClientCA != "" || tc.ClientAuth != "none"):
		bad("input.beats.tls.cert", "client_ca and client_auth need TLS: set cert and key too")
	case tc.ClientAuth != "none" && tc.ClientCA == "":
		bad("input.beats.tls.client_ca", "client_auth = %q needs client_ca, the PEM bundle client certificates are checked against", tc.ClientAuth)
	}
	for key, d := range map[string]Duration{"input.beats.idle_timeout": ib.IdleTimeout, "input.beats.batch_timeout": ib.BatchTimeout, "input.beats.keepalive": ib.Keepalive} {
		if d <= 0 {
			bad(key, "must be more than 0s, e.g. %s", map[string]string{"input.beats.idle_timeout": "60s", "input.beats.batch_timeout": "60s", "input.beats.keepalive": "5s"}[key])
		}
	}
}

// validateLog checks [log].
func (c *Config) validateLog(bad badFunc) {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not a level: use debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "%q is not a format: use text or json", c.Log.Format)
	}
	if d := c.Log.SummaryInterval; d != 0 && d < Duration(time.Second) {
		bad("log.summary_interval", "%s is too short: use at least 1s, or 0 to disable the summary line", d)
	}
}

// validateOutputs checks every output, legacy and named, enabled or not
// (a disabled output is meant to be enabled again), each problem under its
// own output's key.
func (c *Config) validateOutputs(bad badFunc) {
	for _, o := range c.allOutputs() {
		k := o.Key + "."
		switch {
		case o.Elasticsearch != nil:
			c.validateElasticsearch(bad, k, o.Elasticsearch)
		case o.Lumberjack != nil:
			c.validateLumberjack(bad, k, o.Lumberjack)
		case o.Kafka != nil:
			c.validateKafka(bad, k, o.Kafka)
		default:
			continue
		}
		c.validateDrain(bad, k, Size(o.MaxLagBytes()), o.StartAt())
	}
	// Two producers with one transactional id fence each other: each
	// would stop the other's transactions.
	ids := map[string]string{}
	for _, o := range c.kafkaOutputs() {
		kc := o.Kafka
		if !kc.ExactlyOnce || kc.TransactionalID == "" {
			continue
		}
		if other, ok := ids[kc.TransactionalID]; ok {
			bad(o.Key+".transactional_id", "%q is also the transactional_id of [%s]: two producers with one transactional id fence each other; give each output its own, or leave it out (\"\" derives one from the ledger and the output's name)", kc.TransactionalID, other)
			continue
		}
		ids[kc.TransactionalID] = o.Key
	}
}

// validateDrain checks the keys every output has about how it drains the
// ledger; k is the output's key with a trailing dot.
func (c *Config) validateDrain(bad badFunc, k string, maxLag Size, startAt string) {
	// A lag of the whole ledger can never be reached: the ledger is full
	// (and ingest stops) before this output is that far behind.
	if maxLag < 0 || maxLag > 0 && maxLag >= c.Ledger.MaxBytes {
		bad(k+"max_lag", "%s is not less than ledger.max_bytes (%s): lower max_lag (retention may skip what this output has not delivered once it is that far behind and the ledger is full), or set 0 never to skip", maxLag, c.Ledger.MaxBytes)
	}
	switch startAt {
	case "oldest", "newest":
	default:
		bad(k+"start_at", "%q: use oldest (a new output reads the ledger from its oldest record) or newest (from the records written after it starts)", startAt)
	}
}

// validateElasticsearch checks one Elasticsearch output; k is its key
// with a trailing dot ("output.elasticsearch.").
func (c *Config) validateElasticsearch(bad badFunc, k string, es *Elasticsearch) {
	hosts := es.Hosts
	if len(hosts) == 0 {
		bad(k+"hosts", "is empty: list at least one Elasticsearch URL, e.g. [\"http://127.0.0.1:9200\"]")
	}
	for i, h := range hosts {
		if err := validHost(h); err != nil {
			bad(k+"hosts", "entry %d: %v", i+1, err)
		}
	}

	if strings.TrimSpace(es.Index) == "" {
		bad(k+"index", "is empty: name the target index, e.g. %q", DefaultElasticsearch().Index)
	}
	if err := validIndexName(es.FallbackIndex); err != nil {
		bad(k+"fallback_index", "%v", err)
	}
	validateDataStream(bad, k, es)
	switch es.DocumentID {
	case "auto", "none":
	default:
		bad(k+"document_id", "%q: use auto (@metadata._id, else an id from the event's place in the ledger) or none (ids assigned by Elasticsearch)", es.DocumentID)
	}
	// Each worker holds one request in memory and another waits for it:
	// the count bounds memory as well as the load on the cluster.
	if es.Workers < 1 || es.Workers > 64 {
		bad(k+"workers", "%d is outside 1…64", es.Workers)
	}
	switch es.Concurrency {
	case "adaptive", "fixed":
	default:
		bad(k+"concurrency", "%q: use adaptive (between 1 and workers requests in flight, fewer while Elasticsearch pushes back) or fixed (always workers)", es.Concurrency)
	}
	if es.MaxRequestBytes < 1<<20 {
		bad(k+"max_request_bytes", "%s is below 1MiB; Elasticsearch accepts 100MiB by default (http.max_content_length)", es.MaxRequestBytes)
	}
	if es.FlushBytes < 4<<10 || es.FlushBytes > es.MaxRequestBytes {
		bad(k+"flush_bytes", "%s is outside 4KiB…max_request_bytes (%s): bulk requests of about 1–15MiB work well", es.FlushBytes, es.MaxRequestBytes)
	}
	c.validateDeadLetters(bad, k, es.DeadLetterMaxBytes, es.DeadLetterMaxAge)
	switch es.Compression {
	case "none", "gzip":
	default:
		bad(k+"compression", "%q: use none or gzip", es.Compression)
	}
	for key, d := range map[string]Duration{k + "flush_interval": es.FlushInterval, k + "timeout": es.Timeout, k + "retry_initial_interval": es.RetryInitialInterval} {
		if d <= 0 {
			bad(key, "must be more than 0s")
		}
	}
	if es.RetryMaxInterval < es.RetryInitialInterval {
		bad(k+"retry_max_interval", "%s is less than retry_initial_interval (%s)", es.RetryMaxInterval, es.RetryInitialInterval)
	}
	switch es.TLS.VerificationMode {
	case "full", "none":
	default:
		bad(k+"tls.verification_mode", "%q: use full (check the certificate chain and host name) or none", es.TLS.VerificationMode)
	}
	if (es.TLS.Cert == "") != (es.TLS.Key == "") {
		bad(k+"tls.key", "tls.cert and tls.key go together: set both (PEM files of the client certificate and its key) or neither")
	}
}

// Bounds of a Lumberjack output's keys; each is explained where it is
// checked.
const (
	maxLumberjackWorkers     = 64
	maxLumberjackBulkMaxSize = 1 << 16
)

// validateLumberjack checks one Lumberjack output; k is its key with a
// trailing dot ("output.lumberjack.edge.").
// validateDeadLetters checks an output's dead_letter_max_bytes and
// dead_letter_max_age (k is its table, with a trailing dot).
func (c *Config) validateDeadLetters(bad badFunc, k string, maxBytes Size, maxAge Duration) {
	// A dead letter holds the event: the store must fit a few of the
	// largest events the input accepts, or one of them could wedge the
	// drain.
	// (1MiB covers an entry's other fields: index, reason, ids.)
	if min := 4 * (c.Input.Beats.MaxEventBytes + 1<<20); maxBytes < min {
		bad(k+"dead_letter_max_bytes", "%s is less than 4 × (input.beats.max_event_bytes + 1MiB) (max_event_bytes is %s): raise it to at least %s", maxBytes, c.Input.Beats.MaxEventBytes, min)
	}
	// Files are deleted whole, about every minute: a shorter age would
	// promise more than that.
	if maxAge > 0 && maxAge < minDeadLetterMaxAge {
		bad(k+"dead_letter_max_age", "%s is less than %s: use 0 to keep dead letters until they are purged, or at least %s", maxAge, minDeadLetterMaxAge, minDeadLetterMaxAge)
	}
}

func (c *Config) validateLumberjack(bad badFunc, k string, lj *Lumberjack) {
	c.validateDeadLetters(bad, k, lj.DeadLetterMaxBytes, lj.DeadLetterMaxAge)
	if len(lj.Hosts) == 0 {
		bad(k+"hosts", "is empty: list at least one Lumberjack server as \"host:port\", e.g. [\"logstash.example.com:5044\"]")
	}
	for i, h := range lj.Hosts {
		if err := validHostPort(h, "logstash.example.com", 5044); err != nil {
			bad(k+"hosts", "entry %d: %v", i+1, err)
		}
	}
	// Each worker is a connection to every host with a batch in flight
	// and the next one built: the count bounds memory and the load on
	// the receivers.
	if lj.Workers < 1 || lj.Workers > maxLumberjackWorkers {
		bad(k+"workers", "%d is outside 1…%d (connections per host)", lj.Workers, maxLumberjackWorkers)
	}
	// A batch is held in memory until the receiver acknowledges it, and
	// receivers refuse windows above their own limit (logpond's
	// input.beats.max_window is 16384 by default).
	if lj.BulkMaxSize < 1 || lj.BulkMaxSize > maxLumberjackBulkMaxSize {
		bad(k+"bulk_max_size", "%d is outside 1…%d events per batch (Filebeat's default is 2048)", lj.BulkMaxSize, maxLumberjackBulkMaxSize)
	}
	if lj.CompressionLevel < 0 || lj.CompressionLevel > 9 {
		bad(k+"compression_level", "%d is outside 0…9 (0 sends batches uncompressed; 3, the default, is cheap and compresses logs well)", lj.CompressionLevel)
	}
	if lj.Timeout <= 0 {
		bad(k+"timeout", "must be more than 0s: it is how long to wait for a batch's ACK, e.g. 30s")
	}
	validateBackoff(bad, k, lj.Backoff)
	validateSSL(bad, k, lj.SSL)
}

// validateBackoff checks the backoff table of a Lumberjack or Kafka output
// (k is its table, with a trailing dot).
func validateBackoff(bad badFunc, k string, b LumberjackBackoff) {
	if b.Init <= 0 {
		bad(k+"backoff.init", "must be more than 0s, e.g. 1s")
	}
	if b.Max < b.Init {
		bad(k+"backoff.max", "%s is less than backoff.init (%s)", b.Max, b.Init)
	}
}

// validateSSL checks the ssl table of a Lumberjack or Kafka output (k is
// its table, with a trailing dot).
func validateSSL(bad badFunc, k string, ssl LumberjackSSL) {
	switch ssl.VerificationMode {
	case "full", "none":
	default:
		bad(k+"ssl.verification_mode", "%q: use full (check the certificate chain and host name) or none", ssl.VerificationMode)
	}
	if (ssl.Certificate == "") != (ssl.Key == "") {
		bad(k+"ssl.key", "ssl.certificate and ssl.key go together: set both (PEM files of the client certificate and its key) or neither")
	}
	for i, ca := range ssl.CertificateAuthorities {
		if strings.TrimSpace(ca) == "" {
			bad(k+"ssl.certificate_authorities", "entry %d is empty: list PEM files", i+1)
		}
	}
}

// validHostPort accepts a Lumberjack host or a Kafka broker: "host:port"
// with a port from 1 to 65535 (neither protocol has a default port).
// exampleHost and examplePort make up the example its message gives.
func validHostPort(h, exampleHost string, examplePort int) error {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return fmt.Errorf("%q is not host:port: the port is required (e.g. \"%s:%d\", or \"[::1]:%d\")", h, exampleHost, examplePort, examplePort)
	}
	if host == "" || strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: %q is not a host name or IP address", h, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", h, port)
	}
	return nil
}

// validIndexName applies Elasticsearch's rules for index names to a
// literal name.
func validIndexName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("%q is not an index name", name)
	case len(name) > 255:
		return fmt.Errorf("%q is longer than 255 bytes", name)
	case strings.ToLower(name) != name:
		return fmt.Errorf("%q: index names are lowercase", name)
	case strings.ContainsAny(name[:1], "_-+"):
		return fmt.Errorf("%q: index names do not start with _, - or +", name)
	case strings.ContainsAny(name, "\\/*?\"<>| ,#:"):
		return fmt.Errorf("%q: index names contain none of \\ / * ? \" < > | space , # :", name)
	}
	return nil
}

// within reports whether dir is inside parent.
func within(dir, parent string) bool {
	rel, err := filepath.Rel(parent, dir)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

func validListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. \"0.0.0.0:5044\" or \"[::1]:5044\"): %v", addr, err)
	}
	if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: %q is not a host name or IP address", addr, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// validHost accepts what Logstash's hosts accepts: a URL with http or
// https, or a bare host[:port] (meaning http). Its messages show hosts with
// their passwords redacted.
func validHost(h string) error {
	u, err := hosturl.Parse(h)
	if err != nil {
		return err
	}
	shown := hosturl.Redact(h)
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme %q is not http or https", shown, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host: write it like \"https://es1.example.com:9200\"", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not a number from 1 to 65535", shown, p)
		}
	}
	return nil
}

func defaultDir(key string) string {
	d := Default()
	if key == "journal.dir" {
		return d.Journal.Dir
	}
	return d.Ledger.Dir
}

func defaultSize(key string) Size {
	d := Default()
	if key == "journal.segment_bytes" {
		return d.Journal.SegmentBytes
	}
	return d.Ledger.SegmentBytes
}

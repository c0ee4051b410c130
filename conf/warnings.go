package conf

import (
	"fmt"
	"net"
	"strings"

	"github.com/logpond/logpond/internal/hosturl"
)

// Warning is a setting that works but exposes data or credentials, or
// that logpond ignores. logpond starts with it (logging each warning) and
// -check-config prints it without failing: the setting may be deliberate
// (a test cluster, a network that is protected otherwise, data stream
// settings kept for when data_stream is turned back on).
type Warning struct {
	Key string // dotted path, e.g. "output.elasticsearch.tls.verification_mode"
	Msg string // what is exposed, to whom, and what to change
}

func (w Warning) String() string { return w.Key + ": " + w.Msg }

// Warnings lists the insecure settings of c, in a fixed order; nil when
// there are none:
//   - tls.verification_mode = "none" on an Elasticsearch output, or
//     ssl.verification_mode = "none" on a Lumberjack or Kafka output with
//     TLS;
//   - credentials (username and password, or api_key) sent to http hosts,
//     or with SASL PLAIN to Kafka brokers without TLS;
//   - required_acks 1 or 0 on a Kafka output (acknowledged events can be
//     lost by a broker failure);
//   - a Beats listener without TLS on an address other hosts can reach;
//   - data_stream_* keys set to other than their defaults on an
//     Elasticsearch output with data_stream = false, which ignores them;
//   - ledger.compression_level set to other than its default with
//     ledger.compression = "none", which ignores it;
//   - on a Kafka output, compression_level set to other than its default
//     with a codec that has no levels, and transactional_id set with
//     exactly_once = false, which ignore them.
//
// Each output's warnings name its own keys ("output.elasticsearch.siem.hosts").
func (c *Config) Warnings() []Warning {
	var ws []Warning
	for _, o := range c.allOutputs() {
		switch {
		case o.Elasticsearch != nil:
			ws = append(ws, elasticsearchWarnings(o.Key+".", o.Elasticsearch)...)
			ws = append(ws, dataStreamWarnings(o.Key+".", o.Elasticsearch)...)
		case o.Lumberjack != nil:
			if o.Lumberjack.SSL.Enabled && o.Lumberjack.SSL.VerificationMode == "none" {
				ws = append(ws, Warning{o.Key + ".ssl.verification_mode",
					`"none": logpond checks no certificate of the hosts, so anyone on the network path can pose as them and read the events; use "full" (with ssl.certificate_authorities for a private CA)`})
			}
		case o.Kafka != nil:
			ws = append(ws, kafkaWarnings(o.Key+".", o.Kafka)...)
		}
	}
	if l := c.Ledger; l.Compression == CompressionNone && l.CompressionLevel != Default().Ledger.CompressionLevel {
		ws = append(ws, Warning{"ledger.compression_level",
			fmt.Sprintf("%q is ignored: ledger.compression is \"none\", so records are stored uncompressed; remove compression_level, or set compression = \"zstd\" to use it", l.CompressionLevel)})
	}
	b := c.Input.Beats
	if b.TLS.Cert == "" && !loopback(b.Listen) {
		ws = append(ws, Warning{"input.beats.listen",
			fmt.Sprintf("%q accepts plaintext Beats connections from other hosts (input.beats.tls.cert is empty): any client that reaches it can send events, and an event picks its index, its ingest pipeline and its document id (@metadata); set input.beats.tls (cert, key, and client_auth = \"required\" with client_ca), or listen on 127.0.0.1", b.Listen)})
	}
	return ws
}

// elasticsearchWarnings lists the insecure settings of one Elasticsearch
// output; k is its key with a trailing dot.
func elasticsearchWarnings(k string, es *Elasticsearch) []Warning {
	var ws []Warning
	if es.TLS.VerificationMode == "none" {
		ws = append(ws, Warning{k + "tls.verification_mode",
			`"none": logpond checks no certificate of the https hosts, so anyone on the network path can pose as Elasticsearch and read the events and the credentials; use "full" (with tls.ca for a private CA)`})
	}
	// What the client sends: the API key, else basic auth when both
	// username and password are set.
	sent := ""
	switch {
	case es.APIKey != "":
		sent = "the API key (api_key) goes"
	case es.Username != "" && es.Password != "":
		sent = "the username and password go"
	}
	if sent != "" {
		var plain []string
		for _, h := range es.Hosts {
			if u, err := hosturl.Parse(h); err == nil && strings.EqualFold(u.Scheme, "http") {
				plain = append(plain, hosturl.Redact(h))
			}
		}
		if len(plain) > 0 {
			ws = append(ws, Warning{k + "hosts",
				fmt.Sprintf("%s in clear text to %s (http): anyone on the network path can read them; use https hosts", sent, quoteAll(plain))})
		}
	}
	return ws
}

// dataStreamWarnings warns of data_stream_* keys set to other than their
// defaults on an output with data_stream = false, which ignores them; k
// is the output's key with a trailing dot.
func dataStreamWarnings(k string, es *Elasticsearch) []Warning {
	if es.DataStream != DataStreamOff {
		return nil
	}
	def := DefaultElasticsearch()
	var set []string
	for _, f := range []struct {
		key     string
		changed bool
	}{
		{"data_stream_type", es.DataStreamType != def.DataStreamType},
		{"data_stream_dataset", es.DataStreamDataset != def.DataStreamDataset},
		{"data_stream_namespace", es.DataStreamNamespace != def.DataStreamNamespace},
		{"data_stream_sync_fields", es.DataStreamSyncFields != def.DataStreamSyncFields},
	} {
		if f.changed {
			set = append(set, f.key)
		}
	}
	if len(set) == 0 {
		return nil
	}
	verb, them := "are", "them"
	if len(set) == 1 {
		verb, them = "is", "it"
	}
	return []Warning{{k + "data_stream",
		fmt.Sprintf("false: every event goes to index, so %s %s ignored; remove %s, or set data_stream = \"auto\" (or true) to use %s",
			strings.Join(set, ", "), verb, them, them)}}
}

// loopback reports whether addr (host:port) listens on a loopback address
// only. An empty host or an unspecified address (0.0.0.0, ::) listens on
// every interface; a host name other than localhost counts as reachable,
// as conf does not resolve names.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

package server

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/internal/testkit/pki"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/sprintf"
	"github.com/logpond/logpond/record"
)

// configWith is the default configuration changed by edit.
func configWith(edit func(c *conf.Config)) *conf.Config {
	c := conf.Default()
	if edit != nil {
		edit(&c)
	}
	return &c
}

func TestJournalOptions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        *conf.Config
		startAfter uint64
		want       journal.Options
	}{
		{"defaults, new ledger", configWith(nil), 0, journal.Options{
			SegmentBytes: 64 << 20, MaxBytes: 1 << 30, MaxGroupBytes: 2 << 20, SpareSegments: 2,
			TailBytes: 16 << 20, // 8 × max_group_bytes
		}},
		{"every key set, ledger at 41", configWith(func(c *conf.Config) {
			c.Journal.SegmentBytes, c.Journal.MaxBytes = 8<<20, 128<<20
			c.Journal.MaxGroupWait, c.Journal.MaxGroupBytes = conf.Duration(2*time.Millisecond), 4<<20
			c.Journal.SpareSegments = 0
		}), 41, journal.Options{
			SegmentBytes: 8 << 20, MaxBytes: 128 << 20, MaxGroupWait: 2 * time.Millisecond, MaxGroupBytes: 4 << 20,
			StartAfter: 41, Settled: 41,
			TailBytes: 8 << 20, // 8 × max_group_bytes, at most segment_bytes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := journalOptions(tc.cfg, tc.startAfter); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLedgerOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *conf.Config
		want ledger.Options
	}{
		// The ledger stores records as the input compressed them: it is
		// given no level of its own (TestBeatsOptions has the input's).
		{"defaults", configWith(nil), ledger.Options{SegmentBytes: 256 << 20, MaxBytes: 16 << 30, DirectIO: true}}, // one output: no read cache
		{"zstd at best", configWith(func(c *conf.Config) { c.Ledger.CompressionLevel = "best" }), ledger.Options{SegmentBytes: 256 << 20, MaxBytes: 16 << 30, DirectIO: true}},
		{"every key set", configWith(func(c *conf.Config) {
			c.Ledger.Compression, c.Ledger.CompressionLevel = conf.CompressionNone, "better" // none: the level is ignored
			c.Ledger.SegmentBytes, c.Ledger.MaxBytes = 1<<20, 4<<20
			c.Ledger.Retention, c.Ledger.DirectIO = conf.Duration(time.Hour), false
			c.Output.Elasticsearch.MaxLag = 1 << 20
			siem := conf.DefaultElasticsearch()
			siem.MaxLag = 2 << 20
			edge := conf.DefaultLumberjack()
			edge.Hosts, edge.MaxLag = []string{"central:5044"}, 3<<20
			quiet := conf.DefaultLumberjack()
			quiet.Hosts = []string{"other:5044"}
			c.Output.NamedElasticsearch = map[string]*conf.Elasticsearch{"siem": &siem}
			c.Output.Lumberjack = map[string]*conf.Lumberjack{"edge": &edge, "quiet": &quiet}
		}), ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 4 << 20, Retention: time.Hour, ReadCacheBytes: ledger.DefaultReadCacheBytes,
			MaxLag: map[string]int64{"elasticsearch": 1 << 20, "siem": 2 << 20, "edge": 3 << 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ledgerOptions(tc.cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestDeadLetterOptions checks the dead-letter file size: a quarter of
// dead_letter_max_bytes, at most 64 MiB, and never less than the largest
// event the input accepts plus 1 MiB.
func TestDeadLetterOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *conf.Config
		want dlq.Options
	}{
		{"defaults: 64 MiB files", configWith(nil), dlq.Options{MaxBytes: 1 << 30, SegmentBytes: 64 << 20}},
		{"small store: a quarter of it", configWith(func(c *conf.Config) {
			c.Output.Elasticsearch.DeadLetterMaxBytes, c.Input.Beats.MaxEventBytes = 40<<20, 1<<20
			c.Output.Elasticsearch.DeadLetterMaxAge = conf.Duration(24 * time.Hour)
		}), dlq.Options{MaxBytes: 40 << 20, SegmentBytes: 10 << 20, MaxAge: 24 * time.Hour}},
		{"large events: one fits with its fields", configWith(func(c *conf.Config) {
			c.Input.Beats.MaxEventBytes = 100 << 20
		}), dlq.Options{MaxBytes: 1 << 30, SegmentBytes: 101 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deadLetterOptions(tc.cfg, tc.cfg.Output.Elasticsearch.DeadLetterMaxBytes, tc.cfg.Output.Elasticsearch.DeadLetterMaxAge); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestElasticsearchOptions(t *testing.T) {
	compile := func(s string) *sprintf.Format {
		f, err := sprintf.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	defaults := elasticsearch.Options{
		Hosts: []string{"http://127.0.0.1:9200"},
		Index: compile("%{[@metadata][beat]}-%{[@metadata][version]}"), FallbackIndex: "logpond-fallback",
		DataStream: elasticsearch.DataStreamAuto, DataStreamType: "logs", DataStreamDataset: "generic", DataStreamNamespace: "default",
		DataStreamSyncFields: true,
		DerivedIDs:           true, Workers: 4,
		FlushBytes: 1 << 20, FlushInterval: time.Second, LedgerFlushInterval: 100 * time.Millisecond, MaxRequestBytes: 100 << 20, MaxRecordBytes: 4 << 20, Timeout: time.Minute,
		RetryInitial: 2 * time.Second, RetryMax: 64 * time.Second,
		Cursor: "elasticsearch", Name: "elasticsearch", Key: "output.elasticsearch", UnreadableAfter: time.Hour,
	}
	for _, tc := range []struct {
		name    string
		cfg     *conf.Config
		want    elasticsearch.Options
		wantErr string
	}{
		{"defaults", configWith(nil), defaults, ""},
		{"every key set", configWith(func(c *conf.Config) {
			e := &c.Output.Elasticsearch
			e.Hosts = []string{"https://127.0.0.1:9201", "https://127.0.0.1:9202"}
			e.Username, e.Password, e.APIKey = "logpond", "pw", "key"
			e.TLS.VerificationMode = "none"
			e.Index, e.FallbackIndex, e.Pipeline = "logs-%{+yyyy.MM.dd}", "fallback", "%{[@metadata][pipeline]}"
			e.DocumentID, e.Workers, e.Concurrency = "none", 8, "fixed"
			e.FlushBytes, e.FlushInterval, e.MaxRequestBytes = 2<<20, conf.Duration(time.Millisecond), 10<<20
			e.Compression, e.Timeout = "gzip", conf.Duration(time.Second)
			e.RetryInitialInterval, e.RetryMaxInterval = conf.Duration(time.Second), conf.Duration(time.Minute)
			e.DataStream, e.DataStreamType, e.DataStreamDataset, e.DataStreamNamespace = conf.DataStreamOn, "metrics", "nginx.access", "prod"
			e.DataStreamSyncFields = false
		}), elasticsearch.Options{
			Hosts:    []string{"https://127.0.0.1:9201", "https://127.0.0.1:9202"},
			Username: "logpond", Password: elasticsearch.NewSecret("pw"), APIKey: elasticsearch.NewSecret("key"),
			InsecureSkipVerify: true,
			Index:              compile("logs-%{+yyyy.MM.dd}"), FallbackIndex: "fallback", Pipeline: compile("%{[@metadata][pipeline]}"),
			DataStream: elasticsearch.DataStreamAlways, DataStreamType: "metrics", DataStreamDataset: "nginx.access", DataStreamNamespace: "prod",
			Workers: 8, FixedConcurrency: true,
			FlushBytes: 2 << 20, FlushInterval: time.Millisecond, LedgerFlushInterval: 100 * time.Millisecond, MaxRequestBytes: 10 << 20, MaxRecordBytes: 4 << 20, Gzip: true, Timeout: time.Second,
			RetryInitial: time.Second, RetryMax: time.Minute,
			Cursor: "elasticsearch", Name: "elasticsearch", Key: "output.elasticsearch", UnreadableAfter: time.Hour,
		}, ""},
		{"bad index", configWith(func(c *conf.Config) { c.Output.Elasticsearch.Index = "logs-%{[a]" }), elasticsearch.Options{}, "output.elasticsearch.index"},
		{"bad pipeline", configWith(func(c *conf.Config) { c.Output.Elasticsearch.Pipeline = "%{}" }), elasticsearch.Options{}, "output.elasticsearch.pipeline"},
		{"data_stream off", configWith(func(c *conf.Config) { c.Output.Elasticsearch.DataStream = conf.DataStreamOff }), func() elasticsearch.Options {
			o := defaults
			o.DataStream = elasticsearch.DataStreamOff
			return o
		}(), ""},
		{"bad data_stream", configWith(func(c *conf.Config) { c.Output.Elasticsearch.DataStream = "sometimes" }), elasticsearch.Options{}, "output.elasticsearch.data_stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := elasticsearchOptions(tc.cfg, legacyNamed(tc.cfg))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestBeatsOptions(t *testing.T) {
	cfg := configWith(func(c *conf.Config) {
		b := &c.Input.Beats
		b.Listen, b.MaxConnections = "127.0.0.1:0", 7
		b.MaxWindow, b.MaxEventBytes, b.MaxBatchBytes, b.MaxInflightBytes = 100, 1<<20, 8<<20, 4<<20
		b.IdleTimeout, b.BatchTimeout, b.Keepalive = conf.Duration(time.Minute), conf.Duration(2*time.Minute), conf.Duration(time.Second)
	})
	got := beatsOptions(cfg)
	limits := lumberjack.DefaultLimits()
	limits.MaxWindow, limits.MaxEventBytes, limits.MaxBatchBytes = 100, 1<<20, 8<<20
	if got.Listen != "127.0.0.1:0" || got.MaxConnections != 7 ||
		got.IdleTimeout != time.Minute || got.BatchTimeout != 2*time.Minute || got.Keepalive != time.Second ||
		got.MaxInflightBytes != 4<<20 || got.MaxRecordBytes != MaxRecordBytes(cfg) || got.Limits != limits {
		t.Errorf("got %+v", got)
	}
	if got.TLS != nil || got.Logger != nil || got.Acked != nil {
		t.Errorf("TLS, Logger and Acked are the caller's, got %+v", got)
	}
	// The input compresses records at ledger.compression_level, or not
	// at all with compression = "none".
	for _, tc := range []struct {
		codec, level string
		want         record.Compression
	}{
		{conf.CompressionZstd, "fastest", record.Zstd(record.LevelFastest)},
		{conf.CompressionZstd, "better", record.Zstd(record.LevelBetter)},
		{conf.CompressionS2, "fastest", record.S2(record.LevelFastest)},
		{conf.CompressionNone, "best", record.Compression{}},
	} {
		cfg.Ledger.Compression, cfg.Ledger.CompressionLevel = tc.codec, conf.CompressionLevel(tc.level)
		if got := beatsOptions(cfg).Compression; got != tc.want {
			t.Errorf("compression %s at %s: the input compresses at %v, want %v", tc.codec, tc.level, got, tc.want)
		}
	}
}

// TestMemoryFormulaKnowsTheReadCache: conf's memory formula counts the
// ledger's read cache at the size the server gives it.
func TestMemoryFormulaKnowsTheReadCache(t *testing.T) {
	if conf.LedgerReadCacheBytes != ledger.DefaultReadCacheBytes {
		t.Fatalf("conf.LedgerReadCacheBytes %d, ledger.DefaultReadCacheBytes %d: keep them equal", conf.LedgerReadCacheBytes, ledger.DefaultReadCacheBytes)
	}
}

// TestClientCert: an Elasticsearch output's tls.cert and tls.key are
// loaded as the client certificate; none when both are empty; a broken
// pair is an error naming the keys.
func TestClientCert(t *testing.T) {
	cert := pki.SelfSigned(t, pki.Options{CommonName: "logpond", Client: true})
	der := cert.Certificate.Raw
	certFile, keyFile := cert.WriteFiles(t, t.TempDir(), "c")

	none := configWith(nil)
	if c, err := clientCert(legacyNamed(none)); c != nil || err != nil {
		t.Errorf("without tls.cert: got %v, %v; want none", c, err)
	}
	cfg := configWith(func(c *conf.Config) {
		c.Output.Elasticsearch.TLS.Cert, c.Output.Elasticsearch.TLS.Key = certFile, keyFile
	})
	c, err := clientCert(legacyNamed(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Certificate) != 1 || !bytes.Equal(c.Certificate[0], der) {
		t.Errorf("loaded %d certificates, not the one written", len(c.Certificate))
	}
	bad := configWith(func(c *conf.Config) {
		c.Output.Elasticsearch.TLS.Cert, c.Output.Elasticsearch.TLS.Key = keyFile, certFile
	})
	if _, err := clientCert(legacyNamed(bad)); err == nil || !strings.Contains(err.Error(), "output.elasticsearch.tls.cert") {
		t.Errorf("swapped files: got %v, want an error naming output.elasticsearch.tls.cert", err)
	}
}

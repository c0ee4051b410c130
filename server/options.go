package server

import (
	"fmt"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/input"
	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/sprintf"
	"github.com/logpond/logpond/record"
)

// The functions of this file turn the configuration into each component's
// options. They are pure: no file is read and nothing is opened, so each
// mapping is tested on its own. What is not configuration (loggers, metric
// hooks, the stores and the output they connect to, files such as TLS
// certificates) is added by the caller.

// journalOptions are the journal's options for a ledger whose last LSN is
// startAfter: its LSNs continue after it (or after the journal's own last,
// whichever is larger). Logger and ObserveGroup are left to the caller.
func journalOptions(cfg *conf.Config, startAfter uint64) journal.Options {
	c := cfg.Journal
	return journal.Options{
		SegmentBytes:  int64(c.SegmentBytes),
		MaxBytes:      int64(c.MaxBytes),
		MaxGroupWait:  time.Duration(c.MaxGroupWait),
		MaxGroupBytes: int64(c.MaxGroupBytes),
		SpareSegments: c.SpareSegments,
		StartAfter:    startAfter,
		// The ledger holds every record up to its last LSN: damage to
		// their journal copies loses nothing, and must not stop logpond.
		Settled: startAfter,
		// The flusher's normal path: recent records in memory, so it
		// rarely reads the journal's files (it is woken as they fill).
		TailBytes: cfg.JournalTailBytes(),
	}
}

// ledgerOptions are the ledger's options. Covered (which LSNs the journal
// can replay) and Logger are left to the caller.
func ledgerOptions(cfg *conf.Config) ledger.Options {
	c := cfg.Ledger
	return ledger.Options{
		SegmentBytes: int64(c.SegmentBytes),
		MaxBytes:     int64(c.MaxBytes),
		Retention:    time.Duration(c.Retention),
		DirectIO:     c.DirectIO,
		// Outputs close together in the ledger share its reads: O_DIRECT
		// has no page cache to share them otherwise. (None for one
		// output: conf.Config.LedgerReadCache.)
		ReadCacheBytes: cfg.LedgerReadCache(),
		MaxLag:         maxLags(cfg),
		// The input compresses the records it builds (beatsOptions); the
		// ledger stores them as they come. What reaches it uncompressed
		// did not shrink, or has no events (aborts, voids): compressing it
		// again would only spend the flusher's CPU.
		Compression: record.Compression{},
	}
}

// maxLags maps the cursor of each output with a max_lag to it, nil when
// none has one.
func maxLags(cfg *conf.Config) map[string]int64 {
	var m map[string]int64
	for _, o := range cfg.Outputs() {
		if lag := o.MaxLagBytes(); lag > 0 {
			if m == nil {
				m = map[string]int64{}
			}
			m[o.Name] = lag
		}
	}
	return m
}

// deadLetterOptions are the options of the dead-letter store of an
// output whose dead_letter_max_bytes and dead_letter_max_age are maxBytes
// and maxAge. Logger is left to the caller.
func deadLetterOptions(cfg *conf.Config, maxBytes conf.Size, maxAge conf.Duration) dlq.Options {
	// A dead-letter file must hold the largest event the input accepts
	// (plus 1MiB for the entry's other fields); conf checked that four such
	// files fit in dead_letter_max_bytes.
	segment := max(min(int64(64<<20), int64(maxBytes)/4), int64(cfg.Input.Beats.MaxEventBytes)+1<<20)
	return dlq.Options{
		MaxBytes:     int64(maxBytes),
		SegmentBytes: segment,
		MaxAge:       time.Duration(maxAge),
	}
}

// elasticsearchOptions are the options of the Elasticsearch output o: its
// cursor is named after it. CACert (read from its tls.ca), Local,
// DeadLetters, Logger and Observer are left to the caller. It fails when
// the index or pipeline template does not compile.
func elasticsearchOptions(cfg *conf.Config, o conf.NamedOutput) (elasticsearch.Options, error) {
	c := o.Elasticsearch
	if _, ok := dataStreamModes[c.DataStream]; !ok {
		return elasticsearch.Options{}, fmt.Errorf("server: %s.data_stream: %q is not a mode: use \"auto\", true or false", o.Key, c.DataStream)
	}
	index, err := sprintf.Compile(c.Index)
	if err != nil {
		return elasticsearch.Options{}, fmt.Errorf("server: %s.index: %w", o.Key, err)
	}
	var pipeline *sprintf.Format
	if c.Pipeline != "" {
		if pipeline, err = sprintf.Compile(c.Pipeline); err != nil {
			return elasticsearch.Options{}, fmt.Errorf("server: %s.pipeline: %w", o.Key, err)
		}
	}
	return elasticsearch.Options{
		Hosts: c.Hosts, Username: c.Username, Password: elasticsearch.NewSecret(c.Password), APIKey: elasticsearch.NewSecret(c.APIKey),
		InsecureSkipVerify: c.TLS.VerificationMode == "none",
		Index:              index, FallbackIndex: c.FallbackIndex, Pipeline: pipeline,
		DataStream: dataStreamModes[c.DataStream], DataStreamSyncFields: c.DataStreamSyncFields,
		DataStreamType: c.DataStreamType, DataStreamDataset: c.DataStreamDataset, DataStreamNamespace: c.DataStreamNamespace,
		DerivedIDs: c.DocumentID == "auto",
		Workers:    c.Workers, FixedConcurrency: c.Concurrency == "fixed",
		FlushBytes: int(c.FlushBytes), FlushInterval: time.Duration(c.FlushInterval),
		LedgerFlushInterval: time.Duration(cfg.Ledger.FlushInterval),
		MaxRequestBytes:     int(c.MaxRequestBytes), MaxRecordBytes: MaxRecordBytes(cfg),
		Gzip: c.Compression == "gzip", Timeout: time.Duration(c.Timeout),
		RetryInitial: time.Duration(c.RetryInitialInterval), RetryMax: time.Duration(c.RetryMaxInterval),
		Cursor:          o.Name,
		Name:            o.Name,
		Key:             o.Key,
		UnreadableAfter: ledgerUnreadableAfter,
	}, nil
}

// dataStreamModes maps conf's data_stream values to the output's modes;
// conf refuses any other value.
var dataStreamModes = map[conf.DataStreamMode]elasticsearch.DataStreamMode{
	conf.DataStreamOff:  elasticsearch.DataStreamOff,
	conf.DataStreamAuto: elasticsearch.DataStreamAuto,
	conf.DataStreamOn:   elasticsearch.DataStreamAlways,
}

// ledgerUnreadableAfter is how long the ledger's device must have failed
// every read of one sealed segment, while reading elsewhere, before the
// output passes the bytes it will not return as damage (docs/design.md,
// §7). An hour outlasts the faults that pass by themselves (a controller
// reset, a path failover, a network block device reconnecting: seconds
// to minutes), leaves an operator alerted by LogpondStoreReadErrors time
// to act before any record is given up, and bounds how long bad sectors
// hold the whole output back; ingest goes on meanwhile.
const ledgerUnreadableAfter = time.Hour

// beatsOptions are the Beats input's options. TLS (read from the
// certificate files), Logger and Acked are left to the caller.
func beatsOptions(cfg *conf.Config) input.BeatsOptions {
	b := cfg.Input.Beats
	limits := lumberjack.DefaultLimits()
	limits.MaxWindow, limits.MaxEventBytes, limits.MaxBatchBytes = b.MaxWindow, int(b.MaxEventBytes), int64(b.MaxBatchBytes)
	return input.BeatsOptions{
		Listen: b.Listen, MaxConnections: b.MaxConnections,
		IdleTimeout: time.Duration(b.IdleTimeout), BatchTimeout: time.Duration(b.BatchTimeout), Keepalive: time.Duration(b.Keepalive),
		MaxInflightBytes: int64(b.MaxInflightBytes),
		MaxRecordBytes:   MaxRecordBytes(cfg),
		// Each record is compressed before the journal (0 with
		// compression = "none"): the journal fsyncs, the flusher copies
		// and the ledger holds a fraction of the bytes (docs/design.md,
		// "Compressed records").
		Compression: cfg.Ledger.RecordCompression(),
		Limits:      limits,
	}
}

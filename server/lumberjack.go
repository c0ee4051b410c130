package server

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/tlsfiles"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/lumberjack"
)

// lumberjackOptions are the options of the Lumberjack output o: its cursor
// is named after it, its TLS read from the files its ssl section names
// (the Source, nil without TLS, reads them again on Reload). Logger is
// left to the caller.
func lumberjackOptions(o conf.NamedOutput) (lumberjack.Options, *tlsfiles.Source, error) {
	c := o.Lumberjack
	opts := lumberjack.Options{
		Name: o.Name, Cursor: o.Name, Hosts: c.Hosts, LoadBalance: c.LoadBalance,
		Workers: c.Workers, BulkMaxSize: c.BulkMaxSize, CompressionLevel: c.CompressionLevel,
		Timeout: time.Duration(c.Timeout), TTL: time.Duration(c.TTL),
		BackoffInit: time.Duration(c.Backoff.Init), BackoffMax: time.Duration(c.Backoff.Max),
		UnreadableAfter: ledgerUnreadableAfter,
	}
	src, err := sslSource(o.Key, c.SSL)
	if err != nil {
		return lumberjack.Options{}, nil, err
	}
	if src != nil {
		opts.CurrentTLS = src.Config
	}
	return opts, src, nil
}

// sslSource reads the TLS files of an output's ssl section (Filebeat's
// ssl.* keys, shared by the Lumberjack and Kafka outputs) under key, and
// reads them again on Reload; nil when TLS is off.
func sslSource(key string, s conf.LumberjackSSL) (*tlsfiles.Source, error) {
	if !s.Enabled {
		return nil, nil
	}
	return tlsfiles.New(func() (*tls.Config, error) {
		t, err := lumberjack.TLSConfig(s.CertificateAuthorities, s.Certificate, s.Key, s.VerificationMode)
		if err != nil {
			return nil, fmt.Errorf("server: %s.ssl: %w", key, err)
		}
		return t, nil
	}, nonEmpty(append([]string{s.Certificate, s.Key}, s.CertificateAuthorities...)...)...)
}

// ljDrain is a Lumberjack output as a drain: its batches count as
// requests, its events as delivered.
type ljDrain struct{ *lumberjack.Output }

// Misconfigured is "": a Lumberjack output has nothing to check of its
// hosts beyond answering.
func (ljDrain) Misconfigured() string { return "" }

// Stats maps the output's totals onto an Elasticsearch output's.
func (d ljDrain) Stats() elasticsearch.Stats {
	s := d.Output.Stats()
	return elasticsearch.Stats{Requests: s.Batches, FailedRequests: s.FailedBatches, BytesSent: s.BytesSent,
		Delivered: s.Delivered, Resent: s.Resent, Outages: s.Outages, CursorLSN: s.CursorLSN,
		Reconnects: s.Reconnects, EventsWithoutID: s.EventsWithoutID, ClosedUnacked: s.ClosedUnacked, DeadLettered: s.DeadLettered,
		DamagedRanges: s.DamagedRanges, DamagedRecords: s.DamagedRecords, LedgerReadErrors: s.LedgerReadErrors,
		SkippedRecords: s.SkippedRecords, SkippedEvents: s.SkippedEvents, SkippedRanges: s.SkippedRanges}
}

// Gauges maps the output's state onto an Elasticsearch output's.
func (d ljDrain) Gauges() elasticsearch.Gauges {
	g := d.Output.Gauges()
	return elasticsearch.Gauges{Running: g.Running, InFlight: g.InFlight, OldestPending: g.OldestPending,
		DoneLSN: g.DoneLSN, ReadLSN: g.ReadLSN, PendingEvents: g.PendingEvents, EventsPerRecord: g.EventsPerRecord}
}

package server

import (
	"fmt"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/tlsfiles"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/kafka"
	"github.com/logpond/logpond/output/sprintf"
)

// kafkaOptions are the options of the Kafka output o: its cursor is named
// after it, its topic and key compiled, its TLS read from the files its
// ssl section names (the Source, nil without TLS, reads them again on
// Reload). Logger and DeadLetters are left to the caller.
func kafkaOptions(o conf.NamedOutput) (kafka.Options, *tlsfiles.Source, error) {
	c := o.Kafka
	topic, err := sprintf.Compile(c.Topic)
	if err != nil {
		return kafka.Options{}, nil, fmt.Errorf("server: %s.topic: %w", o.Key, err)
	}
	var key *sprintf.Format
	if c.Key != "" {
		if key, err = sprintf.Compile(c.Key); err != nil {
			return kafka.Options{}, nil, fmt.Errorf("server: %s.key: %w", o.Key, err)
		}
	}
	opts := kafka.Options{
		Name: o.Name, Cursor: o.Name, Hosts: c.Hosts, Topic: topic, FallbackTopic: c.FallbackTopic, Key: key,
		RequiredAcks: c.RequiredAcks, Compression: c.Compression, CompressionLevel: c.CompressionLevel,
		MaxMessageBytes: int(c.MaxMessageBytes), ClientID: c.ClientID,
		BulkMaxSize: c.BulkMaxSize, FlushInterval: time.Duration(c.BulkFlushFrequency),
		Timeout: time.Duration(c.Timeout), BrokerTimeout: time.Duration(c.BrokerTimeout),
		BackoffInit: time.Duration(c.Backoff.Init), BackoffMax: time.Duration(c.Backoff.Max),
		ExactlyOnce: c.ExactlyOnce, TransactionalID: c.TransactionalID,
		SASLMechanism: c.SASLMechanism(), Username: c.Username, Password: c.Password,
		UnreadableAfter: ledgerUnreadableAfter,
	}
	for _, h := range c.Headers {
		opts.Headers = append(opts.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	switch p := c.Partition; {
	case p.Random != nil:
		opts.Partitioning, opts.GroupEvents = kafka.PartitionRandom, p.Random.GroupEvents
	case p.RoundRobin != nil:
		opts.Partitioning, opts.GroupEvents = kafka.PartitionRoundRobin, p.RoundRobin.GroupEvents
	case p.Hash != nil:
		opts.Partitioning, opts.HashFields = kafka.PartitionHash, p.Hash.Hash
	}
	src, err := sslSource(o.Key, c.SSL)
	if err != nil {
		return kafka.Options{}, nil, err
	}
	if src != nil {
		opts.CurrentTLS = src.Config
	}
	return opts, src, nil
}

// kafkaDrain is a Kafka output as a drain: its batches count as requests.
type kafkaDrain struct{ *kafka.Output }

// Misconfigured is "": what a Kafka cluster refuses is said by Waiting
// (the failing batch's error) or is a dead letter.
func (kafkaDrain) Misconfigured() string { return "" }

// Stats maps the output's totals onto an Elasticsearch output's.
func (d kafkaDrain) Stats() elasticsearch.Stats {
	s := d.Output.Stats()
	return elasticsearch.Stats{Requests: s.Batches, FailedRequests: s.FailedBatches, BytesSent: s.BytesSent,
		Delivered: s.Delivered, Resent: s.Resent, Outages: s.Outages, CursorLSN: s.CursorLSN, DeadLettered: s.DeadLettered,
		DamagedRanges: s.DamagedRanges, DamagedRecords: s.DamagedRecords, LedgerReadErrors: s.LedgerReadErrors,
		SkippedRecords: s.SkippedRecords, SkippedEvents: s.SkippedEvents, SkippedRanges: s.SkippedRanges}
}

// Gauges maps the output's state onto an Elasticsearch output's.
func (d kafkaDrain) Gauges() elasticsearch.Gauges {
	g := d.Output.Gauges()
	return elasticsearch.Gauges{Running: g.Running, InFlight: g.InFlight, OldestPending: g.OldestPending,
		DoneLSN: g.DoneLSN, ReadLSN: g.ReadLSN, PendingEvents: g.PendingEvents, EventsPerRecord: g.EventsPerRecord}
}

package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are logpond's Prometheus metrics. Histograms are fed by hooks on
// the hot paths (journal groups, bulk requests); everything else is read
// from the components' own counters when /metrics is scraped, so the hot
// paths pay nothing for it.
type metrics struct {
	reg         *prometheus.Registry
	groupSize   prometheus.Histogram
	groupBytes  prometheus.Histogram
	fsync       prometheus.Histogram
	fsyncs      prometheus.Counter
	ack         prometheus.Histogram
	fileRecords prometheus.Counter // records the flusher read from the journal's files
	esRequest   *prometheus.HistogramVec
	esItems     *prometheus.CounterVec
	backlogDesc *prometheus.Desc
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.groupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "logpond_journal_group_records", Help: "Records written and fsynced together by one journal group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	m.groupBytes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "logpond_journal_group_bytes", Help: "Bytes written by one journal group commit.",
		Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
	})
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "logpond_journal_fsync_seconds", Help: "Latency of the journal's group fsync; every acknowledgement waits for one.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	m.fsyncs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_journal_fsyncs_total", Help: "Journal group fsyncs.",
	})
	m.ack = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "logpond_input_ack_seconds", Help: "Time from a batch's window to its ACK, the wait Beats clients see: reading and decoding the batch, and the journal's group fsync.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	m.fileRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_flusher_journal_file_records_total",
		Help: "Records the flusher moved to the ledger from the journal's files instead of its in-memory tail: after a restart, or when it fell more than journal.segment_bytes behind.",
	})
	m.esRequest = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "logpond_output_request_seconds", Help: "Elasticsearch bulk request latency, by HTTP status (0: no answer).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"status"})
	m.esItems = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logpond_output_items_total", Help: "Bulk items by HTTP status, outcome (done, conflict, retry, dead) and Elasticsearch error type.",
	}, []string{"status", "outcome", "reason"})
	m.reg.MustRegister(m.groupSize, m.groupBytes, m.fsync, m.fsyncs, m.ack, m.fileRecords, m.esRequest, m.esItems,
		&scraped{s: s}, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// observeGroup is the journal's ObserveGroup hook.
func (m *metrics) observeGroup(records int, bytes int64, fsync time.Duration) {
	m.groupSize.Observe(float64(records))
	m.groupBytes.Observe(float64(bytes))
	m.fsync.Observe(fsync.Seconds())
	m.fsyncs.Inc()
}

// esObserver feeds the output's measurements into the metrics.
type esObserver struct{ m *metrics }

func (o esObserver) Request(d time.Duration, status int) {
	o.m.esRequest.WithLabelValues(strconv.Itoa(status)).Observe(d.Seconds())
}

func (o esObserver) Items(status int, outcome, errType string, n int) {
	o.m.esItems.WithLabelValues(strconv.Itoa(status), outcome, errType).Add(float64(n))
}

// scraped collects, at scrape time, what the components count anyway.
type scraped struct{ s *Server }

var (
	descInputEvents      = prometheus.NewDesc("logpond_input_events_total", "Events acknowledged to Beats clients.", nil, nil)
	descInputBytes       = prometheus.NewDesc("logpond_input_bytes_total", "Event bytes acknowledged to Beats clients.", nil, nil)
	descInputBatches     = prometheus.NewDesc("logpond_input_batches_total", "Batches acknowledged to Beats clients.", nil, nil)
	descInputConns       = prometheus.NewDesc("logpond_input_connections", "Open Beats connections.", nil, nil)
	descInputViolations  = prometheus.NewDesc("logpond_input_violations_total", "Connections closed for breaking the protocol or a limit, by reason.", []string{"reason"}, nil)
	descInputInflight    = prometheus.NewDesc("logpond_input_inflight_bytes", "Event bytes read but not yet durable (max_inflight_bytes budget in use).", nil, nil)
	descInputInflightMax = prometheus.NewDesc("logpond_input_inflight_max_bytes", "The max_inflight_bytes budget.", nil, nil)
	descJournalBytes     = prometheus.NewDesc("logpond_journal_bytes", "Bytes the journal holds on disk.", nil, nil)
	descJournalLast      = prometheus.NewDesc("logpond_journal_last_lsn", "LSN of the newest acknowledged record.", nil, nil)
	descLedgerBytes      = prometheus.NewDesc("logpond_ledger_bytes", "Bytes the ledger holds on disk.", nil, nil)
	descLedgerLast       = prometheus.NewDesc("logpond_ledger_last_lsn", "LSN of the newest record in the ledger.", nil, nil)
	descCursor           = prometheus.NewDesc("logpond_ledger_cursor_lsn", "Last LSN an output has fully done, by cursor.", []string{"cursor"}, nil)
	descLag              = prometheus.NewDesc("logpond_ledger_lag_records", "Records in the ledger after a cursor (the output's backlog).", []string{"cursor"}, nil)
	descOutputRequests   = prometheus.NewDesc("logpond_output_requests_total", "Elasticsearch bulk requests sent.", nil, nil)
	descOutputBytes      = prometheus.NewDesc("logpond_output_bytes_total", "Bulk request bytes sent (before compression).", nil, nil)
	descOutputDelivered  = prometheus.NewDesc("logpond_output_events_delivered_total", "Events the output is done with: stored, already stored (409), or dead-lettered. rate() is the drain's speed.", nil, nil)
	descOutputResent     = prometheus.NewDesc("logpond_output_events_resent_total", "Events sent again from the retry queue (their items were rejected, or their request failed as a whole).", nil, nil)
	descOutputLimit      = prometheus.NewDesc("logpond_output_concurrency_limit", "Bulk requests the output may have in flight now (adapts between 1 and workers unless concurrency = \"fixed\").", nil, nil)
	descOutputInflight   = prometheus.NewDesc("logpond_output_requests_in_flight", "Bulk requests in flight now.", nil, nil)
	descOutputPace       = prometheus.NewDesc("logpond_output_pace_events_per_second", "Events/s the output paces its requests to while Elasticsearch refuses part of the work or acknowledgements are slowed; 0 while not pacing.", nil, nil)
	descOutputYielding   = prometheus.NewDesc("logpond_output_yielding", "1 while the output paces its drain down because logpond's acknowledgements to Beats clients are slower than the journal's fsyncs explain (a catch-up taking their CPU).", nil, nil)
	descOutputRetryQueue = prometheus.NewDesc("logpond_output_retry_queue_events", "Events waiting in the output's retry queue.", nil, nil)
	descOutputRetryBytes = prometheus.NewDesc("logpond_output_retry_queue_bytes", "Bytes of the events waiting in the retry queue.", nil, nil)
	descOutputRetryMax   = prometheus.NewDesc("logpond_output_retry_queue_max_bytes", "The retry queue's bound: above it the output reads no new records from the ledger.", nil, nil)
	descOutputOldest     = prometheus.NewDesc("logpond_output_oldest_pending_seconds", "Age (since logpond received it) of the oldest event the output has read and not yet done: its lag in time; 0 when none.", nil, nil)
	descDeadLetterBytes  = prometheus.NewDesc("logpond_dead_letter_bytes", "Bytes in the dead-letter store.", nil, nil)
	descBackpressure     = prometheus.NewDesc("logpond_backpressure", "1 while a stage waits, by reason: elasticsearch, dead_letters_full, ledger_full, ledger_failed (the ledger failed and is being reopened), journal_full, input_budget.", []string{"reason"}, nil)
)

func (c *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInputEvents, descInputBytes, descInputBatches, descInputConns, descInputViolations,
		descInputInflight, descInputInflightMax, descJournalBytes, descJournalLast, descLedgerBytes, descLedgerLast, descCursor, descLag,
		descOutputRequests, descOutputBytes, descOutputDelivered, descOutputResent, descOutputLimit, descOutputInflight, descOutputPace, descOutputYielding,
		descOutputRetryQueue, descOutputRetryBytes, descOutputRetryMax, descOutputOldest, descDeadLetterBytes, descBackpressure} {
		ch <- d
	}
}

func (c *scraped) Collect(ch chan<- prometheus.Metric) {
	st := c.s.snapshot()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if st.input != nil {
		in := st.input
		counter(descInputEvents, float64(in.Events))
		counter(descInputBytes, float64(in.Bytes))
		counter(descInputBatches, float64(in.Batches))
		gauge(descInputConns, float64(in.Connections))
		gauge(descInputInflight, float64(in.InflightBytes))
		gauge(descInputInflightMax, float64(in.MaxInflightBytes))
		for reason, n := range st.violations {
			counter(descInputViolations, float64(n), reason)
		}
	}
	gauge(descJournalBytes, float64(st.journalBytes))
	gauge(descJournalLast, float64(st.journalLast))
	gauge(descLedgerBytes, float64(st.ledgerBytes))
	gauge(descLedgerLast, float64(st.ledgerLast))
	for name, lsn := range st.cursors {
		gauge(descCursor, float64(lsn), name)
		gauge(descLag, float64(st.ledgerLast-min(lsn, st.ledgerLast)), name)
	}
	if st.output != nil {
		counter(descOutputRequests, float64(st.output.Requests))
		counter(descOutputBytes, float64(st.output.BytesSent))
		counter(descOutputDelivered, float64(st.output.Delivered))
		counter(descOutputResent, float64(st.output.Resent))
		g := st.outputGauges
		gauge(descOutputLimit, float64(g.ConcurrencyLimit))
		gauge(descOutputInflight, float64(g.InFlight))
		gauge(descOutputPace, g.PaceRate)
		yielding := 0.0
		if g.Yielding {
			yielding = 1
		}
		gauge(descOutputYielding, yielding)
		gauge(descOutputRetryQueue, float64(g.RetryEvents))
		gauge(descOutputRetryBytes, float64(g.RetryBytes))
		gauge(descOutputRetryMax, float64(g.RetryMaxBytes))
		oldest := 0.0
		if !g.OldestPending.IsZero() {
			oldest = max(0, time.Since(g.OldestPending).Seconds())
		}
		gauge(descOutputOldest, oldest)
		gauge(descDeadLetterBytes, float64(st.deadLetterBytes))
	}
	for _, reason := range backpressureReasons {
		v := 0.0
		if st.waiting[reason] != "" {
			v = 1
		}
		gauge(descBackpressure, v, reason)
	}
}

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/buildinfo"
	"github.com/logpond/logpond/ledger"
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

	// journalDamage counts journal damage the flusher met: acknowledged
	// records the ledger lacks that no longer verify on disk.
	journalDamage prometheus.Counter
	// journalReadErrors counts the flusher's reads of the journal's files
	// that their device failed.
	journalReadErrors prometheus.Counter
	// ledgerDamage counts damage in the middle of the open ledger segment
	// that opening the ledger repaired from the journal.
	ledgerDamage prometheus.Counter
	// ledgerReopenRefused counts the refusals to reopen the failed ledger
	// over acknowledged records in neither store.
	ledgerReopenRefused prometheus.Counter
	// compression counts the bytes appended to every ledger instance
	// opened, before and after compression.
	compression compressionTally
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
		Name: "logpond_input_ack_seconds", Help: "Time from a batch's last byte to its ACK, plus any wait for logpond while the batch was read: the wait logpond adds for Beats clients (the journal's group fsync, mostly), without the time the batch took to cross the network.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	m.fileRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_flusher_journal_file_records_total",
		Help: "Records the flusher moved to the ledger from the journal's files instead of its in-memory tail: after a restart, or when it fell further behind than the tail holds.",
	})
	m.journalDamage = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_flusher_journal_damage_total",
		Help: "Times the flusher met journal records the ledger lacks that no longer verify on disk (acknowledged records lost; records stop moving to the ledger until the loss is accepted with ledgerctl accept-loss and logpond restarted).",
	})
	m.journalReadErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_journal_read_errors_total",
		Help: "Reads of the journal's files its device failed (EIO, …) while the flusher moved records to the ledger: each retried with backoff, nothing skipped; the journal acknowledges meanwhile until it is full. Check the journal's device.",
	})
	m.ledgerDamage = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_ledger_damage_repaired_total",
		Help: "Times opening the ledger found damage in the middle of its open segment (bytes that had been synced changed: a media error) and repaired it from the journal: the segment was cut there and its records replayed. Nothing is lost; logged as an ERROR naming the segment and offset. Check the ledger device.",
	})
	m.ledgerReopenRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logpond_ledger_reopen_refused_total",
		Help: "Times logpond refused to reopen its failed ledger because records the ledger was handed after its last successful sync are no longer in the journal: acknowledged records in neither store for sure. The ledger stays closed until logpond restarts (outputs deliver nothing; the journal acknowledges until it is full); the log's ERROR names the LSNs and what to do (docs/operations.md, \"Ledger records the journal no longer holds\").",
	})
	m.esRequest = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "logpond_output_request_seconds", Help: "Elasticsearch bulk request latency, by the HTTP status Elasticsearch answered, or status=\"none\" and why nothing was answered (reason: connection_refused, timeout, connection_reset, connection_closed, dns, tls, other).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"output", "status", "reason"})
	m.esItems = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logpond_output_items_total", Help: "Events by the status Elasticsearch answered for their bulk item (\"none\": logpond dead-lettered the event without sending it, e.g. event_too_large), outcome (done, conflict, retry, dead) and Elasticsearch error type (reason). Dead letters count once written.",
	}, []string{"output", "status", "outcome", "reason"})
	bi := buildinfo.Get()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "logpond_build_info", Help: "1, labelled with the running build: version, Go version, VCS revision.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "goversion": bi.GoVersion, "revision": bi.Revision},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(m.groupSize, m.groupBytes, m.fsync, m.fsyncs, m.ack, m.fileRecords, m.journalDamage, m.journalReadErrors, m.ledgerDamage, m.ledgerReopenRefused, m.esRequest, m.esItems, buildInfo,
		&scraped{s: s}, goCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// goCollector is the Go runtime's collector with, beside the usual go_*
// series, the runtime metrics that say why an acknowledgement waited on
// a busy process: go_sched_latencies_seconds (how long goroutines stood
// runnable before they ran: a P taken by other work), the GC's
// stop-the-world pauses and cycles, and the CPU the GC and the whole
// process used (go_cpu_classes_*). docs/operations.md reads them.
func goCollector() prometheus.Collector {
	return collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/(latencies|pauses/total/gc):seconds$`)},
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/cycles/total:gc-cycles$`)},
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(total|gc/total):cpu-seconds$`)},
	))
}

// esSeries makes the usual series of the Elasticsearch output named
// output exist from the start, at zero, so that rate() and increase() see
// their first events and alerts on them never find them absent.
func (m *metrics) esSeries(output string) {
	m.esRequest.WithLabelValues(output, "200", "")
	for _, l := range [][3]string{{"201", "done", ""}, {"409", "conflict", "version_conflict_engine_exception"}, {"429", "retry", "es_rejected_execution_exception"}} {
		m.esItems.WithLabelValues(output, l[0], l[1], l[2])
	}
}

// statusLabel is the status label of an answer: the HTTP status, or
// "none" when Elasticsearch answered nothing.
func statusLabel(status int) string {
	if status == 0 {
		return "none"
	}
	return strconv.Itoa(status)
}

// requestFailure names why a request got no answer, for the reason label.
func requestFailure(err error) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		tlsRec  tls.RecordHeaderError
		tlsAl   tls.AlertError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return "other"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_closed"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &tlsRec), errors.As(err, &tlsAl), errors.As(err, &certErr),
		errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return "tls"
	}
	return "other"
}

// observeGroup is the journal's ObserveGroup hook.
func (m *metrics) observeGroup(records int, bytes int64, fsync time.Duration) {
	m.groupSize.Observe(float64(records))
	m.groupBytes.Observe(float64(bytes))
	m.fsync.Observe(fsync.Seconds())
	m.fsyncs.Inc()
}

// ledgerOpened counts what opening the ledger l repaired as damage: a
// media error in its open segment, as opposed to a torn tail, which a crash
// leaves and which is not counted. It counts l's compression from then on.
func (m *metrics) ledgerOpened(l *ledger.Ledger) {
	m.compression.opened(l)
	if r := l.Recovery(); r != nil && r.Damage {
		m.ledgerDamage.Inc()
	}
}

// esObserver feeds an Elasticsearch output's measurements into the
// metrics, labelled with the output's name.
type esObserver struct {
	m      *metrics
	output string
}

func (o esObserver) Request(d time.Duration, status int, err error) {
	reason := ""
	if status == 0 {
		reason = requestFailure(err)
	}
	o.m.esRequest.WithLabelValues(o.output, statusLabel(status), reason).Observe(d.Seconds())
}

func (o esObserver) Items(status int, outcome, errType string, n int) {
	o.m.esItems.WithLabelValues(o.output, statusLabel(status), outcome, errType).Add(float64(n))
}

// scraped collects, at scrape time, what the components count anyway.
type scraped struct{ s *Server }

var (
	descInputEvents      = prometheus.NewDesc("logpond_input_events_total", "Events acknowledged to Beats clients.", nil, nil)
	descInputBytes       = prometheus.NewDesc("logpond_input_bytes_total", "Event bytes acknowledged to Beats clients.", nil, nil)
	descInputBatches     = prometheus.NewDesc("logpond_input_batches_total", "Batches acknowledged to Beats clients.", nil, nil)
	descInputConns       = prometheus.NewDesc("logpond_input_connections", "Open Beats connections.", nil, nil)
	descInputViolations  = prometheus.NewDesc("logpond_input_violations_total", "Connections closed for breaking the protocol or a limit, by reason.", []string{"reason"}, nil)
	descInputClosed      = prometheus.NewDesc("logpond_input_connections_closed_total", "Connections that ended without a violation, by reason: idle_timeout (logpond closed it: no batch began within input.beats.idle_timeout), client_closed (the client closed it between batches).", []string{"reason"}, nil)
	descInputInflight    = prometheus.NewDesc("logpond_input_inflight_bytes", "Event bytes read but not yet durable (max_inflight_bytes budget in use).", nil, nil)
	descInputInflightMax = prometheus.NewDesc("logpond_input_inflight_max_bytes", "The max_inflight_bytes budget.", nil, nil)
	descJournalBytes     = prometheus.NewDesc("logpond_journal_bytes", "Bytes the journal holds on disk.", nil, nil)
	descJournalLast      = prometheus.NewDesc("logpond_journal_last_lsn", "LSN of the newest acknowledged record.", nil, nil)
	descLedgerBytes      = prometheus.NewDesc("logpond_ledger_bytes", "Bytes the ledger holds on disk.", nil, nil)
	descLedgerLast       = prometheus.NewDesc("logpond_ledger_last_lsn", "LSN of the newest record in the ledger.", nil, nil)
	descCursor           = prometheus.NewDesc("logpond_ledger_cursor_lsn", "Last LSN an output has fully done, by cursor.", []string{"cursor"}, nil)
	descLag              = prometheus.NewDesc("logpond_ledger_lag_records", "Records in the ledger after a cursor (the output's backlog).", []string{"cursor"}, nil)
	descOutputRequests   = prometheus.NewDesc("logpond_output_requests_total", "Elasticsearch bulk requests sent.", outputLabel, nil)
	descOutputBytes      = prometheus.NewDesc("logpond_output_bytes_total", "Bulk request bytes sent (before compression).", outputLabel, nil)
	descOutputDelivered  = prometheus.NewDesc("logpond_output_events_delivered_total", "Events the output is done with: stored, already stored (409), or dead-lettered. rate() is the drain's speed.", outputLabel, nil)
	descOutputResent     = prometheus.NewDesc("logpond_output_events_resent_total", "Events sent again from the retry queue (their items were rejected, or their request failed as a whole).", outputLabel, nil)
	descOutputLimit      = prometheus.NewDesc("logpond_output_concurrency_limit", "Bulk requests the output may have in flight now (adapts between 1 and workers unless concurrency = \"fixed\").", outputLabel, nil)
	descOutputInflight   = prometheus.NewDesc("logpond_output_requests_in_flight", "Bulk requests in flight now.", outputLabel, nil)
	descOutputOldestReq  = prometheus.NewDesc("logpond_output_oldest_request_seconds", "Age of the oldest bulk request in flight (0 when none): how long the cluster has left it unanswered.", outputLabel, nil)
	descOutputPace       = prometheus.NewDesc("logpond_output_pace_events_per_second", "Events/s the output paces its requests to while Elasticsearch refuses part of the work or acknowledgements are slowed; 0 while not pacing.", outputLabel, nil)
	descOutputYielding   = prometheus.NewDesc("logpond_output_yielding", "1 while the output paces its drain down because logpond's acknowledgements to Beats clients are slower than the journal's fsyncs explain (a catch-up taking their CPU).", outputLabel, nil)
	descOutputRetryQueue = prometheus.NewDesc("logpond_output_retry_queue_events", "Events waiting in the output's retry queue.", outputLabel, nil)
	descOutputRetryBytes = prometheus.NewDesc("logpond_output_retry_queue_bytes", "Bytes of the events waiting in the retry queue.", outputLabel, nil)
	descOutputRetryMax   = prometheus.NewDesc("logpond_output_retry_queue_max_bytes", "The retry queue's bound: above it the output reads no new records from the ledger.", outputLabel, nil)
	descOutputOldest     = prometheus.NewDesc("logpond_output_oldest_pending_seconds", "Age (since logpond received it) of the oldest event in the ledger the output has not done yet, read or not: its lag in time; 0 when none.", outputLabel, nil)
	descOutputPendEvents = prometheus.NewDesc("logpond_output_pending_events", "Events in the ledger the output has not done yet: exact for those it read, estimated (its mean events per record) for the records it has not read.", outputLabel, nil)
	descOutputPendBytes  = prometheus.NewDesc("logpond_output_pending_bytes", "Ledger bytes of the records the output has not done yet (estimated within the segment its cursor is in).", outputLabel, nil)
	descOutputPendRecs   = prometheus.NewDesc("logpond_output_pending_records", "Ledger records (client batches, or parts of them) the output has not done yet.", outputLabel, nil)
	descOutputFailed     = prometheus.NewDesc("logpond_output_requests_failed_total", "Bulk requests that failed as a whole (no answer, 5xx, 429, auth, unusable answer) and were retried.", outputLabel, nil)
	descOutputDamRanges  = prometheus.NewDesc("logpond_output_damaged_ranges_total", "Damaged ranges of the ledger the output passed: each quarantined under <ledger.dir>/quarantine and logged once as an ERROR naming it (inspect with ledgerctl verify).", outputLabel, nil)
	descOutputDamRecords = prometheus.NewDesc("logpond_output_damaged_records_total", "Ledger records lost in those damaged ranges: their events could not be trusted and were not sent.", outputLabel, nil)
	descOutputDead       = prometheus.NewDesc("logpond_output_events_dead_lettered_total", "Events written to the dead-letter store (synced); logpond_output_items_total{outcome=\"dead\"} has them by status and reason.", outputLabel, nil)
	descLedgerReadErrors = prometheus.NewDesc("logpond_ledger_read_errors_total", "Reads of the ledger its device failed (EIO, …): the output's reads, each retried with backoff and nothing skipped, and attempts to open the ledger, retried likewise. Check the ledger's device.", nil, nil)
	descDeadLetterBytes  = prometheus.NewDesc("logpond_dead_letter_bytes", "Bytes in the dead-letter store.", outputLabel, nil)
	descDeadLetterMax    = prometheus.NewDesc("logpond_dead_letter_max_bytes", "The dead-letter store's bound (the output's dead_letter_max_bytes).", outputLabel, nil)
	descDeadLetterRatio  = prometheus.NewDesc("logpond_dead_letter_fill_ratio", "logpond_dead_letter_bytes / logpond_dead_letter_max_bytes: at 1 the output stops until dead letters are purged.", outputLabel, nil)
	descJournalMax       = prometheus.NewDesc("logpond_journal_max_bytes", "The journal's bound (journal.max_bytes).", nil, nil)
	descJournalRatio     = prometheus.NewDesc("logpond_journal_fill_ratio", "logpond_journal_bytes / logpond_journal_max_bytes: near 1, acknowledgements wait for the flusher.", nil, nil)
	descLedgerMax        = prometheus.NewDesc("logpond_ledger_max_bytes", "The ledger's bound (ledger.max_bytes).", nil, nil)
	descLedgerRatio      = prometheus.NewDesc("logpond_ledger_fill_ratio", "logpond_ledger_bytes / logpond_ledger_max_bytes: at 1 the flusher waits and the journal fills.", nil, nil)
	descBackpressure     = prometheus.NewDesc("logpond_backpressure", "1 while a stage waits, by reason: elasticsearch or lumberjack (an output's destination holds it back), dead_letters_full, ledger_unreadable (the ledger's device fails the output's reads, retried), ledger_full, ledger_failed (the ledger failed, or could not be opened, and is being reopened), journal_unreadable (the journal's device fails the flusher's reads, retried), journal_full, input_budget; output names the output for the first four, and is empty for the others.", []string{"reason", "output"}, nil)
	descOutputSkipped    = prometheus.NewDesc("logpond_output_skipped_events_total", "Events retention deleted before the output sent them: the output was more than its max_lag behind while the ledger was full. Each skipped range is logged as an ERROR naming its LSNs.", outputLabel, nil)
	descOutputSkippedRec = prometheus.NewDesc("logpond_output_skipped_records_total", "Ledger records retention deleted before the output sent them (max_lag); their events are in logpond_output_skipped_events_total when known.", outputLabel, nil)
	descOutputReconnects = prometheus.NewDesc("logpond_output_reconnects_total", "Connections a Lumberjack output opened again after one closed (a failed batch, the receiver closing it, ttl); Lumberjack outputs only.", outputLabel, nil)
	descOutputNoID       = prometheus.NewDesc("logpond_output_events_without_id_total", "Events a Lumberjack output forwarded without a document id (not a JSON object, or an @metadata that is not one): the receiver derives its own, so a resend may store them twice. Lumberjack outputs only.", outputLabel, nil)
	descOutputUnacked    = prometheus.NewDesc("logpond_output_windows_closed_unacked_total", "Windows a Lumberjack output sent whole and whose receiver then closed the connection without acknowledging any of them: how a receiver refuses a window (too many events or bytes, an event it cannot take; its log says which), or a network failure. Each is sent again. Lumberjack outputs only.", outputLabel, nil)
	descOutputMisconf    = prometheus.NewDesc("logpond_output_misconfigured", "1 while the output sends nothing until its configuration changes (its hosts belong to different clusters, …): GET / says why.", outputLabel, nil)
	descLedgerReadBytes  = prometheus.NewDesc("logpond_ledger_device_read_bytes_total", "Bytes the outputs' readers read from the ledger's segment files (what the shared read cache did not hold): outputs close together in the ledger read each byte about once between them.", nil, nil)
	descOutputRouted     = prometheus.NewDesc("logpond_output_routed_events_total", "Events by where the Elasticsearch output sent them, counted once when first sent: target data_stream (the event's data stream), index (the index template), fallback_index (the template named a field the event lacks; a WARN names it) or dead_letter (dead-lettered without being sent: an invalid data stream name, not JSON, too large).", []string{"output", "target"}, nil)
	descLedgerRawBytes   = prometheus.NewDesc("logpond_ledger_raw_bytes_total", "Bytes of the records the flusher appended to the ledger since logpond started, before compression (their size as record version 1). logpond_ledger_stored_bytes_total's rate over this one's is the compression ratio over that window.", nil, nil)
	descLedgerStored     = prometheus.NewDesc("logpond_ledger_stored_bytes_total", "Bytes of the same records as the ledger stores them (compressed with ledger.compression = \"s2\" or \"zstd\"). Its rate is what fills the ledger: ledger.max_bytes divided by it is the outage, in seconds, the ledger holds (docs/operations.md, Capacity planning).", nil, nil)
	descLedgerCompRatio  = prometheus.NewDesc("logpond_ledger_compression_ratio", "Stored over raw bytes of the records appended since logpond started: the fraction of their size records take in the ledger (0.1 holds 10 times the outage uncompressed records would). 1 with ledger.compression = \"none\", and before any record. A rise means less compressible logs (already-compressed or random payloads): redo the capacity estimate.", nil, nil)
	descProcEvents       = prometheus.NewDesc("logpond_processor_events_total", "Events a processor ran on (its when matched), by output and processor (its key in the configuration, e.g. processors[0].dissect).", []string{"output", "processor"}, nil)
	descProcDropped      = prometheus.NewDesc("logpond_processor_dropped_events_total", "Events a processor dropped (drop_event): each counts as delivered.", []string{"output", "processor"}, nil)
	descProcFailed       = prometheus.NewDesc("logpond_processor_failed_events_total", "Events a processor could not process: kept and sent, marked as Filebeat marks them (error.message, log.flags) or, for grok, tagged _grokparsefailure.", []string{"output", "processor"}, nil)
	descProcSeconds      = prometheus.NewDesc("logpond_processor_seconds_total", "Time spent in a processor. Its rate over logpond_processor_events_total's is the processor's cost per event.", []string{"output", "processor"}, nil)
	descProcUnprocessed  = prometheus.NewDesc("logpond_output_unprocessable_events_total", "Events an output's processors could not run on (not a JSON object): each went to the output's dead letters.", outputLabel, nil)
	descOrphanCursor     = prometheus.NewDesc("logpond_ledger_orphan_cursor_bytes", "Ledger bytes held back by a cursor that no configured output owns (an output removed from the configuration): retention keeps them until `ledgerctl cursors delete CURSOR`.", []string{"cursor"}, nil)
)

// outputLabel names the output a series is about.
var outputLabel = []string{"output"}

func (c *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInputEvents, descInputBytes, descInputBatches, descInputConns, descInputViolations, descInputClosed,
		descInputInflight, descInputInflightMax, descJournalBytes, descJournalLast, descLedgerBytes, descLedgerLast, descCursor, descLag,
		descOutputRequests, descOutputBytes, descOutputDelivered, descOutputResent, descOutputLimit, descOutputInflight, descOutputOldestReq, descOutputPace, descOutputYielding,
		descOutputRetryQueue, descOutputRetryBytes, descOutputRetryMax, descOutputOldest, descOutputPendEvents, descOutputPendBytes,
		descOutputPendRecs, descOutputFailed, descOutputDead, descOutputDamRanges, descOutputDamRecords, descLedgerReadErrors, descDeadLetterBytes, descDeadLetterMax, descDeadLetterRatio,
		descJournalMax, descJournalRatio, descLedgerMax, descLedgerRatio, descBackpressure,
		descOutputSkipped, descOutputSkippedRec, descOutputMisconf, descOrphanCursor, descLedgerReadBytes, descOutputRouted,
		descOutputReconnects, descOutputNoID, descOutputUnacked,
		descLedgerRawBytes, descLedgerStored, descLedgerCompRatio,
		descProcEvents, descProcDropped, descProcFailed, descProcSeconds, descProcUnprocessed} {
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
		for reason, n := range in.Closed {
			counter(descInputClosed, float64(n), reason)
		}
	}
	cfg := c.s.cfg
	gauge(descJournalBytes, float64(st.journalBytes))
	gauge(descJournalMax, float64(cfg.Journal.MaxBytes))
	gauge(descJournalRatio, ratio(st.journalBytes, int64(cfg.Journal.MaxBytes)))
	gauge(descJournalLast, float64(st.journalLast))
	gauge(descLedgerBytes, float64(st.ledgerBytes))
	gauge(descLedgerMax, float64(cfg.Ledger.MaxBytes))
	gauge(descLedgerRatio, ratio(st.ledgerBytes, int64(cfg.Ledger.MaxBytes)))
	gauge(descLedgerLast, float64(st.ledgerLast))
	counter(descLedgerRawBytes, float64(st.compression.raw))
	counter(descLedgerStored, float64(st.compression.stored))
	gauge(descLedgerCompRatio, st.compression.ratio())
	readErrors := st.ledgerOpenFailures
	for _, o := range st.outputs {
		readErrors += o.stats.LedgerReadErrors
	}
	counter(descLedgerReadErrors, float64(readErrors))
	for name, lsn := range st.cursors {
		gauge(descCursor, float64(lsn), name)
		gauge(descLag, float64(st.ledgerLast-min(lsn, st.ledgerLast)), name)
	}
	if l := c.s.ledger(); l != nil {
		counter(descLedgerReadBytes, float64(l.DeviceBytesRead()))
		for _, name := range c.s.orphanCursors(st.cursors) {
			gauge(descOrphanCursor, float64(l.BytesAfter(st.cursors[name])), name)
		}
	}
	for _, o := range st.outputs {
		name, os, g := o.out.name, o.stats, o.gauges
		counter(descOutputRequests, float64(os.Requests), name)
		counter(descOutputBytes, float64(os.BytesSent), name)
		counter(descOutputDelivered, float64(os.Delivered), name)
		counter(descOutputResent, float64(os.Resent), name)
		gauge(descOutputLimit, float64(g.ConcurrencyLimit), name)
		gauge(descOutputInflight, float64(g.InFlight), name)
		gauge(descOutputOldestReq, ageSeconds(g.OldestRequest), name)
		gauge(descOutputPace, g.PaceRate, name)
		gauge(descOutputYielding, boolGauge(g.Yielding), name)
		gauge(descOutputRetryQueue, float64(g.RetryEvents), name)
		gauge(descOutputRetryBytes, float64(g.RetryBytes), name)
		gauge(descOutputRetryMax, float64(g.RetryMaxBytes), name)
		lag := c.s.outputLag(st, o)
		gauge(descOutputOldest, lag.oldestSeconds(), name)
		gauge(descOutputPendEvents, float64(lag.events), name)
		gauge(descOutputPendBytes, float64(lag.bytes), name)
		gauge(descOutputPendRecs, float64(lag.records), name)
		counter(descOutputFailed, float64(os.FailedRequests), name)
		counter(descOutputDead, float64(os.DeadLettered), name)
		counter(descOutputDamRanges, float64(os.DamagedRanges), name)
		counter(descOutputDamRecords, float64(os.DamagedRecords), name)
		counter(descOutputSkipped, float64(os.SkippedEvents), name)
		counter(descOutputSkippedRec, float64(os.SkippedRecords), name)
		gauge(descOutputMisconf, boolGauge(o.misconfigured != ""), name)
		if o.out.typ == conf.TypeLumberjack {
			counter(descOutputReconnects, float64(os.Reconnects), name)
			counter(descOutputNoID, float64(os.EventsWithoutID), name)
			counter(descOutputUnacked, float64(os.ClosedUnacked), name)
		}
		if o.out.typ == conf.TypeElasticsearch {
			for target, n := range routedTargets(os) {
				counter(descOutputRouted, float64(n), name, target)
			}
		}
		if ch := o.out.chain; ch != nil {
			for _, p := range ch.Stats() {
				counter(descProcEvents, float64(p.In), name, p.Name)
				counter(descProcDropped, float64(p.Dropped), name, p.Name)
				counter(descProcFailed, float64(p.Failed), name, p.Name)
				counter(descProcSeconds, p.Time.Seconds(), name, p.Name)
			}
			counter(descProcUnprocessed, float64(ch.Unprocessable()), name)
		}
		if max := o.out.deadLetterMaxBytes; max > 0 {
			gauge(descDeadLetterBytes, float64(o.deadLetterBytes), name)
			gauge(descDeadLetterMax, float64(max), name)
			gauge(descDeadLetterRatio, ratio(o.deadLetterBytes, max), name)
		}
		for _, reason := range outputReasons {
			if reason == o.out.typ || reason == "dead_letters_full" && o.out.deadLetterMaxBytes > 0 || reason == "ledger_unreadable" {
				gauge(descBackpressure, boolGauge(o.waiting[reason] != ""), reason, name)
			}
		}
	}
	for _, reason := range backpressureReasons {
		if slices.Contains(outputReasons, reason) {
			continue
		}
		gauge(descBackpressure, boolGauge(st.waiting[reason] != ""), reason, "")
	}
}

// boolGauge is 1 for true, 0 for false.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ratio is used/limit, 0 without a limit.
func ratio(used, limit int64) float64 {
	if limit <= 0 {
		return 0
	}
	return float64(used) / float64(limit)
}

package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/buildinfo"
)

// NodeInfo is the answer of GET / on the admin listener: which logpond
// this is and the state of each stage, in the units an operator reads
// (the same numbers as /metrics). Counters ending in _total count since
// the start; a client gets rates from two answers.
type NodeInfo struct {
	Name          string    `json:"name"` // "logpond"
	Version       string    `json:"version"`
	GoVersion     string    `json:"go_version"`
	Revision      string    `json:"revision,omitempty"`
	StreamID      string    `json:"stream_id"` // the ledger's stream id, part of every document id
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Now           time.Time `json:"now"`
	// Mode is ModeRun, or ModeDrain while logpond -drain retires this
	// instance (no Beats input; outputs send what the ledger holds).
	Mode     string    `json:"mode"`
	Ready    bool      `json:"ready"`               // what /readyz answers
	NotReady []string  `json:"not_ready,omitempty"` // why not, as /readyz says it
	Input    InputInfo `json:"input"`
	Journal  StoreInfo `json:"journal"`
	Ledger   StoreInfo `json:"ledger"`
	// Outputs are the configured outputs, by name (empty when none is
	// enabled: nothing drains the ledger).
	Outputs []OutputInfo `json:"outputs"`
	// OrphanCursors are ledger cursors no configured output owns (an
	// output removed from the configuration): each still holds the ledger
	// back until `ledgerctl cursors delete NAME` releases it.
	OrphanCursors []CursorInfo `json:"orphan_cursors,omitempty"`
}

// CursorInfo is a ledger cursor that no configured output owns.
type CursorInfo struct {
	Name      string `json:"name"`
	CursorLSN uint64 `json:"cursor_lsn"`
	// HeldBytes are the ledger bytes after the cursor, which retention
	// keeps for it.
	HeldBytes int64 `json:"held_bytes"`
}

// LSNRange is a range of ledger records, both ends included.
type LSNRange struct {
	First uint64 `json:"first_lsn"`
	Last  uint64 `json:"last_lsn"`
}

// Modes in NodeInfo: "run" (Open, Run: ingest and send) or "drain"
// (OpenDrain, Drain: send what the ledger holds, ingest nothing).
const (
	ModeRun   = "run"
	ModeDrain = "drain"
)

// Stage states in NodeInfo: "ok" (working, or idle), "waiting" (held
// back: see Waiting), "failed" (see Error), "stopped".
const (
	StateOK      = "ok"
	StateWaiting = "waiting"
	StateFailed  = "failed"
	StateStopped = "stopped"
)

// InputInfo is the Beats input's state.
type InputInfo struct {
	State            string `json:"state"`
	Waiting          string `json:"waiting,omitempty"`
	Error            string `json:"error,omitempty"`
	Listen           string `json:"listen,omitempty"`
	Connections      int64  `json:"connections"`
	EventsTotal      int64  `json:"events_total"` // acknowledged to Beats clients
	BytesTotal       int64  `json:"bytes_total"`
	BatchesTotal     int64  `json:"batches_total"`
	ViolationsTotal  int64  `json:"violations_total"` // connections closed for breaking the protocol or a limit
	InflightBytes    int64  `json:"inflight_bytes"`
	MaxInflightBytes int64  `json:"max_inflight_bytes"`
}

// StoreInfo is the journal's or the ledger's state.
type StoreInfo struct {
	State     string  `json:"state"`
	Waiting   string  `json:"waiting,omitempty"`
	Error     string  `json:"error,omitempty"`
	Bytes     int64   `json:"bytes"`
	MaxBytes  int64   `json:"max_bytes"`
	FillRatio float64 `json:"fill_ratio"`
	LastLSN   uint64  `json:"last_lsn"`
	// Compression is how the ledger stores records (nil for the journal,
	// which stores them as received).
	Compression *CompressionInfo `json:"compression,omitempty"`
}

// CompressionInfo is how the ledger stores records, and what that saved
// since logpond started (the same numbers as logpond_ledger_raw_bytes_total,
// logpond_ledger_stored_bytes_total and logpond_ledger_compression_ratio).
type CompressionInfo struct {
	Codec string `json:"codec"`           // "s2", "zstd" or "none" (ledger.compression)
	Level string `json:"level,omitempty"` // ledger.compression_level when compressed
	// RawBytesTotal counts the bytes of the records appended to the
	// ledger, uncompressed; StoredBytesTotal the same records as stored.
	RawBytesTotal    int64 `json:"raw_bytes_total"`
	StoredBytesTotal int64 `json:"stored_bytes_total"`
	// Ratio is StoredBytesTotal / RawBytesTotal: 1 with "none", and
	// before any record.
	Ratio float64 `json:"ratio"`
}

// OutputInfo is one output's state. The request and concurrency fields
// are an Elasticsearch output's; a Lumberjack output counts its batches as
// requests. Both keep dead letters.
type OutputInfo struct {
	Name                 string  `json:"name"`
	Type                 string  `json:"type"` // "elasticsearch", "lumberjack" or "kafka"
	State                string  `json:"state"`
	Waiting              string  `json:"waiting,omitempty"`
	Error                string  `json:"error,omitempty"`        // why it sends nothing until its configuration changes (hosts of two clusters, …)
	EventsDeliveredTotal int64   `json:"events_delivered_total"` // stored, already stored, or dead-lettered
	DeadLetteredTotal    int64   `json:"dead_lettered_total"`
	RetriedTotal         int64   `json:"items_retried_total"`
	RequestsTotal        int64   `json:"requests_total"`
	RequestsFailedTotal  int64   `json:"requests_failed_total"`
	BytesSentTotal       int64   `json:"bytes_sent_total"`
	PendingEvents        int64   `json:"pending_events"`
	PendingRecords       int64   `json:"pending_records"`
	PendingBytes         int64   `json:"pending_bytes"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	CursorLSN            uint64  `json:"cursor_lsn"`
	ConcurrencyLimit     int     `json:"concurrency_limit"`
	InFlight             int     `json:"requests_in_flight"`
	// OldestRequestSeconds is the age of the oldest bulk request in
	// flight (0 when none is): how long the cluster has left it
	// unanswered.
	OldestRequestSeconds float64 `json:"oldest_request_seconds"`
	PaceEventsPerSecond  float64 `json:"pace_events_per_second"`
	RetryQueueEvents     int     `json:"retry_queue_events"`
	DeadLetterBytes      int64   `json:"dead_letter_bytes"`
	DeadLetterMaxBytes   int64   `json:"dead_letter_max_bytes"`
	DeadLetterFillRatio  float64 `json:"dead_letter_fill_ratio"`
	// MaxLagBytes is the output's max_lag (0: none): past it, and with the
	// ledger full, retention may delete what the output has not sent.
	MaxLagBytes int64 `json:"max_lag_bytes,omitempty"`
	// ReconnectsTotal, EventsWithoutIDTotal and WindowsClosedUnackedTotal
	// are a Lumberjack output's (omitted for Elasticsearch): connections
	// opened again after one closed; events forwarded without a document
	// id (not a JSON object, an @metadata that is not one, or too large
	// for a receiver with the id), which a resend may store twice at the
	// receiver; and windows the receiver took whole and closed the
	// connection on without acknowledging: how a receiver refuses one.
	ReconnectsTotal           *int64 `json:"reconnects_total,omitempty"`
	EventsWithoutIDTotal      *int64 `json:"events_without_id_total,omitempty"`
	WindowsClosedUnackedTotal *int64 `json:"windows_closed_unacked_total,omitempty"`
	// SkippedEventsTotal counts the events retention deleted before this
	// output sent them (max_lag); SkippedRanges are the latest such ranges,
	// oldest first.
	SkippedEventsTotal int64      `json:"skipped_events_total"`
	SkippedRanges      []LSNRange `json:"skipped_ranges,omitempty"`
	// RoutedEventsTotal counts an Elasticsearch output's events by where
	// it sent them: data_stream, index, fallback_index, dead_letter (see
	// logpond_output_routed_events_total). Absent for other outputs.
	RoutedEventsTotal map[string]int64 `json:"routed_events_total,omitempty"`
}

// nodeInfo gathers NodeInfo from the components.
func (s *Server) nodeInfo() NodeInfo {
	st := s.snapshot()
	bi := buildinfo.Get()
	now := time.Now()
	n := NodeInfo{Name: "logpond", Version: bi.Version, GoVersion: bi.GoVersion, Revision: bi.Revision,
		Started: s.started, UptimeSeconds: now.Sub(s.started).Seconds(), Now: now, Mode: ModeRun}
	if s.draining {
		n.Mode = ModeDrain
	}
	if l := s.ledger(); l != nil {
		n.StreamID = l.StreamID()
	}
	n.NotReady = st.notReady()
	n.Ready = len(n.NotReady) == 0
	in := &n.Input
	switch {
	case st.input == nil:
		in.State = StateStopped
	case st.inputFailed != nil:
		in.State, in.Error = StateFailed, st.inputFailed.Error()
	case st.inputWaiting != "" || st.waiting["input_budget"] != "":
		in.State, in.Waiting = StateWaiting, firstOf(st.inputWaiting, st.waiting["input_budget"])
	default:
		in.State = StateOK
	}
	if st.input != nil {
		in.Listen = s.beats.Addr().String()
		in.Connections, in.EventsTotal, in.BytesTotal, in.BatchesTotal = int64(st.input.Connections), st.input.Events, st.input.Bytes, st.input.Batches
		in.InflightBytes, in.MaxInflightBytes = st.input.InflightBytes, st.input.MaxInflightBytes
		for _, v := range st.violations {
			in.ViolationsTotal += v
		}
	}
	n.Journal = storeInfo(st.journalErr, firstOf(st.waiting["journal_damaged"], st.waiting["journal_unreadable"], st.waiting["journal_full"]), st.journalBytes, int64(s.cfg.Journal.MaxBytes), st.journalLast)
	n.Ledger = storeInfo(st.ledgerErr, firstOf(st.waiting["ledger_failed"], st.waiting["ledger_unreadable"], st.waiting["ledger_full"]), st.ledgerBytes, int64(s.cfg.Ledger.MaxBytes), st.ledgerLast)
	c := st.compression
	n.Ledger.Compression = &CompressionInfo{Codec: c.codec, Level: c.level, RawBytesTotal: c.raw, StoredBytesTotal: c.stored, Ratio: c.ratio()}
	for _, o := range st.outputs {
		n.Outputs = append(n.Outputs, s.outputInfo(st, o))
	}
	if l := s.ledger(); l != nil {
		for _, name := range s.orphanCursors(st.cursors) {
			n.OrphanCursors = append(n.OrphanCursors, CursorInfo{Name: name, CursorLSN: st.cursors[name], HeldBytes: l.BytesAfter(st.cursors[name])})
		}
	}
	return n
}

// outputInfo is the OutputInfo of the output o of st.
func (s *Server) outputInfo(st state, o outputState) OutputInfo {
	os, g, lg := o.stats, o.gauges, s.outputLag(st, o)
	maxDLQ := o.out.deadLetterMaxBytes
	out := OutputInfo{Name: o.out.name, Type: o.out.typ, State: StateOK,
		EventsDeliveredTotal: os.Delivered, DeadLetteredTotal: os.DeadLettered, RetriedTotal: os.Retried,
		RequestsTotal: os.Requests, RequestsFailedTotal: os.FailedRequests, BytesSentTotal: os.BytesSent,
		PendingEvents: lg.events, PendingRecords: lg.records, PendingBytes: lg.bytes, OldestPendingSeconds: lg.oldestSeconds(),
		CursorLSN: os.CursorLSN, ConcurrencyLimit: g.ConcurrencyLimit, InFlight: g.InFlight, PaceEventsPerSecond: g.PaceRate,
		OldestRequestSeconds: ageSeconds(g.OldestRequest),
		RetryQueueEvents:     g.RetryEvents, DeadLetterBytes: o.deadLetterBytes, DeadLetterMaxBytes: maxDLQ,
		DeadLetterFillRatio: ratio(o.deadLetterBytes, maxDLQ),
		MaxLagBytes:         o.out.maxLag, SkippedEventsTotal: os.SkippedEvents}
	if o.out.typ == conf.TypeElasticsearch {
		out.RoutedEventsTotal = routedTargets(os)
	}
	if o.out.typ == conf.TypeLumberjack {
		out.ReconnectsTotal, out.EventsWithoutIDTotal, out.WindowsClosedUnackedTotal = &os.Reconnects, &os.EventsWithoutID, &os.ClosedUnacked
	}
	for _, r := range os.SkippedRanges {
		out.SkippedRanges = append(out.SkippedRanges, LSNRange{First: r[0], Last: r[1]})
	}
	switch why := o.waitingFor(); {
	case o.misconfigured != "":
		out.State, out.Error = StateFailed, o.misconfigured
	case !g.Running:
		out.State = StateStopped
	case why != "":
		out.State, out.Waiting = StateWaiting, why
	}
	return out
}

func storeInfo(failed error, waiting string, bytes, limit int64, last uint64) StoreInfo {
	si := StoreInfo{State: StateOK, Bytes: bytes, MaxBytes: limit, FillRatio: ratio(bytes, limit), LastLSN: last}
	switch {
	case failed != nil:
		si.State, si.Error = StateFailed, failed.Error()
	case waiting != "":
		si.State, si.Waiting = StateWaiting, waiting
	}
	return si
}

// firstOf returns the first non-empty string.
func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// serveNodeInfo answers GET / with NodeInfo as JSON.
func (s *Server) serveNodeInfo(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(s.nodeInfo())
}

// ageSeconds is how long ago t was, in seconds; 0 for the zero time.
func ageSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return time.Since(t).Seconds()
}

// Package elasticsearch is logpond's Elasticsearch output: it drains the
// ledger from its cursor into the bulk API (docs/design.md, §7), with
// go-elasticsearch/v8 (Elasticsearch 7.14 or later, for the client's
// product check).
//
// # Pipeline
//
// One reader goroutine reads records in LSN order and turns every event
// into a create action: index from the configured Logstash sprintf
// template (the date from the event's @timestamp, else the record's
// receive time — never the drain's clock, so a replay names the same
// index), pipeline from @metadata.pipeline or the template, and the
// source: the raw event bytes without the @metadata member, compacted onto
// one line only when it holds raw newlines. (An event with two top-level
// @metadata members is sent whole: Elasticsearch refuses the duplicate,
// and the event becomes a dead letter rather than have one of them stored.) Events are not decoded and
// re-encoded. Batches of about flush_bytes go to Options.Workers workers
// over a channel that holds one more: read-ahead, and memory, is bounded
// by about workers + 2 chunks and one request per worker, each about
// flush_bytes, plus the retry queue. Chunk and request buffers are reused;
// one that grew past flush_bytes and one record of several events
// (Options.MaxRecordBytes), for an outsized event, is left to the GC once
// used, so that a burst of such events holds no memory after it.
//
// # Data streams
//
// Options.DataStream routes events to data streams (route.go), decided per
// event so that one output serves Elastic Agents and classic Beats: in
// auto mode an event whose top-level data_stream is an object goes to the
// data stream "{type}-{dataset}-{namespace}" (a part the object lacks, or
// holds as null, from the options), any other to the index template; in
// always mode every event goes to a data stream, and one whose data_stream
// is neither an object nor null is dead-lettered. On a cluster older than
// 7.9 auto mode sends everything to the index template. A name
// Elasticsearch would refuse (type not one of logs, metrics, traces,
// synthetics; dataset or namespace empty, longer than 100 bytes, not
// lowercase, holding one of \ / * ? " < > | , # : or a space; '-' in the
// dataset) is dead-lettered at once, status 0, error type
// invalid_data_stream, never sent. A data stream event's source gains
// @timestamp (the record's receive time) when it has none or null, and
// with sync fields its data_stream object is completed, inside the
// object, with the values it was routed by. Events are counted by where
// they went (Stats.Routed*). An event that goes to the fallback index is
// logged at WARN, at most once a minute per output, naming the field of
// the index template it lacks.
//
// # Document ids
//
// With document_id = "auto" every action carries an id: the event's own
// @metadata._id (Filebeat's fingerprint processor), else
//
//	<stream id as 22 characters of URL-safe base64>-<LSN>-<position>
//
// which depends only on where the event is stored. A create that finds the
// id taken (409) was stored by an earlier attempt: success. So a restart
// that resends records after the persisted cursor writes nothing twice.
//
// # Outcomes
//
// Response items are matched to actions by position, never by their
// action key. 2xx, and 409 for an id of logpond's, are done; 400 and 404
// (the event's fault, as Logstash's DLQ codes) are written to the
// dead-letter store with their status and reason; every other item
// failure (429, 5xx, 401 and 403 such as a read-only cluster block) is
// retried alone (only the failed items): the items are copied into a retry
// queue any worker sends from, ready items before new records. An item
// refused for load (429, es_rejected_execution_exception) waits as long as
// the cluster's health says (the share of recent items it refused), never
// by its own attempts; an item refused with another error (401, 403, 5xx)
// waits its own backoff, retry_initial doubling with its attempts up to
// retry_max, and tells the controller nothing. A request refused as a whole for its
// content (400, 413) is split in halves until the event that causes it is
// isolated and dead-lettered; one that fails for any other reason (refused
// connection, timeout, 5xx, 429, auth) puts its items back with capped,
// jittered exponential backoff over the failures in a row, for ever, while
// the events wait in the ledger; during such an outage one request at a
// time probes the cluster. An event bigger than max_request_bytes is
// dead-lettered without being sent. The retry queue is bounded by
// Workers × FlushBytes: above it no new records are taken.
//
// # Dead letters
//
// A dead letter holds the event exactly as stored, the record's receive
// time, the index and id of its action, and Elasticsearch's status, error
// type and reason. It is built from the request alone (original.go): a
// request keeps, beside its body and never sent, what its body lacks of
// each event (the @metadata member and where it was, the inverse of a
// data stream event's edits, or the whole event when it was compacted) and the receive time, and these go with the items
// into the retry queue. The ledger is never read again for a dead letter:
// the way back to a record can cross damage the drain passed, and a record
// of the open segment could only be found from the segment's start. Dead
// letters are appended to the dead-letter store (output/dlq), which syncs
// them, before their events count as done.
//
// # Concurrency
//
// A controller (control.go) decides when a request may go. Adaptive (the
// default): between 1 and Workers requests in flight, one more per window
// of about one round trip while responses are clean and no slower than
// usual, ×0.9 on back pressure (a whole request failing, or more than a
// fifth of a window's items refused) or rising latency (Vector's adaptive
// request concurrency); and when the cluster refuses a large share of the
// items, requests are paced to the rate it accepts: each request waits
// until the items before it are paid for at the pace (a waiting request
// does not count as in flight); the pace is lowered towards a bit below
// what the cluster accepted while it refuses more than a few beyond its
// background share (the least share refused over the last seconds:
// refusals that stay whatever the pace are no reason to slow down), raised
// slowly near the rate its refusals began at and faster away from it while
// it refuses few, and dropped once it holds nothing back. Whole requests
// that fail lower the concurrency limit, not the pace. When the
// cluster answers, the retry queue's items wait no longer than its health
// says, also those of a request that failed as a whole. Fixed:
// Workers requests in flight, never paced.
//
// # Ledger read errors
//
// A read of the ledger its device fails (a ledger.ReadError) stops
// nothing: the reader retries the same read with backoff, skipping nothing,
// and LedgerUnreadable says why delivery waits. Only bytes of a sealed
// segment that have failed every read for Options.UnreadableAfter, while
// the device answers reads elsewhere, are passed, as damage
// (ledger.Reader.PassUnreadable; docs/design.md, §7).
//
// # Cursor
//
// The cursor moves only over a contiguous run of records whose every event
// is done (stored, or synced in the dead-letter store), and is persisted
// every flush_interval and when the output stops; the server's flusher
// lets the ledger delete what every cursor passed (retention is not an
// output's job).
package elasticsearch

// Package kafka drains a ledger into Apache Kafka, from the output's own
// cursor, as one more named output beside Elasticsearch and Lumberjack.
//
// # What a record holds
//
// The record value is the event's JSON exactly as stored: the shape
// Filebeat's output.kafka writes (libbeat's JSON codec: @timestamp,
// @metadata with beat, type and version, then the event's fields), so
// consumers of Filebeat's messages read logpond's unchanged. The event's
// id, the one the Elasticsearch output uses as _id (its @metadata._id, or
// the id derived from its ledger position, package eventid), goes in the
// record header "logpond-id", so that a consumer reading uncommitted data
// can still drop a resent event. The topic and key are format strings
// over the event, as the Elasticsearch output's index is.
//
// # Exactly once
//
// With ExactlyOnce, each batch is one Kafka transaction holding its
// records and the output's ledger position: the next event to send,
// (LSN, position), written as the metadata of an offset commit for the
// consumer group named after the transactional id (TxnOffsetCommit, the
// way Kafka Streams commits what it consumed). Both become visible to a
// read_committed consumer together, or neither does. At start, and after
// any failure whose outcome is unknown (a commit that timed out, a broker
// that went away), the output opens a new producer under the same
// transactional id, which makes Kafka finish or abort the transaction
// left open, reads the position back, and skips what Kafka already holds.
// The local cursor file only ever trails that position, so a cursor file
// lagging Kafka (a crash between a commit and the next cursor persist)
// never causes a resend. A second producer with the same transactional id
// fences the first: the first's next transaction is refused, and it
// stands down for a minute (saying so) before it opens the id again and
// reads the position back, rather than taking the id back at once.
//
// Without ExactlyOnce, the output uses Kafka's idempotent producer: at
// least once, a batch that fails as a whole is sent again, and duplicates
// carry the same logpond-id header.
//
// # Failures
//
// A record Kafka refuses for good (too large, invalid, topic not
// authorised, unknown topic when auto-creation is off, an invalid topic
// name from the topic format) goes to the output's dead letters with the
// broker's reason, and the rest of its batch is sent again without it:
// no event wedges the output. Anything else (no leader, timeouts, not
// enough replicas, coordinator moves, an unreachable cluster) is retried
// with backoff for ever while the events wait in the ledger: backpressure
// for this output alone.
package kafka

// Package lumberjack is an output that forwards the events of a ledger, from
// its own cursor, to Lumberjack v2 servers: another logpond's Beats input,
// or Logstash's beats input. Several outputs (this one, the Elasticsearch
// output) can drain one ledger, each at its own pace, each from its cursor.
//
// # What it promises
//
// At least once to the next hop: the cursor moves only over records whose
// every event a host ACKed (a logpond ACKs once the events are fsynced in
// its journal). A window that fails (the connection lost, no ACK within
// Options.Timeout) is sent again, on another host when one answers; the
// events a host ACKed before the failure (a partial ACK, as Logstash sends
// while it queues a window) are not: the output reads the ACKs itself
// (sendWindow) and credits the last sequence number one gave. Nothing is
// dropped: a
// host that never answers holds the output back (Output.Waiting says so),
// and events wait in the ledger; an event a receiver refuses goes to the
// dead letters (below). A stop, a crash or a failed window may
// make a host receive an event twice.
//
// Exactly once at the Elasticsearch at the end: every event is forwarded
// with the document id the Elasticsearch output would derive for it from
// its place in this ledger (package eventid), in @metadata._id, so the
// next logpond's Elasticsearch output (or Logstash's, with document_id set
// from it) stores a resent event under the same id, which Elasticsearch
// refuses to store twice. An event that has its own @metadata._id keeps
// it. The id is the only change: every other byte of the event, its other
// @metadata members included, travels as it was received. An event that is
// not a JSON object (or whose @metadata is not one) cannot carry an id: it
// is forwarded unchanged, logged once and counted (Stats.EventsWithoutID).
//
// Events are forwarded in ledger order within a window; windows in flight
// at once (up to Options.Workers per host) may be ACKed in any order, and a
// resent window arrives after later ones.
//
// # Limits
//
// Windows and events stay within what a default logpond receiver accepts
// (input/lumberjack.DefaultLimits), whatever BulkMaxSize says: at most
// max_window events and max_batch_bytes bytes a window, and an event that
// its id would take past max_event_bytes goes without the id, so that no
// window is refused for ever by a receiver with the defaults.
//
// # Refused events
//
// A receiver refuses a window by closing the connection once it has read
// it, acknowledging none of it: a receiver with smaller limits than a
// default logpond's, or an event it cannot take. A window refused twice in
// a row is sent in halves by the sender holding it, and what is refused
// again is halved again, until what the receiver refuses is one event
// (isolate.go); every other event of the window is forwarded meanwhile,
// and other senders go on with other windows. That event goes to the
// output's dead letters (Options.DeadLetters, synced before it counts as
// done, error type window_refused) once the receiver has ACKed another
// window since the event's window was first refused: the receiver takes
// other events, so this one is the cause. A receiver that closes every
// connection shows no such thing, and nothing is dead-lettered: its
// windows are sent again with backoff, as in an outage. Output.Waiting
// says which window is being halved; Stats counts the windows halved and
// the events dead-lettered.
//
// # Hosts
//
// With Options.LoadBalance, every host takes windows, Workers connections
// each. Without it, one host at a time takes them all until it fails, then
// another (failover). As in Filebeat's output.logstash, no host has
// precedence: the host is chosen at random at start, and after a failure
// among the others, preferring those out of their backoff; the output
// stays with a host that answers and does not return to the first one
// listed. A host that fails is tried
// again after a backoff that doubles with each failure in a row, from
// BackoffInit to BackoffMax, and starts over after an ACK.
//
// # The ledger
//
// Damaged ledger records are passed, quarantined (ledger.Quarantine) and
// counted, as the Elasticsearch output does: their events are lost, every
// other one is forwarded. A read the ledger's device fails is retried with
// backoff, skipping nothing, until it works or, after
// Options.UnreadableAfter, the bytes it will not return are passed as
// damage.
//
// # Memory
//
// At most Workers × len(Hosts) windows are in flight, as many wait to be
// sent again (failed, or refused and awaiting evidence), one more is
// queued and one is being filled: each up to BulkMaxSize events. The
// halves of a refused window share its memory.
package lumberjack

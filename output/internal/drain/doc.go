// Package drain holds what every output does with the ledger it drains
// from its own named cursor, whatever it sends to: the Elasticsearch,
// Kafka and Lumberjack outputs use it alike.
//
// What it promises:
//
//   - The cursor only passes done records. A Tracker counts the pending
//     events of every record read, in LSN order, and reports as done only
//     the prefix of records whose every event is done; an output persists
//     its cursor at no other LSN (Cursor: Commit while it runs, Final when
//     it stops).
//   - Damage is passed and quarantined, never a halt. A damaged range the
//     ledger's Reader passes is kept in the ledger's quarantine directory
//     (or, when that fails, at least logged in full), logged once as an
//     ERROR and counted; its records count done, with no event sent.
//   - Read errors are retried, never taken for damage before
//     UnreadableAfter. A read the ledger's device fails is retried with
//     backoff, skipping nothing, the episode logged once when it begins and
//     once when it ends and every failed attempt counted; only once the
//     same read (segment and offset) has failed for UnreadableAfter, with
//     no read working in between, while the device reads elsewhere, are
//     the bytes it will not return passed as damage. Progress restarts
//     that clock: an earlier failure that was read past counts for nothing.
//   - Skips are logged and counted. A range retention deleted before the
//     output read it (max_lag) is logged at ERROR and counted (package
//     skips), and its records count done.
//
// Every type here is safe for concurrent use unless its doc says
// otherwise.
package drain

// Package framelog is the recovery rule of logpond's framed logs, the
// journal and the dead-letter store: how a scan verifies a file's frames,
// and how it tells a torn tail, which recovery may cut, from damage to
// synced bytes, which it must not. Each store keeps its own on-disk format
// (journal/doc.go, output/dlq/doc.go) and describes its frames to a
// Scanner through a Format; the scan, the rule and the corruption error
// are here, once.
//
// # Frames and writes
//
// A file holds frames back to back. Each frame verifies on its own
// (lengths within the file, checksums, payload; Format.Frame) and in
// sequence (it carries the position the frame before it leads to;
// Format.Follows). Positions are the store's own numbering: the journal's
// LSNs, the dead-letter store's file offsets.
//
// Every frame also names the position at which the write holding it began
// (Frame.Write), in the same numbering, and a store syncs each write before
// it starts a write beginning at a later position. So a frame whose Write is
// greater than a position P was written after the write holding P had been
// synced: it proves that P's bytes were durable. The journal's group field
// and the dead-letter store's write field are that proof.
//
// # The rule
//
// A scan stops at the first bytes that do not verify as the frame expected,
// at offset O where position P should start. In a file the log appends to
// (Scan.Tail) they are a torn tail, which no one was told was durable and
// which recovery cuts at O, unless a later write follows: a frame after O,
// verifying on its own, whose Write is greater than P (LaterWrite). Frames
// after O with Write ≤ P belong to the write P lies in (a torn write can keep
// its later pages and lose earlier ones) and prove nothing; the search goes
// past them. When a later write follows, the bytes at O are damage: a
// *CorruptionError of Kind LaterWritten. In any other file everything that
// does not verify is damage (Kind Sealed): each file is synced whole before
// the next one begins.
//
// A reader of a file that a running store appends to may catch a write half
// copied into the page cache, with a later write already after it. It reads
// the bytes again once (Source.Reread) before it calls them damage: the
// earlier write was complete before the later one began.
//
// Damage to the last synced write of a file, when nothing was written after
// that sync, reads exactly like a torn tail and is cut as one: no format can
// tell them apart without a second copy.
package framelog

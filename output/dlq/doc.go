// Package dlq is the dead-letter store of the Elasticsearch output: events
// that Elasticsearch rejected for good (a 4xx other than 409 and 429, an
// event too large for any request, one that makes the whole request fail),
// kept with the reason until an operator has fixed the cause, re-driven them
// and purged them (docs/design.md, §1, §7).
//
// # Promise
//
// [Store.Append] returns only when its entries are durable: written and
// fdatasynced, and, when a file was created for them, with the directory
// fsynced too. The output moves its ledger cursor past a rejected event
// only after that (docs/design.md, §3, step 4), so an acknowledged event is
// either in Elasticsearch or here. Append never drops an entry: while the
// store is full it waits, and the output's cursor stops with it. After a
// failed write or sync the Store is poisoned ([ErrPoisoned]): nothing more
// is stored until it is reopened. Dead-lettering is at least once: an entry
// written by an Append that then failed (or by a process that crashed
// before its cursor moved) is stored again when the event is retried.
//
// # Directory layout
//
//	DIR/LOCK                           flock of the running Store (internal/dirlock)
//	DIR/<sequence, 20 digits>.dlq      files, oldest first: 00000000000000000001.dlq, …
//
// Sequence numbers grow by one per file and are never reused: the newest
// file is never deleted without a successor. An entry never spans files;
// Append starts the next file when a frame does not fit in the open one
// (Options.SegmentBytes).
//
// # File format
//
// All integers are little-endian. A file starts with a header:
//
//	offset  size  field
//	0       5     magic     "LPDLQ"
//	5       1     version   1
//	6       2     zero
//	8       8     sequence  the number in the file's name
//	16      4     crc       CRC-32C (Castagnoli) of bytes [0,16)
//
// Frames follow, back to back, from offset 20 to the end of the file:
//
//	offset  size  field
//	0       4     length    n, the payload bytes after this 20-byte header
//	4       8     write     file offset where the write holding this frame began
//	12      4     pcrc      CRC-32C of the payload
//	16      4     hcrc      CRC-32C of bytes [0,16) followed by the file's
//	                        sequence number (8 bytes, as in the file header)
//	20      n     payload   one entry
//
// The payload is one [Entry]; it is binary, not JSON, because an event may
// be invalid JSON:
//
//	offset  size  field
//	0       8     LSN
//	8       4     Position
//	12      8     Status (signed)
//	20      8     Received, Unix seconds (signed; years 1 to 9999)
//	28      4     Received, nanoseconds (< 10⁹)
//	32      8     Failed, Unix seconds
//	40      4     Failed, nanoseconds
//	44      ...   Stream, Index, Action, DocID, ErrType, Reason, Event:
//	              each a u32 length and that many bytes, in this order,
//	              ending exactly at the end of the payload
//
// The encoding is canonical: a payload that decodes re-encodes to the same
// bytes. hcrc lets a header be trusted before its payload is read, and makes
// the search for good frames in a damaged tail (below) cheap at every offset;
// as it covers the file's sequence number, which the frame does not store, a
// frame of another file (stale blocks of a purged file that a crash exposes)
// never checks out.
//
// # Writing
//
// Every write appends one or more whole frames at the end of the open file
// and is fdatasynced before anything else is written: the next write, the
// next file, the return of Append. A frame's write field is the offset of
// the first frame of its write (its own offset when it begins a write), so
// the frames of one write share it and a later write carries a larger one.
// A file is created with its header alone, which is fdatasynced, and the
// directory fsynced, before any frame is written to it.
//
// # Reading and recovery
//
// A reader decodes frames from offset 20. Every frame must check out
// (hcrc, length within the file, pcrc, payload) and its write field must
// equal its predecessor's (same write) or its own offset (a new write).
// The first frame that does not, at offset P, is damage, unless it is a
// torn tail: P lies in the newest file, and no good frame after P carries
// a write field greater than P. Good frames after P with a write field up to
// P belong to the write P lies in: a torn write can keep its later pages and
// lose earlier ones. A later write, by contrast, began only after the
// write holding P had been fdatasynced, so damage before it is damage to
// synced bytes. In any file but the newest, everything that does not decode
// is damage: a file is fdatasynced before the next one is created.
//
// The scan of the frames and this rule are package internal/framelog's,
// shared with the journal; to it, a frame's position is its offset and its
// write the write field.
//
// A newest file shorter than its header, or all zeros, was being created
// and holds no entry; a bad header in front of anything else is damage.
//
// [Open] cuts a torn tail: it truncates the newest file at P, fdatasyncs
// it, logs file, offset and bytes cut ([Store.Recovery]), and appends from
// P (a newest file whose creation never completed is removed instead). None
// of it was reported durable, unless a byte flipped in the last write of the
// newest file, which no log can tell from a tear: it is cut too. Damage
// does not make Open fail: the damaged file is renamed "<name>.damaged"
// (the directory fsynced), so that it is out of the store but kept for
// inspection, the entries before the damage are appended to the store
// again (with new positions), and the rest of the file is logged as lost
// ([Store.SetAsideFiles]). Open never rewrites synced bytes.
//
// [Scan] and [Reader] apply the same rule without writing: they stop at a
// torn tail without an error (it may be a write in progress in a running
// Store: when it seems to be followed by a later write they read it once
// more, since a write that a later one followed is complete by then) and
// return a *CorruptionError at damage. They take no lock, so they are safe
// while a Store runs in another process.
//
// # Space
//
// [Store.UsedBytes] is the bytes of the files. Append reserves an entry's
// frame, plus 20 bytes for a header in case it starts a file, before writing;
// it waits while that would exceed Options.MaxBytes. [Store.Purge] deletes
// whole files whose entries have all been re-driven, and Append continues.
// SegmentBytes ≤ MaxBytes/2 makes sure that deleting every sealed file frees
// room for any Append, since the open file stays.
//
// [Store.PurgeFailedBefore] deletes, oldest first, the whole files whose
// entries were all dead-lettered (Entry.Failed) at or before a time; with
// Options.MaxAge the Store does so by itself, periodically, for entries
// older than that. Both purge only whole files and stop at the first file
// holding a newer entry. Only the process holding the store's lock deletes
// files: another one asks it (logpond's admin endpoint) or takes the lock.
package dlq

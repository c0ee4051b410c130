// Package journal is logpond's write-ahead journal: the small store that
// every acknowledgement waits on (docs/design.md, §4).
//
// # Promise
//
// [Journal.Append] returns a record's LSN only after the record has been
// written and fsynced — and, when the write went into a newly created file or
// directory, after the directories holding it were fsynced too. Concurrent
// appends are gathered by one committer goroutine into groups, one
// tidwall/wal WriteBatch each; a syncer goroutine fsyncs everything written
// so far once per round and only then completes those appends, while the
// committer already writes the next group (commit.go). Each caller holds
// its own completion with an error. [Journal.Submit] queues a record without
// waiting ([Pending.Wait] does), so one caller can have several records of a
// batch in flight; records submitted one after the other keep that order.
// LSNs are assigned in commit order, contiguous, and never reused, even when
// the journal directory is emptied or replaced (the caller supplies the
// ledger's last LSN as the floor).
//
// # Directory layout
//
//	DIR/gen-<base>/00000000000000000001
//	DIR/spare-<base>                      a released segment kept for reuse
//
// The journal is a sequence of generations. Each generation is one
// tidwall/wal log in a directory named "gen-" and the LSN just before its
// first record, as 20 decimal digits (so names sort by LSN). A record's LSN
// is base + its tidwall index. Only the newest generation is written; when it
// reaches segment_bytes the committer starts the next one, whose base is the
// last LSN written. Front truncation ([Journal.Release]) deletes whole
// generations whose records are all in the ledger: nothing is ever rewritten,
// so truncation costs a rename, file truncations and an unlink, off the ack
// path and off the caller's: Release renames the segment to "releasing" and
// returns; the journal's releaser goroutine (release.go) fsyncs that rename,
// cuts the file down releaseStep bytes at a time, freeing space as it goes,
// and removes it. Freeing a whole segment at once stalls the device, and with
// it the journal's next fsync, for tens of milliseconds. A generation
// directory without its segment file, other than the newest, is a release a
// crash (or Close) interrupted; Open finishes it. What fails (Release's
// rename, a cut, a deletion) stays counted in max_bytes and is retried by
// the releaser itself, with backoff, while the rest of its work goes on.
// Up to spare_segments released segments are not cut but kept as spares,
// for new generations to overwrite (below).
// (tidwall's own TruncateFront copies the rest of a segment while holding the
// log's mutex, which would stall appends; the journal never calls it.)
//
// tidwall/wal is opened with NoSync and a segment size it never reaches, so
// each generation is exactly one segment file; the committer fsyncs
// explicitly. Only tidwall.go sees tidwall: the rest of the journal writes,
// syncs and closes the active segment through a small interface. The generation names are also the persisted high-water mark:
// the newest generation's base survives even when it holds no record.
//
// # Recycled segments
//
// A new generation whose rotation finds a spare renames it over the empty
// file tidwall created and has tidwall write into it from offset 0
// (recycle.go): no blocks are freed (no discards) and, while the writes
// stay within the file's size, an fdatasync persists no allocation. The
// spare's rename is fsynced in both directories before anything in the
// generation is acknowledged, as a new file's creation is. The cost is
// that a recycled file holds stale bytes of older generations after the
// entries written into it, so:
//
//   - a closed generation is read up to its last LSN (the next
//     generation's base) and no further;
//   - in the newest generation the stale bytes end the scan like a torn
//     tail, and recovery cuts them (below). Stale entries cannot pass for
//     records: their LSNs are older than the generation's base, so neither
//     the scan (which checks every entry's LSN against its position) nor
//     the search for a later write group (which skips LSNs not above the
//     expected one) accepts them;
//   - rotation and Close cut the closed file to its entries, so a closed
//     generation has stale bytes only after a crash, and a clean restart
//     repairs nothing.
//
// The spares have their own share of max_bytes, spare_segments ×
// segment_bytes (so max_bytes must be at least (2 + spare_segments) ×
// segment_bytes); records get the rest, which is what appends wait for.
// That share holds the spare files and the stale rest of the active file,
// which was one of them: a released segment is kept only if it is at most
// segment_bytes, and only as many as spare_segments, so they always fit,
// whether or not the journal is full.
//
// # Entry format
//
// tidwall stores each entry as a uvarint length followed by the entry. A
// journal entry is a frame around one record (package record):
//
//	offset  size  field
//	0       4     crc     CRC-32C of bytes [4,20) followed by the record's own CRC
//	4       8     lsn     the record's LSN (little-endian)
//	12      8     group   the lowest LSN not yet fsynced when this entry was written
//	20      ...   record  bytes of package record (either version: record.Verify), self-checked by their own CRC
//
// The frame CRC covers the header and, through the record's CRC, the whole
// record, without hashing the record twice. The LSN makes every entry check
// its own position; the group field lets recovery tell a torn tail from
// damage to records that were already synced (see below). When nothing is
// waiting for an fsync, group is the entry's own write group's first LSN;
// a group written while the previous one's fsync runs names the oldest
// LSN of that previous one.
//
// # Recovery
//
// Before tidwall opens the newest generation (tidwall fails on a torn length
// prefix, reads zero bytes as valid empty entries, and a recycled file's
// stale bytes as whatever they parse to), the journal scans its
// segment, a chunk at a time, and verifies every entry: length prefix
// within the file, frame CRC, expected LSN, non-decreasing group, record
// CRC. (tidwall itself then does not read it: it would read it whole;
// tidwall.go, openUnread.) At the first bad entry
// (offset P, expected LSN L) it looks for any valid entry beyond P:
//
//   - none, or only entries written before L was fsynced (group ≤ L): the
//     tail is a torn write the journal never acknowledged (L is acknowledged
//     only after an fsync that started after L's write; anything written
//     after that fsync returned says group > L). The file is cut at P and
//     fsynced, and the cut is logged exactly (file, offset, bytes, first
//     LSN cut, reason).
//   - an entry with group > L: it was written after L's fsync returned, so
//     L had been acknowledged. Open refuses with a [*CorruptionError] naming
//     file and offset.
//
// The scan and this rule are package internal/framelog's, shared with the
// dead-letter store; to it, a journal entry's position is its LSN and its
// write the group field.
//
// Damage to the last fsynced records, when nothing was written after their
// fsync returned, looks exactly like a torn tail and is cut as one: no
// format can tell them apart without a second copy. With the write of one
// round overlapping the previous round's fsync, that blind spot is the last
// two fsync rounds: damage to an acknowledged record there is cut, with the
// records after it, instead of refused.
//
// Older generations were fsynced before the next one was started; damage in
// them, before their last LSN, is reported as a [*CorruptionError] when
// they are read. That includes a file that ends, even at an entry
// boundary, before the generation's last LSN (the next generation's base):
// those records are missing. A journal that ends before the ledger (Open's
// StartAfter jump) releases its older generations at once, since its new
// generation's base is past their last records.
//
// With [Options.Settled] (the ledger's last LSN), damage to records at or
// below it loses nothing: the ledger holds them, and they are never read
// from the journal again. Open then releases the closed generations wholly
// at or below it, unread; in the generation holding Settled, damage up to
// it is set aside instead of refused: the verified entries after Settled
// are copied into a new generation named after Settled, the damaged
// generation is renamed to damaged-<base>, and it is logged at ERROR
// (salvage.go). A newest generation that merely ends before Settled in a
// torn tail (or a recycled file's stale rest) is no such damage: the tail
// is cut as above and Open continues after Settled. Damage reaching past
// Settled is refused as above.
//
// Open also verifies every closed generation holding LSNs after Settled
// (records the caller will replay), so damage there is refused at Open
// rather than met while reading. Such damage is acknowledged records the
// caller does not hold: [FindLoss] reports them, and [AcceptLoss] (the
// operator's explicit acceptance, with the journal closed) rewrites the
// damaged generations, keeping every entry that verifies and putting an
// empty void record in each lost LSN's place, so that Open succeeds and
// the LSNs stay contiguous (acceptloss.go).
//
// # Failure
//
// A failed write or fsync fails its whole group and poisons the instance:
// every later Append gets [ErrPoisoned] wrapping the cause (a round whose
// fsync had already started before a write failed is still acknowledged when
// that fsync succeeds: it is durable), because tidwall
// changes its in-memory tail before writing and never rolls back, and a
// failed fsync may have dropped the dirty pages (no retry can make them
// durable). Recovery is Close and [Journal.Reopen], which re-reads the tail
// from disk — after ENOSPC, once space is back — and cuts everything after
// the failed instance's last durable LSN: a failed fsync may leave those
// pages intact in the page cache, marked clean, so that they read back
// though they never reached the disk.
//
// # Limits
//
// max_bytes bounds the bytes on disk: Append waits (until its context ends)
// while the records' share of it is full, and a record that could never fit
// (more than max_bytes − (1 + spare_segments) × segment_bytes) is refused.
// Memory: tidwall would keep the newest generation's segment in memory;
// the journal empties that copy after every write, and opens a generation
// that holds records without tidwall reading it (tidwall.go), so it holds
// one group's buffer (about 2 × max_group_bytes), the tail cache
// (Options.TailBytes) and the queued records; reading its files (Open's
// verification, Reader) holds a chunk of framelog.ReadChunk bytes, or the
// largest record when that is larger.
package journal

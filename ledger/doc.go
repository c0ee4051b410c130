// Package ledger is logpond's large store: records moved from the journal
// by the flusher, kept in segment files written and read with O_DIRECT, and
// drained by outputs (docs/design.md, §5). The ledger never imports the
// journal: the flusher in package server moves records between them.
//
// # Promise
//
// [Ledger.Append] buffers a record; [Ledger.Sync] writes what is buffered,
// fdatasyncs the segment and, when a segment file was created since the
// last Sync, fsyncs the directory. Only when Sync returns are the records
// "in the ledger" ([Ledger.LastLSN]). Bytes that were synced are never
// written again: every write ends with zero padding to the next block
// boundary and the next write starts at that boundary. (Rewriting a
// partially filled 4 KiB block can tear on a disk with 512-byte sectors and
// destroy records that were synced and already dropped from the journal.)
//
// # Directory layout
//
//	DIR/STREAM                         stream id: a random UUID, written once
//	DIR/<first LSN, 20 digits>.seg     segments, oldest first
//	DIR/<first LSN, 20 digits>.idx     sparse index of a sealed segment (index.go)
//	DIR/cursors/<name>.cursor          an output's position (cursor.go)
//
// A record never spans segments. The newest segment is the open one; it is
// never deleted, so its name keeps the LSN high-water mark even when every
// older segment has been drained and deleted.
//
// # Segment format
//
// A segment is a sequence of writes. Each write starts on a block boundary
// (4096 bytes), holds one or more frames back to back, and is padded with
// zeros to the next boundary. A frame is
//
//	offset  size  field
//	0       4     length   record bytes that follow the header
//	4       4     crc      CRC-32C of bytes [0,4) and [8,16): the header alone
//	8       8     lsn      the record's LSN (little-endian)
//	16      ...   record   bytes of package record, self-checked by their CRC
//
// # Compression
//
// With Options.Compression, Append stores each record in package record's
// version 2 form: its events as one block of the codec the option names,
// which Filebeat-shaped events shrink to a few percent of (the events of
// one record come from one client batch, and repeat one another). Compression runs on the
// writer goroutine, the flusher, so it never delays an acknowledgement;
// a record that compression would not shrink stays version 1. The frame
// and everything about reading, damage and recovery are the same for
// both versions: a frame is judged by its header CRC and its record's
// CRC (record.Verify), never by decompressing it, so that opening a
// ledger and searching for the next valid frame after damage cost the
// same whatever the records hold. A Reader decompresses the records it
// returns; a version 2 record whose CRC checks but whose block does not
// decode to its declared events (a faulty writer: the CRC rules out
// damage on the way) is damage of that one record, passed and
// quarantined as other damage. Segments may hold both versions: the
// option applies to the records appended after it changed.
//
// # Reading and recovery
//
// Frames follow one another with consecutive LSNs. A reader that meets a
// header it cannot use (zero padding, or the torn end of a write that a
// crash cut short) skips to the next block boundary, where the next write
// began: there it must find a valid frame with exactly the next LSN, or the
// end of the file. A valid frame with any other LSN, or anything else, is
// damage: in a sealed segment a [*CorruptionError] with segment and offset.
//
// A Reader (or DirReader) told to SkipDamage passes damage in a sealed
// segment instead: it looks, byte by byte from the end of the last valid
// frame, for the next frame whose header CRC and record CRC both check and
// whose LSN is the expected one or later (up to the segment's last LSN,
// the next segment's first - 1), and reports the range in between as a
// [Damage]: its records are lost. [Ledger.Quarantine] keeps such a range's
// bytes and description in DIR/quarantine. A Reader passes damage in the
// synced records of the open segment the same way (bytes that changed on
// disk while the ledger runs), looking no further than LastLSN and where
// the last Sync left the segment: a write in progress after that is
// neither a valid frame yet nor damage.
//
// On open, the newest segment is scanned. If it ends in damage at offset P
// (expected LSN L), the tail is cut: the file is truncated at the block
// boundary after P and fsynced. Cutting is allowed only when the caller's
// Covered(L) says the journal still holds L and everything after it (then
// nothing is lost: the flusher replays it). When it does not and a later
// complete write follows the damage (synced bytes changed in the middle of
// the segment, not a torn tail), the segment is sealed as it is and a new
// open segment starts after its last valid record: readers pass the damaged
// range as in any sealed segment. Otherwise Open fails with a
// [*CorruptionError]; [SealOpenSegment], with the ledger closed, accepts
// that loss (seal.go). New writes start at that boundary, so the bytes of the
// torn write before it are never rewritten either. The open segment's
// sparse index, if a crash left one, is removed, and the first Sync after
// Open fsyncs the directory (the segment's entry may never have been).
//
// A write or fdatasync failure (ENOSPC, EIO) poisons the instance
// ([Ledger.Err]); [Ledger.Reopen] opens a fresh one after it was closed.
// Reopen also cuts records after the last synced LSN that read back intact
// (their fdatasync never succeeded, so nothing proves they are on disk),
// at the block boundary after the last synced record, again only when
// Covered says the journal holds them. In logpond it always does: the
// flusher appends only records the journal has fsynced, and releases the
// journal only up to the last LSN a Sync covered. When it does not (a
// journal that lost records some other way), the records appended after
// the last Sync were acknowledged and are in neither store for sure,
// whatever part of their write reached the file: Reopen refuses with an
// [*UnsyncedError] and changes nothing. Cutting them would lose them and
// leave LSNs the journal cannot continue after; keeping them would count
// as durable what nothing proves is. No retry helps (the journal does not
// get records back); a restart's Open treats the same bytes as after a
// crash, keeping the records that still verify and refusing over the
// rest, which [SealOpenSegment] accepts. Damage before that point follows
// the rule above, one code path for both (settleOpenDamage), with what
// the failed instance knew: its bytes were synced, and the segment's last
// record is the last LSN it synced. So Reopen seals a damaged segment
// whose records the journal no longer holds even when no later write
// follows the damage (cutting first what was written after the last
// synced record and never synced), where Open, which cannot tell such
// damage from a torn write, refuses.
//
// # Readers, cursors and retention
//
// A [Reader] seeks with the sparse index of a sealed segment (rebuilt by a
// scan when missing or damaged) or with the open segment's, which the
// writer keeps in memory (Open rebuilds it by its scan, each Sync
// publishes it up to the synced records), so that starting at any LSN
// costs about one index interval of reading, not a scan of the segment.
// It reads with large aligned reads, and never
// returns a record beyond [Ledger.LastLSN]; a caught-up Reader waits with
// [Reader.Wait].
//
// # Shared reads
//
// Several outputs read one ledger, each from its own cursor, and O_DIRECT
// has no page cache: outputs close together would each read the same
// bytes from the device. The Readers of a ledger share a read cache of
// windows of 1 MiB at multiples of 1 MiB of a segment file, keyed by the
// segment's first LSN (never reused while the ledger is open) and the
// offset, least recently used first out, within Options.ReadCacheBytes
// ([DefaultReadCacheBytes] by configuration; 0: no cache). A window holds
// only final bytes: a sealed segment's, or the open segment's up to where
// its synced records ended when the window was read (bytes after that may
// be a write in progress, or not written yet). A Reader that needs bytes of
// the open segment past a cached window's end reads the window again from
// the device. Bytes read again after a failed read, or read to judge
// damage (a frame that does not check, the search for the next valid
// frame, PassUnreadable), always come from the device, and the cached
// windows they lie in are dropped; retention drops the windows of the
// segments it deletes. [Ledger.DeviceBytesRead] counts what the device
// served; [Reader.BytesRead] what one Reader consumed, cached or not.
//
// A cursor holds the last LSN an output has fully done and is replaced
// atomically. [Ledger.Retain] deletes a sealed segment once every cursor is
// past it and it has been drained for Options.Retention; with no cursor it
// deletes nothing, and it never deletes the open segment, whose name keeps
// the LSN high-water mark. A Reader holding a deleted segment open keeps
// reading it (unlink, not truncate).
//
// Records a Reader has not read may be deleted only by max_lag (below): a
// Reader whose next record is gone stops at a [Skip] — the deleted range,
// with the events it held when the ledger counted them (it counts each
// segment's events as it writes it, and remembers the counts of the
// segments it deleted until every cursor passed them, in memory only: -1
// after a restart) — and goes on with the oldest record retained. A Reader
// started before FirstLSN stops at the Skip [from, FirstLSN-1]; a new
// cursor starts at FirstLSN-1, so its Reader skips nothing.
//
// # Limits
//
// Options.MaxBytes bounds the bytes on disk. A record that would exceed
// it makes Append delete the segments every cursor has passed, ahead of
// their retention (drained data gives way to new data); when that is not
// enough, Append refuses the record with [ErrFull] and buffers nothing. It
// never waits: the caller syncs what it appended, so that outputs can read
// and pass it, and tries again later. [Ledger.Waiting] says why the ledger
// is full.
//
// Options.MaxLag lets a cursor's records give way too, so that one output
// far behind does not stop ingest for all: when deleting drained segments
// is not enough, a full ledger deletes, oldest first and only as many as
// make room, sealed segments that only cursors further behind than their
// MaxLag ([Ledger.BytesAfter] their position) still need — never the open
// segment, never one a cursor without MaxLag, or within it, still needs.
// Each deletion is logged at ERROR with the segment, its LSN range, its
// events and the cursors that had not passed it; their outputs' Readers
// report the range as a [Skip]. Without MaxLag a full ledger refuses
// records as above.
//
// Memory: the writer's 1 MiB buffer (or one record, if larger), 1 MiB per
// Reader, the shared read cache (Options.ReadCacheBytes), and the event
// counts of deleted ranges not yet passed by every cursor (at most 4096).
// With compression, the writer also holds a compressor
// (record.CompressorMemory) and the largest compressed record, and each
// Reader that met a version 2 record a decompressor
// (record.DecompressorMemory) and the largest record it decompressed.
package ledger

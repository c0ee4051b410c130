// Package record is logpond's unit of storage: the encoding of the events of
// one client batch (or one slice of a batch too big for one record), shared by
// the journal, the ledger and the outputs. The journal and the ledger store
// the bytes produced here verbatim; neither re-encodes them.
//
// # Format, version 1
//
// All integers are little-endian. Offsets are from the start of the record.
//
//	offset  size  field
//	0       1     version       = 1
//	1       1     flags         how the record belongs to its batch (below)
//	2       2     slot          input connection slot of the batch (u16)
//	4       4     length        total record length in bytes, header and CRC included
//	8       4     count         number of events
//	12      8     received      receive time, Unix nanoseconds (int64)
//	20      ...   events        count × { u32 event length, event bytes }
//	length-4 4    crc           CRC-32C (Castagnoli) of bytes [0, length-4)
//
// An empty record (count 0) is 24 bytes long. Events are raw bytes (in
// practice one JSON object each, exactly as the client sent it); the codec
// never looks inside them.
//
// # Batches and flags
//
// A client batch is acknowledged only once all of it is durable, but its
// records are written as they are built: a batch bigger than the store's
// record limit spans several consecutive records of one connection. The
// flags say where a record stands in its batch, so that the records of a
// batch that fails before its acknowledgement never reach an output:
//
//	bit  flag   meaning
//	0    more   more records of this batch follow on the same slot
//	1    cont   this record continues a batch begun in an earlier record of the slot
//	2    abort  the batch open on this slot failed; no event, no other flag
//	3    void   stands in for a record of a failed batch; no event, no other flag
//	4–7         not defined: a record with any of them set is refused
//
// The slot names the input connection the batch arrived on (the Beats input
// numbers its connection slots from 0, lowest free first, and reuses a slot
// only after its previous connection ended). Records of other slots may sit
// between the records of one batch. A record with no flag is a whole batch,
// which is what every record written before flags were defined is (slot 0).
// A reader that does not know these flags refuses records that use them
// (as it refuses any undefined flag): stores written with them are read
// only by builds that know them.
//
// A batch is open from a record with more until its slot's next record
// without more (its last record: the batch is complete). It is void, and
// none of its events may reach an output, when instead its slot's next
// record is an abort, or a record without cont (a new batch: the
// connection ended without an abort), or when logpond restarts while it
// is open (its client never got the acknowledgement). The flusher, which
// moves records from the journal to the ledger in LSN order, holds a
// batch's records until it is resolved and writes a void record in the
// ledger for each record of a void batch, keeping its LSN, receive time
// and slot, so that LSNs stay contiguous; outputs have nothing to send
// for a record without events. The flusher's rule and its bounds are in
// docs/operations.md ("Failed batches").
//
// # Checks
//
// [Decode] accepts a record only when its length field equals the size of the
// buffer, the CRC matches, the version is known, the flags are defined and
// consistent (abort and void stand alone, on a record without events), and
// the count events exactly fill the space between header and CRC. Because the CRC
// covers every byte but itself and CRC-32C detects every single-bit error,
// any one flipped bit is reported, as is every truncation (the length field
// then disagrees with the buffer). Each kind of damage has its own sentinel
// error, carried in a [*CorruptError] with the offset where decoding stopped.
//
// # Why these choices
//
//   - The length in the header makes a record self-delimiting, so a reader of
//     a stream of records (the ledger) can tell a torn record from a short read
//     without trusting anything outside the record.
//   - The CRC is last so that an encoder can write a record in one forward
//     pass into a caller's buffer.
//   - The receive time is in the record, not taken from a clock when an output
//     drains it, so that a replay names indices exactly as the first run did.
//
// # Format, version 2: compressed events
//
// A version 2 record holds the same events as a version 1 record, stored
// as one compressed block. [Encode] and [Builder] write version 1; a
// [Compressor] turns a version 1 record into version 2 and a
// [Decompressor] reads both. Integers are little-endian as in version 1.
//
//	offset  size  field
//	0       1     version       = 2
//	1       1     flags         as in version 1
//	2       2     slot          as in version 1
//	4       4     length        total record length in bytes, header and CRC included
//	8       4     count         number of events (at least 1)
//	12      8     received      as in version 1
//	20      1     codec         1 = zstd, 2 = S2; 0 is invalid
//	21      3     reserved      zero
//	24      4     raw size      size of the block once decompressed
//	28      ...   block         compressed bytes (zstd: Zstandard frames; S2: one S2 block)
//	length-4 4    crc           CRC-32C (Castagnoli) of bytes [0, length-4)
//
// Decompressed, the block is exactly version 1's events area: count × { u32
// event length, event bytes }, raw size bytes in all. The first 20 bytes
// mean what they mean in version 1, so [SizeOf], [Peek] and [AppendVoid]
// read either version from them. A Compressor writes version 2 only when it
// makes the record smaller: a record without events (abort and void
// included), or whose events do not compress, or whose events area exceeds
// [MaxBlockBytes], stays version 1.
//
// # Checks, version 2
//
// Decompressor.Decode applies version 1's checks to the stored bytes
// (length equals the buffer, CRC, version, flags), then: the codec is
// known and the reserved bytes are zero ([ErrCodec]); the raw size is
// within the caller's limit and MaxBlockBytes ([ErrTooLarge]), checked
// before anything is allocated; count is at least 1 and count length
// prefixes fit in raw size ([ErrLayout]); the block decompresses, into a
// buffer of exactly raw size bytes, to exactly raw size bytes ([ErrBlock]);
// and the events exactly fill it ([ErrLayout]). [Verify] applies every
// check that comes before decompressing (version 1: all of them) and
// returns the record's [Header], sizes included: stores judge frames
// intact or damaged with it without the cost of decompressing, and a
// reader that decompresses finds the rest. Plain [Decode] verifies
// the length and CRC of a version 2 record, then refuses an intact one with
// [ErrCompressed] (not a *CorruptError: the record is sound), so that no
// caller takes compressed bytes for events.
//
// # Why these choices, version 2
//
//   - One block per record: the events of a record come from one client
//     batch (one host, one file), so most of each event repeats its
//     neighbours; compressed as one unit they shrink many times more than
//     compressed one by one. A record stays the unit of reading: no block
//     spans records, so a reader never needs another record to decode one.
//   - The CRC covers the stored (compressed) bytes, as in version 1: a
//     torn or damaged record is found before decompression, every single
//     flipped bit and every truncation is still reported, and the
//     journal's and ledger's damage rules hold unchanged.
//   - The raw size is in the header so that a reader refuses a block too
//     big for its limit before allocating for it, and decompresses into a
//     buffer of exactly that size, which a hostile block cannot grow.
//   - A codec byte, so that codecs can be added without a new version.
//     Two are defined: S2 (klauspost/compress/s2, a Snappy descendant)
//     compresses two to four times faster than zstd's fastest level and
//     stores somewhat more; zstd stores the least. Records of both may
//     follow each other in one store (the setting changed between runs):
//     readers look at each record's codec byte. The reserved bytes keep
//     the block 4-aligned and are zero so they can later carry codec
//     options.
//
// The constants in format.go never change for versions 1 and 2; a new
// layout gets a new version number and all are decoded.
package record

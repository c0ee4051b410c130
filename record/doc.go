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
//	1       1     flags         no flag is defined in version 1: must be 0
//	2       2     reserved      must be 0
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
// # Checks
//
// [Decode] accepts a record only when its length field equals the size of the
// buffer, the CRC matches, the version and flags are known, and the count
// events exactly fill the space between header and CRC. Because the CRC
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
// The constants in format.go never change for version 1; a new layout gets a
// new version number and both are decoded.
package record

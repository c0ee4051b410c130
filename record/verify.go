package record

import "time"

// Header is what a record's stored bytes say of it, once [Verify] has
// checked them: enough to count, route and measure a record without
// decompressing it.
type Header struct {
	// Version is the record's format version (Version or
	// VersionCompressed).
	Version uint8
	// Flags and Slot are the record's batch flags and connection slot.
	Flags Flags
	Slot  uint16
	// Count is the number of events.
	Count int
	// Stored is the record's size as stored, header and CRC included.
	Stored int
	// Raw is the size of the record's version 1 form: what it takes, or
	// would take, uncompressed. Stored/Raw is its compression ratio (1 for
	// a version 1 record).
	Raw int
	// Codec is the compression of a version 2 record's events; 0 for
	// version 1.
	Codec Codec

	received int64
}

// Received is the time logpond received the batch, or the zero time when
// the writer did not know it.
func (h Header) Received() time.Time {
	if h.received == 0 {
		return time.Time{}
	}
	return time.Unix(0, h.received)
}

// Compressed reports whether the record's events are a compressed block
// (version 2): reading them takes a [Decompressor].
func (h Header) Compressed() bool { return h.Version == VersionCompressed }

// Verify checks the record that fills b exactly, of either version,
// without decompressing anything: every check of [Decode] for version 1;
// for version 2 the checks of [Decompressor.Decode] that come before
// decompression (length, CRC, flags, codec, reserved bytes, a declared
// size within MaxBlockBytes that count events can fit). A version 2
// record that passes can still fail Decompressor.Decode if its block
// does not decompress to its declared events — which the CRC makes
// practically impossible for bytes a Compressor wrote. Stores use it to
// judge frames (intact or damaged) without the cost of decompressing.
// Every failure is a *CorruptError wrapping one of the Err… sentinels.
func Verify(b []byte) (Header, error) {
	h, raw, err := verifyStored(b, MaxBlockBytes)
	if err != nil {
		return Header{}, err
	}
	out := Header{Version: h.version, Flags: h.flags, Slot: h.slot, Count: int(h.count),
		Stored: int(h.length), Raw: int(h.length), received: h.received}
	if h.version == VersionCompressed {
		out.Codec = Codec(b[offCodec])
		out.Raw = HeaderSize + raw + TrailerSize
		return out, nil
	}
	if err := checkEvents(b[HeaderSize:len(b)-TrailerSize], h.count, func(rest int) int { return len(b) - TrailerSize - rest }); err != nil {
		return Header{}, err
	}
	return out, nil
}

// verifyStored checks the stored bytes of a record of either version:
// length and CRC, flags, and for version 2 the codec, the reserved
// bytes, and a declared raw size within limit (and MaxBlockBytes) that
// can hold count events. It returns the header and, for version 2, the
// declared raw size of the event block. Version 1's events are left to
// the caller.
func verifyStored(b []byte, limit int) (header, int, error) {
	if _, err := verify(b); err != nil {
		return header{}, 0, err
	}
	h := readHeader(b)
	if bad := h.flags.check(h.count); bad != "" {
		return header{}, 0, corrupt(offFlags, ErrFlags, "%s", bad)
	}
	if h.version != VersionCompressed {
		return h, 0, nil
	}
	if c := Codec(b[offCodec]); !c.known() {
		return header{}, 0, corrupt(offCodec, ErrCodec, "codec %d, this build reads %d (%s) and %d (%s)", uint8(c), uint8(CodecZstd), CodecZstd, uint8(CodecS2), CodecS2)
	}
	for i, v := range b[offReserved:offRawSize] {
		if v != 0 {
			return header{}, 0, corrupt(offReserved+i, ErrCodec, "reserved byte is %#02x, want 0", v)
		}
	}
	raw := le.Uint32(b[offRawSize:])
	lim := uint64(max(min(limit, MaxBlockBytes), 0))
	if uint64(raw) > lim {
		return header{}, 0, corrupt(offRawSize, ErrTooLarge, "block decompresses to %d bytes, limit is %d", raw, lim)
	}
	if h.count == 0 {
		return header{}, 0, corrupt(offCount, ErrLayout, "a compressed record holds at least one event")
	}
	if uint64(h.count)*EventOverhead > uint64(raw) {
		return header{}, 0, corrupt(offRawSize, ErrLayout, "%d events cannot fit in a block of %d bytes", h.count, raw)
	}
	return h, int(raw), nil
}

package conf

import (
	"fmt"

	"github.com/logpond/logpond/record"
)

// Values of ledger.compression.
const (
	// CompressionZstd stores each record's events as one Zstandard block
	// (record format version 2): the smallest records.
	CompressionZstd = "zstd"
	// CompressionS2 stores each record's events as one S2 block (record
	// format version 2): two to four times faster to compress than zstd,
	// somewhat larger records.
	CompressionS2 = "s2"
	// CompressionNone stores records as the input wrote them.
	CompressionNone = "none"
)

// CompressionLevel is ledger.compression_level: the name of a
// record.Level ("fastest", "default", "better", "best"), in lower case
// once decoded.
type CompressionLevel string

// UnmarshalTOML accepts a level's name, in any letter case. A number is
// refused with the names' rough zstd equivalents: other compression
// levels (Filebeat's, a Lumberjack output's) are numbers, and a number
// here would otherwise be read as a typo.
func (c *CompressionLevel) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		l, err := record.ParseLevel(v)
		if err != nil {
			return fmt.Errorf("%q is not a level: use \"fastest\", \"default\", \"better\" or \"best\"", shorten(v))
		}
		*c = CompressionLevel(l.String())
		return nil
	case int64:
		return fmt.Errorf("%d: levels are names, not numbers: use \"fastest\" (about zstd level 1), \"default\" (3), \"better\" (7) or \"best\" (11); with s2, its fast, better and best encoders", v)
	}
	return fmt.Errorf("is %s: use \"fastest\", \"default\", \"better\" or \"best\"", aTOMLType(v))
}

// RecordCompression is how the input compresses records (the codec and
// level): the zero record.Compression (records stored as given) with
// compression = "none", or with a codec or level that does not parse,
// which Load refuses.
func (l Ledger) RecordCompression() record.Compression {
	lv, err := record.ParseLevel(string(l.CompressionLevel))
	if err != nil {
		return record.Compression{}
	}
	switch l.Compression {
	case CompressionZstd:
		return record.Zstd(lv)
	case CompressionS2:
		return record.S2(lv)
	}
	return record.Compression{}
}

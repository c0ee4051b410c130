package conf

import (
	"strings"
	"testing"

	"github.com/logpond/logpond/record"
)

// TestLedgerCompression: the [ledger] compression keys decode to the codec
// and level the input is given, any letter case of a level's name
// included; "none" gives no compression whatever the level says.
func TestLedgerCompression(t *testing.T) {
	zstd := record.Zstd
	for _, tc := range []struct {
		toml      string
		wantLevel record.Compression
		wantName  CompressionLevel
	}{
		{"", record.Compression{Codec: defaultCodec, Level: record.LevelFastest}, "fastest"},
		{"[ledger]\ncompression = \"zstd\"\n", zstd(record.LevelFastest), "fastest"},
		{"[ledger]\ncompression = \"zstd\"\ncompression_level = \"default\"\n", zstd(record.LevelDefault), "default"},
		{"[ledger]\ncompression = \"zstd\"\ncompression_level = \"Better\"\n", zstd(record.LevelBetter), "better"},
		{"[ledger]\ncompression = \"zstd\"\ncompression_level = \"BEST\"\n", zstd(record.LevelBest), "best"},
		{"[ledger]\ncompression = \"s2\"\n", record.S2(record.LevelFastest), "fastest"},
		{"[ledger]\ncompression = \"s2\"\ncompression_level = \"default\"\n", record.S2(record.LevelDefault), "default"},
		{"[ledger]\ncompression = \"none\"\n", record.Compression{}, "fastest"},
		{"[ledger]\ncompression = \"none\"\ncompression_level = \"best\"\n", record.Compression{}, "best"},
	} {
		cfg, err := Parse("x.toml", []byte(tc.toml))
		if err != nil {
			t.Errorf("%q: %v", tc.toml, err)
			continue
		}
		if got := cfg.Ledger.RecordCompression(); got != tc.wantLevel {
			t.Errorf("%q: level %v, want %v", tc.toml, got, tc.wantLevel)
		}
		if cfg.Ledger.CompressionLevel != tc.wantName {
			t.Errorf("%q: compression_level decoded to %q, want %q", tc.toml, cfg.Ledger.CompressionLevel, tc.wantName)
		}
	}
}

// TestLedgerCompressionRefused: values Load refuses, each naming its key
// and the values it takes, also when a Config is built in code (validate).
func TestLedgerCompressionRefused(t *testing.T) {
	for _, tc := range []struct{ toml, key, want string }{
		{"[ledger]\ncompression = \"lz4\"\n", "ledger.compression", `"lz4": use s2`},
		{"[ledger]\ncompression = true\n", "ledger.compression", "want a string"},
		{"[ledger]\ncompression_level = \"fast\"\n", "ledger.compression_level", `"fast" is not a level: use "fastest", "default", "better" or "best"`},
		{"[ledger]\ncompression_level = 19\n", "ledger.compression_level", "19: levels are names, not numbers"},
		{"[ledger]\ncompression_level = 1.5\n", "ledger.compression_level", `is a float: use "fastest"`},
	} {
		_, err := Parse("x.toml", []byte(tc.toml))
		if err == nil || !containsAll(err.Error(), tc.key, tc.want) {
			t.Errorf("%q: error %v, want one naming %s and saying %q", tc.toml, err, tc.key, tc.want)
		}
	}
	c := Default()
	c.Ledger.CompressionLevel = "max"
	ps := c.validate()
	if len(ps) != 1 || ps[0].Key != "ledger.compression_level" || !containsAll(ps[0].Msg, "fastest, default, better or best") {
		t.Errorf("validate of level \"max\": %v", ps)
	}
	if got := c.Ledger.RecordCompression(); got.Enabled() {
		t.Errorf("level of \"max\" is %v, want 0 (refused)", got)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// defaultCodec is the codec the default configuration compresses with.
var defaultCodec = map[string]record.Codec{CompressionZstd: record.CodecZstd, CompressionS2: record.CodecS2}[Default().Ledger.Compression]

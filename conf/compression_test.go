package conf

import (
	"strings"
	"testing"

	"github.com/logpond/logpond/record"
)

// TestLedgerCompression: the [ledger] compression keys decode to the level
// the ledger is given, any letter case of a level's name included; "none"
// gives level 0 whatever the level says.
func TestLedgerCompression(t *testing.T) {
	for _, tc := range []struct {
		toml      string
		wantLevel record.Level
		wantName  CompressionLevel
	}{
		{"", record.LevelFastest, "fastest"},
		{"[ledger]\ncompression = \"zstd\"\n", record.LevelFastest, "fastest"},
		{"[ledger]\ncompression_level = \"default\"\n", record.LevelDefault, "default"},
		{"[ledger]\ncompression_level = \"Better\"\n", record.LevelBetter, "better"},
		{"[ledger]\ncompression = \"zstd\"\ncompression_level = \"BEST\"\n", record.LevelBest, "best"},
		{"[ledger]\ncompression = \"none\"\n", 0, "fastest"},
		{"[ledger]\ncompression = \"none\"\ncompression_level = \"best\"\n", 0, "best"},
	} {
		cfg, err := Parse("x.toml", []byte(tc.toml))
		if err != nil {
			t.Errorf("%q: %v", tc.toml, err)
			continue
		}
		if got := cfg.Ledger.Level(); got != tc.wantLevel {
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
		{"[ledger]\ncompression = \"lz4\"\n", "ledger.compression", `"lz4": use zstd`},
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
	if got := c.Ledger.Level(); got != 0 {
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

package server

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/conftest"
	"github.com/logpond/logpond/journal"
)

// TestConfigChecks: the broken files whose problem only the checks of how
// components work together find are refused with them, naming the key and
// saying what conf's shared test data expects; without them conf alone
// lets each pass.
func TestConfigChecks(t *testing.T) {
	n := 0
	for _, tc := range conftest.Mistakes {
		if !tc.Whole() {
			continue
		}
		n++
		t.Run(tc.Name, func(t *testing.T) {
			if _, err := conf.Parse("x.toml", []byte(tc.TOML)); err != nil {
				t.Errorf("conf alone refused it (%v): the check belongs to conf, not to server", err)
			}
			_, err := conf.Parse("x.toml", []byte(tc.TOML), ConfigChecks)
			var ke *conf.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v, want a *conf.KeyError", err)
			}
			if ke.Key != tc.Key || !strings.Contains(ke.Msg, tc.Want) {
				t.Errorf("error %v, want key %s saying %q", err, tc.Key, tc.Want)
			}
			if tc.Line != 0 && ke.Line != tc.Line {
				t.Errorf("error points at line %d, want %d", ke.Line, tc.Line)
			}
		})
	}
	if n == 0 {
		t.Fatal("no mistake for the server's checks")
	}
}

// TestOpenRefusesWhatTheChecksRefuse: a configuration built in code, not
// loaded, gets the same checks from Open.
func TestOpenRefusesWhatTheChecksRefuse(t *testing.T) {
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = t.TempDir()+"/j", t.TempDir()+"/l"
	cfg.Output.Elasticsearch.Index = "logs-%{[host][name]"
	if _, err := Open(&cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "output.elasticsearch.index") {
		t.Fatalf("Open with an unclosed index template: %v, want the index named", err)
	}
}

// TestMaxRecordBytes: twice a journal group, but never more than the
// journal can ever admit.
func TestMaxRecordBytes(t *testing.T) {
	c := conf.Default()
	if got, want := MaxRecordBytes(&c), int(2*c.Journal.MaxGroupBytes); got != want {
		t.Errorf("defaults: %d, want 2 × max_group_bytes = %d", got, want)
	}
	c.Journal.SegmentBytes, c.Journal.MaxBytes, c.Journal.MaxGroupBytes = 8<<20, 16<<20, 8<<20
	c.Journal.SpareSegments = 0
	if got, want := MaxRecordBytes(&c), int(journal.Options{MaxBytes: 16 << 20, SegmentBytes: 8 << 20}.MaxRecordBytes()); got != want || got >= 8<<20 {
		t.Errorf("max_bytes = 2 × segment_bytes = 2 × max_group_bytes: %d, want %d", got, want)
	}
}

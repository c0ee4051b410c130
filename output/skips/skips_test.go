package skips

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
)

// TestTally: every range is logged at ERROR with its LSNs, records count
// always, events only where the ledger knew them, and only the latest
// ranges are kept.
func TestTally(t *testing.T) {
	var log syncbuf.Buffer
	l := slog.New(slog.NewTextHandler(&log, nil))
	var tl Tally
	for i := range uint64(keep + 2) {
		events := int64(5)
		if i == 0 {
			events = -1 // deleted before this start: unknown
		}
		tl.Pass(l, &ledger.Skip{FirstLSN: 10*i + 1, LastLSN: 10*i + 4, Events: events})
	}
	if got, want := tl.Records(), int64(4*(keep+2)); got != want {
		t.Errorf("records %d, want %d", got, want)
	}
	if got, want := tl.Events(), int64(5*(keep+1)); got != want {
		t.Errorf("events %d, want %d (the unknown count adds nothing)", got, want)
	}
	r := tl.Ranges()
	if len(r) != keep || r[0] != [2]uint64{21, 24} || r[keep-1] != [2]uint64{111, 114} {
		t.Errorf("ranges %v: want the latest %d, oldest first", r, keep)
	}
	lines := slices.DeleteFunc(strings.Split(log.String(), "\n"), func(s string) bool { return s == "" })
	if len(lines) != keep+2 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], "first_lsn=1 last_lsn=4") || !strings.Contains(lines[0], "unknown") {
		t.Errorf("log:\n%s", log.String())
	}
}

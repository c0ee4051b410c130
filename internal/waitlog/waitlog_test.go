package waitlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestEpisodeLogsOnceOnEntryAndOnceOnExit drives an episode through a
// sequence of enters and leaves and checks which calls log, and at which
// level.
func TestEpisodeLogsOnceOnEntryAndOnceOnExit(t *testing.T) {
	type step struct {
		enter  bool   // Enter, else Leave
		want   bool   // the call's result
		logged string // the line it logs ("" for none)
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"leave while not waiting logs nothing", []step{
			{false, false, ""},
		}},
		{"one episode", []step{
			{true, true, "level=WARN msg=full n=1"},
			{false, true, "level=INFO msg=again n=2"},
		}},
		{"repeated enters log once", []step{
			{true, true, "level=WARN msg=full n=1"},
			{true, false, ""},
			{true, false, ""},
			{false, true, "level=INFO msg=again n=2"},
			{false, false, ""},
		}},
		{"a second episode logs again", []step{
			{true, true, "level=WARN msg=full n=1"},
			{false, true, "level=INFO msg=again n=2"},
			{true, true, "level=WARN msg=full n=1"},
			{false, true, "level=INFO msg=again n=2"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))
			var e Episode
			for i, s := range tc.steps {
				buf.Reset()
				var got bool
				if s.enter {
					got = e.Enter(log, slog.LevelWarn, "full", "n", 1)
				} else {
					got = e.Leave(log, "again", "n", 2)
				}
				if got != s.want {
					t.Errorf("step %d: got %v, want %v", i, got, s.want)
				}
				if line := strings.TrimSpace(buf.String()); line != s.logged {
					t.Errorf("step %d: logged %q, want %q", i, line, s.logged)
				}
				if e.Active() != s.enter {
					t.Errorf("step %d: Active() = %v after enter=%v", i, e.Active(), s.enter)
				}
			}
		})
	}
}

// TestEpisodeTimes checks Began and Lasted follow the episode going on.
func TestEpisodeTimes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	var e Episode
	if e.Active() || !e.Began().IsZero() || e.Lasted() != 0 {
		t.Fatalf("zero Episode: Active %v, Began %v, Lasted %v", e.Active(), e.Began(), e.Lasted())
	}
	e.Enter(log, slog.LevelWarn, "full")
	began := e.Began()
	if !e.Active() || began.IsZero() || e.Lasted() < 0 {
		t.Fatalf("after Enter: Active %v, Began %v, Lasted %v", e.Active(), began, e.Lasted())
	}
	e.Enter(log, slog.LevelWarn, "full")
	if e.Began() != began {
		t.Errorf("a repeated Enter moved Began from %v to %v", began, e.Began())
	}
	e.Leave(log, "again")
	if e.Active() || !e.Began().IsZero() || e.Lasted() != 0 {
		t.Errorf("after Leave: Active %v, Began %v, Lasted %v", e.Active(), e.Began(), e.Lasted())
	}
}

// Package waitlog logs a wait state once when it begins and once when it
// ends, however often it is re-entered in between.
//
// A stage that waits (a store that is full, a cluster that fails every
// request, a store being reopened) typically finds out again at every
// attempt: a line per attempt would flood the log while telling an operator
// nothing new. An Episode turns those attempts into two lines: one when the
// wait begins, at the level the caller picks, and one at Info when it ends.
package waitlog

import (
	"context"
	"log/slog"
	"time"
)

// Episode is a wait state that is logged once on entry and once on exit.
// The zero value is not waiting. It is not safe for concurrent use: the
// caller guards it with the lock that guards the state it describes.
type Episode struct {
	began time.Time // when the wait going on began; zero when none is
}

// Enter begins an episode, logging msg and args at level, unless one is
// going on already (then it logs nothing). It reports whether it began
// one.
func (e *Episode) Enter(log *slog.Logger, level slog.Level, msg string, args ...any) bool {
	return e.EnterAt(time.Now(), log, level, msg, args...)
}

// EnterAt is Enter for a wait that began at began, before it was known
// (a request that failed after waiting for an answer began it when it was
// sent).
func (e *Episode) EnterAt(began time.Time, log *slog.Logger, level slog.Level, msg string, args ...any) bool {
	if e.Active() {
		return false
	}
	e.began = began
	log.Log(context.Background(), level, msg, args...)
	return true
}

// Leave ends the episode going on, logging msg and args at Info; with
// none going on it logs nothing. It reports whether it ended one. Its
// arguments are built at every call: on a hot path, check Active first.
func (e *Episode) Leave(log *slog.Logger, msg string, args ...any) bool {
	if !e.Active() {
		return false
	}
	e.began = time.Time{}
	log.Info(msg, args...)
	return true
}

// Active reports whether an episode is going on.
func (e *Episode) Active() bool { return !e.began.IsZero() }

// Began is when the episode going on began (the zero time when none is).
func (e *Episode) Began() time.Time { return e.began }

// Lasted is how long the episode going on has lasted (0 when none is).
func (e *Episode) Lasted() time.Duration {
	if !e.Active() {
		return 0
	}
	return time.Since(e.began)
}

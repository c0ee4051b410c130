package input

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logInterval is how often at most a line is logged per kind of repeated
// event (a violation reason, accept failures): a flood of connections that
// break the rules must not flood the log.
const logInterval = 10 * time.Second

// logLimiter limits lines, never counts: the first event of a kind is
// logged in full; later ones within the interval are counted, and one
// summary line at the interval's end says how many were not logged. A
// flood thus costs at most one line per kind and interval; the input's
// counters (violations) stay exact.
type logLimiter struct {
	log      *slog.Logger
	interval time.Duration

	mu     sync.Mutex // guards the fields below
	kinds  map[string]*logKind
	closed bool // no more summary timers; close logged the pending ones
}

// logKind is the state of one kind of event.
type logKind struct {
	quietUntil time.Time   // events before it are counted, not logged
	suppressed int64       // events not logged since the last line
	timer      *time.Timer // the pending summary; nil when none
	level      slog.Level  // of the summary
	msg        string      // of the summary
	args       []any       // of the summary, before its counts
}

func newLogLimiter(log *slog.Logger, interval time.Duration) *logLimiter {
	return &logLimiter{log: log, interval: interval, kinds: map[string]*logKind{}}
}

// allow reports whether the caller logs this event of kind itself. If
// not, the event is counted, and a summary line (level, msg, args, then
// "suppressed" and "interval") reports the count when the interval ends.
func (l *logLimiter) allow(kind string, level slog.Level, msg string, args ...any) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[kind]
	if k == nil {
		k = &logKind{}
		l.kinds[kind] = k
	}
	if k.timer == nil && k.suppressed == 0 && !now.Before(k.quietUntil) {
		k.quietUntil = now.Add(l.interval)
		return true
	}
	k.suppressed++
	k.level, k.msg, k.args = level, msg, args
	if k.timer == nil && !l.closed {
		k.timer = time.AfterFunc(k.quietUntil.Sub(now), func() { l.summarize(kind) })
	}
	return false
}

// summarize logs the count of kind's events not logged, and starts
// another quiet interval: a flood that goes on is summarized once per
// interval.
func (l *logLimiter) summarize(kind string) {
	l.mu.Lock()
	k := l.kinds[kind]
	if l.closed || k.timer == nil {
		l.mu.Unlock()
		return // close logged it
	}
	k.timer = nil
	k.quietUntil = time.Now().Add(l.interval)
	sum := k.take()
	l.mu.Unlock()
	l.emit(sum)
}

// summaryLine is a summary to log.
type summaryLine struct {
	level slog.Level
	msg   string
	args  []any
}

// take returns kind's summary line and resets its count (under mu).
func (k *logKind) take() summaryLine {
	n := k.suppressed
	k.suppressed = 0
	args := append(k.args[:len(k.args):len(k.args)], "suppressed", n)
	return summaryLine{k.level, k.msg, args}
}

func (l *logLimiter) emit(s summaryLine) {
	l.log.Log(context.Background(), s.level, s.msg, append(s.args, "interval", l.interval.String())...)
}

// close stops the summary timers and logs what they would have. Events
// allowed after close are counted and logged by no one: call it once
// nothing reports events any more.
func (l *logLimiter) close() {
	l.mu.Lock()
	l.closed = true
	var lines []summaryLine
	for _, k := range l.kinds {
		if k.timer != nil {
			k.timer.Stop()
			k.timer = nil
		}
		if k.suppressed > 0 {
			lines = append(lines, k.take())
		}
	}
	l.mu.Unlock()
	for _, s := range lines {
		l.emit(s)
	}
}

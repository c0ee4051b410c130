package drain

import (
	"log/slog"
	"sync"
	"time"

	"github.com/logpond/logpond/output/dlq"
)

// Dead letters are logged one line each, at WARN, whether the destination
// refused the event for good or logpond could not send it at all (an
// invalid data stream name, an event larger than any request): the
// operator sees both the same way. A burst (a mapping that refuses every
// event) would flood the log, so at most deadLetterLogBurst lines go out
// per deadLetterLogWindow; the ones held back are counted in one line when
// the window ends. The output's dead-letter metrics count every one.
const (
	deadLetterLogBurst  = 10
	deadLetterLogWindow = time.Minute
)

// DeadLetterLog logs an output's dead letters as they are written,
// rate-limited. Safe for concurrent use.
type DeadLetterLog struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	window time.Time // when the current window began
	logged int       // lines logged in it
	held   int       // dead letters not logged in it
}

// NewDeadLetterLog logs to log.
func NewDeadLetterLog(log *slog.Logger) *DeadLetterLog {
	return &DeadLetterLog{log: log, now: time.Now}
}

// Written logs the dead letters just written (synced) to the store.
func (d *DeadLetterLog) Written(entries []dlq.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range entries {
		now := d.now()
		if now.Sub(d.window) >= deadLetterLogWindow {
			if d.held > 0 {
				d.log.Warn("more events dead-lettered than logged one by one: see the output's dead-letter count and ledgerctl dlq list",
					"not_logged", d.held, "window", deadLetterLogWindow.String())
			}
			d.window, d.logged, d.held = now, 0, 0
		}
		if d.logged >= deadLetterLogBurst {
			d.held++
			continue
		}
		d.logged++
		msg := "event dead-lettered: the destination refused it for good"
		if e.Status == 0 {
			msg = "event dead-lettered: logpond cannot send it"
		}
		d.log.Warn(msg, "lsn", e.LSN, "position", e.Position, "index", e.Index, "status", e.Status,
			"type", e.ErrType, "reason", e.Reason, "event_bytes", len(e.Event))
	}
}

package drain

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/output/dlq"
)

// TestDeadLetterLogIsRateLimited: every dead letter is logged, the
// destination's refusals and logpond's own alike, until the burst is
// spent; the rest of the window is counted in one line when the next
// window begins.
func TestDeadLetterLogIsRateLimited(t *testing.T) {
	buf := &syncbuf.Buffer{}
	d := NewDeadLetterLog(slog.New(slog.NewTextHandler(buf, nil)))
	now := time.Unix(1_800_000_000, 0)
	d.now = func() time.Time { return now }
	d.Written([]dlq.Entry{{LSN: 1, Status: 400, ErrType: "document_parsing_exception", Reason: "failed to parse"}})
	d.Written([]dlq.Entry{{LSN: 2, ErrType: "invalid_data_stream", Reason: "data_stream.dataset has a space"}})
	for i := range 30 {
		d.Written([]dlq.Entry{{LSN: uint64(3 + i), Status: 400}})
	}
	text := buf.String()
	if n := strings.Count(text, "event dead-lettered"); n != deadLetterLogBurst {
		t.Errorf("%d dead letters logged in the window, want %d:\n%s", n, deadLetterLogBurst, text)
	}
	for _, want := range []string{"the destination refused it for good", "logpond cannot send it", "type=invalid_data_stream"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	now = now.Add(deadLetterLogWindow)
	d.Written([]dlq.Entry{{LSN: 99, Status: 400}})
	if text := buf.String(); !strings.Contains(text, "not_logged=22") || !strings.Contains(text, "lsn=99") {
		t.Errorf("the next window does not count the 22 held back, then log again:\n%s", text)
	}
}

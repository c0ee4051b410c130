package server

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/output/elasticsearch"
)

// TestReopenerBackoffAndLogOnce walks the reopen state machine through a
// failure, failed and successful reopens, a relapse before recovery and
// the recovery: the backoff doubles from minReopenWait up to
// maxReopenWait, the failure and the recovery are logged once each, and a
// failed attempt's error is logged at Warn only when it changes.
func TestReopenerBackoffAndLogOnce(t *testing.T) {
	lb := &syncbuf.Buffer{}
	r := reopener{store: "ledger", failedMsg: "down", recoveredMsg: "up", log: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	full := errors.New("no space left on device")

	r.failed(full)
	r.closed()
	if !r.down || r.wait != minReopenWait || r.due() {
		t.Fatalf("after the failure: down %v, wait %v, due %v", r.down, r.wait, r.due())
	}
	var waits []time.Duration
	for range 7 {
		r.nextTry = time.Now() // the backoff elapsed
		if !r.due() {
			t.Fatal("not due after the backoff")
		}
		r.retry(errors.New("ledger: open: no space left on device"))
		waits = append(waits, r.wait)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if !reflect.DeepEqual(waits, want) {
		t.Fatalf("backoff %v, want %v", waits, want)
	}
	// Reopened, but it fails again before it recovered: one episode.
	r.reopened(100)
	r.check(true, 100) // no progress yet
	r.failed(full)
	r.closed()
	if r.wait != maxReopenWait {
		t.Fatalf("a relapse reset the backoff to %v", r.wait)
	}
	r.reopened(100)
	r.check(true, 150) // progress, but too soon after the reopen
	r.reopenedAt = time.Now().Add(-minReopenWait)
	r.check(false, 150) // failing again
	r.check(true, 150)
	r.check(true, 200)
	if r.episode.Active() || r.wait != 0 {
		t.Fatalf("after the recovery: episode %v, wait %v", r.episode.Active(), r.wait)
	}
	log := lb.String()
	for msg, n := range map[string]int{"ledger failed: down": 1, "ledger recovered: up": 1, "ledger reopened": 2,
		"level=WARN msg=\"ledger reopen failed": 1, "level=DEBUG msg=\"ledger reopen failed": 6} {
		if got := strings.Count(log, msg); got != n {
			t.Errorf("%q logged %d times, want %d:\n%s", msg, got, n, log)
		}
	}
	// A new failure is a new episode, with the backoff from the start.
	r.failed(full)
	r.closed()
	if r.wait != minReopenWait || strings.Count(lb.String(), "ledger failed") != 2 {
		t.Fatalf("second episode: wait %v, failure logged %d times in all", r.wait, strings.Count(lb.String(), "ledger failed"))
	}
}

// TestAddStatsCoversEveryField: the output's totals survive a restart
// only if addStats adds every counter; a field added to Stats later must
// be added there too.
func TestAddStatsCoversEveryField(t *testing.T) {
	var one elasticsearch.Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int64:
			f.SetInt(1)
		case reflect.Uint64:
			f.SetUint(1)
		case reflect.Slice: // the latest skipped ranges: both runs' are kept
			f.Set(reflect.ValueOf([][2]uint64{{1, 1}}))
		default:
			t.Fatalf("Stats.%s has kind %s: teach addStats and this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	sum := reflect.ValueOf(addStats(one, one))
	for i := range sum.NumField() {
		name := sum.Type().Field(i).Name
		got := sum.Field(i)
		want := int64(2)
		if name == "CursorLSN" {
			want = 1 // a position, not a count
		}
		if got.Kind() == reflect.Slice && got.Len() != int(want) {
			t.Errorf("addStats: %s has %d ranges, want %d", name, got.Len(), want)
		}
		if (got.CanInt() && got.Int() != want) || (got.CanUint() && got.Uint() != uint64(want)) {
			t.Errorf("addStats: %s = %v, want %d", name, got, want)
		}
	}
}

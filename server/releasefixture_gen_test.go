package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logpond/logpond/record"
)

// fixtureEvent is event n of the release fixture: shaped as Filebeat
// sends it, numbered so a test can tell which arrived.
func fixtureEvent(n int) []byte {
	return fmt.Appendf(nil, `{"@timestamp":"2026-12-05T03:00:%02d.%03dZ","@metadata":{"beat":"filebeat","type":"_doc","version":"9.1.0"},"n":%d,"message":"fixture event %d: GET /api/items/%d HTTP/1.1 200","log":{"file":{"path":"/var/log/nginx/access.log"},"offset":%d},"host":{"name":"web-01"},"agent":{"type":"filebeat","version":"9.1.0"},"ecs":{"version":"8.0.0"}}`,
		n%60, n%1000, n, n, n*7, n*120)
}

// fixturePart is a record of events from..from+count-1 with batch flags
// and slot, as the input writes a batch or a part of one.
func fixturePart(t testing.TB, from, count int, flags record.Flags, slot uint16) []byte {
	t.Helper()
	var b record.Builder
	b.Reset(time.Unix(1_800_000_000, 0))
	for n := from; n < from+count; n++ {
		if err := b.Add(fixtureEvent(n)); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := b.FinishBatch(flags, slot)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(rec)
}

// TestWriteReleaseFixture writes testdata/release-v1 (see its README)
// when LOGPOND_WRITE_RELEASE_FIXTURE names an empty directory: it is the
// generator of a stored fixture, run with a release's build to keep what
// that release wrote, and skipped otherwise.
func TestWriteReleaseFixture(t *testing.T) {
	root := os.Getenv("LOGPOND_WRITE_RELEASE_FIXTURE")
	if root == "" {
		t.Skip("a fixture generator: set LOGPOND_WRITE_RELEASE_FIXTURE to an empty directory to run it")
	}
	cfg := pipelineConfig(t, root)
	r := start(t, cfg)
	recs := [][]byte{
		fixturePart(t, 0, 50, 0, 0),                             // LSN 1: delivered before the upgrade
		fixturePart(t, 50, 20, record.More, 5),                  // LSN 2: a batch in three parts…
		fixturePart(t, 70, 10, 0, 6),                            // LSN 3: another batch between its parts
		fixturePart(t, 80, 20, record.More|record.Cont, 5),      // LSN 4
		fixturePart(t, 100, 20, record.Cont, 5),                 // LSN 5: …complete
		fixturePart(t, 5000, 5, record.More, 7),                 // LSN 6: a batch that failed: void
		record.AppendAbort(nil, 7, time.Unix(1_800_000_000, 0)), // LSN 7
		fixturePart(t, 120, 100, 0, 0),                          // LSN 8
	}
	for _, rec := range recs {
		if _, err := r.s.journal().Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "every record in the ledger", func() bool { return r.s.ledger().LastLSN() >= uint64(len(recs)) })
	if err := r.s.ledger().SetCursor("elasticsearch", 1); err != nil {
		t.Fatal(err)
	}
	r.shutdown(t)
	t.Logf("wrote %s: journal %s, ledger %s", root, filepath.Base(cfg.Journal.Dir), filepath.Base(cfg.Ledger.Dir))
}

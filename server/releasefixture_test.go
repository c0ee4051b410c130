package server

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// TestReleaseLedgerDrainsCompressed: stores written by the release before
// compressed storage (testdata/release-v1: version 1 records, a batch in
// three parts, a voided batch, the cursor past the first record) are
// opened by this build with compression on. Elasticsearch receives exactly
// the events the old release had not delivered, and nothing of the failed
// batch; events sent after the upgrade are stored compressed beside the
// old records and delivered too, each once.
func TestReleaseLedgerDrainsCompressed(t *testing.T) {
	es := startES(t, estest.Options{Seed: 32})
	cfg := releaseConfig(t, "testdata/release-v1", es.URL(), `compression = "zstd"`)
	r := start(t, cfg)
	waitUntil(t, "the old records delivered", func() bool { return r.s.legacyOutput().Stats().CursorLSN >= 8 })

	// New events, in Filebeat-sized batches: stored compressed.
	c, err := lj.SyncDial(r.s.BeatsAddr().String(), lj.Timeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for from := 1000; from < 1500; from += 100 {
		var batch []any
		for n := from; n < from+100; n++ {
			batch = append(batch, json.RawMessage(fixtureEvent(n)))
		}
		if _, err := c.Send(batch); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	waitUntil(t, "the new events delivered", func() bool {
		return r.s.ledger().LastLSN() > 8 && r.s.legacyOutput().Stats().CursorLSN >= r.s.ledger().LastLSN()
	})
	if st := r.s.ledger().Compression(); st.RawBytes == 0 || st.Ratio() >= 0.5 {
		t.Errorf("compression stats %+v: want the new records stored compressed", st)
	}
	r.shutdown(t)

	var got []int
	for _, d := range es.Docs() {
		got = append(got, int(gjson.GetBytes(d.Source, "n").Int()))
	}
	slices.Sort(got)
	var want []int
	for n := 50; n < 220; n++ {
		want = append(want, n)
	}
	for n := 1000; n < 1500; n++ {
		want = append(want, n)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Elasticsearch holds %d events (%v…): want n = 50…219 (what the old release had not delivered) and 1000…1499 (sent after the upgrade), each once", len(got), got[:min(len(got), 5)])
	}
	if st := es.Stats(); st.Conflicts409 != 0 {
		t.Errorf("%d conflicts: an event was sent twice", st.Conflicts409)
	}

	// The ledger holds both versions: the old records as they were, the
	// new ones compressed.
	dr, err := ledger.NewDirReader(cfg.Ledger.Dir, 1, ledger.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dr.Close()
	versions := map[uint8]int{}
	for dr.Next() {
		h, err := record.Verify(dr.Record())
		if err != nil {
			t.Fatalf("LSN %d: %v", dr.LSN(), err)
		}
		if dr.LSN() <= 8 && h.Version != record.Version {
			t.Fatalf("LSN %d, written by the old release, is now version %d", dr.LSN(), h.Version)
		}
		versions[h.Version]++
	}
	if dr.Err() != nil {
		t.Fatal(dr.Err())
	}
	if versions[record.VersionCompressed] == 0 {
		t.Fatalf("record versions in the ledger: %v, want the new records compressed", versions)
	}
}

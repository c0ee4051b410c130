package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/elasticsearch"
	"github.com/logpond/logpond/output/lumberjack"
)

// namedES is an Elasticsearch output sending to url every 10 ms, with
// fast retries.
func namedES(url string) *conf.Elasticsearch {
	es := conf.DefaultElasticsearch()
	es.Hosts = []string{url}
	es.FlushInterval, es.RetryInitialInterval, es.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(time.Millisecond), conf.Duration(20*time.Millisecond)
	return &es
}

// smallStoresConfig is a pipeline whose journal and ledger hold 4 MiB each
// (1 MiB segments, 512 KiB records), so that a few MiB of events fill
// them, with the Elasticsearch outputs named in outs and no other.
func smallStoresConfig(t *testing.T, outs map[string]*conf.Elasticsearch) *conf.Config {
	cfg := pipelineConfig(t, t.TempDir())
	cfg.Journal.MaxBytes, cfg.Journal.MaxGroupBytes, cfg.Journal.SpareSegments = 4<<20, 256<<10, 1
	cfg.Ledger.MaxBytes = 4 << 20
	// The tests fill the ledger with what they send: its records must
	// take their own size there, not the little their like events
	// compress to.
	cfg.Ledger.Compression = conf.CompressionNone
	cfg.Input.Beats.MaxEventBytes = 64 << 10
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch.Enabled = false
	cfg.Output.NamedElasticsearch = outs
	return cfg
}

// sendFanout sends n 1 KiB events numbered from first, in batches of 200,
// and returns when every batch is acknowledged.
func sendFanout(t *testing.T, addr string, first, n int) error {
	c, err := lj.SyncDial(addr, lj.Timeout(5*time.Minute))
	if err != nil {
		return err
	}
	defer c.Close()
	pad := strings.Repeat("x", 1000)
	for i := first; i < first+n; i += 200 {
		var batch []any
		for j := i; j < min(i+200, first+n); j++ {
			batch = append(batch, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"fanout","version":"1"},"n":%d,"pad":%q}`, j, pad)))
		}
		if _, err := c.Send(batch); err != nil {
			return err
		}
	}
	return nil
}

// TestMaxLagLetsTheHealthyOutputGoOn: output "live" drains, output "down"
// cannot reach its cluster. With max_lag on "down", 12 MiB of events flow
// through a 4 MiB ledger: every batch is acknowledged, "live" stores every
// event, and "down" counts, logs and shows the ranges it skipped. Without
// max_lag, the ledger fills, acknowledgements stop (backpressure, as with
// one output), and once the cluster of "down" answers again both outputs
// hold every event: nothing was lost.
func TestMaxLagLetsTheHealthyOutputGoOn(t *testing.T) {
	for _, withMaxLag := range []bool{true, false} {
		t.Run(fmt.Sprintf("max_lag=%v", withMaxLag), func(t *testing.T) {
			live := startES(t, estest.Options{Seed: 41})
			down := startES(t, estest.Options{Seed: 42})
			if err := down.Pause(); err != nil {
				t.Fatal(err)
			}
			dl := namedES(down.URL())
			if withMaxLag {
				dl.MaxLag = 1 << 20
			}
			cfg := smallStoresConfig(t, map[string]*conf.Elasticsearch{"live": namedES(live.URL()), "down": dl})
			r := start(t, cfg)
			defer r.shutdown(t)

			const events = 12000 // about 12 MiB
			sent := make(chan error, 1)
			go func() { sent <- sendFanout(t, r.s.BeatsAddr().String(), 0, events) }()
			if withMaxLag {
				if err := <-sent; err != nil {
					t.Fatalf("sending with max_lag on the down output: %v", err)
				}
				waitUntil(t, "the live output stores every event", func() bool { return live.Count() == events })
				if !strings.Contains(r.log.String(), "max_lag") {
					t.Error("no ERROR says retention deleted what the down output had not sent")
				}
				if st := r.s.snapshot(); st.outputs[0].out.name != "down" || st.outputs[0].stats.SkippedRecords == 0 {
					t.Error("the down output's skipped records do not show while it is down")
				}
				if err := down.Resume(); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "the down output done with what the ledger kept", func() bool {
					return r.s.outputs.byName("down").Stats().CursorLSN >= r.s.ledger().LastLSN()
				})
				st := r.s.outputs.byName("down").Stats()
				if st.SkippedRecords == 0 || st.SkippedEvents == 0 || len(st.SkippedRanges) == 0 {
					t.Fatalf("down output: skipped %d records, %d events, ranges %v, stored %d: want the deleted ranges counted\n%s", st.SkippedRecords, st.SkippedEvents, st.SkippedRanges, down.Count(), grepLog(r.log.String(), "max_lag", "skipped", "down"))
				}
				if !strings.Contains(r.log.String(), "ledger records skipped") {
					t.Error("no ERROR says which records the down output skipped")
				}
				n := r.s.nodeInfo()
				for _, o := range n.Outputs {
					if o.Name == "down" && (o.SkippedEventsTotal == 0 || len(o.SkippedRanges) == 0) {
						t.Errorf("GET / shows no skip for the down output: %+v", o)
					}
				}
				if got, want := int64(down.Count())+st.SkippedEvents, int64(events); got < want {
					t.Errorf("down output: %d stored + %d skipped < %d sent", down.Count(), st.SkippedEvents, want)
				}
				return
			}
			waitUntil(t, "the ledger full", func() bool { return r.s.snapshot().waiting["ledger_full"] != "" })
			select {
			case err := <-sent:
				t.Fatalf("every batch acknowledged (%v) while the ledger is full and nothing may be dropped", err)
			case <-time.After(500 * time.Millisecond):
			}
			if live.Count() == 0 {
				t.Error("the live output stored nothing while the other was down")
			}
			if err := down.Resume(); err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "both outputs store every event", func() bool { return live.Count() == events && down.Count() == events })
			if st := r.s.outputs.byName("down").Stats(); st.SkippedRecords != 0 {
				t.Errorf("without max_lag the down output skipped %d records", st.SkippedRecords)
			}
		})
	}
}

// grepLog returns the lines of log that hold any of words.
func grepLog(log string, words ...string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestHostsOfTwoClustersAreRefused: one output whose hosts are two
// different clusters sends nothing; readiness, GET / and the metric say
// why and point to named outputs, and another output goes on.
func TestHostsOfTwoClustersAreRefused(t *testing.T) {
	var srvs [3]*estest.Server
	for i := range srvs {
		s := startES(t, estest.Options{Seed: int64(50 + i)})
		srvs[i] = s
	}
	split := namedES(srvs[0].URL())
	split.Hosts = append(split.Hosts, srvs[1].URL())
	cfg := smallStoresConfig(t, map[string]*conf.Elasticsearch{"split": split, "other": namedES(srvs[2].URL())})
	r := start(t, cfg)
	defer r.shutdown(t)
	if err := sendFanout(t, r.s.BeatsAddr().String(), 0, 400); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the other output stores every event", func() bool { return srvs[2].Count() == 400 })
	waitUntil(t, "the split output refused", func() bool { return r.s.outputs.byName("split").Misconfigured() != "" })
	if n := srvs[0].Count() + srvs[1].Count(); n != 0 {
		t.Errorf("the split output stored %d events across two clusters", n)
	}
	why := strings.Join(r.s.snapshot().notReady(), "\n")
	if !strings.Contains(why, "output.elasticsearch.split") || !strings.Contains(why, "[output.elasticsearch.NAME]") {
		t.Errorf("readiness does not name the output and point to named outputs:\n%s", why)
	}
	for _, o := range r.s.nodeInfo().Outputs {
		switch {
		case o.Name == "split" && (o.State != StateFailed || !strings.Contains(o.Error, srvs[1].URL())):
			t.Errorf("GET / for the split output: %+v", o)
		case o.Name == "other" && o.State == StateFailed:
			t.Errorf("GET / for the other output: %+v", o)
		}
	}
}

// TestRemovedOutputsCursorHoldsTheLedgerUntilDeleted: an output removed
// from the configuration leaves its cursor, which logpond reports at start,
// in GET / and in logpond_ledger_orphan_cursor_bytes; POST
// /api/cursors/delete releases it, and is refused for a configured
// output. An output added with start_at = "newest" sends nothing the
// ledger held before it.
func TestRemovedOutputsCursorHoldsTheLedgerUntilDeleted(t *testing.T) {
	old := startES(t, estest.Options{Seed: 61})
	cfg := smallStoresConfig(t, map[string]*conf.Elasticsearch{"old": namedES(old.URL())})
	cfg.Ledger.MaxBytes = 64 << 20
	r := start(t, cfg)
	if err := sendFanout(t, r.s.BeatsAddr().String(), 0, 400); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the old output done", func() bool { return old.Count() == 400 })
	r.shutdown(t)

	// "old" is gone, "fresh" starts at the newest record; 200 more events.
	fresh := startES(t, estest.Options{Seed: 62})
	f := namedES(fresh.URL())
	f.StartAt = "newest"
	cfg.Output.NamedElasticsearch = map[string]*conf.Elasticsearch{"fresh": f}
	r = start(t, cfg)
	defer r.shutdown(t)
	if !strings.Contains(r.log.String(), "cursors delete old") {
		t.Errorf("no warning at start names the orphan cursor and the command:\n%s", grepLog(r.log.String(), "cursor"))
	}
	if err := sendFanout(t, r.s.BeatsAddr().String(), 400, 200); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fresh output done", func() bool { return fresh.Count() == 200 })
	if n := fresh.Count(); n != 200 {
		t.Errorf("the new output with start_at = newest stored %d events, want only the 200 sent after it started", n)
	}
	n := r.s.nodeInfo()
	if len(n.OrphanCursors) != 1 || n.OrphanCursors[0].Name != "old" || n.OrphanCursors[0].HeldBytes == 0 {
		t.Fatalf("GET / orphan cursors: %+v", n.OrphanCursors)
	}
	base := "http://" + r.s.AdminAddr().String()
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, `logpond_ledger_orphan_cursor_bytes{cursor="old"}`) {
		t.Errorf("/metrics lacks the orphan cursor (%d)", code)
	}
	post := func(q string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/cursors/delete?"+q, nil)
		req.Header.Set(PurgeRequestHeader, "test")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post("name=fresh"); code != http.StatusConflict || !strings.Contains(body, "output.elasticsearch.fresh") {
		t.Errorf("deleting a configured output's cursor: %d %q, want 409 naming it", code, body)
	}
	if code, body := post("name=old&dir=" + t.TempDir()); code != http.StatusConflict {
		t.Errorf("deleting in another ledger: %d %q, want 409", code, body)
	}
	if code, body := post("name=old"); code != http.StatusOK || !strings.Contains(body, `"name":"old"`) {
		t.Fatalf("deleting the orphan cursor: %d %q", code, body)
	}
	if _, ok := r.s.ledger().Cursors()["old"]; ok || len(r.s.nodeInfo().OrphanCursors) != 0 {
		t.Error("the orphan cursor is still there after its deletion")
	}
	if code, _ := post("name=old"); code != http.StatusNotFound {
		t.Errorf("deleting it again: %d, want 404", code)
	}
}

// TestStopErrorsOtherThanUnsavedCursors: an output that could not persist
// its final cursor does not fail the stop, whichever output it is and
// however its error is wrapped; any other error beside it does.
func TestStopErrorsOtherThanUnsavedCursors(t *testing.T) {
	notSaved := fmt.Errorf("%w: device full", lumberjack.ErrCursorNotSaved)
	other := errors.New("bulk request refused")
	for _, tc := range []struct {
		name  string
		err   error
		other bool
	}{
		{"elasticsearch", fmt.Errorf("output.elasticsearch: %w", elasticsearch.ErrCursorNotSaved), false},
		{"lumberjack", fmt.Errorf("output.lumberjack.edge: %w", notSaved), false},
		{"both, joined", errors.Join(fmt.Errorf("a: %w", elasticsearch.ErrCursorNotSaved), fmt.Errorf("b: %w", notSaved)), false},
		{"a join inside a wrap", fmt.Errorf("output.elasticsearch.a: %w", errors.Join(other, elasticsearch.ErrCursorNotSaved)), true},
		{"another error", fmt.Errorf("output.elasticsearch.a: %w", other), true},
	} {
		if got := hasOtherError(tc.err, cursorsNotSaved...); got != tc.other {
			t.Errorf("%s: hasOtherError(%v) = %v, want %v", tc.name, tc.err, got, tc.other)
		}
	}
}

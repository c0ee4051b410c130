package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	dto "github.com/prometheus/client_model/go"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/record"
)

// closedAddr is a loopback address nothing listens on: connecting to it
// is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// lagConfig is a pipeline whose Elasticsearch output sends to host.
func lagConfig(t *testing.T, host string) *conf.Config {
	root := t.TempDir()
	cfg := pipelineConfig(t, root)
	cfg.Admin.Listen = "127.0.0.1:0"
	es := &cfg.Output.Elasticsearch
	es.Enabled, es.Hosts = true, []string{host}
	es.FlushInterval = conf.Duration(10 * time.Millisecond)
	es.RetryInitialInterval, es.RetryMaxInterval = conf.Duration(time.Millisecond), conf.Duration(20*time.Millisecond)
	return cfg
}

// TestLagMetricsWhileElasticsearchIsDown: with Elasticsearch refusing
// connections, /metrics says how far behind the output is in events,
// records, bytes and time, how full the stores are against their limits,
// and why the requests fail (no status: connection refused). The series
// alerts rely on exist at zero from the start.
func TestLagMetricsWhileElasticsearchIsDown(t *testing.T) {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	r := start(t, cfg)
	defer r.shutdown(t)
	s := r.s
	base := "http://" + s.AdminAddr().String()

	fams := scrape(t, base+"/metrics")
	for _, l := range [][]string{
		{"logpond_output_items_total", "status", "201", "outcome", "done"},
		{"logpond_output_items_total", "status", "429", "outcome", "retry"},
		{"logpond_output_events_dead_lettered_total"},
		{"logpond_output_requests_failed_total"},
		{"logpond_build_info", "version", "dev"},
	} {
		if !hasSeries(fams, l[0], l[1:]...) {
			t.Errorf("%s%v does not exist at start", l[0], l[1:])
		}
	}

	c, err := lj.SyncDial(s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const batches, per = 3, 100
	for b := range batches {
		var data []interface{}
		for i := range per {
			data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%d-%d"}`, b, i)))
		}
		if n, err := c.Send(data); err != nil || n != per {
			t.Fatalf("acked %d: %v", n, err)
		}
	}
	c.Close()
	time.Sleep(10 * time.Millisecond) // the oldest event is older than this
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams = scrape(t, base+"/metrics")
		// The request's duration is observed as its answer comes back,
		// and the failure counted once the output has judged the answer:
		// wait for both.
		if value(fams, "logpond_ledger_last_lsn") > 0 && value(fams, "logpond_output_pending_events") == batches*per &&
			hasSeries(fams, "logpond_output_request_seconds", "status", "none", "reason", "connection_refused") &&
			value(fams, "logpond_output_requests_failed_total") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lag seen: pending events %v, ledger last %v, failed requests %v", value(fams, "logpond_output_pending_events"),
				value(fams, "logpond_ledger_last_lsn"), value(fams, "logpond_output_requests_failed_total"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, want := value(fams, "logpond_output_pending_records"), value(fams, "logpond_ledger_last_lsn"); got != want || got <= 0 {
		t.Errorf("pending records %v, want every record in the ledger (%v)", got, want)
	}
	if got := value(fams, "logpond_output_pending_bytes"); got <= 0 || got > value(fams, "logpond_ledger_bytes") {
		t.Errorf("pending bytes %v, want some of the ledger's %v", got, value(fams, "logpond_ledger_bytes"))
	}
	if got := value(fams, "logpond_output_oldest_pending_seconds"); got < 0.01 {
		t.Errorf("oldest pending %vs, want the age of the first batch", got)
	}
	for _, store := range []struct{ name string }{{"journal"}, {"ledger"}} {
		bytes, limit := value(fams, "logpond_"+store.name+"_bytes"), value(fams, "logpond_"+store.name+"_max_bytes")
		if got := value(fams, "logpond_"+store.name+"_fill_ratio"); limit <= 0 || got != bytes/limit {
			t.Errorf("%s fill ratio %v, bytes %v, limit %v", store.name, got, bytes, limit)
		}
	}
	if got := value(fams, "logpond_journal_max_bytes"); got != float64(cfg.Journal.MaxBytes) {
		t.Errorf("journal max bytes %v, want %d", got, cfg.Journal.MaxBytes)
	}
}

// hasSeries says whether family name has a sample with the labels.
func hasSeries(fams map[string]*dto.MetricFamily, name string, labels ...string) bool {
	for _, m := range fams[name].GetMetric() {
		if hasLabels(m, labels) {
			return true
		}
	}
	return false
}

// TestLagOfRecordsNotYetRead: records the output has not read (it is not
// running yet here; in production, it stops reading while Elasticsearch
// refuses) still count, and the oldest one's age comes from the ledger.
func TestLagOfRecordsNotYetRead(t *testing.T) {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.ledger()
	for lsn := uint64(1); lsn <= 5; lsn++ {
		if err := l.Append(lsn, testRecord(t, lsn)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	lg := s.legacyLag()
	if lg.records != 5 || lg.events != 5 || lg.bytes != l.UsedBytes() {
		t.Errorf("lag %+v, want 5 records, 5 events, %d bytes", lg, l.UsedBytes())
	}
	if want := time.Unix(1_800_000_000, 0); !lg.oldest.Equal(want) {
		t.Errorf("oldest pending received %v, want %v (the first record's)", lg.oldest, want)
	}
}

// TestLagProbeReadsOnlyWhatMoved: the age of the oldest pending event,
// which /metrics, GET / and the summary ask for at every call, reads the
// ledger only when the output's position moved, and then seeks with the
// open segment's sparse index instead of scanning the segment from its
// start. Counted in bytes read, over a large open segment.
func TestLagProbeReadsOnlyWhatMoved(t *testing.T) {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	cfg.Ledger.SegmentBytes = 64 << 20 // every record in the open segment
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.ledger()
	t0 := time.Unix(1_800_000_000, 0)
	const last = 2000 // about 16 MiB
	for lsn := uint64(1); lsn <= last; lsn++ {
		rec, err := record.Encode(nil, t0.Add(time.Duration(lsn)*time.Second),
			[][]byte{fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, lsn, strings.Repeat("x", 8000))})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(lsn, rec); err != nil {
			t.Fatal(err)
		}
		if lsn%16 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// One seek: about the index interval and one read, at most.
	const bound = 256<<10 + 1<<20 + 2*4096
	for _, done := range []uint64{1000, 1990} {
		if err := l.SetCursor(conf.LegacyOutputName, done); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			before := s.legacyOutput().oldest.bytesRead
			lg := s.legacyLag()
			if want := t0.Add(time.Duration(done+1) * time.Second); !lg.oldest.Equal(want) || lg.records != int64(last-done) {
				t.Fatalf("cursor %d, probe %d: lag %+v, want %d records, the oldest received %v", done, i, lg, last-done, want)
			}
			switch read := s.legacyOutput().oldest.bytesRead - before; {
			case i == 0 && read > bound:
				t.Errorf("cursor %d: the probe read %d bytes of a %d-byte open segment, want at most %d", done, read, l.UsedBytes(), bound)
			case i > 0 && read != 0:
				t.Fatalf("cursor %d: probe %d read %d bytes again, with nothing moved", done, i, read)
			}
		}
	}
}

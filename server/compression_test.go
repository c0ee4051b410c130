package server

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// sendRepetitive sends batches of per events that repeat their metadata,
// as Filebeat's do, and returns the event bytes sent.
func sendRepetitive(t *testing.T, addr string, batches, per int) int64 {
	t.Helper()
	c, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var bytes int64
	for b := range batches {
		var data []interface{}
		for i := range per {
			ev := fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"host":{"name":"web-01","os":{"family":"debian"}},"log":{"file":{"path":"/var/log/nginx/access.log"}},"message":"GET /index.html 200 %d-%d"}`, b, i)
			bytes += int64(len(ev))
			data = append(data, json.RawMessage(ev))
		}
		if n, err := c.Send(data); err != nil || n != per {
			t.Fatalf("acked %d: %v", n, err)
		}
	}
	return bytes
}

// nodeInfoOf answers GET / on base.
func nodeInfoOf(t *testing.T, base string) NodeInfo {
	t.Helper()
	code, body := get(t, base+"/")
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, body)
	}
	var n NodeInfo
	if err := json.Unmarshal([]byte(body), &n); err != nil {
		t.Fatalf("GET /: %v: %s", err, body)
	}
	return n
}

// TestCompressionReported: with each setting of ledger.compression, the
// bytes appended to the ledger before compression are the records'
// version 1 size (the events, their length prefixes, each record's header
// and CRC), the stored bytes are fewer with zstd and the same with none,
// and /metrics, GET / and the summary line report the same numbers and
// their ratio.
func TestCompressionReported(t *testing.T) {
	for _, tc := range []struct {
		codec, level string
	}{
		{conf.CompressionZstd, "fastest"},
		{conf.CompressionZstd, "better"},
		{conf.CompressionS2, "fastest"},
		{conf.CompressionNone, ""},
	} {
		t.Run(tc.codec+tc.level, func(t *testing.T) {
			cfg := lagConfig(t, "http://"+closedAddr(t)) // nothing drains: the ledger keeps every record
			cfg.Ledger.Compression = tc.codec
			if tc.level != "" {
				cfg.Ledger.CompressionLevel = conf.CompressionLevel(tc.level)
			}
			cfg.Log.SummaryInterval = conf.Duration(20 * time.Millisecond)
			r := start(t, cfg)
			defer r.shutdown(t)
			base := "http://" + r.s.AdminAddr().String()
			const batches, per = 5, 200
			bytes := sendRepetitive(t, r.s.BeatsAddr().String(), batches, per)

			var n NodeInfo
			deadline := time.Now().Add(60 * time.Second)
			for {
				n = nodeInfoOf(t, base)
				if n.Ledger.LastLSN > 0 && n.Ledger.LastLSN == n.Journal.LastLSN && n.Input.EventsTotal == batches*per {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the ledger never caught up with the journal: %+v, %+v", n.Journal, n.Ledger)
				}
				time.Sleep(10 * time.Millisecond)
			}
			records := int64(n.Ledger.LastLSN) // every record is one of the batches' (a clean run: no abort or void)
			wantRaw := bytes + batches*per*record.EventOverhead + records*(record.HeaderSize+record.TrailerSize)
			c := n.Ledger.Compression
			if c == nil {
				t.Fatal("GET /: the ledger has no compression")
			}
			if c.Codec != tc.codec || c.Level != tc.level {
				t.Errorf("GET /: codec %q level %q, want %q %q", c.Codec, c.Level, tc.codec, tc.level)
			}
			if c.RawBytesTotal != wantRaw {
				t.Errorf("GET /: raw_bytes_total %d, want %d (the records' version 1 size)", c.RawBytesTotal, wantRaw)
			}
			if tc.codec == conf.CompressionNone && c.StoredBytesTotal != c.RawBytesTotal {
				t.Errorf("GET /: none stores %d of %d bytes, want all", c.StoredBytesTotal, c.RawBytesTotal)
			}
			if tc.codec == conf.CompressionZstd && (c.StoredBytesTotal <= 0 || c.StoredBytesTotal >= c.RawBytesTotal/2) {
				t.Errorf("GET /: zstd stores %d of %d bytes of repetitive events, want well under half", c.StoredBytesTotal, c.RawBytesTotal)
			}
			if want := float64(c.StoredBytesTotal) / float64(c.RawBytesTotal); c.Ratio != want {
				t.Errorf("GET /: ratio %v, want %v", c.Ratio, want)
			}
			if n.Journal.Compression != nil {
				t.Errorf("GET /: the journal reports compression: %+v", n.Journal.Compression)
			}

			fams := scrape(t, base+"/metrics")
			for _, m := range []struct {
				name string
				want float64
			}{
				{"logpond_ledger_raw_bytes_total", float64(c.RawBytesTotal)},
				{"logpond_ledger_stored_bytes_total", float64(c.StoredBytesTotal)},
				{"logpond_ledger_compression_ratio", c.Ratio},
			} {
				if got := value(fams, m.name); got != m.want {
					t.Errorf("%s = %v, want %v", m.name, got, m.want)
				}
			}
			if f := fams["logpond_ledger_raw_bytes_total"]; f == nil || f.GetMetric()[0].Counter == nil {
				t.Error("logpond_ledger_raw_bytes_total is not a counter")
			}
			if f := fams["logpond_ledger_compression_ratio"]; f == nil || f.GetMetric()[0].Gauge == nil {
				t.Error("logpond_ledger_compression_ratio is not a gauge")
			}

			// A summary line written after the last append has the ratio.
			line := regexp.MustCompile(`ledger_fill=[0-9.]+% ledger_ratio=([0-9.]+) `)
			want := fmt.Sprintf("%.3f", c.Ratio)
			for {
				ms := line.FindAllStringSubmatch(r.log.String(), -1)
				if len(ms) > 0 && ms[len(ms)-1][1] == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no summary line says ledger_ratio=%s:\n%s", want, r.log.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestCompressionBeforeAnyRecord: before anything was appended the ratio
// is 1 (no saving measured), the counters 0.
func TestCompressionBeforeAnyRecord(t *testing.T) {
	r := start(t, lagConfig(t, "http://"+closedAddr(t)))
	defer r.shutdown(t)
	base := "http://" + r.s.AdminAddr().String()
	c := nodeInfoOf(t, base).Ledger.Compression
	if c == nil || *c != (CompressionInfo{Codec: "s2", Level: "fastest", Ratio: 1}) {
		t.Errorf("GET /: %+v, want the default, s2 fastest, nothing counted, ratio 1", c)
	}
	fams := scrape(t, base+"/metrics")
	if got := value(fams, "logpond_ledger_compression_ratio"); got != 1 {
		t.Errorf("logpond_ledger_compression_ratio = %v, want 1", got)
	}
	if got := value(fams, "logpond_ledger_raw_bytes_total"); got != 0 {
		t.Errorf("logpond_ledger_raw_bytes_total = %v, want 0", got)
	}
}

// TestCompressionTallyAcrossReopens: the counts go on from the instance a
// reopened ledger replaces (its counters are readable once it is closed),
// never back; the same instance told twice counts once.
func TestCompressionTallyAcrossReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	opts := ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, Compression: record.Zstd(record.LevelFastest)}
	var tally compressionTally
	var lsn uint64
	appendSome := func(l *ledger.Ledger) {
		for range 20 {
			lsn++
			var events [][]byte
			for i := range 50 {
				events = append(events, fmt.Appendf(nil, `{"host":{"name":"web-01"},"message":"GET /index.html 200 %d-%d"}`, lsn, i))
			}
			rec, err := record.Encode(nil, time.Unix(1_800_000_000, 0), events)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(lsn, rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	a, err := ledger.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tally.opened(a)
	tally.opened(a)
	appendSome(a)
	ca := a.Compression()
	if raw, stored := tally.totals(); raw != ca.RawBytes || stored != ca.StoredBytes || raw == 0 {
		t.Fatalf("one instance: %d, %d; it counts %+v", raw, stored, ca)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := a.Reopen(func(uint64) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tally.opened(b)
	appendSome(b)
	cb := b.Compression()
	if cb.RawBytes == 0 {
		t.Fatalf("the reopened instance counts %+v", cb)
	}
	raw, stored := tally.totals()
	if raw != ca.RawBytes+cb.RawBytes || stored != ca.StoredBytes+cb.StoredBytes {
		t.Errorf("after a reopen: %d, %d; want %d, %d (both instances)", raw, stored, ca.RawBytes+cb.RawBytes, ca.StoredBytes+cb.StoredBytes)
	}
	if ratio := (compressionState{raw: raw, stored: stored}).ratio(); math.Abs(ratio-float64(stored)/float64(raw)) > 1e-12 || ratio >= 1 {
		t.Errorf("ratio %v of %d/%d", ratio, stored, raw)
	}
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/faultfs"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// beatsLoad sends batches of events from go-lumber clients, as Beats
// would, until stopped, and remembers which events were acknowledged.
type beatsLoad struct {
	mu    sync.Mutex
	acked map[string]bool // "client/seq"
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startBeatsLoad starts clients numbered from first, each sending
// batches of 50 events to addr.
func startBeatsLoad(t *testing.T, addr string, first, clients int) *beatsLoad {
	b := &beatsLoad{acked: map[string]bool{}, stop: make(chan struct{})}
	for c := first; c < first+clients; c++ {
		b.wg.Go(func() {
			cl, err := lj.SyncDial(addr)
			if err != nil {
				t.Errorf("client %d: %v", c, err)
				return
			}
			defer cl.Close()
			for seq := 0; ; {
				select {
				case <-b.stop:
					return
				default:
				}
				var batch []interface{}
				for i := range 50 {
					batch = append(batch, json.RawMessage(fmt.Sprintf(`{"client":%d,"seq":%d,"message":"%s"}`, c, seq+i, strings.Repeat("m", 200))))
				}
				n, err := cl.Send(batch)
				if err != nil || n != len(batch) {
					t.Errorf("client %d: %d of %d acknowledged: %v", c, n, len(batch), err)
					return
				}
				b.mu.Lock()
				for i := range n {
					b.acked[fmt.Sprintf("%d/%d", c, seq+i)] = true
				}
				b.mu.Unlock()
				seq += n
			}
		})
	}
	return b
}

// count is the number of events acknowledged so far.
func (b *beatsLoad) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.acked)
}

// end stops the clients after their batch in flight is acknowledged.
func (b *beatsLoad) end() {
	close(b.stop)
	b.wg.Wait()
}

// waitDeliveredOnce waits until Elasticsearch holds every acknowledged
// event of loads, then checks that it holds each once and nothing else.
func waitDeliveredOnce(t *testing.T, es *estest.Server, loads ...*beatsLoad) {
	t.Helper()
	want := map[string]bool{}
	for _, b := range loads {
		b.mu.Lock()
		for k := range b.acked {
			want[k] = true
		}
		b.mu.Unlock()
	}
	var have map[string]int
	waitUntil(t, fmt.Sprintf("the %d acknowledged events in Elasticsearch", len(want)), func() bool {
		have = map[string]int{}
		for _, d := range es.Docs() {
			have[gjson.GetBytes(d.Source, "client").String()+"/"+gjson.GetBytes(d.Source, "seq").String()]++
		}
		for k := range want {
			if have[k] == 0 {
				return false
			}
		}
		return true
	})
	for k, n := range have {
		if n != 1 || !want[k] {
			t.Errorf("event %s stored %d times (acknowledged: %v)", k, n, want[k])
		}
	}
}

// ledgerFaultConfig puts the ledger on the fault-injecting mount m and
// the journal on a healthy directory, with the admin endpoint and the
// Elasticsearch output sending to es.
func ledgerFaultConfig(t *testing.T, es *estest.Server, m *faultfs.FS) *conf.Config {
	cfg := crashConfig(t.TempDir())
	cfg.Ledger.Dir = filepath.Join(m.Dir, "ledger")
	cfg.Admin.Listen = "127.0.0.1:0"
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	return cfg
}

// mustRun fails the test at once when Run returned: logpond stopped.
func (r *running) mustRun(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for shutdown
		t.Fatalf("logpond stopped: %v\n%s", err, r.log.String())
	default:
	}
}

// TestLedgerReadFaultKeepsServing makes every read of the ledger's device
// fail for a few seconds while Beats clients send: logpond keeps running
// and acknowledging (the journal's device is healthy), says why delivery
// waits (/readyz, GET /, metrics), and once reads work again delivers
// every acknowledged event exactly once.
func TestLedgerReadFaultKeepsServing(t *testing.T) {
	skipLong(t)
	es := startES(t, estest.Options{Seed: 21})
	m := faultfs.Mount(t)
	r := start(t, ledgerFaultConfig(t, es, m))
	base := "http://" + r.s.AdminAddr().String()
	load := startBeatsLoad(t, r.s.BeatsAddr().String(), 0, 4)
	waitUntil(t, "deliveries before the fault", func() bool { return es.Count() > 2000 })

	m.Fail(faultfs.Fault{Ops: faultfs.Read})
	failedAt := time.Now()
	waitUntil(t, "the output to say it cannot read the ledger", func() bool {
		r.mustRun(t)
		return r.s.snapshot().waiting["ledger_unreadable"] != ""
	})
	code, body := httpGet(t, base+"/readyz")
	if code != 503 || !strings.Contains(body, "ledger_unreadable") {
		t.Errorf("/readyz while the ledger is unreadable: %d %q", code, body)
	}
	if code, _ := httpGet(t, base+"/livez"); code != 200 {
		t.Errorf("/livez while the ledger is unreadable: %d, want 200", code)
	}
	if _, body := httpGet(t, base+"/"); !strings.Contains(body, "reading the ledger has failed") {
		t.Errorf("GET / does not say the ledger is unreadable:\n%s", body)
	}
	if v := value(scrape(t, base+"/metrics"), "logpond_ledger_read_errors_total"); v < 1 {
		t.Errorf("logpond_ledger_read_errors_total %v while reads fail", v)
	}
	held := load.count()
	waitUntil(t, "acknowledgements while the ledger is unreadable", func() bool { r.mustRun(t); return load.count() > held+2000 })
	time.Sleep(time.Until(failedAt.Add(3 * time.Second))) // a fault of a few seconds at least
	r.mustRun(t)
	t.Logf("%d events acknowledged during the fault (%d reads failed)", load.count()-held, m.Failures())
	m.Heal()
	waitUntil(t, "the output to read again", func() bool { return r.s.snapshot().waiting["ledger_unreadable"] == "" })
	load.end()
	waitDeliveredOnce(t, es, load)
	r.shutdown(t)
	log := r.log.String()
	for msg, n := range map[string]int{"reading the ledger failed": 1, "reading the ledger works again": 1} {
		if got := strings.Count(log, msg); got != n {
			t.Errorf("%q logged %d times, want %d", msg, got, n)
		}
	}
}

// TestStartWhileTheLedgerIsUnreadable starts logpond, twice, while every
// read of the ledger's device fails (its STREAM file too): it starts
// anyway, acknowledges into the journal, says why the ledger is not open
// (/readyz, GET /, metrics) while /livez stays OK, and opens the ledger
// by itself once reads work again; every event acknowledged before,
// during and after reaches Elasticsearch exactly once.
func TestStartWhileTheLedgerIsUnreadable(t *testing.T) {
	skipLong(t)
	es := startES(t, estest.Options{Seed: 22})
	m := faultfs.Mount(t)
	cfg := ledgerFaultConfig(t, es, m)
	r := start(t, cfg)
	before := startBeatsLoad(t, r.s.BeatsAddr().String(), 0, 2)
	waitUntil(t, "deliveries", func() bool { return es.Count() > 1000 })
	before.end()
	r.shutdown(t)

	m.Fail(faultfs.Fault{Ops: faultfs.Read})
	failedAt := time.Now()
	var loads []*beatsLoad
	for round := range 2 {
		// A restart during the fault: the second start finds the
		// first one's acknowledged records in the journal only.
		r = start(t, cfg)
		base := "http://" + r.s.AdminAddr().String()
		load := startBeatsLoad(t, r.s.BeatsAddr().String(), 10*(round+1), 2)
		loads = append(loads, load)
		waitUntil(t, "acknowledgements with the ledger unreadable", func() bool { r.mustRun(t); return load.count() > 2000 })
		code, body := httpGet(t, base+"/readyz")
		if code != 503 || !strings.Contains(body, "ledger_failed") || !strings.Contains(body, "could not be opened") {
			t.Errorf("/readyz with the ledger unopened: %d %q", code, body)
		}
		if code, _ := httpGet(t, base+"/livez"); code != 200 {
			t.Errorf("/livez with the ledger unopened: %d, want 200", code)
		}
		if _, body := httpGet(t, base+"/"); !strings.Contains(body, `"state": "failed"`) || !strings.Contains(body, "input/output error") {
			t.Errorf("GET / does not say the ledger failed:\n%s", body)
		}
		if v := value(scrape(t, base+"/metrics"), "logpond_ledger_read_errors_total"); v < 1 {
			t.Errorf("logpond_ledger_read_errors_total %v while the ledger cannot be opened", v)
		}
		load.end()
		r.shutdown(t)
	}
	r = start(t, cfg)
	load := startBeatsLoad(t, r.s.BeatsAddr().String(), 100, 2)
	loads = append(loads, load)
	waitUntil(t, "acknowledgements with the ledger unreadable", func() bool { r.mustRun(t); return load.count() > 1000 })
	time.Sleep(time.Until(failedAt.Add(4 * time.Second))) // a fault of a few seconds at least
	acked := 0
	for _, l := range loads {
		acked += l.count()
	}
	t.Logf("%d events acknowledged over 3 starts while the ledger's reads failed (%d reads failed)", acked, m.Failures())
	m.Heal()
	waitUntil(t, "the ledger to open", func() bool { r.mustRun(t); return r.s.ledger() != nil })
	load.end()
	waitDeliveredOnce(t, es, append(loads, before)...)
	r.shutdown(t)
	if log := r.log.String(); strings.Count(log, "ledger failed") != 1 || strings.Count(log, "ledger opened") != 1 {
		t.Errorf("want one failure and one late open logged:\n%s", log)
	}
}

// TestJournalReadFaultIsRetried makes the journal's device fail every read
// while the flusher must read the journal's files (a backlog left by a
// stop before the ledger took it): logpond keeps running and
// acknowledging (the journal's writes and fsyncs work), says why records
// wait (/readyz, metrics), and once reads work again moves everything to
// the ledger and Elasticsearch, each record once.
func TestJournalReadFaultIsRetried(t *testing.T) {
	es := startES(t, estest.Options{Seed: 23})
	m := faultfs.Mount(t)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(m.Dir, "journal")
	cfg.Admin.Listen = "127.0.0.1:0"
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)

	// A backlog in the journal's files only: appended without Run.
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	backlog := &ackLoad{acked: map[string]bool{}}
	for seq := range 3000 {
		rec := crashRecord(99, seq)
		if _, err := s.journal().Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		backlog.acked[payloadKey(rec)] = true
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	lb := &syncbuf.Buffer{}
	s, err = Open(cfg, slog.New(slog.NewTextHandler(lb, nil)))
	if err != nil {
		t.Fatal(err)
	}
	m.Fail(faultfs.Fault{Ops: faultfs.Read})
	failedAt := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, stop: cancel, done: make(chan error, 1), log: lb}
	go func() { r.done <- s.Run(ctx) }()
	base := "http://" + s.AdminAddr().String()

	load := startAckLoad(t, s, 0)
	waitUntil(t, "the flusher to say it cannot read the journal", func() bool {
		r.mustRun(t)
		return s.snapshot().waiting["journal_unreadable"] != ""
	})
	if code, body := httpGet(t, base+"/readyz"); code != 503 || !strings.Contains(body, "journal_unreadable") {
		t.Errorf("/readyz while the journal is unreadable: %d %q", code, body)
	}
	if v := value(scrape(t, base+"/metrics"), "logpond_journal_read_errors_total"); v < 1 {
		t.Errorf("logpond_journal_read_errors_total %v while reads fail", v)
	}
	waitUntil(t, "acknowledgements while the journal is unreadable", func() bool { r.mustRun(t); return load.count() > 2000 })
	time.Sleep(time.Until(failedAt.Add(3 * time.Second))) // a fault of a few seconds at least
	r.mustRun(t)
	if last := s.ledger().LastLSN(); last != 0 {
		t.Errorf("the ledger holds %d records while the journal could not be read", last)
	}
	m.Heal()
	waitUntil(t, "the flusher to read again", func() bool { return s.snapshot().waiting["journal_unreadable"] == "" })
	load.stop()
	waitStored(t, es, backlog, load)
	r.shutdown(t)
	if n, want := es.Count(), len(backlog.acked)+load.count(); n != want {
		t.Errorf("%d documents, want each of the %d acknowledged records once", n, want)
	}
	log := lb.String()
	for msg, n := range map[string]int{"reading the journal failed": 1, "reading the journal works again": 1} {
		if got := strings.Count(log, msg); got != n {
			t.Errorf("%q logged %d times, want %d", msg, got, n)
		}
	}
}

// TestLedgerDeviceFailsWholly makes every read, write and fsync of the
// ledger's device fail for a few seconds while Beats clients send: the
// ledger is poisoned and reopened, the output waits, logpond keeps running
// and acknowledging from the journal, and every acknowledged event reaches
// Elasticsearch exactly once.
func TestLedgerDeviceFailsWholly(t *testing.T) {
	skipLong(t)
	es := startES(t, estest.Options{Seed: 24})
	m := faultfs.Mount(t)
	r := start(t, ledgerFaultConfig(t, es, m))
	load := startBeatsLoad(t, r.s.BeatsAddr().String(), 0, 4)
	waitUntil(t, "deliveries before the fault", func() bool { return es.Count() > 2000 })
	m.Fail(faultfs.Fault{Ops: faultfs.Read | faultfs.Write | faultfs.Fsync})
	failedAt := time.Now()
	waitUntil(t, "the ledger to fail", func() bool { r.mustRun(t); return r.s.snapshot().waiting["ledger_failed"] != "" })
	held := load.count()
	waitUntil(t, "acknowledgements while the ledger's device fails", func() bool { r.mustRun(t); return load.count() > held+2000 })
	time.Sleep(time.Until(failedAt.Add(4 * time.Second))) // a fault of a few seconds at least
	r.mustRun(t)
	t.Logf("%d events acknowledged during the fault (%d operations failed)", load.count()-held, m.Failures())
	m.Heal()
	waitUntil(t, "the ledger to recover", func() bool { r.mustRun(t); return strings.Contains(r.log.String(), "ledger recovered") })
	load.end()
	waitDeliveredOnce(t, es, load)
	r.shutdown(t)
}

// TestStartWhileTheDeadLettersAreUnreadable starts logpond while the
// device fails reads of the dead-letter store's file (beside the ledger,
// which reads): it starts, acknowledges into the journal with the ledger
// waiting for its dead-letter store (ledger_failed), and once reads work
// again opens both and delivers everything.
func TestStartWhileTheDeadLettersAreUnreadable(t *testing.T) {
	es := startES(t, estest.Options{Seed: 25})
	// One event Elasticsearch refuses for good makes a dead letter.
	es.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, source []byte) (int, string, string, bool) {
		return 400, "mapper_parsing_exception", "refused by the test", strings.Contains(string(source), `"writer":7,"seq":0,`)
	}})
	m := faultfs.Mount(t)
	cfg := ledgerFaultConfig(t, es, m)
	r := start(t, cfg)
	if _, err := appendVia(context.Background(), r.s, crashRecord(7, 0)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the dead letter", func() bool { return r.s.deadLetters(conf.LegacyOutputName).UsedBytes() > 0 })
	r.shutdown(t)
	files, err := filepath.Glob(filepath.Join(m.Dir, "ledger", "dlq", "elasticsearch", "*.dlq"))
	if err != nil || len(files) == 0 {
		t.Fatalf("dead-letter files %v: %v", files, err)
	}
	rel, _ := filepath.Rel(m.Dir, files[len(files)-1])
	m.Fail(faultfs.Fault{Ops: faultfs.Read, Path: rel})

	r = start(t, cfg)
	if st := r.s.snapshot(); !strings.Contains(st.waiting["ledger_failed"], "dlq") || r.s.ledger() != nil {
		t.Errorf("with the dead letters unreadable: ledger_failed %q, ledger open %v", st.waiting["ledger_failed"], r.s.ledger() != nil)
	}
	load := startAckLoad(t, r.s, 1)
	waitUntil(t, "acknowledgements while the dead letters are unreadable", func() bool { r.mustRun(t); return load.count() > 1000 })
	m.Heal()
	waitUntil(t, "the ledger to open", func() bool { r.mustRun(t); return r.s.ledger() != nil })
	load.stop()
	waitStored(t, es, load)
	r.shutdown(t)
}

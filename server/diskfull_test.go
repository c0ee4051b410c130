package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/powerloss"
	"github.com/logpond/logpond/journal"
)

// TestJournalDiskFull fills the journal's file system under load: appends
// fail (nothing is acknowledged that is not durable), the failure is
// logged once, nothing crashes; once space is freed the server reopens the
// journal by itself and acknowledges again, and every record acknowledged
// before, during and after reaches Elasticsearch.
func TestJournalDiskFull(t *testing.T) {
	es := startES(t, estest.Options{Seed: 11})
	jdisk := powerloss.New(t, 64<<20)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(jdisk.Dir, "journal")
	cfg.Journal.MaxBytes = 1 << 30 // larger than the device: the device fills first
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	r := start(t, cfg)

	// Fill the journal's device, then free 256 KiB: less than a segment.
	filler := jdisk.Fill("filler", 256<<10)

	var mu sync.Mutex
	acked := map[string]bool{}
	var failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				rec := crashRecord(w, seq)
				if _, err := appendVia(context.Background(), r.s, rec); err != nil {
					if !errors.Is(err, journal.ErrPoisoned) && !errors.Is(err, journal.ErrClosed) {
						t.Errorf("append: %v", err)
						return
					}
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked[payloadKey(rec)] = true
				mu.Unlock()
			}
		})
	}
	waitUntil(t, "appends to fail on the full device", func() bool { return failures.Load() > 0 })
	time.Sleep(1500 * time.Millisecond) // several reopen attempts while still full
	mu.Lock()
	ackedWhileFull := len(acked)
	mu.Unlock()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the journal to recover", func() bool { return strings.Contains(r.log.String(), "journal recovered") })
	waitUntil(t, "appends after recovery", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) > ackedWhileFull+1000 })
	close(stop)
	wg.Wait()
	waitUntil(t, "every acknowledged record in Elasticsearch", func() bool {
		have := map[string]bool{}
		for _, d := range es.Docs() {
			have[gjson.GetBytes(d.Source, "writer").String()+"/"+gjson.GetBytes(d.Source, "seq").String()] = true
		}
		mu.Lock()
		defer mu.Unlock()
		for p := range acked {
			if !have[p] {
				return false
			}
		}
		return true
	})
	r.shutdown(t)
	log := r.log.String()
	if n := strings.Count(log, "journal failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, log)
	}
	if n := strings.Count(log, "journal recovered"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
	t.Logf("%d records acknowledged, %d appends refused while the device was full", len(acked), failures.Load())
}

// ledgerDiskFullConfig puts the ledger on a small ext4 of its own and the
// journal (small, so that journal-full backpressure shows) elsewhere, with
// the Elasticsearch output on es.
func ledgerDiskFullConfig(t *testing.T, es *estest.Server, ldisk *powerloss.Disk, root string) *conf.Config {
	cfg := crashConfig(root)
	cfg.Ledger.Dir = filepath.Join(ldisk.Dir, "ledger")
	cfg.Ledger.MaxBytes = 1 << 30 // larger than the device: the device fills first
	cfg.Journal.MaxBytes = 8 << 20
	cfg.Input.Beats.MaxEventBytes = 1 << 20 // what the small journal admits
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	return cfg
}

// ackLoad appends records made by crashRecord from 4 writers until stop is called,
// remembering which were acknowledged. An append may wait (backpressure)
// but must not fail: a failed ledger is not a failed journal.
type ackLoad struct {
	mu     sync.Mutex
	acked  map[string]bool
	cancel context.CancelFunc // ends the appends (waiting ones too)
	wg     sync.WaitGroup
}

func startAckLoad(t *testing.T, s *Server, round int) *ackLoad {
	ctx, cancel := context.WithCancel(context.Background())
	a := &ackLoad{acked: map[string]bool{}, cancel: cancel}
	for w := range 4 {
		a.wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				rec := crashRecord(round*10+w, seq)
				if _, err := appendVia(ctx, s, rec); err != nil {
					if ctx.Err() == nil {
						t.Errorf("append: %v", err)
					}
					return
				}
				a.mu.Lock()
				a.acked[payloadKey(rec)] = true
				a.mu.Unlock()
			}
		})
	}
	return a
}

// stop ends the appends and waits for the writers.
func (a *ackLoad) stop() {
	a.cancel()
	a.wg.Wait()
}

func (a *ackLoad) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

// waitStored waits until every acknowledged record is in Elasticsearch.
func waitStored(t *testing.T, es *estest.Server, loads ...*ackLoad) {
	t.Helper()
	waitUntil(t, "every acknowledged record in Elasticsearch", func() bool {
		have := map[string]bool{}
		for _, d := range es.Docs() {
			have[gjson.GetBytes(d.Source, "writer").String()+"/"+gjson.GetBytes(d.Source, "seq").String()] = true
		}
		for _, a := range loads {
			a.mu.Lock()
			for p := range a.acked {
				if !have[p] {
					a.mu.Unlock()
					return false
				}
			}
			a.mu.Unlock()
		}
		return true
	})
}

// TestLedgerDiskFull fills the ledger's file system under load: the ledger
// fails, the failure is logged once and nothing crashes; the journal keeps
// acknowledging until it is full, then appends wait (backpressure, no
// error) and /readyz says why; once space is freed the server reopens the
// ledger by itself, restarts the output, and every record acknowledged
// before, during and after reaches Elasticsearch.
func TestLedgerDiskFull(t *testing.T) {
	es := startES(t, estest.Options{Seed: 12})
	ldisk := powerloss.New(t, 64<<20)
	cfg := ledgerDiskFullConfig(t, es, ldisk, t.TempDir())
	cfg.Admin.Listen = "127.0.0.1:0"
	r := start(t, cfg)
	filler := ldisk.Fill("filler", 0)

	load := startAckLoad(t, r.s, 0)
	waitUntil(t, "the ledger to fail on the full device", func() bool { return strings.Contains(r.log.String(), "ledger failed") })
	waitUntil(t, "journal-full backpressure", func() bool { return r.s.snapshot().waiting["journal_full"] != "" })
	st := r.s.snapshot()
	if st.waiting["ledger_failed"] == "" || st.ledgerErr == nil || !errors.Is(st.ledgerErr, unix.ENOSPC) {
		t.Errorf("while the ledger is down: ledger_failed %q, err %v", st.waiting["ledger_failed"], st.ledgerErr)
	}
	code, body := httpGet(t, "http://"+r.s.AdminAddr().String()+"/readyz")
	if code != 503 || !strings.Contains(body, "ledger_failed") || !strings.Contains(body, "journal_full") {
		t.Errorf("/readyz while the ledger is down: %d %q", code, body)
	}
	if code, _ := httpGet(t, "http://"+r.s.AdminAddr().String()+"/healthz"); code != 200 {
		t.Errorf("/healthz while the ledger is down: %d, want 200 (acknowledging goes on)", code)
	}
	// Appends admitted before the journal filled may still complete (their
	// space was reserved); once those are done, nothing more may be.
	held := load.count()
	waitUntil(t, "appends admitted before the journal filled to complete", func() bool {
		time.Sleep(300 * time.Millisecond)
		n := load.count()
		settled := n == held
		held = n
		return settled
	})
	time.Sleep(3500 * time.Millisecond) // several reopen attempts while still full
	if n := load.count(); n != held {
		t.Errorf("%d records acknowledged while the journal was full", n-held)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the ledger to recover", func() bool { return strings.Contains(r.log.String(), "ledger recovered") })
	waitUntil(t, "appends after recovery", func() bool { return load.count() > held+1000 })
	if w := r.s.snapshot().waiting; w["ledger_failed"] != "" {
		t.Errorf("after recovery: ledger_failed %q", w["ledger_failed"])
	}
	load.stop()
	waitStored(t, es, load)
	r.shutdown(t)
	log := r.log.String()
	if n := strings.Count(log, "ledger failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, log)
	}
	if n := strings.Count(log, "ledger recovered"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
	// While the device was full, attempts waited for space instead of
	// reopening (and restarting the output) only to fail again.
	if !strings.Contains(log, "free on the ledger's device") {
		t.Errorf("no reopen attempt waited for space:\n%s", log)
	}
	if n := strings.Count(log, "ledger reopened"); n != 1 {
		t.Errorf("the ledger was reopened %d times, want once, after space was freed", n)
	}
	t.Logf("%d records acknowledged, %d of them before the journal filled; %d reopens", load.count(), held, strings.Count(log, "ledger reopened"))
}

// TestLedgerDiskFullStop stops logpond while its ledger is down: Run
// returns nil (the journal keeps what the ledger lacks), and the next start,
// with space back, moves it all to the ledger and to Elasticsearch.
func TestLedgerDiskFullStop(t *testing.T) {
	es := startES(t, estest.Options{Seed: 13})
	ldisk := powerloss.New(t, 64<<20)
	root := t.TempDir()
	cfg := ledgerDiskFullConfig(t, es, ldisk, root)
	r := start(t, cfg)
	filler := ldisk.Fill("filler", 0)
	load := startAckLoad(t, r.s, 0)
	waitUntil(t, "the ledger to fail on the full device", func() bool { return strings.Contains(r.log.String(), "ledger failed") })
	waitUntil(t, "acknowledgements while the ledger is down", func() bool { return load.count() > 1000 })
	// Stop with appends waiting on the full journal: they end with the
	// stop, and only the acknowledged count.
	load.cancel()
	r.shutdown(t)
	load.stop()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r = start(t, cfg)
	waitStored(t, es, load)
	r.shutdown(t)
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// payloadKey is "writer/seq" of a crashRecord.
func payloadKey(rec []byte) string {
	i := strings.Index(string(rec), `{"writer":`)
	ev := rec[i:]
	return gjson.GetBytes(ev, "writer").String() + "/" + gjson.GetBytes(ev, "seq").String()
}

// waitUntil polls cond; the bound only guards against a hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStopWithoutCursorWriteIsClean: when the output cannot persist its
// cursor (its file cannot be written, as on a full device), a stop still
// exits cleanly with a warning, and the next start resends the events
// after the persisted cursor under the same ids: none is stored twice.
func TestStopWithoutCursorWriteIsClean(t *testing.T) {
	es := startES(t, estest.Options{Seed: 5})
	cfg := crashConfig(t.TempDir())
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	r := start(t, cfg)
	appendN(t, r.s.journal(), 1, 20)
	cursor := func() uint64 { c, _ := r.s.ledger().Cursor("elasticsearch"); return c }
	waitUntil(t, "20 documents and the cursor", func() bool { return es.Count() == 20 && cursor() == 20 })

	// A non-empty directory where the cursor's temporary file goes: every
	// cursor write fails from now on.
	block := filepath.Join(cfg.Ledger.Dir, "cursors", "elasticsearch.cursor.tmp")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	appendN(t, r.s.journal(), 21, 20)
	waitUntil(t, "40 documents", func() bool { return es.Count() == 40 })
	r.shutdown(t) // fails the test if Run returns an error
	if !strings.Contains(r.log.String(), "without persisting its last cursor") {
		t.Errorf("no warning about the cursor:\n%s", r.log.String())
	}

	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	conflicts := es.Stats().Conflicts409
	r = start(t, cfg)
	waitUntil(t, "the resent events and the cursor", func() bool { return es.Stats().Conflicts409 > conflicts && cursor() == 40 })
	r.shutdown(t)
	if n := es.Count(); n != 40 {
		t.Fatalf("%d documents after the resend, want 40", n)
	}
}

// appendVia appends rec through the path the input uses (stores.Submit)
// and waits until it is durable.
func appendVia(ctx context.Context, s *Server, rec []byte) (uint64, error) {
	d, err := s.stores.Submit(ctx, rec)
	if err != nil {
		return 0, err
	}
	return d.Wait()
}

// TestFullLedgerResumes fills a small ledger (1 MiB segments, 4 MiB in
// all) while Elasticsearch is down, until the journal is full too and
// appends wait. When Elasticsearch comes back everything moves again by
// itself: the flusher had synced what it appended before it stopped for
// space, so the output can drain it, retention can delete segments and
// the flusher can go on; acknowledgements resume and every acknowledged
// record reaches Elasticsearch.
func TestFullLedgerResumes(t *testing.T) {
	es := startES(t, estest.Options{Seed: 14})
	cfg := crashConfig(t.TempDir())
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes = 1<<20, 4<<20
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 1<<20, 8<<20
	cfg.Journal.MaxGroupBytes = 256 << 10   // records of at most 512 KiB: two fit a ledger segment
	cfg.Input.Beats.MaxEventBytes = 1 << 20 // what the small journal admits
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	if err := es.Pause(); err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg)
	load := startAckLoad(t, r.s, 0)
	waitUntil(t, "the ledger to fill", func() bool { return r.s.snapshot().waiting["ledger_full"] != "" })
	waitUntil(t, "journal-full backpressure", func() bool { return r.s.snapshot().waiting["journal_full"] != "" })
	if l := r.s.ledger(); l.AppendedLSN() != l.LastLSN() {
		t.Errorf("the full ledger holds unsynced records (appended %d, synced %d): no output can pass them", l.AppendedLSN(), l.LastLSN())
	}
	held := load.count()
	if err := es.Resume(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "acknowledgements to resume once Elasticsearch is back", func() bool { return load.count() > held+5000 })
	load.stop()
	waitStored(t, es, load)
	r.shutdown(t)
}

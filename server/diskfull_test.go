package server

import (
	"context"
	"errors"
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
	"github.com/logpond/logpond/internal/powerloss"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/output/estest"
)

// TestJournalDiskFull fills the journal's file system under load: appends
// fail (nothing is acknowledged that is not durable), the failure is
// logged once, nothing crashes; once space is freed the server reopens the
// journal by itself and acknowledges again, and every record acknowledged
// before, during and after reaches Elasticsearch.
func TestJournalDiskFull(t *testing.T) {
	es, err := estest.Start(estest.Options{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	jdisk := powerloss.New(t, 64<<20)
	cfg := crashConfig(t.TempDir())
	cfg.Journal.Dir = filepath.Join(jdisk.Dir, "journal")
	cfg.Journal.MaxBytes = 1 << 30 // larger than the device: the device fills first
	o := &cfg.Output.Elasticsearch
	o.Enabled, o.Hosts = true, []string{es.URL()}
	o.FlushInterval, o.RetryInitialInterval, o.RetryMaxInterval = conf.Duration(10*time.Millisecond), conf.Duration(2*time.Millisecond), conf.Duration(50*time.Millisecond)
	r := start(t, cfg)

	// Fill the journal's device, then free 256 KiB: less than a segment.
	filler := filepath.Join(jdisk.Dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size - 256<<10); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

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
				if _, err := (journalAppender{r.s}).Append(context.Background(), rec); err != nil {
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

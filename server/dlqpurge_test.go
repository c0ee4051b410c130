package server

import (
	"encoding/json"
	"fmt"
	"github.com/logpond/logpond/conf"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/output/dlq"
)

// postPurge sends POST /api/dlq/purge with the query q (and the request
// header unless bare) and returns the status and body.
func postPurge(t *testing.T, base string, q url.Values, bare bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/dlq/purge?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bare {
		req.Header.Set(PurgeRequestHeader, "test")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestDLQPurgeWhileRunning streams events that Elasticsearch rejects (400:
// dead-lettered) while purges by time and by id run through the admin
// endpoint: the running output's store deletes files between its own
// Appends. Every event is dead-lettered, and each is then either purged
// (counted in the answers) or still in the store, which reads and reopens
// without damage. -race checks the locking.
func TestDLQPurgeWhileRunning(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 3})
	srv.SetFaults(estest.Faults{ItemHook: func(_, _, _ string, _ []byte) (int, string, string, bool) {
		return 400, "mapper_parsing_exception", "rejected by the test", true
	}})
	root := t.TempDir()
	cfg := pipelineConfig(t, root)
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Input.Beats.Listen = "127.0.0.1:0"
	cfg.Input.Beats.MaxEventBytes = 64 << 10
	es := &cfg.Output.Elasticsearch
	es.Enabled, es.Hosts = true, []string{srv.URL()}
	es.FlushInterval, es.RetryInitialInterval, es.RetryMaxInterval = 10e6, 1e6, 10e6
	es.DeadLetterMaxBytes = 8 << 20 // 2MiB files
	r := start(t, cfg)
	stopped := false
	defer func() {
		if !stopped {
			r.shutdown(t)
		}
	}()
	base := "http://" + r.s.AdminAddr().String()
	dir := deadLetterDir(cfg.Ledger.Dir, conf.LegacyOutputName)

	c, err := lj.SyncDial(r.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const batches, per = 30, 200
	sendDone := make(chan error, 1)
	go func() {
		for b := range batches {
			var data []any
			for i := range per {
				data = append(data, json.RawMessage(fmt.Sprintf(`{"message":"%d-%d %s"}`, b, i, strings.Repeat("x", 1000))))
			}
			if n, err := c.Send(data); err != nil || n != per {
				sendDone <- fmt.Errorf("batch %d: %d acknowledged: %v", b, n, err)
				return
			}
		}
		sendDone <- nil
	}()

	var mu sync.Mutex
	purged := 0
	purge := func(through string) {
		code, body := postPurge(t, base, url.Values{"through": {through}, "dir": {dir}}, false)
		if code != http.StatusOK {
			t.Errorf("purge through %s: %d %s", through, code, body)
			return
		}
		var p DLQPurged
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		purged += p.Entries
		mu.Unlock()
	}
	// Dead letters written and synced (the items metric counts a
	// rejection when the response arrives, before its dead letter is).
	dead := func() int { return int(r.s.legacyOutput().Stats().DeadLettered) }
	sending := true
	for round := 0; sending || dead() < batches*per; round++ {
		select {
		case err := <-sendDone:
			if err != nil {
				t.Fatal(err)
			}
			sending = false
		default:
		}
		if round%2 == 0 {
			purge(time.Now().UTC().Format(time.RFC3339Nano))
		} else if ps, err := readPositions(dir); err == nil && len(ps) > 0 {
			purge(ps[len(ps)/2].String())
		}
		time.Sleep(2 * time.Millisecond) // pacing only; the test's timeout bounds the loop
	}
	if n := dead(); n != batches*per {
		t.Fatalf("%d events dead-lettered, want %d", n, batches*per)
	}
	ps, err := readPositions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if purged == 0 || purged+len(ps) != batches*per {
		t.Fatalf("%d purged + %d kept, want %d in all (and some purged)", purged, len(ps), batches*per)
	}
	c.Close()
	stopped = true
	r.shutdown(t)
	// The store reopens: nothing the purges did is damage.
	s, err := dlq.Open(dir, dlq.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func readPositions(dir string) ([]dlq.Pos, error) {
	var ps []dlq.Pos
	err := dlq.Scan(dir, func(p dlq.Pos, _ dlq.Entry) error { ps = append(ps, p); return nil })
	return ps, err
}

// TestDLQPurgeRefusals: the endpoint wants its header, a through it can
// read, an id the store has, its own store, and a store at all.
func TestDLQPurgeRefusals(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 4})
	root := t.TempDir()
	cfg := pipelineConfig(t, root)
	cfg.Admin.Listen = "127.0.0.1:0"
	es := &cfg.Output.Elasticsearch
	es.Enabled, es.Hosts = true, []string{srv.URL()}
	r := start(t, cfg)
	defer r.shutdown(t)
	base := "http://" + r.s.AdminAddr().String()
	now := time.Now().UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		q    url.Values
		bare bool
		code int
		want string
	}{
		{"no header", url.Values{"through": {now}}, true, http.StatusForbidden, PurgeRequestHeader},
		{"no through", url.Values{}, false, http.StatusBadRequest, "want a dead letter's id"},
		{"bad through", url.Values{"through": {"yesterday"}}, false, http.StatusBadRequest, "RFC 3339"},
		{"unknown id", url.Values{"through": {"00000000000000000007.dlq:20"}}, false, http.StatusNotFound, "no such dead letter"},
		{"another store", url.Values{"through": {now}, "dir": {root}}, false, http.StatusConflict, "the dead-letter store of output.elasticsearch is"},
		{"unknown output", url.Values{"through": {now}, "output": {"siem"}}, false, http.StatusNotFound, `no Elasticsearch output named "siem"`},
		{"by time", url.Values{"through": {now}, "dir": {deadLetterDir(cfg.Ledger.Dir, conf.LegacyOutputName)}}, false, http.StatusOK, `"files":0`},
	} {
		code, body := postPurge(t, base, tc.q, tc.bare)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %q, want %d and %q", tc.name, code, body, tc.code, tc.want)
		}
	}
	if code, _ := get(t, base+"/api/dlq/purge"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", code)
	}

	// Without the output there is no store to purge here.
	cfg2 := pipelineConfig(t, t.TempDir())
	cfg2.Admin.Listen = "127.0.0.1:0"
	r2 := start(t, cfg2)
	defer r2.shutdown(t)
	if code, body := postPurge(t, "http://"+r2.s.AdminAddr().String(), url.Values{"through": {now}}, false); code != http.StatusConflict || !strings.Contains(body, "runs no Elasticsearch output") {
		t.Errorf("output disabled: %d %q", code, body)
	}
}

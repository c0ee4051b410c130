package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
)

// TestSummaryLine: every summary_interval one INFO line sums up the
// pipeline; over the lines, events in and out add up to what was sent and
// stored, and the lag and fill are there.
func TestSummaryLine(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 3})
	cfg := lagConfig(t, srv.URL())
	cfg.Log.SummaryInterval = conf.Duration(20 * time.Millisecond)
	r := start(t, cfg)
	defer r.shutdown(t)
	c, err := lj.SyncDial(r.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	const per = 100
	var data []interface{}
	for i := range per {
		data = append(data, json.RawMessage(fmt.Sprintf(`{"@metadata":{"beat":"filebeat","version":"9.3.0"},"message":"%d"}`, i)))
	}
	if n, err := c.Send(data); err != nil || n != per {
		t.Fatalf("acked %d: %v", n, err)
	}
	c.Close()
	line := regexp.MustCompile(`msg="pipeline summary" interval=20ms events_in=(\d+) events_out=(\d+) events_dead=0 items_retried=\d+ requests_failed=\d+ output\.elasticsearch\.events_out=\d+ output\.elasticsearch\.lag_events=\d+ output\.elasticsearch\.lag_age=\S+ violations=0 journal_fill=[0-9.]+% ledger_fill=[0-9.]+% ledger_ratio=[0-9]\.\d{3} connections=\d+`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		in, out := 0, 0
		for _, m := range line.FindAllStringSubmatch(r.log.String(), -1) {
			a, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[2])
			in, out = in+a, out+b
		}
		if in == per && out == per {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("summary lines add up to %d events in, %d out; want %d each:\n%s", in, out, per, r.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

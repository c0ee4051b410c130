package elasticsearch

import (
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/record"
)

// TestHungClusterIsSeenBeforeTheTimeout: a cluster that takes bulk
// requests and never answers shows as waiting once a request is
// unanswered past HungAfter, long before the request times out (an hour
// here), with the oldest request's time in Gauges; and the outage a
// timeout then starts counts from when the unanswered request was sent.
func TestHungClusterIsSeenBeforeTheTimeout(t *testing.T) {
	t.Run("waiting", func(t *testing.T) {
		out, _ := startAgainstHungCluster(t, func(o *Options) { o.HungAfter, o.Timeout = 200*time.Millisecond, time.Hour })
		waitFor(t, "the hung cluster in Waiting", func() bool { return strings.Contains(out.Waiting(), "has not answered a bulk request") })
		if out.Gauges().OldestRequest.IsZero() {
			t.Error("Gauges show no request in flight")
		}
	})
	t.Run("outage from the request", func(t *testing.T) {
		out, sent := startAgainstHungCluster(t, func(o *Options) { o.Timeout = 300 * time.Millisecond })
		waitFor(t, "the request's timeout", func() bool { return strings.Contains(out.Waiting(), "failing requests since") })
		out.mu.Lock()
		began := out.down.Began()
		out.mu.Unlock()
		if began.After(sent) {
			t.Errorf("the outage began at %s, after the request that went unanswered was sent (%s)", began, sent)
		}
	})
}

// startAgainstHungCluster runs an output with the default settings, as
// mod changes them, against a cluster that never answers bulk requests,
// and returns it once its first request is in flight, with when that was
// sent.
func startAgainstHungCluster(t *testing.T, mod func(*Options)) (*Output, time.Time) {
	cfg := conf.Default()
	l, d := defaultStores(t, cfg)
	srv, err := estest.Start(estest.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hung := startHungBulk(t, srv, false)
	for i := range 10 {
		rec, err := record.Encode(nil, time.Now(), [][]byte{filebeatEvent(i, "")})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(uint64(i+1), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	opts := defaultOptions(t, cfg, hung.URL(), d)
	opts.FlushInterval = 10 * time.Millisecond
	mod(&opts)
	out := startOutput(t, l, opts)
	waitFor(t, "a request in flight", func() bool { return !out.Gauges().OldestRequest.IsZero() })
	return out, out.Gauges().OldestRequest
}

// TestRecoveryIsProbed: a cluster that was down comes back while the
// events' retry backoff still has minutes to run (retry_initial_interval
// two minutes here): a probe notices it within about a second, and the
// events go at once rather than when the backoff ends.
func TestRecoveryIsProbed(t *testing.T) {
	r := newRig(t, estest.Options{})
	for i := range 10 {
		r.store(time.Now(), filebeatEvent(i, ""))
	}
	if err := r.es.Pause(); err != nil {
		t.Fatal(err)
	}
	run := r.start(r.options(func(o *Options) { o.RetryInitial, o.RetryMax = 2*time.Minute, time.Hour }))
	waitFor(t, "the outage", func() bool { return strings.Contains(run.Out.Waiting(), "failing requests since") })
	if err := r.es.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every event after the cluster came back", func() bool { return r.es.Count() == 10 })
	run.Stop(t)
	r.checkAllStoredOnce(t)
}

package elasticsearch

import (
	"context"
	"time"
)

// probeInterval is how often a cluster that is failing every request is
// asked, with a GET / (no events), whether it answers again. The retry
// backoff of the events themselves grows up to retry_max_interval (a
// minute by default), which is how long a cluster that came back would
// otherwise wait to be noticed; one small request a second costs the
// cluster nothing, and the events go again as soon as it answers.
const probeInterval = time.Second

// probeWhileDown asks the cluster, every interval while the output is in
// an outage (every request failing as a whole), whether any of its hosts
// answers GET /; at the first answer it lifts the outage's gate and lets
// the earliest waiting retry go at once, so the output resumes without
// waiting out the backoff. It returns when ctx ends.
func (o *Output) probeWhileDown(ctx context.Context, every time.Duration, ctl *controller, rq *retryQueue) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o.mu.Lock()
		down := o.down.Active()
		o.mu.Unlock()
		if !down || !o.cluster.answers(ctx) {
			continue
		}
		o.log.Info("elasticsearch answers a probe again: retrying the waiting events now")
		now := time.Now()
		ctl.openGate()
		rq.probe(now)
	}
}

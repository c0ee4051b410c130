package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logpond/logpond/internal/testkit/kafkatest"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// kafkaTopic and kafkaPartitions are the topic the Kafka part drains
// into: one broker, six partitions.
const (
	kafkaTopic      = "logs"
	kafkaPartitions = 6
)

// kafkaProfiles are the Kafka drains, in the order they run: each codec
// with exactly-once (the default), then the default codec without.
var kafkaProfiles = []struct {
	codec       string
	exactlyOnce bool
}{
	{"none", true}, {"snappy", true}, {"lz4", true}, {"zstd", true}, {"gzip", true},
	{"none", false}, {"gzip", false},
}

// kafkaRun is one drain of the report's backlog into Kafka (or, for the
// baseline, into the Elasticsearch sink).
type kafkaRun struct {
	Target      string // "elasticsearch" or "kafka"
	Codec       string
	ExactlyOnce bool
	Events      int64
	Elapsed     time.Duration // from logpond's start until every event was delivered
	CPU         time.Duration // logpond's CPU time over Elapsed
	PeakRSS     int64
	Formula     int64
	Batches     int64 // Kafka: batches (transactions) produced
	Rounds      int   // the runs this row is the median of
}

func (r kafkaRun) EventsPerSec() float64 { return float64(r.Events) / r.Elapsed.Seconds() }
func (r kafkaRun) CPUPerEvent() float64  { return r.CPU.Seconds() * 1e6 / float64(r.Events) }

// kafkaRounds is how many times each drain runs, the drains of a round
// one after the other: a drain of a few seconds on a shared machine is
// noisy, so the table shows each row's median.
const kafkaRounds = 3

// kafka drains the report's backlog (drain-events events of drain-size
// bytes) into the Elasticsearch sink and into a fresh in-process Kafka
// cluster per Kafka profile, kafkaRounds times each, and checks, for each
// Kafka drain, that a read_committed consumer reads every event once. It
// returns each row's median (largest peak RSS), the baseline first.
func (b *bench) kafka(ctx context.Context) ([]kafkaRun, error) {
	events, saved, err := b.savedBacklog(ctx, "kafka-saved", b.o.drainEvents, b.o.drainSize, lumberload.ShapeClassic)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(saved)
	restore := func() error {
		if err := b.fresh(false); err != nil {
			return err
		}
		return restoreStores(saved, b.journalDir(), b.ledgerDir())
	}
	rows := make([][]kafkaRun, 1+len(kafkaProfiles))
	for range kafkaRounds {
		if err := restore(); err != nil {
			return nil, err
		}
		es, err := b.drainOnce(ctx, "kafka-baseline", "every item accepted", events, drainFaults{}, nil)
		if err != nil {
			return nil, err
		}
		rows[0] = append(rows[0], kafkaRun{Target: "elasticsearch", Events: events, Elapsed: es.Elapsed, CPU: es.CPU, PeakRSS: es.PeakRSS, Formula: es.Formula})
		fmt.Fprintf(b.log, "kafka baseline: elasticsearch %d events in %.2f s, CPU %.2f s, peak RSS %d MiB\n", events, es.Elapsed.Seconds(), es.CPU.Seconds(), es.PeakRSS>>20)
		for i, pr := range kafkaProfiles {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := restore(); err != nil {
				return nil, err
			}
			r, err := b.kafkaOnce(ctx, pr.codec, pr.exactlyOnce, events)
			if err != nil {
				return nil, err
			}
			rows[1+i] = append(rows[1+i], r)
			fmt.Fprintf(b.log, "kafka %-6s exactly_once=%-5v %d events in %.2f s (%.0f/s), CPU %.2f s (%.2f µs/event), peak RSS %d MiB, %d batches\n",
				r.Codec, r.ExactlyOnce, r.Events, r.Elapsed.Seconds(), r.EventsPerSec(), r.CPU.Seconds(), r.CPUPerEvent(), r.PeakRSS>>20, r.Batches)
		}
	}
	out := make([]kafkaRun, len(rows))
	for i, rs := range rows {
		m := rs[0]
		el := make([]time.Duration, len(rs))
		cpu := make([]time.Duration, len(rs))
		for j, r := range rs {
			el[j], cpu[j] = r.Elapsed, r.CPU
			m.PeakRSS = max(m.PeakRSS, r.PeakRSS)
		}
		m.Elapsed, m.CPU, m.Rounds = median(el), median(cpu), len(rs)
		out[i] = m
	}
	return out, nil
}

// kafkaOnce drains the restored backlog into a fresh one-broker cluster
// with codec, with or without exactly-once, and checks what Kafka holds.
func (b *bench) kafkaOnce(ctx context.Context, codec string, exactlyOnce bool, events int64) (kafkaRun, error) {
	r := kafkaRun{Target: "kafka", Codec: codec, ExactlyOnce: exactlyOnce, Events: events}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(kafkaPartitions, kafkaTopic))
	if err != nil {
		return r, err
	}
	defer cluster.Close()
	name := fmt.Sprintf("kafka-%s-eo-%v", codec, exactlyOnce)
	cfg := filepath.Join(b.work, name+".toml")
	text := fmt.Sprintf(`[journal]
dir = %q
[ledger]
dir = %q
max_bytes = "%dMiB"
[input.beats]
listen = "127.0.0.1:0"
[output.kafka.k]
hosts = ["%s"]
topic = %q
compression = %q
exactly_once = %v
[admin]
listen = "127.0.0.1:0"
[log]
level = "info"
`, b.journalDir(), b.ledgerDir(), b.o.ledgerImage*3/4>>20, strings.Join(cluster.ListenAddrs(), `", "`), kafkaTopic, codec, exactlyOnce)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	start := time.Now()
	p, admin, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	limit := start.Add(b.o.drainLimit)
	for {
		m, err := scrape(admin)
		if err == nil && int64(m["logpond_output_events_delivered_total"]) >= events {
			r.Batches = int64(m["logpond_output_requests_total"])
			break
		}
		if ctx.Err() != nil || time.Now().After(limit) {
			p.Stop()
			return r, fmt.Errorf("%s: not every event delivered after %s (%v)\n%s", name, time.Since(start).Round(time.Second), err, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Elapsed = time.Since(start)
	r.PeakRSS, r.CPU = p.PeakRSS(), p.CPU()
	if err := p.Stop(); err != nil {
		return r, fmt.Errorf("%s: stop: %w\n%s", name, err, p.Output())
	}
	if err := checkKafka(ctx, cluster.ListenAddrs(), events); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// checkKafka reads the topic with read_committed and checks that it holds
// events records, each ledger event (its logpond-id header) once.
func checkKafka(ctx context.Context, hosts []string, events int64) error {
	cl, err := kafkatest.ReadCommitted(hosts, kafkaTopic)
	if err != nil {
		return err
	}
	defer cl.Close()
	ids := make(map[string]struct{}, events)
	var records int64
	idle := time.Now()
	for time.Since(idle) < 3*time.Second && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			idle = time.Now()
			records++
			for _, h := range rec.Headers {
				if h.Key == "logpond-id" {
					ids[string(h.Value)] = struct{}{}
				}
			}
		})
		if records >= events && time.Since(idle) > 500*time.Millisecond {
			break
		}
	}
	if records != events || int64(len(ids)) != events {
		return fmt.Errorf("a read_committed consumer read %d records with %d distinct ids, for %d events: not exactly once", records, len(ids), events)
	}
	return nil
}

// kafkaMarkdown renders the Kafka section of runs (the baseline first).
func kafkaMarkdown(r *report) string {
	runs, o := r.Kafka, r.Opts
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Kafka: the backlog drained into Kafka\n\n")
	if len(runs) == 0 {
		return b.String()
	}
	p("The drain part's backlog (%d events of %d B, classic Filebeat events) drained into the in-process Elasticsearch sink (`estest`, every item accepted) and, per row, into a fresh in-process Kafka cluster (`kfake`: 1 broker, topic `%s` with %d partitions), each from a copy of the same stores, with the output's defaults besides `compression` and `exactly_once` (`bulk_max_size = 2048`: one transaction per 2048 events). Time runs from logpond's start until its `/metrics` count every event delivered (committed, for exactly-once); a read_committed consumer then reads every event once (as many records as events, each `logpond-id` once). The cluster runs in the benchmark's process, on the same two cores as logpond. Every row ran %d times, the rows one after the other in each round; the table shows the median drain time and CPU, and the largest peak RSS.\n\n",
		o.drainEvents, o.drainSize, kafkaTopic, kafkaPartitions, runs[0].Rounds)
	if o.parts != defaultOptions().parts {
		p("Measured %s, logpond %s, in a run of `-parts %s` on the same machine.\n\n", r.Date, r.Revision, o.parts)
	}
	base := runs[0]
	p("| destination | compression | exactly once | drain s | events/s | × Elasticsearch | logpond CPU µs/event | peak RSS MiB | formula MiB | batches |\n")
	p("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, run := range runs {
		codec, eo, batches := "–", "–", "–"
		if run.Target == "kafka" {
			codec, eo, batches = run.Codec, fmt.Sprint(run.ExactlyOnce), fmt.Sprint(run.Batches)
		}
		p("| %s | %s | %s | %.2f | %.0f | %.2f× | %.2f | %s | %s | %s |\n", run.Target, codec, eo, run.Elapsed.Seconds(), run.EventsPerSec(),
			run.EventsPerSec()/base.EventsPerSec(), run.CPUPerEvent(), mib(run.PeakRSS), mib(run.Formula), batches)
	}
	// Exactly-once's cost, per codec drained both ways.
	var costs []string
	for _, eo := range runs[1:] {
		for _, alo := range runs[1:] {
			if eo.ExactlyOnce && !alo.ExactlyOnce && eo.Codec == alo.Codec {
				cost := 1 - eo.EventsPerSec()/alo.EventsPerSec()
				costs = append(costs, fmt.Sprintf("%s %.0f%% (%.0f against %.0f events/s)", eo.Codec, 100*cost, eo.EventsPerSec(), alo.EventsPerSec()))
			}
		}
	}
	if len(costs) > 0 {
		p("\nExactly-once's cost, the share of the at-least-once rate it takes (negative: the exactly-once drain was the faster, within the noise): %s.", strings.Join(costs, "; "))
	}
	p("\n\nGoals: the Kafka drain at least as fast as the Elasticsearch drain of the same backlog, and exactly-once costing at most 15%% of the at-least-once rate.\n\n")
	p("Every row of this section: `sudo bin/benchreport -parts kafka -drain-events %d -drain-size %d -out /tmp/kafka.md` (after `make build`).\n\n", o.drainEvents, o.drainSize)
	return b.String()
}

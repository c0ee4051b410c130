package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

// The processing part's goals for the drain (docs/benchmarks.md states
// them beside the table): with the chain over without it.
const (
	goalProcRate = 0.8 // events/s, at least
	goalProcTime = 1.5 // drain time, at most
)

// procChain is the chain the drain runs with, the global [[processors]]
// of logpond's configuration: split the access line, drop the OPTIONS
// requests, rename the line's time, drop three fields Filebeat adds and
// label every event.
const procChain = `[[processors]]
[processors.dissect]
tokenizer = '%{source.ip} %{?ident} %{user.name} [%{ts}] "%{http.request.method} %{url.original} HTTP/%{http.version}" %{http.response.status_code|integer} %{http.response.body.bytes|long} "%{http.request.referrer}" "%{user_agent.original}"'
target_prefix = ""
[[processors]]
[processors.drop_event.when.equals]
"http.request.method" = "OPTIONS"
[[processors]]
[processors.rename]
fields = [{from = "ts", to = "apache.access.time"}]
ignore_missing = true
[[processors]]
[processors.drop_fields]
fields = ["agent.ephemeral_id", "host.mac", "ecs"]
ignore_missing = true
[[processors]]
[processors.add_fields]
target = "labels"
fields = {pipeline = "logpond"}
`

// procBenchPackage and procBenchName are the Go benchmark of the one-core
// figures: the chains in-process, on one event each.
const (
	procBenchPackage = "./output/processors/"
	procBenchName    = "BenchmarkProcessing"
)

// procBenches are BenchmarkProcessing's sub-benchmarks, in the order it
// runs them, each with what it runs and its goal in events/s on one core
// (0: none).
var procBenches = []struct {
	name, what string
	goal       float64
}{
	{"parse+serialize", "the 1 KiB event with the 200 B access line parsed and serialized again, its one processor's condition never matching: the floor every chain pays", 0},
	{"dissect+rename+drop_fields+add_fields", "the same event: dissect of the access line into 10 fields, rename, drop_fields of 3 fields, add_fields (the drain's chain below, without its drop_event)", 500000},
	{"grok-COMBINEDAPACHELOG", "the same event: grok with Logstash's `%{COMBINEDAPACHELOG}` on the access line", 100000},
	{"decode_json_fields", "a 1 KiB event whose message is a 300 B JSON log line: decode_json_fields of the message into `json`", 300000},
}

// procBenchRow is one sub-benchmark of BenchmarkProcessing: the medians
// over its counts.
type procBenchRow struct {
	Name, What   string
	Goal         float64 // events/s on one core; 0: none
	Counts       int     // the runs the medians are taken over
	NsPerEvent   float64 // ns/op: one op is one event through the chain
	EventsPerSec float64 // the benchmark's events/s metric
	AllocsPerOp  float64
	BytesPerOp   float64
}

// Met is whether the sub-benchmark has a goal and reached it.
func (r procBenchRow) Met() bool { return r.Goal > 0 && r.EventsPerSec >= r.Goal }

// procKind is what the chain does with an event of the backlog.
type procKind int

const (
	procMatched   procKind = iota // an access line the tokenizer splits
	procOptions                   // an OPTIONS request: split, then dropped
	procUnmatched                 // a line the tokenizer does not match: sent, marked
)

// procCensus is what the backlog holds, counted in the ledger.
type procCensus struct {
	Events, Options, Unmatched int64
	EventBytes, MessageBytes   int64 // over all events
}

// Kept is how many events the chain leaves to send.
func (c procCensus) Kept() int64 { return c.Events - c.Options }

// procRun is one drain of the backlog, with or without the chain.
type procRun struct {
	Chain   bool
	Round   int
	Events  int64         // the backlog
	Stored  int           // documents in the server at the end
	Elapsed time.Duration // from logpond's start until the server held every document
	// Stall is the longest the server's document count stood still after
	// its first rise (drainRun.Stall): the output's wait for more events
	// before the last request when that is not full.
	Stall   time.Duration
	CPU     time.Duration // logpond's CPU time (user and system) over Elapsed
	PeakRSS int64
	Formula int64
	// What the chain did, from the documents: events dropped, documents
	// with the line's fields, documents marked dissect_parsing_error.
	Dropped, Dissected, Flagged int64
}

// Net is the drain time without its longest stall: the events/s figure's
// time, as the wait before a backlog's last request depends on where the
// backlog ends, not on the events.
func (r procRun) Net() time.Duration { return r.Elapsed - r.Stall }

// EventsPerSec is the backlog's events (dropped ones included: the output
// finishes them too) over Net.
func (r procRun) EventsPerSec() float64 { return float64(r.Events) / r.Net().Seconds() }

// CPUPerEvent is logpond's CPU time per event of the backlog, in µs.
func (r procRun) CPUPerEvent() float64 { return r.CPU.Seconds() * 1e6 / float64(r.Events) }

// Name is the run's configuration: processing-none or processing-chain.
func (r procRun) Name() string { return procConfigName(r.Chain) }

func procConfigName(chain bool) string {
	if chain {
		return "processing-chain"
	}
	return "processing-none"
}

// procResult is what the processing part measured.
type procResult struct {
	GoVersion string // of the go command that built the benchmark
	Bench     []procBenchRow
	Census    procCensus
	Runs      []procRun // in the order they ran: none, chain, none, chain, …
}

// procSummary is the medians of the runs with or without the chain.
type procSummary struct {
	Elapsed, EventsPerSec, CPUPerEvent float64 // Elapsed in seconds
	PeakRSS                            int64   // the largest
	Runs                               int
}

// summary is the medians of the runs with the chain, or without.
func (p *procResult) summary(chain bool) procSummary {
	var el, rate, cpu []float64
	var s procSummary
	for _, r := range p.Runs {
		if r.Chain != chain {
			continue
		}
		el, rate, cpu = append(el, r.Elapsed.Seconds()), append(rate, r.EventsPerSec()), append(cpu, r.CPUPerEvent())
		s.PeakRSS = max(s.PeakRSS, r.PeakRSS)
		s.Runs++
	}
	s.Elapsed, s.EventsPerSec, s.CPUPerEvent = midMedian(el), midMedian(rate), midMedian(cpu)
	return s
}

// midMedian is the median of xs, the mean of the middle two for an even
// count (two rounds are the default); 0 for none.
func midMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// processing measures what the processors cost: BenchmarkProcessing on
// one core, then a backlog of o.procEvents access-log events drained into
// an estest server without processors and with procChain, interleaved
// o.procRounds times, checking after each drain what the server holds.
func (b *bench) processing(ctx context.Context) (*procResult, error) {
	res := &procResult{}
	var err error
	if res.Bench, res.GoVersion, err = b.procBench(ctx); err != nil {
		return nil, fmt.Errorf("go test -bench: %w", err)
	}
	census, saved, err := b.procBacklog(ctx)
	if err != nil {
		return nil, fmt.Errorf("backlog: %w", err)
	}
	defer os.RemoveAll(saved)
	res.Census = census
	for round := range b.o.procRounds {
		for _, chain := range []bool{false, true} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := b.fresh(false); err != nil {
				return nil, err
			}
			if err := restoreStores(saved, b.journalDir(), b.ledgerDir()); err != nil {
				return nil, err
			}
			r, err := b.procDrain(ctx, chain, census)
			if err != nil {
				return nil, err
			}
			r.Round = round + 1
			res.Runs = append(res.Runs, r)
			fmt.Fprintf(b.log, "processing %-16s round %d: %d events in %.2f s (longest stall %.2f s; %.0f/s without it), %d documents (%d dropped, %d dissected, %d flagged), logpond CPU %.2f s (%.2f µs/event), peak RSS %d MiB\n",
				r.Name(), r.Round, r.Events, r.Elapsed.Seconds(), r.Stall.Seconds(), r.EventsPerSec(), r.Stored, r.Dropped, r.Dissected, r.Flagged, r.CPU.Seconds(), r.CPUPerEvent(), r.PeakRSS>>20)
		}
	}
	return res, nil
}

// procBenchArgs are the arguments of the go test command of the one-core
// figures (run with GOMAXPROCS=1 from the repository's root).
func procBenchArgs(o options) []string {
	return []string{"test", "-run", "^$", "-bench", "^" + procBenchName + "$", "-benchtime", o.procBenchtime, "-count", strconv.Itoa(o.procCount), procBenchPackage}
}

// procBenchCommand is that command as a shell would take it.
func procBenchCommand(o options) string {
	args := procBenchArgs(o)
	for i, a := range args {
		if strings.ContainsAny(a, "^$ *?") {
			args[i] = "'" + a + "'"
		}
	}
	return "GOMAXPROCS=1 go " + strings.Join(args, " ")
}

// procBench runs BenchmarkProcessing with GOMAXPROCS=1 from the
// repository's root and returns each sub-benchmark's medians, with the
// version of the go command that ran it.
func (b *bench) procBench(ctx context.Context) ([]procBenchRow, string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, "", fmt.Errorf("the one-core figures need the go command: %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, "", err
	}
	env := append(os.Environ(), "GOMAXPROCS=1")
	version, err := exec.CommandContext(ctx, goCmd, "env", "GOVERSION").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	fmt.Fprintf(b.log, "processing: %s (in %s)\n", procBenchCommand(b.o), root)
	cmd := exec.CommandContext(ctx, goCmd, procBenchArgs(b.o)...)
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w\n%s", procBenchCommand(b.o), err, out)
	}
	rows, err := parseProcBench(string(out), b.o.procCount)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w\n%s", procBenchCommand(b.o), err, out)
	}
	for _, r := range rows {
		fmt.Fprintf(b.log, "processing: one core %-40s %8.0f ns/event %9.0f events/s %5.0f allocs/op (median of %d)\n", r.Name, r.NsPerEvent, r.EventsPerSec, r.AllocsPerOp, r.Counts)
	}
	return rows, strings.TrimSpace(string(version)), nil
}

// moduleRoot is the directory of logpond's go.mod: the working directory
// (make bench-report runs from the root) or one above it.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if first, _, _ := strings.Cut(string(data), "\n"); strings.TrimSpace(first) == "module github.com/logpond/logpond" {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not in logpond's source tree: run benchreport from the repository's root (go test needs the source)", dir)
		}
	}
}

// parseProcBench reads the output of go test -bench BenchmarkProcessing:
// every sub-benchmark of procBenches must have count result lines with
// ns/op, events/s and allocs/op. It returns their medians, in
// procBenches' order.
func parseProcBench(out string, count int) ([]procBenchRow, error) {
	got, err := benchResults(out)
	if err != nil {
		return nil, err
	}
	var rows []procBenchRow
	for _, pb := range procBenches {
		name := procBenchName + "/" + pb.name
		m, err := benchMedians(got[name], name, count, "ns/op", "events/s", "allocs/op")
		if err != nil {
			return nil, err
		}
		var bytes float64
		if b, err := benchMedians(got[name], name, count, "B/op"); err == nil {
			bytes = b["B/op"]
		}
		rows = append(rows, procBenchRow{Name: pb.name, What: pb.what, Goal: pb.goal, Counts: count,
			NsPerEvent: m["ns/op"], EventsPerSec: m["events/s"], AllocsPerOp: m["allocs/op"], BytesPerOp: bytes})
	}
	return rows, nil
}

// procStart is when the backlog's first line was logged; line n is n × 2
// ms later.
var procStart = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// Per-line variety of the access lines.
var (
	procUsers    = []string{"-", "alice", "-", "bob", "carol", "-", "dmitri"}
	procStatuses = []int{200, 200, 200, 304, 200, 201, 404, 200, 302, 200, 500, 200, 200}
	procPaths    = []string{"/api/v1/orders/%d?expand=items", "/api/v1/cart/%d", "/products/%d/reviews?page=2", "/static/js/app.%x.js", "/search?q=item-%d&sort=price"}
	procReferers = []string{"https://shop.example.com/cart", "-", "https://shop.example.com/products", "https://www.example.org/"}
	procAgents   = []string{
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Version/17.5 Safari/605.1.15",
	}
)

// procLine is line number n of the backlog's log and what the chain does
// with it: one in 20 lines is an OPTIONS request, one in 10 an Apache
// error-log line (no double quote: the tokenizer cannot match it), the
// others access lines of about 200 B whose client IP, user, path, status,
// size, referrer and user agent vary from line to line.
func procLine(n int) (string, procKind) {
	x := uint32(n)*2654435761 + 1
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	at := procStart.Add(time.Duration(n) * 2 * time.Millisecond)
	ip := fmt.Sprintf("%d.%d.%d.%d", 10+x>>24%200, x>>16&255, x>>8&255, 1+x&253)
	if n%10 == 3 {
		return fmt.Sprintf("[%s] [proxy_http:error] [pid %d:tid %d] (70007)The timeout specified has expired: [client %s:%d] AH01102: error reading status line from remote server 10.0.3.17:8080",
			at.Format("Mon Jan 02 15:04:05.000000 2006"), 2000+x%900, 140200000+x%99991, ip, 30000+x%30000), procUnmatched
	}
	method, kind, status, size := "GET", procMatched, procStatuses[n%len(procStatuses)], 200+int(x>>7%40000)
	path := fmt.Sprintf(procPaths[n%len(procPaths)], x%100000)
	switch {
	case n%20 == 7:
		method, kind, status, size = "OPTIONS", procOptions, 204, 0
	case n%5 == 1:
		method = "POST"
	}
	return fmt.Sprintf(`%s - %s [%s] "%s %s HTTP/1.1" %d %d "%s" "%s"`, ip, procUsers[n%len(procUsers)], at.Format("02/Jan/2006:15:04:05 -0700"),
		method, path, status, size, procReferers[n%len(procReferers)], procAgents[(n/3)%len(procAgents)]), kind
}

// procKindOf is what the chain does with an event whose message is line,
// read from the line as procLine writes it.
func procKindOf(line string) procKind {
	switch {
	case strings.HasPrefix(line, "["):
		return procUnmatched
	case strings.Contains(line, `] "OPTIONS `):
		return procOptions
	}
	return procMatched
}

// procEvent is event number n of the backlog: a Filebeat 9 event of about
// 1 KiB from a host with a few addresses (the layout of
// BenchmarkProcessing's), carrying line n of an access log with its
// @timestamp and byte offset.
func procEvent(n int, offset int64, line string) []byte {
	b := fmt.Appendf(nil, `{"@timestamp":%q,"@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},`+
		`"log":{"offset":%d,"file":{"path":"/var/log/apache2/access.log","device_id":"65024","inode":"786442"}},"message":`,
		procStart.Add(time.Duration(n)*2*time.Millisecond).Format("2006-01-02T15:04:05.000Z"), offset)
	b = appendJSONString(b, line)
	return append(b, `,"input":{"type":"filestream"},"ecs":{"version":"8.0.0"},`+
		`"host":{"name":"web-7","hostname":"web-7","architecture":"x86_64","os":{"kernel":"6.1.0-18-amd64","codename":"bookworm","type":"linux","platform":"debian","version":"12 (bookworm)","family":"debian","name":"Debian GNU/Linux"},"id":"9f1c2d3e4b5a69788796a5b4c3d2e1f0","containerized":false,"ip":["10.20.30.40","fe80::5054:ff:fe12:3456"],"mac":["52-54-00-12-34-56"]},`+
		`"agent":{"type":"filebeat","version":"9.3.0","ephemeral_id":"760f60ca-369e-4721-9f7e-b6a6dd214af6","id":"4fd84cab-20a6-4a65-a1ac-08c338a28968","name":"web-7"}}`...)
}

// appendJSONString appends s as a JSON string; s holds no control
// characters (procLine's lines do not).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// procEvents are the backlog's n events, line after line of one log.
func procEvents(n int64) [][]byte {
	out := make([][]byte, n)
	var offset int64
	for i := range out {
		line, _ := procLine(i)
		out[i] = procEvent(i, offset, line)
		offset += int64(len(line)) + 1
	}
	return out
}

// procBacklog builds the backlog in fresh stores with the output off:
// o.procEvents events sent as Filebeat sends them (4 connections × 2048-
// event windows, zlib 3, each connection from its own place in the log),
// then stops logpond (whose final flush moves the journal into the
// ledger), counts what the ledger holds and keeps a copy of both stores
// on the ledger's file system, which the caller removes.
func (b *bench) procBacklog(ctx context.Context) (procCensus, string, error) {
	var c procCensus
	if err := b.fresh(true); err != nil {
		return c, "", err
	}
	cfg, err := b.config("processing-fill", "")
	if err != nil {
		return c, "", err
	}
	p, _, err := b.logpond(cfg)
	if err != nil {
		return c, "", err
	}
	load := lumberload.Config{Connections: 4, Batch: 2048, Compression: 3, Payloads: procEvents(b.o.procEvents), Events: b.o.procEvents, Duration: 10 * time.Minute}
	r, err := lumberload.Run(ctx, p.Addr(), load)
	if stopErr := p.Stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stop after filling: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return c, "", fmt.Errorf("fill the backlog: %w", err)
	}
	if r.Events < b.o.procEvents {
		return c, "", fmt.Errorf("only %d of %d events acknowledged", r.Events, b.o.procEvents)
	}
	if c, err = procCount(b.ledgerDir()); err != nil {
		return c, "", err
	}
	if c.Events < b.o.procEvents {
		return c, "", fmt.Errorf("the ledger holds %d events, %d were acknowledged", c.Events, r.Events)
	}
	saved := filepath.Join(b.lfs.dir, "processing-saved")
	if err := copyStores(b.journalDir(), b.ledgerDir(), saved); err != nil {
		return c, "", err
	}
	fmt.Fprintf(b.log, "processing: backlog of %d events, %.0f B each, messages %.0f B on average; %d OPTIONS requests, %d lines the tokenizer does not match\n",
		c.Events, float64(c.EventBytes)/float64(c.Events), float64(c.MessageBytes)/float64(c.Events), c.Options, c.Unmatched)
	return c, saved, nil
}

// procCount reads every event of the ledger in dir and counts them by
// what the chain does with them.
func procCount(dir string) (procCensus, error) {
	var c procCensus
	r, err := ledger.NewDirReader(dir, 1, ledger.InspectOptions{})
	if err != nil {
		return c, fmt.Errorf("count the backlog: %w", err)
	}
	defer r.Close()
	dec, err := record.NewDecompressor()
	if err != nil {
		return c, err
	}
	defer dec.Close()
	for r.Next() {
		rec, err := dec.Decode(r.Record(), record.MaxBlockBytes)
		if err != nil {
			return c, fmt.Errorf("count the backlog: LSN %d: %w", r.LSN(), err)
		}
		for ev := range rec.Events() {
			msg := gjson.GetBytes(ev, "message").String()
			c.Events++
			c.EventBytes += int64(len(ev))
			c.MessageBytes += int64(len(msg))
			switch procKindOf(msg) {
			case procOptions:
				c.Options++
			case procUnmatched:
				c.Unmatched++
			}
		}
	}
	if err := r.Err(); err != nil {
		return c, fmt.Errorf("count the backlog: %w", err)
	}
	return c, nil
}

// procConfig writes the configuration of a drain into the server at es,
// with procChain as its global processors or without processors, named
// for the run (processing-none, processing-chain: the -cpuprofiles
// profiles are named after it).
func (b *bench) procConfig(chain bool, es string) (string, error) {
	path, err := b.config(procConfigName(chain), es)
	if err != nil || !chain {
		return path, err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	// The global list comes first, before the file's first table.
	return path, os.WriteFile(path, append([]byte(procChain), text...), 0o644)
}

// procDrain drains the restored backlog into a fresh estest server, with
// the chain or without, until the server holds every document the chain
// leaves, and checks the documents and logpond's processor metrics.
func (b *bench) procDrain(ctx context.Context, chain bool, census procCensus) (procRun, error) {
	r := procRun{Chain: chain, Events: census.Events}
	name := r.Name()
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		return r, err
	}
	defer srv.Close()
	cfg, err := b.procConfig(chain, srv.URL())
	if err != nil {
		return r, err
	}
	if r.Formula, err = formula(cfg); err != nil {
		return r, err
	}
	want := census.Events
	if chain {
		want = census.Kept()
	}
	start := time.Now()
	p, admin, err := b.logpond(cfg)
	if err != nil {
		return r, err
	}
	var n int
	r.Stall, _, n, err = waitStored(ctx, srv.Count, int(want), start, start.Add(b.o.drainLimit))
	if err != nil {
		p.Stop()
		return r, fmt.Errorf("%s: %d of %d documents stored after %s", name, n, want, time.Since(start).Round(time.Second))
	}
	r.Elapsed = time.Since(start)
	r.PeakRSS, r.CPU = p.PeakRSS(), p.CPU()
	// The output counts an event delivered once its bulk response is in,
	// just after the server stored it.
	m, err := delivered(ctx, admin, census.Events)
	if stopErr := p.Stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stop: %w\n%s", stopErr, p.Output())
	}
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	st := srv.Stats()
	r.Stored = srv.Count()
	if int64(r.Stored) != want || st.Created != want {
		return r, fmt.Errorf("%s: %d documents stored, %d created, for %d events the chain keeps: not exactly once", name, r.Stored, st.Created, want)
	}
	if err := checkProcMetrics(m, chain, census); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	if r.Dropped, r.Dissected, r.Flagged, err = checkProcessed(srv.Docs(), chain, census); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// delivered waits until logpond's metrics count events delivered (a
// dropped event counts as delivered) and returns the metrics then.
func delivered(ctx context.Context, admin string, events int64) (map[string]float64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := scrape(admin)
		if err != nil {
			return nil, err
		}
		if int64(m["logpond_output_events_delivered_total"]) >= events {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("logpond_output_events_delivered_total is %v 30 s after the server held every document, for %d events", m["logpond_output_events_delivered_total"], events)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkProcMetrics checks logpond's processor counters against the
// backlog: with the chain, drop_event dropped every OPTIONS request and
// dissect failed on every line it does not match (and nothing else
// failed); without, no processor ran.
func checkProcMetrics(m map[string]float64, chain bool, c procCensus) error {
	dropped, failed, ran := int64(m["logpond_processor_dropped_events_total"]), int64(m["logpond_processor_failed_events_total"]), int64(m["logpond_processor_events_total"])
	if !chain {
		if dropped != 0 || failed != 0 || ran != 0 {
			return fmt.Errorf("no processors configured, but the processor metrics count %d events run, %d dropped, %d failed", ran, dropped, failed)
		}
		return nil
	}
	if dropped != c.Options || failed != c.Unmatched {
		return fmt.Errorf("logpond_processor_dropped_events_total %d and logpond_processor_failed_events_total %d, for %d OPTIONS requests and %d lines the tokenizer does not match", dropped, failed, c.Options, c.Unmatched)
	}
	return nil
}

// checkProcessed checks the server's documents after a drain. Without the
// chain, every event is stored as received: the message and no field of
// the chain's. With it, no OPTIONS request is stored; every access line's
// document carries the dissected fields (source.ip the line's, the status
// code and body bytes as numbers, the time renamed to
// apache.access.time) and every other line's the dissect_parsing_error
// flag; every document has labels.pipeline and lost agent.ephemeral_id,
// host.mac and ecs. It returns the events dropped and the documents
// dissected and flagged.
func checkProcessed(docs []estest.Doc, chain bool, c procCensus) (dropped, dissected, flagged int64, err error) {
	want := c.Events
	if chain {
		want = c.Kept()
	}
	if int64(len(docs)) != want {
		return 0, 0, 0, fmt.Errorf("%d documents stored, for %d events the chain keeps", len(docs), want)
	}
	var options, unmatched int64
	for _, d := range docs {
		f := gjson.GetManyBytes(d.Source, "message", "source.ip", "http.request.method", "url.original", "http.response.status_code", "http.response.body.bytes",
			"apache.access.time", "ts", "user_agent.original", "log.flags", "labels.pipeline", "agent.ephemeral_id", "host.mac", "ecs", "agent.id")
		msg, ip, method, url, status, bytes, at, ts, ua, flags, label, ephemeral, mac, ecs, agentID := f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14]
		if msg.Type != gjson.String || !agentID.Exists() {
			return 0, 0, 0, fmt.Errorf("document %s is not an event of the backlog: %.300s", d.ID, d.Source)
		}
		kind := procKindOf(msg.Str)
		switch kind {
		case procOptions:
			options++
		case procUnmatched:
			unmatched++
		}
		if !chain {
			if ip.Exists() || label.Exists() || !ecs.Exists() || !ephemeral.Exists() || !mac.Exists() {
				return 0, 0, 0, fmt.Errorf("no processors configured, but document %s is not the event as received: %.300s", d.ID, d.Source)
			}
			continue
		}
		switch {
		case kind == procOptions:
			return 0, 0, 0, fmt.Errorf("document %s is an OPTIONS request, which drop_event drops: %.300s", d.ID, d.Source)
		case label.Str != "logpond" || ephemeral.Exists() || mac.Exists() || ecs.Exists():
			return 0, 0, 0, fmt.Errorf("document %s lacks labels.pipeline or kept a field drop_fields drops: %.300s", d.ID, d.Source)
		case kind == procUnmatched:
			if ip.Exists() || !strings.Contains(flags.Raw, `"dissect_parsing_error"`) {
				return 0, 0, 0, fmt.Errorf("document %s holds a line the tokenizer does not match, but not the dissect_parsing_error flag, or fields of it: %.300s", d.ID, d.Source)
			}
			flagged++
		default:
			if !strings.HasPrefix(msg.Str, ip.Str+" ") || ip.Str == "" || method.Str == "" || method.Str == "OPTIONS" || url.Str == "" || status.Type != gjson.Number || bytes.Type != gjson.Number ||
				at.Type != gjson.String || ts.Exists() || ua.Str == "" || flags.Exists() {
				return 0, 0, 0, fmt.Errorf("document %s lacks the dissected fields of its line: %.300s", d.ID, d.Source)
			}
			dissected++
		}
	}
	if chain {
		if unmatched != c.Unmatched {
			return 0, 0, 0, fmt.Errorf("%d documents hold a line the tokenizer does not match, the backlog %d", unmatched, c.Unmatched)
		}
		return c.Options, dissected, flagged, nil
	}
	if options != c.Options || unmatched != c.Unmatched {
		return 0, 0, 0, fmt.Errorf("the documents hold %d OPTIONS requests and %d lines the tokenizer does not match, the backlog %d and %d", options, unmatched, c.Options, c.Unmatched)
	}
	return 0, 0, 0, nil
}

// procCommand is the command that reproduces the processing part.
func procCommand(o options) string {
	return fmt.Sprintf("sudo bin/benchreport -parts processing -processing-events %d -processing-rounds %d -out /tmp/processing.md", o.procEvents, o.procRounds)
}

// procMarkdown renders the processing section of r. From a run of some
// parts only (-parts), it says when and on which revision it was
// measured.
func procMarkdown(r *report) string {
	res, o := r.Processing, r.Opts
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Processing: what a chain of processors costs\n\n")
	if res == nil {
		return b.String()
	}
	p("Outputs run the processors on every event they drain (docs/configuration.md, \"Processors\"). Two measurements: the chains alone on one core, in-process, and the drain of one backlog through the Elasticsearch output without processors and with a five-processor chain, in the same run. Every figure of this section: `%s` (after `make build`); the one-core table alone: `%s` from the repository's root.\n\n",
		procCommand(o), procBenchCommand(o))
	if o.parts != defaultOptions().parts {
		p("Measured %s, logpond %s, in a run of `-parts %s` on the same machine.\n\n", r.Date, r.Revision, o.parts)
	}

	p("### One core: the chains in-process\n\n")
	p("`%s` in `output/processors` (built by %s): each sub-benchmark runs one chain on one event, again and again, in the test's process with one P (`GOMAXPROCS=1`): the event parsed, the chain's processors, the event serialized, as an output runs them per event; no I/O, no logpond. Each ran %d times for %s; the table shows the medians of the %d. ns/event is ns/op (an op is one event); events/s is the benchmark's own metric (events over the loop's time); allocs/op and B/op are the heap allocations per event. Peak RSS does not apply to these figures: they are one loop over one event inside `go test`, whose memory is the test binary's, not a logpond process's (logpond's peak RSS with the chain is in the drain table below).\n\n",
		procBenchName, res.GoVersion, o.procCount, o.procBenchtime, o.procCount)
	p("| chain | what | ns/event | events/s | allocs/op | B/op | peak RSS | goal events/s | verdict |\n")
	p("|---|---|---:|---:|---:|---:|---|---:|---|\n")
	for _, row := range res.Bench {
		goal, v := "–", "no goal: the floor"
		if row.Goal > 0 {
			goal, v = fmt.Sprintf("≥ %.0f", row.Goal), verdict(row.Met(), fmt.Sprintf("%.0f", row.EventsPerSec))
		}
		p("| %s | %s | %.0f | %.0f | %.0f | %.0f | n/a (in-process) | %s | %s |\n", row.Name, row.What, row.NsPerEvent, row.EventsPerSec, row.AllocsPerOp, row.BytesPerOp, goal, v)
	}
	p("\n")

	c := res.Census
	p("### Drain: a backlog with and without the chain\n\n")
	p("A backlog of %d Filebeat 9 events (%.0f B each on average, the layout of the one-core benchmark's), each carrying one line of an Apache log as `message` (%.0f B on average): combined access-log lines whose client IP, user, path, status, size, referrer and user agent vary from line to line; one in 20 an OPTIONS request (%d in the backlog), one in 10 an error-log line the tokenizer does not match (%d). It was built once with the output off (4 connections × 2048-event windows, zlib 3) and counted in the ledger; each run drains a fresh copy of its stores into a fresh in-process `estest` server with the default output settings, once without processors (`none`) and once with this chain as the global `[[processors]]` (`chain`), the two interleaved %d times:\n\n",
		c.Events, float64(c.EventBytes)/float64(max(c.Events, 1)), float64(c.MessageBytes)/float64(max(c.Events, 1)), c.Options, c.Unmatched, o.procRounds)
	p("```toml\n%s```\n\n", procChain)
	p("Every run is checked before it counts. Without the chain, the server must hold every event once (201 once per event), as received. With it, it must hold each event the chain keeps once and no OPTIONS request; each access line's document must carry its dissected fields (`source.ip` the line's, the status code and body bytes as numbers, the time renamed to `apache.access.time`), each error line's the `dissect_parsing_error` flag in `log.flags`, and every document `labels.pipeline` and none of `agent.ephemeral_id`, `host.mac`, `ecs`; logpond's `logpond_processor_dropped_events_total` must count every OPTIONS request and `logpond_processor_failed_events_total` every error line (dissect's failures; nothing else fails), and `logpond_output_events_delivered_total` every event, the dropped ones included.\n\n")
	p("Drain time runs from logpond's start until the server holds every document; \"stall\" is the longest the server's document count stood still after its first rise (when the backlog's last bulk request is not full, the output waits for more events until the ledger has not grown for two `ledger.flush_interval`, 200 ms, before it sends it: a wait that depends on where the backlog ends, not on the chain), and events/s is the backlog's events, dropped ones included, over the drain time without the stall. CPU is logpond's user and system time over the drain, per event of the backlog; peak RSS is logpond's VmHWM over the run, formula its memory formula (with the chain it counts each goroutine's chain runner). The in-process server shares the two cores with logpond, and stores fewer, smaller documents with the chain.\n\n")
	p("| run | processors | events | documents | dropped | dissected | flagged | drain s | stall s | events/s | logpond CPU µs/event | peak RSS MiB | formula MiB |\n")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, run := range res.Runs {
		what, dropped, dissected, flagged := "none", "–", "–", "–"
		if run.Chain {
			what, dropped, dissected, flagged = "chain", fmt.Sprint(run.Dropped), fmt.Sprint(run.Dissected), fmt.Sprint(run.Flagged)
		}
		p("| %d | %s | %d | %d | %s | %s | %s | %.2f | %.2f | %.0f | %.2f | %s | %s |\n", i+1, what, run.Events, run.Stored, dropped, dissected, flagged,
			run.Elapsed.Seconds(), run.Stall.Seconds(), run.EventsPerSec(), run.CPUPerEvent(), mib(run.PeakRSS), mib(run.Formula))
	}
	none, chain := res.summary(false), res.summary(true)
	if none.Runs == 0 || chain.Runs == 0 {
		p("\n")
		return b.String()
	}
	rate, dur := chain.EventsPerSec/none.EventsPerSec, chain.Elapsed/none.Elapsed
	p("\nMedians over the runs of each (of %d and %d; with two, the mean of the two), peak RSS the largest:\n\n", none.Runs, chain.Runs)
	p("| processors | drain s | events/s | logpond CPU µs/event | peak RSS MiB |\n")
	p("|---|---:|---:|---:|---:|\n")
	p("| none | %.2f | %.0f | %.2f | %s |\n", none.Elapsed, none.EventsPerSec, none.CPUPerEvent, mib(none.PeakRSS))
	p("| chain | %.2f | %.0f | %.2f | %s |\n", chain.Elapsed, chain.EventsPerSec, chain.CPUPerEvent, mib(chain.PeakRSS))
	p("\nThe chain costs logpond %.2f µs of CPU per event (%.2f× none's). Goals, with the chain over without: events/s at least %.1f×, verdict %s; drain time at most %.1f×, verdict %s.\n\n",
		chain.CPUPerEvent-none.CPUPerEvent, chain.CPUPerEvent/none.CPUPerEvent, goalProcRate, verdict(rate >= goalProcRate, fmt.Sprintf("%.2f×", rate)),
		goalProcTime, verdict(dur <= goalProcTime, fmt.Sprintf("%.2f×", dur)))
	return b.String()
}

// Package lumberload drives a Lumberjack v2 server with go-lumber's client
// (the library Beats use) and measures what it acknowledges, and runs the
// server under test as a child process so that its CPU time and peak memory
// are its own. It is shared by the benchmark tools (beatsbench,
// benchreport); nothing in logpond itself imports it.
package lumberload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
)

// Config is the shape of a load: every connection sends the same batch of
// Batch pre-encoded events of about EventSize bytes (or, with Payloads, the
// next Batch of those), waits for its ACK, and sends again, until Duration
// has passed.
type Config struct {
	Connections, Batch, EventSize int
	Compression                   int // zlib level 0–9 (Filebeat's default is 3)
	Duration                      time.Duration
	Rate                          float64 // events/s over all connections; 0 = as fast as acknowledged
	// Events, when above 0, is how many events the load sends in all:
	// the connections share it out batch by batch, the last batch cut
	// short, and stop when it is spent (or Duration has passed, whichever
	// comes first), so that loads of different shapes leave exactly the
	// same number of events behind. 0 sends until Duration has passed.
	Events int64
	// Shape is how the events are laid out (ShapedEvent); "" is
	// ShapeClassic. Every shape makes events of the same size.
	Shape Shape
	// Payloads, when not empty, are the events to send instead of
	// generated ones (EventSize and Shape are then ignored), e.g. real
	// log lines from FilebeatEvents: each connection cycles through them
	// in order, window after window, starting at its own share of them,
	// so that consecutive windows hold different events, as a real
	// client's do. They are sent as they are (each must be one JSON
	// value) and must not be changed while Run uses them.
	Payloads [][]byte
}

// Shape names a layout of the generated events: the same size and
// message text, with or without the fields Elastic Agent adds, so that a
// benchmark can compare what routing them costs.
type Shape string

const (
	// ShapeClassic is a Beats event without @timestamp or data_stream
	// (Event): an Elasticsearch output sends it to its index.
	ShapeClassic Shape = "classic"
	// ShapeAgent is an Elastic Agent event: @timestamp and a whole
	// data_stream object {type: logs, dataset: Dataset(n), namespace:
	// default}, so an output in data_stream "auto" sends it to its data
	// stream without editing it.
	ShapeAgent Shape = "agent"
	// ShapeAgentPartial is an event whose data_stream object names only
	// the dataset and which has no @timestamp: an output routes it by
	// its dataset and must fill in the type, the namespace and the
	// @timestamp.
	ShapeAgentPartial Shape = "agent-partial"
)

// Shapes are the known shapes, classic first.
var Shapes = []Shape{ShapeClassic, ShapeAgent, ShapeAgentPartial}

// ParseShape returns the shape named s ("" is ShapeClassic), or an error
// naming the known ones.
func ParseShape(s string) (Shape, error) {
	if s == "" {
		return ShapeClassic, nil
	}
	if sh := Shape(s); slices.Contains(Shapes, sh) {
		return sh, nil
	}
	return "", fmt.Errorf("lumberload: unknown event shape %q (known: %s, %s, %s)", s, ShapeClassic, ShapeAgent, ShapeAgentPartial)
}

// datasets are the datasets Agent-shaped events name, a few as one
// Agent's integrations would send side by side: each is its own data
// stream, so an output sorts every bulk request into several of them.
var datasets = []string{"system.syslog", "nginx.access", "nginx.error", "kubernetes.container_logs"}

// Datasets returns the datasets Agent-shaped events name, in the order
// Dataset cycles through them (a copy).
func Datasets() []string { return slices.Clone(datasets) }

// Dataset is the dataset of the Agent-shaped event number n: the events
// cycle through Datasets().
func Dataset(n int) string { return datasets[uint(n)%uint(len(datasets))] }

// DataStream is the data stream an output in data_stream "auto" with its
// default type ("logs") and namespace ("default") routes the
// Agent-shaped event number n to, of either Agent shape.
func DataStream(n int) string { return "logs-" + Dataset(n) + "-default" }

// timestampBase is the @timestamp of the Agent-shaped event 0; event n is
// n milliseconds later, so that timestamps differ and sort as the events.
var timestampBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sample is one batch's acknowledgement latency and when, after the load
// started, it was acknowledged.
type Sample struct {
	At, Latency time.Duration
}

// Result is what one load measured.
type Result struct {
	Events, Bytes int64
	Batches       int
	Elapsed       time.Duration
	Latencies     []time.Duration // sorted
	Timeline      []Sample        // in acknowledgement order
	CPU           time.Duration   // the server's user+system CPU during the load, when known
	PeakRSS       int64           // the server's peak resident set (VmHWM) in bytes, when known
}

// EventsPerSec is the acknowledged event rate.
func (r Result) EventsPerSec() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// MBPerSec is the acknowledged payload rate in 10^6 bytes/s.
func (r Result) MBPerSec() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// CPUPerMillion is the server's CPU seconds per million acknowledged
// events, or 0 when the CPU time is unknown.
func (r Result) CPUPerMillion() float64 {
	if r.CPU <= 0 || r.Events == 0 {
		return 0
	}
	return r.CPU.Seconds() / (float64(r.Events) / 1e6)
}

// Percentile is the p-quantile (0..1) of the batch acknowledgement latency.
func (r Result) Percentile(p float64) time.Duration {
	return Percentile(r.Latencies, p)
}

// Percentile is the p-quantile (0..1) of sorted latencies, 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// Nearest rank: the smallest value with at least p of them at or below.
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

// words make an event's message: log-like text that zlib compresses about
// as well as real log lines (a few times), not a run of one byte.
var words = strings.Fields(`GET POST /api/v1/orders /health /login user=alice user=bob status=200
status=404 status=503 latency_ms=12 latency_ms=347 upstream=10.0.3.17:8080 request_id=7f3a9c
"Mozilla/5.0 (X11; Linux x86_64)" connection reset by peer retrying in 2s cache miss
for key session:91a2 took 0.043s INFO WARN ERROR worker-7 worker-12 shard=3 bytes=5120`)

// Event builds one pre-encoded JSON event of about size bytes, shaped like
// a Beats event (its @metadata names the beat and version), with a
// message of pseudo-random words that differs from event to event.
func Event(size, n int) []byte {
	return fill(fmt.Appendf(nil, `{"@metadata":{"beat":"beatsbench","version":"1"},"n":%d,"message":"`, n), size, n)
}

// ShapedEvent builds event number n of a shape, of exactly size bytes
// when size is larger than the shape's fields (as Event): the shapes
// differ in their fields, not their size, as the message makes up the
// rest. ShapeClassic (or "") is Event. An unknown shape is an error.
func ShapedEvent(shape Shape, size, n int) ([]byte, error) {
	switch shape {
	case "", ShapeClassic:
		return Event(size, n), nil
	case ShapeAgent:
		ts := timestampBase.Add(time.Duration(n) * time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		return fill(fmt.Appendf(nil, `{"@metadata":{"beat":"beatsbench","version":"1"},"@timestamp":%q,"data_stream":{"type":"logs","dataset":%q,"namespace":"default"},"n":%d,"message":"`,
			ts, Dataset(n), n), size, n), nil
	case ShapeAgentPartial:
		return fill(fmt.Appendf(nil, `{"@metadata":{"beat":"beatsbench","version":"1"},"data_stream":{"dataset":%q},"n":%d,"message":"`,
			Dataset(n), n), size, n), nil
	}
	_, err := ParseShape(string(shape))
	return nil, err
}

// fill completes an event whose text so far, b, ends inside its message
// string: pseudo-random words seeded by n up to size bytes in all, then
// the closing quote and brace.
func fill(b []byte, size, n int) []byte {
	head := len(b)
	x := uint32(n)*2654435761 + 1
	for len(b) < size-2 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		w := words[x%uint32(len(words))]
		if strings.ContainsRune(w, '"') {
			w = strings.ReplaceAll(w, `"`, `\"`)
		}
		b = append(b, w...)
		b = append(b, ' ')
	}
	b = b[:max(size-2, head)]
	if b[len(b)-1] == '\\' { // cut inside an escaped quote
		b[len(b)-1] = ' '
	}
	return append(b, `"}`...)
}

// Run loads addr as cfg says, until cfg.Duration has passed, cfg.Events
// are sent, or parent ends (then it returns parent's error with the partial result), and
// returns what was acknowledged. With cfg.Rate, each batch's latency counts
// from when it was due, not from when a late connection got to send it, and
// the connections' schedules are staggered. The first
// connection or send error ends that connection and is returned; what was
// acknowledged before it still counts. An unknown cfg.Shape is an error
// before anything is sent.
func Run(parent context.Context, addr string, cfg Config) (Result, error) {
	if cfg.Batch < 1 {
		return Result{}, fmt.Errorf("lumberload: a batch of %d events", cfg.Batch)
	}
	// ring holds the events to send; a window is ring[pos:pos+k] for some
	// pos below cycle, so ring repeats its first Batch events at its end
	// and a window that wraps round is still one slice.
	cycle := cfg.Batch
	var ring []interface{}
	if len(cfg.Payloads) > 0 {
		cycle = len(cfg.Payloads)
		ring = make([]interface{}, cycle+cfg.Batch)
		for i := range ring {
			ring[i] = cfg.Payloads[i%cycle]
		}
	} else {
		ring = make([]interface{}, cfg.Batch)
		for i := range ring {
			ev, err := ShapedEvent(cfg.Shape, cfg.EventSize, i)
			if err != nil {
				return Result{}, err
			}
			ring[i] = ev
		}
	}
	prefixBytes := make([]int64, len(ring)+1) // prefixBytes[k]: the bytes of ring[:k]
	for i, ev := range ring {
		prefixBytes[i+1] = prefixBytes[i] + int64(len(ev.([]byte)))
	}
	raw := lj.JSONEncoder(func(v interface{}) ([]byte, error) { return v.([]byte), nil })
	ctx, cancel := context.WithTimeout(parent, cfg.Duration)
	defer cancel()
	var mu sync.Mutex
	var res Result
	var firstErr error
	var reserved int64 // events handed out to the connections, with cfg.Events
	// take reserves the next batch's events: all of batch, or with
	// cfg.Events what is left of it; 0 when it is spent.
	take := func() int {
		if cfg.Events <= 0 {
			return cfg.Batch
		}
		mu.Lock()
		defer mu.Unlock()
		k := int(min(int64(cfg.Batch), cfg.Events-reserved))
		reserved += int64(max(k, 0))
		return max(k, 0)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for conn := range cfg.Connections {
		wg.Go(func() {
			c, err := lj.SyncDial(addr, raw, lj.CompressionLevel(cfg.Compression), lj.Timeout(60*time.Second))
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			defer c.Close()
			var interval time.Duration
			if cfg.Rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(cfg.Batch*cfg.Connections) / cfg.Rate)
			}
			// Staggered, so that the connections do not send in lockstep.
			next := start.Add(time.Duration(conn) * interval / time.Duration(cfg.Connections))
			// Where this connection's next window starts in ring: with
			// payloads, each connection starts at its own share of them.
			pos := 0
			if len(cfg.Payloads) > 0 {
				pos = conn * cycle / cfg.Connections
			}
			for ctx.Err() == nil {
				t0 := time.Now()
				if interval > 0 {
					time.Sleep(time.Until(next))
					// Latency from when the batch was due: a connection
					// held up by a slow server sends late, and that wait
					// is the server's too.
					t0 = next
					next = next.Add(interval)
				}
				k := take()
				if k == 0 {
					return
				}
				n, err := c.Send(ring[pos : pos+k])
				lat := time.Since(t0)
				if err != nil {
					mu.Lock()
					if ctx.Err() == nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				res.Events += int64(n)
				res.Bytes += prefixBytes[pos+min(n, k)] - prefixBytes[pos]
				res.Batches++
				res.Latencies = append(res.Latencies, lat)
				res.Timeline = append(res.Timeline, Sample{At: t0.Add(lat).Sub(start), Latency: lat})
				mu.Unlock()
				if len(cfg.Payloads) > 0 {
					pos = (pos + k) % cycle
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	slices.Sort(res.Latencies)
	if firstErr == nil && parent.Err() != nil {
		// Cut short by the caller, not ended by cfg.Duration: the result
		// is partial, and the caller should know.
		firstErr = parent.Err()
	}
	return res, firstErr
}

// Process is a server under test running as a child process.
type Process struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when its output has been read to the end
	mu   sync.Mutex
	head []string // its first lines of output, where servers say where they listen
	tail []string // its last lines of output, for errors
}

// Start starts cmd and waits until a line of its combined output matches
// addrRE, whose first group is the address it listens on.
func Start(cmd *exec.Cmd, addrRE *regexp.Regexp) (*Process, error) {
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = cmd.Stderr
	// A process group of its own, so that Stop reaches whatever it starts
	// (logpond under strace); killed if this process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			if len(p.head) < 200 {
				p.head = append(p.head, line)
			}
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if m := addrRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case p.addr = <-found:
		return p, nil
	case <-p.done:
		cmd.Wait()
		return nil, fmt.Errorf("%s exited before it printed a listening address:\n%s", cmd.Path, p.Output())
	case <-time.After(time.Minute):
		p.Stop()
		return nil, fmt.Errorf("%s printed no listening address within a minute:\n%s", cmd.Path, p.Output())
	}
}

// Addr is the address the process said it listens on.
func (p *Process) Addr() string { return p.addr }

// Find returns the groups of the first line of the process's early output
// (its first 200 lines) that matches re, or nil.
func (p *Process) Find(re *regexp.Regexp) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range p.head {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	return nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is the last lines the process printed.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// CPU is the process's user+system CPU time so far.
func (p *Process) CPU() time.Duration { return ProcessCPU(p.Pid()) }

// PeakRSS is the process's peak resident set size so far (VmHWM), 0 when
// unknown.
func (p *Process) PeakRSS() int64 { return procStatusKB(p.Pid(), "VmHWM:") * 1024 }

// stopWait bounds how long Stop waits after SIGTERM before SIGKILL.
const stopWait = 2 * time.Minute

// Stop sends SIGTERM to the process's group and waits for it to exit,
// killing the group if it has not after stopWait; it returns the exit
// error, if any.
func (p *Process) Stop() error {
	pgid := p.cmd.Process.Pid // Setpgid: the group is named after it
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	return p.cmd.Wait()
}

// Measure starts a server, loads it, stops it, and returns the load's
// result with the server's CPU time and peak RSS.
func Measure(cmd *exec.Cmd, addrRE *regexp.Regexp, cfg Config) (Result, error) {
	p, err := Start(cmd, addrRE)
	if err != nil {
		return Result{}, err
	}
	cpu0 := p.CPU()
	r, err := Run(context.Background(), p.Addr(), cfg)
	r.CPU = p.CPU() - cpu0
	r.PeakRSS = p.PeakRSS()
	if serr := p.Stop(); serr != nil && err == nil {
		err = fmt.Errorf("%s: %w\n%s", cmd.Path, serr, p.Output())
	}
	return r, err
}

// ProcessCPU reads a process's user+system CPU time from /proc, 0 when it
// cannot.
func ProcessCPU(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// Running reports whether a process exists and is not a zombie.
func Running(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && f[0] != "Z"
}

// procStat returns the fields of /proc/PID/stat after the command name
// (which may contain spaces), starting with the state; nil when the
// process is gone.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 > len(b) {
		return nil
	}
	return strings.Fields(string(b[i+2:]))
}

// procStatusKB reads one "Key:   N kB" line of /proc/PID/status.
func procStatusKB(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// Trash defers deleting benchmark stores and files to moments between
// measurements chosen by the caller. Deleting a gigabyte-sized file on a
// file system mounted with discard (this machine's root) slows the disk
// for seconds after the delete has returned — measured here: a 1.3 GB
// delete just before a logpond run more than doubled its ack p99, and ten
// seconds later it did not — so deleting the previous server's files right
// before the next server starts charges one server's clean-up to another.
// Move renames instead (nothing is freed); Empty deletes what was moved.
// The zero Trash is ready to use.
type Trash struct {
	dirs []string // one trash directory per parent moved from
	n    int
}

// Move renames path (a file or directory; a missing one is no error) into
// a trash directory beside it, on the same file system.
func (t *Trash) Move(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	dir := filepath.Join(filepath.Dir(path), ".lumberload-trash")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if !slices.Contains(t.dirs, dir) {
		t.dirs = append(t.dirs, dir)
	}
	t.n++
	return os.Rename(path, filepath.Join(dir, fmt.Sprintf("%d-%s", t.n, filepath.Base(path))))
}

// Empty deletes everything moved to the trash, flushes the file systems
// and waits settle, for the disks to be done with the deletion.
func (t *Trash) Empty(settle time.Duration) error {
	var errs []error
	for _, d := range t.dirs {
		errs = append(errs, os.RemoveAll(d))
	}
	t.dirs = nil
	syscall.Sync()
	time.Sleep(settle)
	return errors.Join(errs...)
}

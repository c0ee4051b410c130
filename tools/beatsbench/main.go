// Command beatsbench is a Lumberjack v2 load generator built on go-lumber's
// client (the library Beats use), sending pre-encoded events so that the
// client's own CPU stays small. It prints acknowledged events/s, MB/s and
// batch acknowledgement latency percentiles.
//
//	beatsbench -addr 127.0.0.1:5044 -connections 4 -batch 2048 -event-size 1024 -duration 10s
//
// With -baseline it measures, in one run and with the same connection and
// batch shape, three servers one after another, repeated -rounds times and
// interleaved so that the ratios hold on a noisy machine:
//
//   - noop: a Lumberjack server that acknowledges at once (no durability);
//   - naive: each batch appended to one file and fdatasynced before its
//     ACK, one batch at a time;
//   - logpond: bin/logpond started with -logpond-config.
//
// Each server runs as a child process so that its CPU time is its own.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/input/lumberjack"
)

type loadConfig struct {
	connections, batch, eventSize, compression int
	duration                                   time.Duration
	rate                                       float64 // events/s over all connections; 0 = as fast as acknowledged
}

type result struct {
	events    int64
	bytes     int64
	elapsed   time.Duration
	latencies []time.Duration
	cpu       time.Duration // server CPU, when known
}

func (r result) eventsPerSec() float64 { return float64(r.events) / r.elapsed.Seconds() }

func (r result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
}

func main() {
	var cfg loadConfig
	addr := flag.String("addr", "127.0.0.1:5044", "Lumberjack server to load")
	flag.IntVar(&cfg.connections, "connections", 4, "concurrent connections")
	flag.IntVar(&cfg.batch, "batch", 2048, "events per batch (window)")
	flag.IntVar(&cfg.eventSize, "event-size", 1024, "bytes per event")
	flag.IntVar(&cfg.compression, "compression", 0, "zlib level 0–9 (Filebeat's default is 3)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to send")
	flag.Float64Var(&cfg.rate, "rate", 0, "events/s over all connections (0: as fast as acknowledged)")
	baseline := flag.Bool("baseline", false, "compare noop, naive and logpond servers in one run")
	rounds := flag.Int("rounds", 3, "with -baseline: interleaved rounds")
	logpondBin := flag.String("logpond", "bin/logpond", "with -baseline: the logpond binary")
	logpondConfig := flag.String("logpond-config", "", "with -baseline: logpond's configuration (its input.beats.listen should be 127.0.0.1:0)")
	naiveDir := flag.String("naive-dir", os.TempDir(), "with -baseline: where the naive server writes (put it where logpond's journal is)")
	serve := flag.String("serve", "", "internal: run a baseline server (noop or naive) and print its address")
	flag.Parse()

	switch {
	case *serve != "":
		if err := serveBaseline(*serve, *naiveDir); err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(1)
		}
	case *baseline:
		if *logpondConfig == "" {
			fmt.Fprintln(os.Stderr, "beatsbench: -baseline needs -logpond-config")
			os.Exit(2)
		}
		if err := runBaseline(cfg, *rounds, *logpondBin, *logpondConfig, *naiveDir); err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(1)
		}
	default:
		r, err := load(*addr, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(1)
		}
		printHeader()
		printRow("target", r, result{})
		// The exact count, for scripts that check where the events went
		// (tools/demo.sh).
		fmt.Printf("acknowledged events=%d batches=%d elapsed=%s\n", r.events, len(r.latencies), r.elapsed.Round(time.Millisecond))
	}
}

// event builds one pre-encoded JSON event of about size bytes.
func event(size, n int) []byte {
	head := fmt.Sprintf(`{"@metadata":{"beat":"beatsbench","version":"1"},"n":%d,"message":"`, n)
	pad := max(size-len(head)-2, 0)
	return []byte(head + strings.Repeat("x", pad) + `"}`)
}

// load runs the load against addr and returns what was acknowledged.
func load(addr string, cfg loadConfig) (result, error) {
	batch := make([]interface{}, cfg.batch)
	var batchBytes int64
	for i := range batch {
		ev := event(cfg.eventSize, i)
		batch[i] = ev
		batchBytes += int64(len(ev))
	}
	raw := lj.JSONEncoder(func(v interface{}) ([]byte, error) { return v.([]byte), nil })
	ctx, cancel := context.WithTimeout(context.Background(), cfg.duration)
	defer cancel()
	var mu sync.Mutex
	var res result
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := lj.SyncDial(addr, raw, lj.CompressionLevel(cfg.compression), lj.Timeout(60*time.Second))
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer c.Close()
			var interval time.Duration
			if cfg.rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(cfg.batch*cfg.connections) / cfg.rate)
			}
			next := time.Now()
			for ctx.Err() == nil {
				if interval > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(interval)
				}
				t0 := time.Now()
				n, err := c.Send(batch)
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
				res.events += int64(n)
				res.bytes += batchBytes * int64(n) / int64(len(batch))
				res.latencies = append(res.latencies, lat)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.latencies)
	return res, firstErr
}

func printHeader() {
	fmt.Printf("%-10s %12s %9s %10s %10s %10s %12s %10s\n", "server", "events/s", "MB/s", "p50", "p99", "p999", "cpu-s/Mev", "x-naive")
}

func printRow(name string, r, naive result) {
	cpu := "-"
	if r.cpu > 0 && r.events > 0 {
		cpu = fmt.Sprintf("%.2f", r.cpu.Seconds()/(float64(r.events)/1e6))
	}
	ratio := "-"
	if naive.events > 0 {
		ratio = fmt.Sprintf("%.2f", r.eventsPerSec()/naive.eventsPerSec())
	}
	fmt.Printf("%-10s %12.0f %9.1f %10s %10s %10s %12s %10s\n", name, r.eventsPerSec(), float64(r.bytes)/1e6/r.elapsed.Seconds(),
		r.percentile(0.50).Round(time.Microsecond), r.percentile(0.99).Round(time.Microsecond), r.percentile(0.999).Round(time.Microsecond), cpu, ratio)
}

// runBaseline measures noop, naive and logpond, interleaved, and prints
// one row per server per round and the median ratios.
func runBaseline(cfg loadConfig, rounds int, logpondBin, logpondConfig, naiveDir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	servers := []struct {
		name string
		cmd  func() *exec.Cmd
		addr *regexp.Regexp
	}{
		{"noop", func() *exec.Cmd { return exec.Command(self, "-serve", "noop") }, regexp.MustCompile(`listening (\S+)`)},
		{"naive", func() *exec.Cmd { return exec.Command(self, "-serve", "naive", "-naive-dir", naiveDir) }, regexp.MustCompile(`listening (\S+)`)},
		{"logpond", func() *exec.Cmd { return exec.Command(logpondBin, "-config", logpondConfig) }, regexp.MustCompile(`beats input listening" addr=(\S+)`)},
	}
	results := map[string][]result{}
	fmt.Printf("%d connections × %d events of %d bytes, compression %d, %s per run, %d rounds\n",
		cfg.connections, cfg.batch, cfg.eventSize, cfg.compression, cfg.duration, rounds)
	printHeader()
	for round := range rounds {
		for _, s := range servers {
			r, err := measure(s.cmd(), s.addr, cfg)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.name, err)
			}
			results[s.name] = append(results[s.name], r)
			var naive result
			if n := results["naive"]; len(n) > round {
				naive = n[round]
			}
			printRow(s.name, r, naive)
		}
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	var vsNaive, vsNoop, p99 []float64
	for i := range rounds {
		lp, nv, np := results["logpond"][i], results["naive"][i], results["noop"][i]
		vsNaive = append(vsNaive, lp.eventsPerSec()/nv.eventsPerSec())
		vsNoop = append(vsNoop, lp.eventsPerSec()/np.eventsPerSec())
		p99 = append(p99, float64(lp.percentile(0.99))/float64(max(nv.percentile(0.99), 1)))
	}
	fmt.Printf("median over %d rounds: logpond/naive events/s %.2f×, logpond/noop %.2f×, logpond/naive ack p99 %.2f×\n",
		rounds, median(vsNaive), median(vsNoop), median(p99))
	return nil
}

// measure starts a server process, loads it, stops it, and returns the
// load's result with the server's CPU time.
func measure(cmd *exec.Cmd, addrRE *regexp.Regexp, cfg loadConfig) (result, error) {
	out, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	cmd.Stdout = cmd.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	addr := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		return result{}, fmt.Errorf("%s printed no listening address", cmd.Path)
	}
	go io.Copy(io.Discard, out)
	cpu0 := processCPU(cmd.Process.Pid)
	r, err := load(addr, cfg)
	r.cpu = processCPU(cmd.Process.Pid) - cpu0
	return r, err
}

// processCPU reads a process's user+system CPU time from /proc.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may contain spaces).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// serveBaseline runs a baseline Lumberjack server until SIGTERM.
func serveBaseline(kind, dir string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var file *os.File
	var fileMu sync.Mutex
	if kind == "naive" {
		if file, err = os.CreateTemp(dir, "beatsbench-naive-*"); err != nil {
			return err
		}
		defer os.Remove(file.Name())
	} else if kind != "noop" {
		return fmt.Errorf("-serve %q: noop or naive", kind)
	}
	fmt.Fprintf(os.Stderr, "listening %s\n", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signalNotify(sig)
		<-sig
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return nil
		}
		go func() {
			defer conn.Close()
			r := lumberjack.NewReader(conn, lumberjack.DefaultLimits())
			r.Reserve = nil
			var buf []byte
			for {
				buf = buf[:0]
				_, seq, err := r.ReadBatch(func(ev []byte) error {
					if file != nil {
						buf = binary.BigEndian.AppendUint32(buf, uint32(len(ev)))
						buf = append(buf, ev...)
					}
					return nil
				})
				if err != nil {
					return
				}
				if file != nil {
					// One batch at a time: write, fdatasync, then ACK.
					fileMu.Lock()
					_, err = file.Write(buf)
					if err == nil {
						err = syscall.Fdatasync(int(file.Fd()))
					}
					fileMu.Unlock()
					if err != nil {
						fmt.Fprintln(os.Stderr, "naive:", err)
						return
					}
				}
				if err := lumberjack.WriteACK(conn, seq); err != nil {
					return
				}
			}
		}()
	}
}

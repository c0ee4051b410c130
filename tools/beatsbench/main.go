// Command beatsbench is a Lumberjack v2 load generator built on go-lumber's
// client (the library Beats use), sending pre-encoded events so that the
// client's own CPU stays small. It prints acknowledged events/s, MB/s and
// batch acknowledgement latency percentiles.
//
//	beatsbench -addr 127.0.0.1:5044 -connections 4 -batch 2048 -event-size 1024 -duration 10s
//
// With -logs DIR it sends real log lines instead: each line of DIR's *.log
// files wrapped in an event shaped as Filebeat sends it.
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
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
	"github.com/logpond/logpond/tools/internal/lumberload"
)

func main() {
	var cfg lumberload.Config
	addr := flag.String("addr", "127.0.0.1:5044", "Lumberjack server to load")
	flag.IntVar(&cfg.Connections, "connections", 4, "concurrent connections")
	flag.IntVar(&cfg.Batch, "batch", 2048, "events per batch (window)")
	flag.IntVar(&cfg.EventSize, "event-size", 1024, "bytes per event")
	flag.IntVar(&cfg.Compression, "compression", 0, "zlib level 0–9 (Filebeat's default is 3)")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send")
	flag.Float64Var(&cfg.Rate, "rate", 0, "events/s over all connections (0: as fast as acknowledged)")
	baseline := flag.Bool("baseline", false, "compare noop, naive and logpond servers in one run")
	rounds := flag.Int("rounds", 3, "with -baseline: interleaved rounds")
	logpondBin := flag.String("logpond", "bin/logpond", "with -baseline: the logpond binary")
	logpondConfig := flag.String("logpond-config", "", "with -baseline: logpond's configuration (its input.beats.listen should be 127.0.0.1:0)")
	wipe := flag.String("logpond-wipe", "", "with -baseline: directories (space-separated) to remove before each logpond run, so that every round starts on empty stores")
	naiveDir := flag.String("naive-dir", os.TempDir(), "with -baseline: where the naive server writes (put it where logpond's journal is)")
	serve := flag.String("serve", "", "internal: run a baseline server (noop or naive) and print its address")
	logs := flag.String("logs", "", "folder of *.log files: send their lines wrapped as Filebeat events, cycled through (instead of -event-size generated events)")
	flag.Parse()
	if *logs != "" && *serve == "" {
		files, err := filebeatlogs.Load(*logs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(2)
		}
		cfg.Payloads = filebeatlogs.AllEvents(files)
	}

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
		if err := runBaseline(cfg, *rounds, *logpondBin, *logpondConfig, *naiveDir, strings.Fields(*wipe)); err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(1)
		}
	default:
		r, err := lumberload.Run(context.Background(), *addr, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "beatsbench:", err)
			os.Exit(1)
		}
		printHeader()
		printRow("target", r, lumberload.Result{})
		// The exact count, for scripts that check where the events went
		// (tools/demo.sh).
		fmt.Printf("acknowledged events=%d batches=%d elapsed=%s\n", r.Events, r.Batches, r.Elapsed.Round(time.Millisecond))
	}
}

func printHeader() {
	fmt.Printf("%-10s %12s %9s %10s %10s %10s %12s %9s %10s\n", "server", "events/s", "MB/s", "p50", "p99", "p999", "cpu-s/Mev", "peak-MiB", "x-naive")
}

func printRow(name string, r, naive lumberload.Result) {
	cpu, rss, ratio := "-", "-", "-"
	if c := r.CPUPerMillion(); c > 0 {
		cpu = fmt.Sprintf("%.2f", c)
	}
	if r.PeakRSS > 0 {
		rss = fmt.Sprintf("%.0f", float64(r.PeakRSS)/(1<<20))
	}
	if naive.Events > 0 {
		ratio = fmt.Sprintf("%.2f", r.EventsPerSec()/naive.EventsPerSec())
	}
	fmt.Printf("%-10s %12.0f %9.1f %10s %10s %10s %12s %9s %10s\n", name, r.EventsPerSec(), r.MBPerSec(),
		r.Percentile(0.50).Round(time.Microsecond), r.Percentile(0.99).Round(time.Microsecond), r.Percentile(0.999).Round(time.Microsecond), cpu, rss, ratio)
}

// runBaseline measures noop, naive and logpond, interleaved, and prints
// one row per server per round and the median ratios.
func runBaseline(cfg lumberload.Config, rounds int, logpondBin, logpondConfig, naiveDir string, wipe []string) error {
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
		{"logpond", func() *exec.Cmd { return exec.Command(logpondBin, "-config", logpondConfig) },
			regexp.MustCompile(`beats input listening" addr=(\S+)`)},
	}
	// A server's files are moved aside after its run and deleted before
	// the next round's noop run, which does not touch the disk, so that no
	// server pays for the deletion of another's (lumberload.Trash).
	var trash lumberload.Trash
	defer trash.Empty(0)
	discard := func(name string) error {
		paths := wipe
		if name == "naive" {
			var err error
			if paths, err = filepath.Glob(filepath.Join(naiveDir, naivePattern)); err != nil {
				return err
			}
		} else if name != "logpond" {
			return nil
		}
		for _, p := range paths {
			if err := trash.Move(p); err != nil {
				return err
			}
		}
		return nil
	}
	results := map[string][]lumberload.Result{}
	fmt.Printf("%d connections × %d events of %d bytes, compression %d, %s per run, %d rounds\n",
		cfg.Connections, cfg.Batch, cfg.EventSize, cfg.Compression, cfg.Duration, rounds)
	printHeader()
	for round := range rounds {
		if err := trash.Empty(settleAfterDelete); err != nil {
			return err
		}
		for _, s := range servers {
			r, err := lumberload.Measure(s.cmd(), s.addr, cfg)
			if err == nil {
				err = discard(s.name)
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, s.name, err)
			}
			results[s.name] = append(results[s.name], r)
			var naive lumberload.Result
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
		vsNaive = append(vsNaive, lp.EventsPerSec()/nv.EventsPerSec())
		vsNoop = append(vsNoop, lp.EventsPerSec()/np.EventsPerSec())
		p99 = append(p99, float64(lp.Percentile(0.99))/float64(max(nv.Percentile(0.99), 1)))
	}
	fmt.Printf("median over %d rounds: logpond/naive events/s %.2f×, logpond/noop %.2f×, logpond/naive ack p99 %.2f×\n",
		rounds, median(vsNaive), median(vsNoop), median(p99))
	return nil
}

// naivePattern names the naive server's file (os.CreateTemp, filepath.Glob).
const naivePattern = "beatsbench-naive-*"

// settleAfterDelete is how long a round waits after deleting the last
// round's files before its first (disk-free) server starts: with the noop
// run after it, about the ten seconds measured to be enough.
const settleAfterDelete = 3 * time.Second

// serveBaseline runs a baseline Lumberjack server until SIGTERM.
func serveBaseline(kind, dir string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var file *os.File
	var fileMu sync.Mutex
	if kind == "naive" {
		// Left behind on purpose: the caller deletes it when the disk's
		// clean-up cannot slow the next measurement (runBaseline).
		if file, err = os.CreateTemp(dir, naivePattern); err != nil {
			return err
		}
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
			defer r.Release()
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

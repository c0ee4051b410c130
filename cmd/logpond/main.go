// Command logpond is the ingest server: logpond -config FILE.
//
// It stops cleanly on SIGTERM or SIGINT and exits 0; it exits 1 when the
// configuration is wrong or the data directories cannot be opened (for
// example because another logpond holds their locks), and 2 on bad flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/server"
)

// version is set at build time by the Makefile.
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("logpond", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "path of the TOML configuration file (see conf/logpond.example.toml)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for performance work)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stderr, "logpond", version)
		return 0
	}
	if *configPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: logpond -config FILE")
		return 2
	}
	cfg, err := conf.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := newLogger(stderr, cfg.Log)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "logpond: -cpuprofile:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	// The stop signals cancel the context; Run then winds everything down
	// and returns, and we exit 0.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	s, err := server.Open(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	log.Info("logpond started", "version", version, "config", *configPath, "pid", os.Getpid())
	runErr := s.Run(ctx)
	closeErr := s.Close()
	if runErr != nil || closeErr != nil {
		log.Error("stopped with an error", "run", runErr, "close", closeErr)
		return 1
	}
	log.Info("logpond stopped")
	return 0
}

func newLogger(w io.Writer, c conf.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by conf
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

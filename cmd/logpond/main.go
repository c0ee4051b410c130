// Command logpond is the ingest server: logpond -config FILE.
//
// It stops cleanly on SIGTERM or SIGINT and exits 0; it exits 1 when the
// configuration is wrong or the data directories cannot be opened (for
// example because another logpond holds their locks), and 2 on bad flags.
//
// logpond -check-config FILE loads and validates FILE and checks what it
// needs from this host (directories, TLS files, listen addresses; nothing
// is created), prints the effective configuration (every key, defaults
// filled in, secrets and values from the environment redacted) as TOML on
// stdout and exits 0, or prints every problem on stderr and exits 1. With
// -skip-host-checks it checks the file only (for CI).
// Insecure settings (conf.Config.Warnings) are printed on stderr as
// warnings and change no exit code; at start they are logged as WARN.
// logpond -version prints the version and the build's module and VCS
// information on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/buildinfo"
	"github.com/logpond/logpond/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: logpond -config FILE | logpond [-skip-host-checks] -check-config FILE | logpond -version"

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logpond", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "path of the TOML configuration file (see conf/logpond.example.toml)")
	checkPath := fs.String("check-config", "", "validate this configuration file and what it needs from this host, print the effective configuration as TOML and exit: 0 when valid, 1 with the problems on stderr")
	skipHost := fs.Bool("skip-host-checks", false, "with -check-config: check the file only, not the directories, TLS files and listen addresses on this host (for CI, away from the host that runs logpond)")
	showVersion := fs.Bool("version", false, "print the version, module and VCS information of the build and exit")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for performance work)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if *showVersion {
		printVersion(stdout)
		return 0
	}
	if *checkPath != "" {
		if *configPath != "" {
			fmt.Fprintln(stderr, "logpond: -check-config and -config exclude each other\n"+usage)
			return 2
		}
		return checkConfig(*checkPath, !*skipHost, stdout, stderr)
	}
	if *skipHost {
		fmt.Fprintln(stderr, "logpond: -skip-host-checks goes with -check-config\n"+usage)
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cfg, err := conf.Load(*configPath, server.ConfigChecks)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := newLogger(stderr, cfg.Log)
	for _, w := range cfg.Warnings() {
		log.Warn("insecure configuration: "+w.Msg, "key", w.Key)
	}
	defer applyMemoryLimit(cfg, os.Getenv("GOMEMLIMIT"), log)()
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
	log.Info("logpond started", "version", buildinfo.Get().Version, "config", *configPath, "pid", os.Getpid())
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

// printVersion writes the version, what the Go toolchain recorded about
// the build (the main module's version, the Go version) and the VCS state
// it was built from: revision, commit time and whether the tree had local
// changes, as the Makefile stamped them, else as the toolchain recorded
// them (internal/buildinfo).
func printVersion(w io.Writer) {
	bi := buildinfo.Get()
	fmt.Fprintln(w, "logpond", bi.Version)
	if info, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(w, "module: %s %s\n", info.Main.Path, info.Main.Version)
		fmt.Fprintf(w, "go: %s\n", info.GoVersion)
	} else {
		fmt.Fprintln(w, "build information: not available (binary built without module support)")
	}
	if bi.VCS == "" {
		fmt.Fprintln(w, "vcs: none recorded (built neither with make in a git checkout nor by a go build that stamps VCS state)")
		return
	}
	fmt.Fprintf(w, "vcs: %s\n", bi.VCS)
	fmt.Fprintf(w, "vcs.revision: %s\n", bi.Revision)
	if bi.RevisionTime != "" {
		fmt.Fprintf(w, "vcs.time: %s\n", bi.RevisionTime)
	}
	fmt.Fprintf(w, "vcs.modified: %t\n", bi.Modified)
}

// problems counts the problems an error of conf lists.
func problems(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// checkConfig is logpond -check-config: it loads and validates the file,
// with host checks what the configuration needs from this host, also
// when the file has problems (conf.CheckFile: nothing is created), and
// prints the effective configuration as TOML (every key, defaults filled
// in; secrets and values from the environment redacted), or every problem
// found: the file's, then the host's. It returns the exit code: 0 valid, 1
// not.
func checkConfig(path string, host bool, stdout, stderr io.Writer) int {
	l, fileErr, hostErr := conf.CheckFile(path, host, server.ConfigChecks)
	if fileErr != nil {
		fmt.Fprintln(stderr, fileErr)
	}
	if hostErr != nil {
		fmt.Fprintln(stderr, hostErr)
		which := "the file is valid; the problems above are of this host"
		if fileErr != nil {
			which = "the last problem above is of this host"
			if n := problems(hostErr); n > 1 {
				which = fmt.Sprintf("the last %d problems above are of this host", n)
			}
		}
		fmt.Fprintf(stderr, "logpond: %s, checked as uid %d (the service may run as another user); -skip-host-checks checks the file only\n", which, os.Getuid())
	}
	if fileErr != nil || hostErr != nil {
		return 1
	}
	cfg := l.Config
	// Insecure settings are warnings, on stderr: the exit code says
	// whether the file is valid, and stdout stays TOML.
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "logpond: warning: %s: %s\n", path, w)
	}
	// Secrets, and whatever came from the environment, stay out of the
	// output, so that it can go to CI logs.
	out := l.Printable()
	hidden := out.RedactSecrets()
	fmt.Fprintf(stdout, "# logpond effective configuration of %s: every key, defaults filled in.\n", path)
	if host {
		fmt.Fprintf(stdout, "# Checked on this host, as uid %d (the service may run as another user):\n", os.Getuid())
	} else {
		fmt.Fprintln(stdout, "# Not checked (-skip-host-checks); they need the host that runs logpond:")
	}
	for _, c := range conf.HostChecks {
		fmt.Fprintf(stdout, "#   - %s\n", c)
	}
	if hidden {
		fmt.Fprintf(stdout, "# Secrets are shown as %q.\n", conf.Redacted)
	}
	if l.FromEnvironment() {
		fmt.Fprintln(stdout, "# Values taken from environment variables are shown as the ${NAME} references they came from.")
	}
	fmt.Fprintln(stdout)
	enc := toml.NewEncoder(stdout)
	enc.Indent = ""
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "logpond: -check-config: encoding the configuration:", err)
		return 1
	}
	return 0
}

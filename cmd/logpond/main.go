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
// logpond -test-processors -config FILE [-output NAME] reads NDJSON events
// on stdin and prints each one as the output's processors leave it.
// logpond -version prints the version and the build's module and VCS
// information on stdout.
//
// logpond -config FILE -drain [-drain-timeout DURATION] retires an
// instance: it opens the journal and the ledger as usual (the journal's
// acknowledged records are moved into the ledger), never opens the Beats
// listener, serves the admin endpoint with /readyz answering 503
// "draining", and runs every configured output until each one's cursor is
// at the end of the ledger. It exits 0 when that is done and no output's
// dead-letter store holds anything; 4 when it is done but dead letters
// remain on the ledger's device (each output's count and bytes logged and
// printed on stderr: re-drive or export them before deleting the
// directories); 3 when the timeout passes first or SIGTERM/SIGINT stops
// it, after logging (at ERROR) and printing on stderr what each output has
// left (nothing is lost: a later drain or a normal start resumes from the
// cursors); 1 when it cannot start or a component fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/buildinfo"
	"github.com/logpond/logpond/server"
)

func main() {
	// SIGHUP reloads, as for Logstash, and logrotate and configuration
	// management send it: it must never end the process, whatever phase
	// it arrives in. Caught from the first instruction on; run handles
	// what arrives once the server is up, and ignores the rest.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(runWithHUP(os.Args[1:], os.Stdout, os.Stderr, hup))
}

const usage = "usage: logpond -config FILE [-drain [-drain-timeout DURATION]] | logpond [-skip-host-checks] -check-config FILE | logpond -test-processors -config FILE [-output NAME] < events.ndjson | logpond -version"

// exitDrainLeft is the exit code of a drain that stopped before it was
// done (timeout or signal): distinct from 1 (could not start, or failed),
// so that a retirement script can tell "run it again" from "fix
// something".
const exitDrainLeft = 3

// exitDrainDeadLetters is the exit code of a drain that is done while
// dead letters remain in the outputs' stores on the ledger's device: the
// directories still hold events delivered nowhere, so a retirement script
// must not delete them on it (as it may on 0).
const exitDrainDeadLetters = 4

// runWithHUP runs logpond; each SIGHUP on hup (nil: none) reloads the
// configuration while the server runs (reload).
func runWithHUP(args []string, stdout, stderr io.Writer, hup <-chan os.Signal) int {
	fs := flag.NewFlagSet("logpond", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "path of the TOML configuration file (see conf/logpond.example.toml)")
	checkPath := fs.String("check-config", "", "validate this configuration file and what it needs from this host, print the effective configuration as TOML and exit: 0 when valid, 1 with the problems on stderr")
	skipHost := fs.Bool("skip-host-checks", false, "with -check-config: check the file only, not the directories, TLS files and listen addresses on this host (for CI, away from the host that runs logpond)")
	showVersion := fs.Bool("version", false, "print the version, module and VCS information of the build and exit")
	var prof profiles
	fs.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the whole run to this file (for performance work)")
	fs.StringVar(&prof.block, "blockprofile", "", "write a profile of where goroutines waited (channels, selects, conditions; waits of 100µs or more all counted, shorter ones sampled) over the whole run to this file, at exit (for performance work)")
	fs.StringVar(&prof.mutex, "mutexprofile", "", "write a profile of mutex contention (one contention in 10 sampled) over the whole run to this file, at exit (for performance work)")
	drain := fs.Bool("drain", false, "with -config: retire this instance: accept no Beats connections, send what the journal and ledger hold through every configured output until each output's cursor is at the end of the ledger, then exit 0 (4 when done but dead letters remain on the ledger's device, to re-drive or export first; 3 when -drain-timeout passes or a signal stops it first, with what is left on stderr)")
	drainTimeout := fs.Duration("drain-timeout", 0, "with -drain: give up after this long (e.g. 10m) and exit 3 with what is left; 0 waits until done")
	testProc := fs.Bool("test-processors", false, "with -config: read NDJSON events on stdin and print each one as the processors leave it (the global ones, then those of -output), without a cluster, as Elasticsearch's _simulate does")
	outputName := fs.String("output", "", "with -test-processors: the output whose processors to run after the global ones")
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
	if *testProc || *outputName != "" {
		if !*testProc {
			fmt.Fprintln(stderr, "logpond: -output goes with -test-processors\n"+usage)
			return 2
		}
		if *configPath == "" || *checkPath != "" || *drain {
			fmt.Fprintln(stderr, "logpond: -test-processors needs -config FILE, and nothing else but -output\n"+usage)
			return 2
		}
		return testProcessors(*configPath, *outputName, os.Stdin, stdout, stderr)
	}
	if *checkPath != "" {
		if *configPath != "" {
			fmt.Fprintln(stderr, "logpond: -check-config and -config exclude each other\n"+usage)
			return 2
		}
		if *drain || *drainTimeout != 0 {
			fmt.Fprintln(stderr, "logpond: -drain goes with -config, not -check-config\n"+usage)
			return 2
		}
		return checkConfig(*checkPath, !*skipHost, stdout, stderr)
	}
	if *skipHost {
		fmt.Fprintln(stderr, "logpond: -skip-host-checks goes with -check-config\n"+usage)
		return 2
	}
	if *configPath == "" {
		if *drain {
			fmt.Fprintln(stderr, "logpond: -drain needs -config\n"+usage)
		} else {
			fmt.Fprintln(stderr, usage)
		}
		return 2
	}
	if *drainTimeout != 0 && !*drain {
		fmt.Fprintln(stderr, "logpond: -drain-timeout goes with -drain\n"+usage)
		return 2
	}
	if *drainTimeout < 0 {
		fmt.Fprintln(stderr, "logpond: -drain-timeout must not be negative\n"+usage)
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
	for _, w := range cfg.StoreSizeWarnings() {
		log.Warn("stores larger than their devices: "+w.Msg, "key", w.Key)
	}
	defer applyMemoryLimit(cfg, os.Getenv("GOMEMLIMIT"), "/", log)()
	if err := prof.start(); err != nil {
		fmt.Fprintln(stderr, "logpond:", err)
		return 1
	}
	defer func() {
		if err := prof.stop(); err != nil {
			fmt.Fprintln(stderr, "logpond:", err)
		}
	}()

	// The stop signals cancel the context; Run then winds everything down
	// and returns, and we exit 0.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *drain {
		go ignoreHUP(ctx, hup, log, "a drain has nothing to reload: SIGHUP ignored")
		return runDrain(ctx, cfg, *configPath, *drainTimeout, log, stderr)
	}
	s, err := server.Open(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	log.Info("logpond started", "version", buildinfo.Get().Version, "config", *configPath, "pid", os.Getpid())
	rctx, stopReload := context.WithCancel(ctx)
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		reload(rctx, hup, *configPath, s, log)
	}()
	runErr := s.Run(ctx)
	stopReload()
	<-reloaded
	closeErr := s.Close()
	if runErr != nil || closeErr != nil {
		log.Error("stopped with an error", "run", runErr, "close", closeErr)
		return 1
	}
	log.Info("logpond stopped")
	return 0
}

// reload reloads the configuration at path into s at each signal on hup,
// until ctx ends: a file that does not load (a syntax error, a value out
// of range) changes nothing and is logged at ERROR with what is wrong.
func reload(ctx context.Context, hup <-chan os.Signal, path string, s *server.Server, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		log.Info("SIGHUP: reloading the configuration", "config", path)
		cfg, err := conf.Load(path, server.ConfigChecks)
		if err != nil {
			log.Error("reload: the configuration file does not load; the running configuration stays", "config", path, "err", err)
			continue
		}
		s.Reload(cfg)
	}
}

// ignoreHUP logs each signal on hup, which changes nothing (why), until
// ctx ends.
func ignoreHUP(ctx context.Context, hup <-chan os.Signal, log *slog.Logger, why string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info(why)
		}
	}
}

// errDrainTimeout is the cause of a drain's context that -drain-timeout
// ended.
var errDrainTimeout = errors.New("-drain-timeout passed")

// runDrain is logpond -drain: it drains the instance of cfg until done,
// the timeout (0: none) or a signal (ctx), and returns the exit code.
func runDrain(ctx context.Context, cfg *conf.Config, configPath string, timeout time.Duration, log *slog.Logger, stderr io.Writer) int {
	s, err := server.OpenDrain(cfg, log)
	if err != nil {
		log.Error("cannot start the drain", "err", err)
		return 1
	}
	log.Info("logpond started to drain", "version", buildinfo.Get().Version, "config", configPath, "pid", os.Getpid(), "drain_timeout", timeout.String())
	dctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeoutCause(ctx, timeout, errDrainTimeout)
		defer cancel()
	}
	left, runErr := s.Drain(dctx)
	closeErr := s.Close()
	if runErr != nil || closeErr != nil {
		log.Error("drain stopped with an error", "run", runErr, "close", closeErr)
		reportLeft(left, "the drain failed", log, stderr)
		return 1
	}
	if !left.Done {
		why := "stopped by a signal"
		if errors.Is(context.Cause(dctx), errDrainTimeout) {
			why = "-drain-timeout " + timeout.String() + " passed"
		}
		reportLeft(left, why, log, stderr)
		return exitDrainLeft
	}
	if n := left.DeadLetters(); n > 0 {
		reportDeadLetters(left, log, stderr)
		return exitDrainDeadLetters
	}
	log.Info("drain done: every output's cursor is at the end of the ledger and no dead letters remain: the directories can be deleted", "ledger_last_lsn", left.LedgerLastLSN)
	return 0
}

// reportDeadLetters logs at ERROR, and prints on stderr, the dead letters
// a finished drain leaves on the ledger's device, per output, with what to
// do about them.
func reportDeadLetters(left server.DrainLeft, log *slog.Logger, stderr io.Writer) {
	log.Error("drain done, but dead letters remain: every output's cursor is at the end of the ledger, and the events below were refused for good by their destination and kept in <ledger.dir>/dlq; re-drive them (ledgerctl dlq redrive) or export them (ledgerctl dlq dump) before deleting the directories",
		left.LogArgs()...)
	fmt.Fprintf(stderr, "logpond: drain done (ledger last LSN %d), but %d dead letters remain on the ledger's device; re-drive (ledgerctl dlq redrive --output NAME) or export (ledgerctl dlq dump --output NAME) them before deleting the directories\n",
		left.LedgerLastLSN, left.DeadLetters())
	for _, o := range left.Outputs {
		if o.DeadLetters > 0 {
			fmt.Fprintf(stderr, "logpond: output %s (%s): %d dead letters (%d bytes)\n", o.Name, o.Type, o.DeadLetters, o.DeadLetterBytes)
		}
	}
}

// reportLeft logs at ERROR, and prints on stderr, what a drain that
// stopped before it was done (why) has left: the journal's records not
// yet in the ledger, then per output its cursor, the records and bytes
// after it and the last reason it was held back.
func reportLeft(left server.DrainLeft, why string, log *slog.Logger, stderr io.Writer) {
	log.Error("drain not finished: "+why+"; nothing is lost, a later drain or a normal start resumes from the cursors", left.LogArgs()...)
	fmt.Fprintf(stderr, "logpond: drain not finished (%s): ledger last LSN %d", why, left.LedgerLastLSN)
	if left.JournalRecords > 0 {
		fmt.Fprintf(stderr, ", %d acknowledged journal records not yet in the ledger", left.JournalRecords)
	}
	if left.LedgerError != "" {
		fmt.Fprintf(stderr, ", %s", left.LedgerError)
	}
	fmt.Fprintln(stderr)
	for _, o := range left.Outputs {
		if o.Records == 0 && left.LedgerError == "" {
			fmt.Fprintf(stderr, "logpond: output %s (%s): done, cursor at LSN %d", o.Name, o.Type, o.CursorLSN)
			if o.DeadLetters > 0 {
				fmt.Fprintf(stderr, "; %d dead letters (%d bytes)", o.DeadLetters, o.DeadLetterBytes)
			}
			fmt.Fprintln(stderr)
			continue
		}
		events := ""
		if o.Events >= 0 {
			events = fmt.Sprintf("about %d events in ", o.Events)
		}
		fmt.Fprintf(stderr, "logpond: output %s (%s): cursor at LSN %d, %s%d records (%d bytes) left", o.Name, o.Type, o.CursorLSN, events, o.Records, o.Bytes)
		if o.DeadLetters > 0 {
			fmt.Fprintf(stderr, "; %d dead letters (%d bytes)", o.DeadLetters, o.DeadLetterBytes)
		}
		if o.LastError != "" {
			fmt.Fprintf(stderr, "; last error: %s", o.LastError)
		}
		fmt.Fprintln(stderr)
	}
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
	ws := cfg.Warnings()
	if host {
		ws = append(ws, cfg.StoreSizeWarnings()...)
	}
	for _, w := range ws {
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

// Command ledgerctl inspects logpond's stores: the journal, the ledger
// (with each output's cursor) and each output's dead letters.
//
//	ledgerctl [-config FILE | -journal DIR -ledger DIR] [--json] COMMAND [flags]
//
// The global flags (-config, -journal, -ledger, --json) go before or after
// the command; a command's own flags go after it.
//
// Every command but `dlq purge`, `dlq redrive -purge`, `cursors set` /
// `cursors rewind` / `cursors delete` and `accept-loss` (which refuse while
// logpond runs, but for a purge and the deletion of a cursor no configured
// output owns, which they ask the running logpond to do) is read-only and
// safe while logpond runs: ledgerctl never takes the directories' locks,
// never opens tidwall/wal or the stores (their Open repairs tails and
// renames files), and never writes. A purge never writes a dead-letter
// store a running logpond holds: it asks that logpond, on its admin
// listener, to purge under its own lock, and opens the store itself
// (taking its lock) only when no process holds it. The commands that write
// run only as the user that owns the store (owner.go). A torn or partial write at the end of the newest journal
// generation or of the open ledger segment is the end of the data (a write
// in progress), as each store's recovery rule says; anything else that does
// not verify is damage, reported with file, offset and LSN.
//
// Exit status: 0 ok, 1 damage or failure found, 2 usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/output/dlq"
)

// defaultConfigPath is where `make install` puts logpond's configuration,
// and what the packaged systemd unit runs logpond -config with (logpond
// itself has no default: -config is required).
const defaultConfigPath = "/etc/logpond/logpond.toml"

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // damage found, or a command failed
	exitUsage  = 2
)

const usageText = `usage: ledgerctl [-config FILE | -journal DIR -ledger DIR] [--json] COMMAND [flags]

Inspects logpond's journal, ledger and dead letters. Read-only and safe while
logpond runs, but for "dlq purge" and "dlq redrive -purge": they ask a running
logpond to purge on its admin listener, or purge themselves when it is stopped;
for "cursors delete", which does the same for a cursor no configured output
owns and refuses for a configured one while logpond runs; and for "cursors
set", "cursors rewind" and "accept-loss", which refuse to run while logpond
runs. What writes a store runs only as the user that owns it
(the user logpond runs as): run as another user, root included, it changes
nothing and prints the command that runs it as the owner (sudo -u USER ...).

Global flags (before or after the command):
  -config FILE     logpond's configuration: journal.dir, ledger.dir, its
                   outputs (each output's cursor is named like it, and
                   its dead letters are in <ledger.dir>/dlq/NAME) and
                   [admin] listen
  -journal DIR     the journal directory (overrides the configuration's)
  -ledger DIR      the ledger directory (overrides the configuration's)
  --json           machine-readable output (JSON), for any command

Commands (their flags go after them; ledgerctl COMMAND -h lists them):
  segments         journal generations and ledger segments: file, first and
                   last LSN, records, bytes, raw bytes (the records
                   uncompressed), ratio (their stored size over that: 1
                   when none is compressed), sealed or open; reads every
                   record's header to measure them
  stat             totals per store: records, events, bytes stored and
                   uncompressed and their ratio, disk use, oldest record and
                   its age, LSN range, ledger stream id, cursors, dead
                   letters
  dump [--from LSN] [--count N] [--events]
                   records from LSN (ledger, then journal); with --events the
                   events as JSON lines {"lsn","position","event"}
  verify           check every record's checksums in journal and ledger (and
                   cursors and dead letters), decompress every compressed
                   record, give the compression ratio; on damage exit 1
                   naming file, offset and LSN
  cursors [list]   each cursor: position, lag in records and bytes, age of
                   the oldest record after it; with -config, a cursor no
                   configured output owns is marked "not configured: holds
                   the ledger" with what it holds back
  cursors rewind NAME (--from-lsn LSN | --from-time RFC3339)
                   with logpond stopped: its output sends again from LSN,
                   or from the first record received at or after the time
  cursors set NAME POSITION
                   with logpond stopped: set the cursor (the last LSN done)
                   forward or back
  cursors delete NAME [--admin HOST:PORT]
                   delete a cursor so that it no longer holds the ledger (an
                   output removed from the configuration). With logpond
                   stopped ledgerctl deletes it; while logpond runs it is
                   refused for a configured output, and a running logpond is
                   asked for any other. Its dead letters are kept
  accept-loss [--dry-run]
                   with logpond stopped: accept the loss of journal records
                   damaged after the ledger's last LSN (logpond refuses to
                   start over them): every other record is kept, each lost
                   LSN becomes an empty record; prints exactly which LSNs
                   and how many events are lost. Needs both stores
  Every dlq command takes --output NAME: whose dead letters. Default: the
  only output of -config, else the only directory in
  <ledger>/dlq; with several, ledgerctl asks (exit 2) and lists the names.
  dlq list         dead letters, one line each
  dlq dump         dead letters with their events, as JSON lines
  dlq show ID      one dead letter with its event (ID is FILE:OFFSET, as
                   dlq list prints it)
  dlq purge --through ID|TIME [--admin HOST:PORT]
                   delete the dead letters up to and including ID, or that
                   failed at or before TIME (RFC 3339), in whole files; a
                   running logpond does it, asked on its admin listener
                   ([admin] listen of -config, or --admin)
  dlq redrive [-es URL] [-username NAME] [-ca FILE] [-purge]
                   re-send dead letters to Elasticsearch (bulk create with
                   each entry's index and id; 409 means already there);
                   -purge removes them once all succeeded (as dlq purge).
                   Default host: the output's in -config. Its configured
                   credentials and TLS settings go only to its configured
                   hosts; for another -es give -username
                   (password in $LEDGERCTL_ES_PASSWORD) or
                   $LEDGERCTL_ES_API_KEY
  top [--admin HOST:PORT] [--interval D] [--once]
                   a live view of a running logpond, from GET / on its admin
                   listener (--admin, or [admin] listen of -config, else of
                   /etc/logpond/logpond.toml, else 127.0.0.1:9600): per
                   stage its state, events, bytes and records per second and
                   fill; per output by name its state, events/s, lag and
                   (Elasticsearch) dead-letter fill; each cursor no output
                   owns and what it holds; refreshed every --interval (2s)
                   until Ctrl-C, or once with --once

Exit status: 0 ok, 1 damage or failure found, 2 usage error.
`

func main() {
	os.Exit(runProg(os.Args[0], os.Args[1:], os.Stdout, os.Stderr))
}

// env is what every command gets: where the stores are and where to write.
type env struct {
	journalDir string // "" when not given
	ledgerDir  string // "" when not given
	directIO   bool   // read ledger segments with O_DIRECT (falls back when refused)
	// outputs are the configured outputs of -config (configuredOutputs),
	// nil without -config.
	outputs []outputRef
	// dlqOut is the output whose dead letters a dlq command works on,
	// chosen by selectDLQOutput.
	dlqOut outputRef
	// dlqNone says that no output holds dead letters: selectDLQOutput
	// found no Elasticsearch output configured and no dead-letter
	// directory (dlqOut is then empty).
	dlqNone bool
	admin   string // logpond's [admin] listen from -config, "" when not known
	config  string // -config as given, "" when not given
	// defaultConfig is where logpond's configuration is installed
	// (defaultConfigPath), read by top when given neither -config nor
	// --admin.
	defaultConfig string
	json          bool // --json given among the global flags
	stdout        io.Writer
	stderr        io.Writer
	progress      bool             // stderr is a terminal: draw progress bars there
	now           func() time.Time // for ages
	// prog and globals start the command lines ledgerctl prints for the
	// operator to run (commandLine): the program as it was called and the
	// global flags, with the stores' paths made absolute.
	prog    string
	globals []string
}

// dlqDir is where the output a dlq command works on (e.dlqOut, set by
// selectDLQOutput) keeps its dead letters.
func (e *env) dlqDir() string { return dlq.Dir(e.ledgerDir, e.dlqOut.name) }

// errorf prints a message naming ledgerctl on stderr.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "ledgerctl: "+format+"\n", args...)
}

// command is one subcommand; it returns the exit status.
type command struct {
	name  string
	needs string // "ledger" when it needs the ledger; "admin" when it reads a running logpond instead of the stores
	run   func(e *env, args []string) int
}

var commands = []command{
	{"segments", "", cmdSegments},
	{"stat", "", cmdStat},
	{"dump", "", cmdDump},
	{"verify", "", cmdVerify},
	{"cursors", "ledger", cmdCursors},
	{"dlq", "ledger", cmdDLQ},
	{"top", "admin", cmdTop},
	{"accept-loss", "", cmdAcceptLoss},
}

// globalFlags are the flags ledgerctl takes anywhere on the command line,
// before or after the command.
type globalFlags struct {
	config, journal, ledger string
	json                    bool // --json for the command
	help                    bool // -h, -help or --help
}

// globalValueFlags take a value; json and h are booleans.
var globalValueFlags = []string{"config", "journal", "ledger"}

// splitArgs takes the global flags out of args, wherever they are, and
// finds the command: the first argument that is not a flag. The rest, in
// order, are the command's: its flags and their values, its
// subcommand. A flag before the command that is not global is an error
// (a command's flags go after it, where ledgerctl knows the command), and
// so is a global flag without its value. "--" ends the flags: what follows
// goes to the command untouched.
func splitArgs(args []string) (g globalFlags, cmd string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			tail := args[i+1:]
			if cmd == "" && len(tail) > 0 {
				cmd, tail = tail[0], tail[1:]
			}
			rest = append(rest, tail...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if cmd == "" {
				cmd = a
			} else {
				rest = append(rest, a)
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		switch {
		case slices.Contains(globalValueFlags, name):
			if !hasValue {
				if i+1 == len(args) {
					return g, cmd, rest, fmt.Errorf("flag -%s needs a value", name)
				}
				i++
				value = args[i]
			}
			switch name {
			case "config":
				g.config = value
			case "journal":
				g.journal = value
			case "ledger":
				g.ledger = value
			}
		case name == "json":
			g.json = true
			if hasValue {
				if g.json, err = strconv.ParseBool(value); err != nil {
					return g, cmd, rest, fmt.Errorf("flag --json=%s: want true or false", value)
				}
			}
		case name == "h" || name == "help":
			g.help = true
			if cmd != "" {
				rest = append(rest, "-h") // the command prints its own usage
			}
		case cmd == "":
			return g, cmd, rest, fmt.Errorf("unknown flag %s before the command (global flags: -config, -journal, -ledger, --json; a command's flags go after it)", a)
		default:
			rest = append(rest, a)
		}
	}
	return g, cmd, rest, nil
}

// run is the whole program, called as "ledgerctl".
func run(args []string, stdout, stderr io.Writer) int {
	return runProg("ledgerctl", args, stdout, stderr)
}

// runProg is the whole program, called as prog: it parses args, finds the
// stores and runs the command, writing to stdout and stderr, and returns
// the exit status.
func runProg(prog string, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, directIO: true, now: time.Now, progress: isTerminal(stderr), prog: prog,
		defaultConfig: defaultConfigPath}
	g, name, rest, err := splitArgs(args)
	if err != nil {
		e.errorf("%v; see ledgerctl -h", err)
		return exitUsage
	}
	e.json = g.json
	e.globals = globalArgs(g)
	switch {
	case g.help && name == "":
		fmt.Fprint(stderr, usageText)
		return exitOK
	case name == "":
		e.errorf("say which command to run (segments, stat, dump, verify, cursors, dlq, top, accept-loss); see ledgerctl -h")
		return exitUsage
	case name == "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == name {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		e.errorf("unknown command %q (commands: segments, stat, dump, verify, cursors, dlq, top, accept-loss; see ledgerctl -h)", name)
		return exitUsage
	}
	if g.help {
		// The command prints its usage, before it would need the stores.
		if !slices.Contains(rest, "-h") {
			rest = append([]string{"-h"}, rest...)
		}
		return cmd.run(e, rest)
	}
	if g.config != "" {
		cfg, err := conf.Load(g.config)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		e.journalDir, e.ledgerDir, e.directIO = cfg.Journal.Dir, cfg.Ledger.Dir, cfg.Ledger.DirectIO
		e.outputs = configuredOutputs(cfg)
		e.admin = cfg.Admin.Listen
		e.config = g.config
	}
	if g.journal != "" {
		e.journalDir = g.journal
	}
	if g.ledger != "" {
		e.ledgerDir = g.ledger
	}
	if cmd.needs == "admin" {
		return cmd.run(e, rest) // it reads the running logpond, not the stores
	}
	switch {
	case e.journalDir == "" && e.ledgerDir == "":
		e.errorf("%s: say where the stores are: -config FILE, or -journal DIR and/or -ledger DIR", name)
		return exitUsage
	case cmd.needs == "ledger" && e.ledgerDir == "":
		e.errorf("%s needs the ledger: -ledger DIR or -config FILE", name)
		return exitUsage
	}
	for _, d := range []struct{ what, dir string }{{"journal", e.journalDir}, {"ledger", e.ledgerDir}} {
		if d.dir == "" {
			continue
		}
		st, err := os.Stat(d.dir)
		if err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			e.errorf("%s directory %s: %v", d.what, d.dir, permissionOr(d.dir, err))
			return exitFailed
		}
		if err := checkStoreDir(d.what, d.dir); err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
	}
	return cmd.run(e, rest)
}

// newFlags returns the flag set of a command, with its --json flag (true
// when --json came before the command).
func newFlags(e *env, name, synopsis string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ledgerctl [-config FILE | -journal DIR -ledger DIR] %s\n", synopsis)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", e.json, "machine-readable output (JSON)")
	return fs, asJSON
}

// parseFlags parses a command's flags; ok is false with the exit status
// when the command should stop: after printing its usage for -h, or after
// one line naming a bad flag or argument (the usage is for -h).
func parseFlags(fs *flag.FlagSet, args []string) (status int, ok bool) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return exitOK, false
	case err != nil:
		fmt.Fprintf(out, "ledgerctl %s: %v; see ledgerctl %s -h\n", fs.Name(), err, fs.Name())
		return exitUsage, false
	case fs.NArg() > 0:
		fmt.Fprintf(out, "ledgerctl %s: unexpected argument %q; see ledgerctl %s -h\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, false
	}
	return exitOK, true
}

// parseFlagsArgs parses a command's flags, which may come before, between
// or after its arguments, and returns the arguments in order ("--" ends
// the flags). ok is false with the exit status as in parseFlags.
func parseFlagsArgs(fs *flag.FlagSet, args []string) (positional []string, status int, ok bool) {
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	status, ok = parseFlags(fs, flags)
	return positional, status, ok
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isTerminal says whether w is a terminal (for progress bars on stderr).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// humanBytes formats n bytes for tables: "812 B", "45.2 KiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// formatTime formats a receive or failure time for tables ("-" when unknown).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// formatAge formats an age for tables, to the second.
func formatAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// lsnRange formats an LSN range for tables.
func lsnRange(first, last uint64) string {
	if last < first {
		return "-"
	}
	return fmt.Sprintf("%d–%d", first, last)
}

// relPath shows path relative to dir when it is inside it.
func relPath(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// Command ledgerctl inspects logpond's stores: the journal, the ledger and
// the Elasticsearch output's dead letters.
//
//	ledgerctl [-config FILE | -journal DIR -ledger DIR] COMMAND [flags]
//
// Every command but `dlq redrive -purge` is read-only and safe while logpond
// runs: ledgerctl never takes the directories' locks, never opens tidwall/wal
// or the stores (their Open repairs tails and renames files), and never
// writes. A torn or partial write at the end of the newest journal
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
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // damage found, or a command failed
	exitUsage  = 2
)

const usageText = `usage: ledgerctl [-config FILE | -journal DIR -ledger DIR] COMMAND [flags]

Inspects logpond's journal, ledger and dead letters. Read-only and safe while
logpond runs (only "dlq redrive -purge" writes, and it needs logpond stopped).

Stores:
  -config FILE     logpond's configuration: journal.dir, ledger.dir (dead
                   letters are in <ledger.dir>/dlq/elasticsearch)
  -journal DIR     the journal directory (overrides the configuration's)
  -ledger DIR      the ledger directory (overrides the configuration's)

Commands (flags go after the command; each takes --json):
  segments         journal generations and ledger segments: file, first and
                   last LSN, records, bytes, sealed or open
  stat             totals per store: records, events, bytes, disk use, oldest
                   record and its age, LSN range, ledger stream id, cursors,
                   dead letters
  dump [--from LSN] [--count N] [--events]
                   records from LSN (ledger, then journal); with --events the
                   events as JSON lines {"lsn","position","event"}
  verify           check every record's checksums in journal and ledger (and
                   cursors and dead letters); on damage exit 1 naming file,
                   offset and LSN
  cursors          each output cursor: position, lag in records and bytes,
                   age of the oldest record after it
  dlq list         dead letters, one line each
  dlq dump         dead letters with their events, as JSON lines
  dlq redrive [-es URL] [-username NAME] [-ca FILE] [-purge]
                   re-send dead letters to Elasticsearch (bulk create with
                   each entry's index and id; 409 means already there);
                   -purge removes them once all succeeded (stop logpond first).
                   The configured credentials and TLS settings go only to
                   the configured hosts; for another -es give -username
                   (password in $LEDGERCTL_ES_PASSWORD) or
                   $LEDGERCTL_ES_API_KEY

Exit status: 0 ok, 1 damage or failure found, 2 usage error.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// env is what every command gets: where the stores are and where to write.
type env struct {
	journalDir string // "" when not given
	ledgerDir  string // "" when not given
	directIO   bool   // read ledger segments with O_DIRECT (falls back when refused)
	es         *conf.Elasticsearch
	stdout     io.Writer
	stderr     io.Writer
	progress   bool             // stderr is a terminal: draw progress bars there
	now        func() time.Time // for ages
}

// dlqDir is where the Elasticsearch output keeps its dead letters.
func (e *env) dlqDir() string { return filepath.Join(e.ledgerDir, "dlq", "elasticsearch") }

// errorf prints a message naming ledgerctl on stderr.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "ledgerctl: "+format+"\n", args...)
}

// command is one subcommand; it returns the exit status.
type command struct {
	name  string
	needs string // "ledger" when it needs the ledger
	run   func(e *env, args []string) int
}

var commands = []command{
	{"segments", "", cmdSegments},
	{"stat", "", cmdStat},
	{"dump", "", cmdDump},
	{"verify", "", cmdVerify},
	{"cursors", "ledger", cmdCursors},
	{"dlq", "ledger", cmdDLQ},
}

// run is the whole program: it parses args, finds the stores and runs the
// command, writing to stdout and stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ledgerctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	configPath := fs.String("config", "", "logpond's configuration file")
	journalDir := fs.String("journal", "", "the journal directory")
	ledgerDir := fs.String("ledger", "", "the ledger directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr, directIO: true, now: time.Now, progress: isTerminal(stderr)}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
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
		e.errorf("unknown command %q (commands: segments, stat, dump, verify, cursors, dlq; see ledgerctl -h)", name)
		return exitUsage
	}
	if *configPath != "" {
		cfg, err := conf.Load(*configPath)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		e.journalDir, e.ledgerDir, e.directIO = cfg.Journal.Dir, cfg.Ledger.Dir, cfg.Ledger.DirectIO
		e.es = &cfg.Output.Elasticsearch
	}
	if *journalDir != "" {
		e.journalDir = *journalDir
	}
	if *ledgerDir != "" {
		e.ledgerDir = *ledgerDir
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
			e.errorf("%s directory %s: %v", d.what, d.dir, err)
			return exitFailed
		}
	}
	return cmd.run(e, rest)
}

// newFlags returns the flag set of a command, with its --json flag.
func newFlags(e *env, name, synopsis string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: ledgerctl [-config FILE | -journal DIR -ledger DIR] %s\n", synopsis)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "machine-readable output (JSON)")
	return fs, asJSON
}

// parseFlags parses a command's flags; ok is false with the exit status
// when the command should stop (help, or a usage error).
func parseFlags(fs *flag.FlagSet, args []string) (status int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "ledgerctl %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage, false
	}
	return exitOK, true
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

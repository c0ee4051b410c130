package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/logpond/logpond/internal/dirowner"
)

// The commands that write a store (accept-loss, cursors set and rewind, a
// dead-letter purge that ledgerctl does itself) run only as the user that
// owns it. Files they create (a lock file, a cursor, a rewritten journal
// generation, a new ledger segment) belong to whoever runs them: created
// by root, logpond, running as its service user, could not open them and
// would not start. ledgerctl refuses instead, before it writes anything,
// and prints the command line that runs it as the owner. Changing the
// files' owner afterwards (chown) was not chosen: a crash or an error
// between the write and the chown would leave the very files that stop
// logpond, and some writes (a cursor's temp file and rename, the lock
// file) happen inside the stores' packages, out of ledgerctl's reach.

// globalArgs are the global flags g as the command lines ledgerctl prints
// give them: the paths made absolute, so that a line works from any
// directory and as another user.
func globalArgs(g globalFlags) []string {
	var out []string
	for _, f := range []struct{ name, value string }{{"config", g.config}, {"journal", g.journal}, {"ledger", g.ledger}} {
		if f.value == "" {
			continue
		}
		out = append(out, "-"+f.name, abs(f.value))
	}
	if g.json {
		out = append(out, "--json")
	}
	return out
}

// commandLine is the shell command line that runs ledgerctl as this run
// was called, with its global flags, and words: the command and its
// arguments.
func (e *env) commandLine(words ...string) string {
	prog := e.prog
	if prog == "" {
		prog = "ledgerctl"
	}
	all := append(append([]string{prog}, e.globals...), words...)
	for i, w := range all {
		all[i] = dirowner.Quote(w)
	}
	return strings.Join(all, " ")
}

// notOwnerError is the refusal to write stores that another user owns.
type notOwnerError struct {
	dirs  []string
	owner dirowner.Owner
	self  dirowner.Owner
	retry string // the command line that runs it as the owner
}

func (e *notOwnerError) Error() string {
	verb := "belongs"
	if len(e.dirs) > 1 {
		verb = "belong"
	}
	return fmt.Sprintf("%s %s to %s, and ledgerctl runs as %s: files it wrote there would belong to %s, and logpond, running as %s, could not open them and would not start. Nothing was changed; run it as the store's owner:\n  %s",
		strings.Join(e.dirs, " and "), verb, e.owner, e.self, e.self, e.owner, e.retry)
}

// checkOwner returns nil when ledgerctl runs as the owner of every
// directory in dirs (the stores a command is about to write), a
// *notOwnerError with the command line retry run as their owner when it
// does not, and an error when they have different owners (no user can
// write them all without leaving files another user cannot open).
func checkOwner(retry string, dirs ...string) error {
	var owner dirowner.Owner
	for i, dir := range dirs {
		o, err := dirowner.Of(dir)
		if err != nil {
			return err
		}
		if i > 0 && o.UID != owner.UID {
			return fmt.Errorf("%s belongs to %s but %s to %s: logpond runs as one user, which must own every store directory and what is in it (chown -R USER %s %s); nothing was changed",
				dirs[0], owner, dir, o, dirs[0], dir)
		}
		owner = o
	}
	self := os.Geteuid()
	if len(dirs) == 0 || owner.UID == self {
		return nil
	}
	return &notOwnerError{dirs: dirs, owner: owner, self: dirowner.ByUID(self), retry: owner.Command(retry)}
}

// acceptLossCommand is the accept-loss command line for these stores, run
// as the ledger's owner (the user logpond runs as).
func (e *env) acceptLossCommand() string {
	cmd := "ledgerctl -journal " + dirowner.Quote(abs(e.journalDir)) + " -ledger " + dirowner.Quote(abs(e.ledgerDir)) + " accept-loss"
	o, err := dirowner.Of(e.ledgerDir)
	if err != nil {
		return cmd
	}
	return o.Command(cmd)
}

// abs is path made absolute, or path when that fails.
func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

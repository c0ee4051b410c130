package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/output/dlq"
)

// outputRef is one output of logpond's configuration, as ledgerctl needs
// it: its name (which is also its ledger cursor's and its dead-letter
// directory's), its type, and for an Elasticsearch output its settings
// (hosts, credentials and TLS, for dlq redrive).
type outputRef struct {
	name string
	typ  string              // "elasticsearch", "lumberjack" or "kafka"
	es   *conf.Elasticsearch // nil unless typ is "elasticsearch"
}

// configuredOutputs lists the configuration's enabled outputs, by name.
// Every use of the configured outputs in ledgerctl goes through it, so
// that it is the one place that reads them.
func configuredOutputs(cfg *conf.Config) []outputRef {
	var out []outputRef
	for _, o := range cfg.Outputs() {
		out = append(out, outputRef{name: o.Name, typ: o.Type, es: o.Elasticsearch})
	}
	return out
}

// outputNamePattern is what an output name may be: the names of its
// cursor file and dead-letter directory are made from it, so it must not
// name a path (no '/', no "..").
var outputNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// checkOutputName refuses a name that could not be an output's (it would
// name another directory than the output's own).
func checkOutputName(name string) error {
	if !outputNamePattern.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%q is not an output name: names are 1–100 letters, digits, '_', '.' or '-'", name)
	}
	return nil
}

// configured is the configured output called name, nil when -config was
// not given or lists no such output.
func (e *env) configured(name string) *outputRef {
	for i := range e.outputs {
		if e.outputs[i].name == name {
			return &e.outputs[i]
		}
	}
	return nil
}

// dlqOutputs are the names of the configured outputs: each keeps dead
// letters (an Elasticsearch output, the events the cluster rejects for
// good; a Lumberjack output, the events a receiver refuses; a Kafka
// output, the records Kafka refuses).
func (e *env) dlqOutputs() []string {
	var names []string
	for _, o := range e.outputs {
		names = append(names, o.name)
	}
	return names
}

// deadLetterOutputs are the names of the directories under
// <ledger>/dlq: each holds one output's dead letters (dlq.Dir), whether or
// not that output is still configured. None when <ledger>/dlq does not
// exist (no output ever dead-lettered an event).
func deadLetterOutputs(ledgerDir string) ([]string, error) {
	parent := filepath.Dir(dlq.Dir(ledgerDir, "x")) // <ledger>/dlq
	des, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", permissionOr(parent, err))
	}
	var names []string
	for _, de := range des {
		if de.IsDir() && checkOutputName(de.Name()) == nil {
			names = append(names, de.Name())
		}
	}
	return names, nil // os.ReadDir sorts by name
}

// usageError is a dlq --output choice ledgerctl cannot make: exit status 2.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

// selectDLQOutput decides whose dead letters a dlq command works on, and
// sets e.dlqOut. With --output NAME (flag), that output: a name that is
// neither a configured output nor has a dead-letter directory is refused
// as a likely typo. Without it: the only output of -config when there is
// exactly one; else the only dead-letter directory under <ledger>/dlq when
// there is exactly one; else a usage error listing the names to choose
// from. When there is nothing at all to choose from (no output configured,
// no dead-letter directory), it sets e.dlqNone instead: there are no dead
// letters. Errors of choice are *usageError.
func (e *env) selectDLQOutput(flag string) error {
	dirs, err := deadLetterOutputs(e.ledgerDir)
	if err != nil {
		return err
	}
	choices := func() string {
		var parts []string
		if e.config != "" {
			parts = append(parts, fmt.Sprintf("outputs of %s: %s", e.config, listOrNone(e.dlqOutputs())))
		}
		parts = append(parts, fmt.Sprintf("dead-letter directories in %s: %s", e.dlqParent(), listOrNone(dirs)))
		return strings.Join(parts, "; ")
	}
	if flag != "" {
		if err := checkOutputName(flag); err != nil {
			return &usageError{"--output: " + err.Error()}
		}
		o := e.configured(flag)
		switch {
		case o == nil && !slices.Contains(dirs, flag):
			return &usageError{fmt.Sprintf("--output %s: no such output holds dead letters (%s)", flag, choices())}
		}
		e.dlqOut = outputRef{name: flag}
		if o != nil {
			e.dlqOut = *o
		}
		return nil
	}
	if names := e.dlqOutputs(); len(names) == 1 {
		e.dlqOut = *e.configured(names[0])
		return nil
	} else if len(names) > 1 {
		return &usageError{fmt.Sprintf("say whose dead letters: --output NAME (%s)", choices())}
	}
	if len(dirs) == 1 {
		e.dlqOut = outputRef{name: dirs[0]}
		if o := e.configured(dirs[0]); o != nil {
			e.dlqOut = *o
		}
		return nil
	}
	if len(dirs) == 0 {
		// Nothing to choose from, and nothing to find: no output of the
		// configuration keeps dead letters and none ever stored one. The
		// commands say so rather than ask for a name.
		e.dlqNone = true
		return nil
	}
	return &usageError{fmt.Sprintf("say whose dead letters: --output NAME (%s)", choices())}
}

// dlqSelect runs selectDLQOutput for command name and reports a failure;
// ok is false with the exit status when the command should stop.
func (e *env) dlqSelect(name, flag string) (status int, ok bool) {
	err := e.selectDLQOutput(flag)
	var u *usageError
	switch {
	case errors.As(err, &u):
		e.errorf("%s: %v; see ledgerctl %s -h", name, err, name)
		return exitUsage, false
	case err != nil:
		e.errorf("%s: %v", name, err)
		return exitFailed, false
	}
	return exitOK, true
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// dlqParent is the directory that holds every output's dead-letter
// directory, <ledger>/dlq.
func (e *env) dlqParent() string { return filepath.Dir(dlq.Dir(e.ledgerDir, "x")) }

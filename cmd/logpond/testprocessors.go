package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/server"
)

// maxTestEventBytes bounds one line of -test-processors' input: an event
// larger than any a Beats client sends by default is refused by name
// rather than read into memory without end.
const maxTestEventBytes = 64 << 20

// testProcessors is logpond -test-processors: it loads the configuration
// (the file only: nothing on this host is checked or opened), reads
// NDJSON events on stdin, one per line, and prints each one on stdout as
// the chain of the output named leaves it (the global processors, then
// the output's own), as Elasticsearch's _simulate does for pipelines. An
// event a processor drops prints nothing on stdout and a line on stderr.
// Without -output, a configuration with one output tries that one's
// chain, one with several the global processors alone. It returns the
// exit code: 0 when every line was processed, 1 when the configuration
// is wrong or a line is not a JSON object (said on stderr, naming the
// line; the other lines are still processed).
func testProcessors(path, output string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := conf.Load(path, server.ConfigChecks)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	outs := cfg.Outputs()
	var chosen *conf.NamedOutput
	switch {
	case output != "":
		for i := range outs {
			if outs[i].Name == output {
				chosen = &outs[i]
			}
		}
		if chosen == nil {
			names := make([]string, len(outs))
			for i, o := range outs {
				names[i] = o.Name
			}
			fmt.Fprintf(stderr, "logpond: -test-processors: %s has no enabled output named %q; its outputs: %s\n", path, output, strings.Join(names, ", "))
			return 1
		}
	case len(outs) == 1:
		chosen = &outs[0]
	}
	which, o := "the global processors", conf.NamedOutput{}
	if chosen != nil {
		which, o = "the processors of ["+chosen.Key+"]", *chosen
	}
	chain, err := server.Chain(cfg, o)
	if err != nil { // ConfigChecks compiled every list already
		fmt.Fprintln(stderr, "logpond: -test-processors:", err)
		return 1
	}
	fmt.Fprintf(stderr, "logpond: -test-processors: running %s on the events read on stdin\n", which)
	if chain == nil {
		fmt.Fprintln(stderr, "logpond: -test-processors: no processor is configured there: events are printed as read")
	}
	var runner interface {
		Run([]byte) ([]byte, bool, error)
	}
	if chain != nil {
		runner = chain.NewRunner()
	}
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), maxTestEventBytes)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	code, line := 0, 0
	for in.Scan() {
		line++
		ev := in.Bytes()
		if len(strings.TrimSpace(string(ev))) == 0 {
			continue
		}
		out, keep := ev, true
		// The chain trusts its input to be valid JSON, as the Beats
		// input validated every event in the ledger; stdin is not.
		if !json.Valid(ev) {
			fmt.Fprintf(stderr, "logpond: -test-processors: line %d: not valid JSON\n", line)
			code = 1
			continue
		}
		if runner != nil {
			var err error
			out, keep, err = runner.Run(ev)
			if err != nil {
				fmt.Fprintf(stderr, "logpond: -test-processors: line %d: %v\n", line, err)
				code = 1
				continue
			}
		}
		if !keep {
			fmt.Fprintf(stderr, "logpond: -test-processors: line %d: dropped\n", line)
			continue
		}
		w.Write(out)
		w.WriteByte('\n')
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(stderr, "logpond: -test-processors: reading stdin after line %d: %v (a line is limited to %d MiB)\n", line, err, maxTestEventBytes>>20)
		return 1
	}
	return code
}

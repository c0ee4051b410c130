package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// hotPath is one Go benchmark of a per-event hot path. Each reports how
// many events one of its operations handles (the events/op metric), so
// that its allocations and bytes read per event.
type hotPath struct {
	name, pkg, path, what string
}

// hotPaths are the benchmarks the hotpaths part runs, in the order of an
// event's way through logpond.
var hotPaths = []hotPath{
	{"BenchmarkReadBatch/plain", "./input/lumberjack", "input", "read a 2048-event window of 1 KiB events: frames, JSON validation, a copy of each event"},
	{"BenchmarkReadBatch/zlib", "./input/lumberjack", "input", "the same window, zlib-compressed"},
	{"BenchmarkBuilder", "./record", "input", "build the record of a 50-event batch of 1 KiB events"},
	{"BenchmarkDecode", "./record", "output", "verify that record and walk its events"},
	{"BenchmarkEncode/classic", "./output/elasticsearch", "output", "turn a 512 B event into its bulk action and source (data_stream = \"auto\")"},
	{"BenchmarkEncode/agent", "./output/elasticsearch", "output", "the same for an Elastic Agent event, to its data stream"},
	{"BenchmarkEncodeFilebeat", "./output/elasticsearch", "output", "the same for a 1 KiB Filebeat 9 event"},
}

// hotPathRow is a hot path's medians over its runs.
type hotPathRow struct {
	hotPath
	EventsPerOp, NsPerEvent, BytesPerEvent, AllocsPerEvent float64
}

// hotPathCount is how many times each hot-path benchmark runs.
const hotPathCount = 3

// hotPathArgs is the go command's arguments for the hotpaths part.
func hotPathArgs() []string {
	var names, pkgs []string
	seen := map[string]bool{}
	for _, h := range hotPaths {
		top, _, _ := strings.Cut(h.name, "/")
		if !seen[top] {
			names = append(names, top)
			seen[top] = true
		}
		if !seen[h.pkg] {
			pkgs = append(pkgs, h.pkg)
			seen[h.pkg] = true
		}
	}
	args := []string{"test", "-run", "^$", "-bench", "^(" + strings.Join(names, "|") + ")$", "-benchmem", "-benchtime", "1s",
		"-count", fmt.Sprint(hotPathCount), "-p", "1"}
	return append(args, pkgs...)
}

// hotPathCommand is that command as a shell would take it.
func hotPathCommand() string {
	args := hotPathArgs()
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()") {
			args[i] = "'" + a + "'"
		}
	}
	return "GOMAXPROCS=1 go " + strings.Join(args, " ")
}

// hotPathBench runs the hot-path benchmarks on one core from the
// repository's root and returns their medians per event.
func (b *bench) hotPathBench(ctx context.Context) ([]hotPathRow, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the hot paths need the go command: %w", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b.log, "hotpaths: %s (in %s)\n", hotPathCommand(), root)
	cmd := exec.CommandContext(ctx, goCmd, hotPathArgs()...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", hotPathCommand(), err, out)
	}
	rows, err := parseHotPaths(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", hotPathCommand(), err, out)
	}
	for _, r := range rows {
		fmt.Fprintf(b.log, "hotpaths: %-28s %8.1f ns/event %8.2f B/event %6.3f allocs/event\n", r.name, r.NsPerEvent, r.BytesPerEvent, r.AllocsPerEvent)
	}
	return rows, nil
}

// parseHotPaths reads the output of the hot-path benchmarks: each of
// hotPaths must have hotPathCount result lines with ns/op, B/op,
// allocs/op and events/op.
func parseHotPaths(out string) ([]hotPathRow, error) {
	got, err := benchResults(out)
	if err != nil {
		return nil, err
	}
	var rows []hotPathRow
	for _, h := range hotPaths {
		m, err := benchMedians(got[h.name], h.name, hotPathCount, "ns/op", "B/op", "allocs/op", "events/op")
		if err != nil {
			return nil, err
		}
		n := m["events/op"]
		if n <= 0 {
			return nil, fmt.Errorf("%s: %v events/op", h.name, n)
		}
		rows = append(rows, hotPathRow{hotPath: h, EventsPerOp: n,
			NsPerEvent: m["ns/op"] / n, BytesPerEvent: m["B/op"] / n, AllocsPerEvent: m["allocs/op"] / n})
	}
	return rows, nil
}

// hotPathMarkdown is the hotpaths part's section.
func hotPathMarkdown(rows []hotPathRow, measured string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Hot paths: allocations per event\n\n")
	p("The Go benchmarks of the per-event hot paths, on one core, with `-benchmem`, %d runs each (medians): what one event costs each step, and what it allocates. An allocation per event is garbage the collector must find for every event acknowledged or delivered; a regression shows here as a number. Each benchmark reports how many events one of its operations handles (events/op), and the figures are per event.\n\n", hotPathCount)
	p("%s", measured)
	p("| benchmark | path | what one operation does | events/op | ns/event | B/event | allocs/event |\n")
	p("|---|---|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		p("| `%s` | %s | %s | %.0f | %.1f | %.2f | %.3f |\n", r.name, r.path, r.what, r.EventsPerOp, r.NsPerEvent, r.BytesPerEvent, r.AllocsPerEvent)
	}
	p("\nEvery row: `%s`.\n\n", hotPathCommand())
	return b.String()
}

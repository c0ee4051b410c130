package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// A flame graph of one path of logpond: the CPU profiles logpond wrote
// (-cpuprofile) during some of the report's own runs, merged, drawn by
// Brendan Gregg's flamegraph.pl (github.com/brendangregg/FlameGraph) from
// the profiles' stacks folded here, and listed as the functions with the
// largest cumulative shares.
type flame struct {
	Name  string // file name part: docs/flame-<Name>.svg
	Title string
	What  string // which runs, for the report
	// Kind is what the profiles measure: on-CPU time (onCPU), or time
	// goroutines spent waiting (offCPU: block and mutex profiles).
	Kind flameKind
	// Focus, when set, keeps only the samples whose stack holds a
	// function whose name starts with one of these (the waits on one
	// path, not those of goroutines idle by design).
	Focus []string
	// Profiles are the runs' profile files, merged into one.
	Profiles []string
	// Filled by analyze:
	Samples time.Duration // time sampled (CPU time, or time waited), over every run
	Top     []fnShare
	SVG     string // the picture's file name, beside the report
}

// flameKind says what a flame graph's profiles measure.
type flameKind int

const (
	onCPU  flameKind = iota // CPU profiles: sample type cpu, in ns
	offCPU                  // block or mutex profiles: sample type delay, in ns
)

// sampleType is the profile's sample type that a flame of kind k draws.
func (k flameKind) sampleType() string {
	if k == offCPU {
		return "delay"
	}
	return "cpu"
}

// fnShare is one function's share of the sampled CPU time: Cum counts
// the samples whose stack holds it (once, however deep it recurses),
// Flat those where it was running.
type fnShare struct {
	Name      string
	Cum, Flat float64 // fractions of every sample
}

// flameTop is how many functions each flame graph's table lists.
const flameTop = 15

// analyze merges f's profiles, folds their stacks and computes the
// shares of its functions; the folded stacks are returned for
// flamegraph.pl.
func (f *flame) analyze() ([]byte, error) {
	var ps []*profile.Profile
	for _, path := range f.Profiles {
		r, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("flame graph %s: %w", f.Name, err)
		}
		p, err := profile.Parse(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("flame graph %s: parse %s: %w", f.Name, path, err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("flame graph %s: no profile was written", f.Name)
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		return nil, fmt.Errorf("flame graph %s: merge: %w", f.Name, err)
	}
	folded, total, top, err := fold(merged, f.Kind.sampleType(), f.Focus)
	if err != nil {
		return nil, fmt.Errorf("flame graph %s: %w", f.Name, err)
	}
	f.Samples, f.Top = total, top
	return folded, nil
}

// fold turns a profile into flamegraph.pl's input (one line per
// distinct stack, root first: "a;b;c value", value in microseconds), and
// the flameTop functions of the largest cumulative shares, by the values
// of its sample type typ ("cpu" for a CPU profile, "delay" for a block or
// mutex profile), which must be in nanoseconds. With focus, only the
// samples whose stack holds a function whose name starts with one of its
// prefixes count.
func fold(p *profile.Profile, typ string, focus []string) (folded []byte, total time.Duration, top []fnShare, err error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, nil, fmt.Errorf("not a profile of %s (no %s/nanoseconds sample type)", typ, typ)
	}
	stacks := map[string]int64{}
	cum, flat := map[string]int64{}, map[string]int64{}
	var sum int64
	var frames []string
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v <= 0 {
			continue
		}
		frames = frames[:0]
		// Locations are leaf first; inlined functions of one location
		// are listed callee first too.
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil {
					frames = append(frames, ln.Function.Name)
				}
			}
		}
		if len(frames) == 0 {
			frames = append(frames, "[unknown]")
		}
		if len(focus) > 0 && !slices.ContainsFunc(frames, func(fn string) bool {
			return slices.ContainsFunc(focus, func(prefix string) bool { return strings.HasPrefix(fn, prefix) })
		}) {
			continue
		}
		sum += v
		flat[frames[0]] += v
		seen := map[string]bool{}
		for _, fn := range frames {
			if !seen[fn] {
				seen[fn] = true
				cum[fn] += v
			}
		}
		slices.Reverse(frames)
		stacks[strings.Join(frames, ";")] += v
	}
	if sum == 0 {
		return nil, 0, nil, fmt.Errorf("the profile holds no %s samples", typ)
	}
	keys := make([]string, 0, len(stacks))
	for k := range stacks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		// flamegraph.pl takes integer counts: microseconds.
		if us := stacks[k] / 1000; us > 0 {
			fmt.Fprintf(&b, "%s %d\n", k, us)
		}
	}
	for fn, v := range cum {
		top = append(top, fnShare{Name: fn, Cum: float64(v) / float64(sum), Flat: float64(flat[fn]) / float64(sum)})
	}
	slices.SortFunc(top, func(a, b fnShare) int {
		if a.Cum != b.Cum {
			if a.Cum > b.Cum {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return b.Bytes(), time.Duration(sum), top[:min(flameTop, len(top))], nil
}

// flameGraphs analyzes each flame and draws it into dir as
// flame-<Name>.svg with flamegraph.pl (the tool's path).
func flameGraphs(tool, dir string, fs []*flame) error {
	for _, f := range fs {
		folded, err := f.analyze()
		if err != nil {
			return err
		}
		f.SVG = "flame-" + f.Name + ".svg"
		args := []string{"--title", f.Title, "--countname", "µs", "--width", "1400", "--minwidth", "0.5"}
		if f.Kind == offCPU {
			args = append(args, "--colors", "blue") // off-CPU, as Brendan Gregg draws it
		}
		cmd := exec.Command(tool, args...)
		cmd.Stdin = bytes.NewReader(folded)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("flame graph %s: %s: %w: %s", f.Name, tool, err, stderr.String())
		}
		if err := os.WriteFile(filepath.Join(dir, f.SVG), out.Bytes(), 0o644); err != nil {
			return fmt.Errorf("flame graph %s: %w", f.Name, err)
		}
	}
	return nil
}

// flameMarkdown is the report's section of flame graphs.
func flameMarkdown(r *report) string {
	fs, tool := r.Flames, r.Opts.flamegraph
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Where the CPU goes: flame graphs\n\n")
	p("%s", r.measured())
	p("On-CPU flame graphs of logpond, from the CPU profiles it wrote (`-cpuprofile`, Go's sampling profiler, 100 samples per second) during this report's own runs, merged over each path's runs. A frame's width is its share of the sampled CPU time, callers below callees; the pictures are SVG, drawn by `%s` (Brendan Gregg's FlameGraph) from the stacks folded by `tools/benchreport`. Beside each, the functions with the largest cumulative shares (the samples whose stack holds the function) and their flat shares (the samples where it was running). Only the runs drawn here were profiled (the three profilers cost them a few percent of CPU); the report's other runs were not.\n\n", filepath.Base(tool))
	offNoted := false
	for _, f := range fs {
		sampled := "of CPU sampled"
		if f.Kind == offCPU {
			sampled = "of waiting sampled, summed over the goroutines that waited"
			if !offNoted {
				offNoted = true
				p("### Off-CPU: where logpond's goroutines wait\n\n")
				p("From the block and mutex profiles logpond wrote (`-blockprofile`, `-mutexprofile`) during the same runs: the time goroutines spent blocked in channel operations, selects and condition waits (every wait of 100 µs or more, shorter ones sampled), and waiting for contended mutexes (one contention in 10 sampled, scaled up). Waiting is not CPU: it is summed over goroutines, so four connections waiting 1 ms each for one group's fsync count 4 ms, and a goroutine idle between jobs counts its whole idle time. Read the graphs for the waits on an acknowledgement's way: a connection's goroutine from its batch to its ACK, the journal's committer around its fsync; the graphs keep only the stacks through the input's and the journal's code. Network reads and writes wait in the poller, which these profiles do not record. Drawn in blue, as off-CPU flame graphs are.\n\n")
			}
		}
		p("### %s\n\n%s %s %s.\n\n![%s](%s)\n\n", f.Title, f.What, f.Samples.Round(10*time.Millisecond), sampled, f.Title, f.SVG)
		p("| function | cumulative | flat |\n|---|---:|---:|\n")
		for _, s := range f.Top {
			p("| `%s` | %.1f%% | %.1f%% |\n", s.Name, 100*s.Cum, 100*s.Flat)
		}
		p("\n")
	}
	return b.String()
}

// profilesNamed returns the profiles of kind in dir (kind "" for CPU
// profiles, "block" or "mutex") whose run's configuration is name
// (bench.profileArgs names them NNN-<name>[-<kind>].pprof), in run order.
func profilesNamed(dir, name, kind string) ([]string, error) {
	if kind != "" {
		name += "-" + kind
	}
	all, err := filepath.Glob(filepath.Join(dir, "*-"+name+".pprof"))
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	return all, nil
}

// ackPath are the packages of an acknowledgement's way: the off-CPU
// graphs of the ingest keep the waits of their goroutines, not those of
// goroutines idle by design (signal handling, the admin server, the
// configuration reloader).
var ackPath = []string{"github.com/logpond/logpond/input.", "github.com/logpond/logpond/input/", "github.com/logpond/logpond/journal."}

// flameConfigs are the configurations whose runs the flame graphs draw
// (flames): the only runs profiled when the profiles are for them.
func flameConfigs() map[string]bool {
	return map[string]bool{ingestProfileName(256, 0): true, procConfigName(false): true, procConfigName(true): true}
}

// ingestProfileName names the profiles of the ingest part's logpond runs
// of one shape.
func ingestProfileName(size, comp int) string { return fmt.Sprintf("ingest-%dB-zlib%d", size, comp) }

// flames draws the flame graphs of the parts that ran, from their runs'
// profiles, beside the report.
func (b *bench) flames(parts map[string]bool) ([]*flame, error) {
	var fs []*flame
	add := func(f *flame, config string, kind ...string) error {
		paths, err := profilesNamed(b.o.cpuProfiles, config, strings.Join(kind, ""))
		if err != nil {
			return err
		}
		f.Profiles = paths
		fs = append(fs, f)
		return nil
	}
	if parts["ingest"] && slices.Contains(b.o.sizes, 256) {
		if err := add(&flame{Name: "ingest", Title: "Ingest: 4 connections × 2048-event windows × 256 B, zlib 0",
			What: fmt.Sprintf("logpond's runs of the ingest part at 256 B without compression (%d rounds of %s, acknowledging as fast as the load generator sends),", b.o.rounds, b.o.duration)}, ingestProfileName(256, 0)); err != nil {
			return nil, err
		}
	}
	if parts["processing"] {
		if err := add(&flame{Name: "drain", Title: "Drain: the processing backlog into Elasticsearch, no processors",
			What: fmt.Sprintf("logpond's drains of the processing part without processors (%d runs of its backlog),", b.o.procRounds)}, procConfigName(false)); err != nil {
			return nil, err
		}
		if err := add(&flame{Name: "drain-chain", Title: "Drain: the processing backlog into Elasticsearch, five-processor chain",
			What: fmt.Sprintf("logpond's drains of the processing part with its five-processor chain (%d runs of its backlog),", b.o.procRounds)}, procConfigName(true)); err != nil {
			return nil, err
		}
	}
	// The off-CPU graphs last: the section introduces them apart.
	if parts["ingest"] && slices.Contains(b.o.sizes, 256) {
		what := fmt.Sprintf("logpond's runs of the ingest part at 256 B without compression (%d rounds of %s), the waits of the input's and the journal's goroutines,", b.o.rounds, b.o.duration)
		if err := add(&flame{Name: "ingest-block", Title: "Ingest, off-CPU: goroutines blocked (channels, selects, conditions)", What: what, Kind: offCPU, Focus: ackPath},
			ingestProfileName(256, 0), "block"); err != nil {
			return nil, err
		}
		if err := add(&flame{Name: "ingest-mutex", Title: "Ingest, off-CPU: goroutines waiting for contended mutexes", What: what, Kind: offCPU, Focus: ackPath},
			ingestProfileName(256, 0), "mutex"); err != nil {
			return nil, err
		}
	}
	if err := flameGraphs(b.o.flamegraph, filepath.Dir(b.o.out), fs); err != nil {
		return nil, err
	}
	return fs, nil
}

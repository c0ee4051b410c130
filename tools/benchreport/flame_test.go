package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// fold writes each distinct stack once, root first, in microseconds, and
// counts a function's cumulative share once per sample however deep it
// recurses.
func TestFoldStacksAndShares(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	main, read, parse, scan := fn(1, "main"), fn(2, "read"), fn(3, "parse"), fn(4, "scan")
	loc := func(id uint64, fs ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fs {
			l.Line = append(l.Line, profile.Line{Function: f})
		}
		return l
	}
	lMain, lRead, lParse, lScanInParse := loc(1, main), loc(2, read), loc(3, parse), loc(4, scan, parse)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{main, read, parse, scan},
		Location:   []*profile.Location{lMain, lRead, lParse, lScanInParse},
		Sample: []*profile.Sample{
			// Leaf first; location 4 holds scan inlined into parse.
			{Location: []*profile.Location{lScanInParse, lRead, lMain}, Value: []int64{6, 60e6}},
			{Location: []*profile.Location{lRead, lMain}, Value: []int64{3, 30e6}},
			// parse calling itself: counted once in its cumulative share.
			{Location: []*profile.Location{lParse, lParse, lMain}, Value: []int64{1, 10e6}},
		},
	}
	folded, total, top, err := fold(p, "cpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	if total != 100*time.Millisecond {
		t.Errorf("total %s, want 100ms", total)
	}
	want := "main;parse;parse 10000\nmain;read 30000\nmain;read;parse;scan 60000\n"
	if string(folded) != want {
		t.Errorf("folded:\n%s\nwant:\n%s", folded, want)
	}
	shares := map[string]fnShare{}
	for _, s := range top {
		shares[s.Name] = s
	}
	for name, w := range map[string][2]float64{"main": {1, 0}, "read": {0.9, 0.3}, "parse": {0.7, 0.1}, "scan": {0.6, 0.6}} {
		if s := shares[name]; !near(s.Cum, w[0]) || !near(s.Flat, w[1]) {
			t.Errorf("%s: cumulative %.2f flat %.2f, want %.2f %.2f", name, s.Cum, s.Flat, w[0], w[1])
		}
	}
	if top[0].Name != "main" || top[1].Name != "read" {
		t.Errorf("top is not by cumulative share: %+v", top)
	}
	if _, _, _, err := fold(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}, "cpu", nil); err == nil || !strings.Contains(err.Error(), "not a profile of cpu") {
		t.Errorf("a heap profile: %v", err)
	}
	// A block profile: contentions and delay; the delay is drawn.
	p.SampleType = []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}}
	if _, total, _, err := fold(p, offCPU.sampleType(), nil); err != nil || total != 100*time.Millisecond {
		t.Errorf("a block profile: total %s, %v; want 100ms", total, err)
	}
	if _, _, _, err := fold(p, "cpu", nil); err == nil {
		t.Errorf("a block profile read as a CPU profile")
	}
	// Focus keeps the stacks through parse: 70 ms of the 100.
	folded, total, _, err = fold(p, offCPU.sampleType(), []string{"par"})
	if want := "main;parse;parse 10000\nmain;read;parse;scan 60000\n"; err != nil || total != 70*time.Millisecond || string(folded) != want {
		t.Errorf("focus on parse: %s, %v:\n%s\nwant:\n%s", total, err, folded, want)
	}
}

// TestProfilesNamed: the CPU profiles of a run's configuration and its
// block and mutex profiles are told apart by name, and come in run order.
func TestProfilesNamed(t *testing.T) {
	dir := t.TempDir()
	var b bench
	b.o.cpuProfiles = dir
	for _, name := range []string{"ingest-256B-zlib0", "ingest-256B-zlib3", "ingest-256B-zlib0"} {
		args := b.profileArgs(name)
		for i := 1; i < len(args); i += 2 {
			if err := os.WriteFile(args[i], nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for kind, want := range map[string][]string{"": {"001-ingest-256B-zlib0.pprof", "003-ingest-256B-zlib0.pprof"},
		"block": {"001-ingest-256B-zlib0-block.pprof", "003-ingest-256B-zlib0-block.pprof"}, "mutex": {"001-ingest-256B-zlib0-mutex.pprof", "003-ingest-256B-zlib0-mutex.pprof"}} {
		got, err := profilesNamed(dir, "ingest-256B-zlib0", kind)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = filepath.Base(got[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("kind %q: %v, want %v", kind, got, want)
		}
	}
	// For the flame graphs alone, only their runs are profiled.
	b.profileOnly = flameConfigs()
	if args := b.profileArgs("drain-cpu"); args != nil {
		t.Errorf("a run no flame graph draws is profiled: %q", args)
	}
	if args := b.profileArgs(ingestProfileName(256, 0)); len(args) != 6 {
		t.Errorf("a run a flame graph draws: %q, want its three profiles", args)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

package processors

import (
	"math/rand"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
)

// The memory formula counts conf.GrokPatternBytes per grok pattern and
// conf.GrokRunBytes per goroutine with grok: the bounds of the DFA and of
// what a search keeps must fit in them.
func TestGrokBoundsWithinFormula(t *testing.T) {
	if grokDFAMaxBytes > conf.GrokPatternBytes {
		t.Errorf("a grok DFA may hold %d bytes, the memory formula counts %d", grokDFAMaxBytes, conf.GrokPatternBytes)
	}
	if grokRunMaxBytes > conf.GrokRunBytes {
		t.Errorf("a grok search may keep %d bytes, the memory formula counts %d", grokRunMaxBytes, conf.GrokRunBytes)
	}
}

// grokTestVariedLines returns n lines that keep a DFA growing: log lines
// with random edits, and lines spliced from their pieces and random bytes.
func grokTestVariedLines(r *rand.Rand, n int) []string {
	var pieces []string
	for _, l := range grokTestLines {
		pieces = append(pieces, strings.SplitAfter(l, " ")...)
	}
	lines := make([]string, 0, n)
	for len(lines) < n {
		l := grokTestLines[r.Intn(len(grokTestLines))]
		lines = append(lines, grokTestMutate(r, l, 4)...)
		var sb strings.Builder
		for k := 2 + r.Intn(12); k > 0; k-- {
			sb.WriteString(pieces[r.Intn(len(pieces))])
			sb.WriteString(grokTestInput(r))
		}
		lines = append(lines, sb.String())
	}
	return lines[:n]
}

// A DFA fed lines until it fills holds no more than it counts, and counts
// no more than grokDFAMaxBytes; once full it starts afresh and fills
// again, holding no more than it counts then either; and matching stays
// right throughout (the engine's answer compared with regexp's).
func TestGrokDFAMemoryBound(t *testing.T) {
	lines := grokTestVariedLines(rand.New(rand.NewSource(3)), 30000)
	m, err := compileGrok([]string{"%{COMBINEDAPACHELOG}"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := m.pats[0]
	// regexp's answers first: its machines stay cached in p.std, and
	// the heap measured below is the DFA's.
	want := make([]bool, len(lines))
	for i, l := range lines {
		want[i] = p.std.MatchString(l)
	}
	before := liveHeap()
	sc := new(grokScratch)
	var d *grokDFA
	// fill matches lines from the from-th until the DFA is full, and
	// returns the index of the line that filled it, or -1.
	fill := func(from int) int {
		for i := from; i < len(lines); i++ {
			if _, ok := m.match(lines[i], sc, nil, false); ok != want[i] {
				t.Fatalf("%q: matched %v, regexp %v", lines[i], ok, want[i])
			}
			if d = sc.dfas[p.prog]; d == nil {
				continue // lines that matched at their first start: no DFA yet
			}
			if d.bytes > grokDFAMaxBytes {
				t.Fatalf("after %d lines the DFA counts %d bytes, more than its bound %d", i+1, d.bytes, grokDFAMaxBytes)
			}
			if d.full {
				return i
			}
		}
		return -1
	}
	// Twice: as it first fills, and again after it has started afresh.
	next := 0
	for round := range 2 {
		filled := fill(next)
		if filled < 0 {
			t.Fatalf("round %d: %d varied lines did not fill the DFA: the test no longer reaches the bound", round, len(lines))
		}
		if d.fails != round {
			t.Fatalf("round %d: the DFA started afresh %d times", round, d.fails)
		}
		held := liveHeap() - before
		// What the scratch holds beside its DFAs: the backtracker's
		// memo and capture slots, sized by the longest line.
		scratch := 8*cap(sc.run.visited) + 12*cap(sc.run.jobs) + 4*cap(sc.run.dirty) + 8*cap(sc.cap) + 8*cap(sc.out) + 4096
		t.Logf("round %d: full after line %d: %d states, counted %d KiB, heap held %d KiB", round, filled+1, len(d.states), d.bytes>>10, held>>10)
		if held > int64(d.bytes+scratch) {
			t.Errorf("round %d: the DFA's heap is %d bytes, more than it counts (%d) and the scratch (%d): grokDStateBytes or grokDFAFixedBytes undercounts", round, held, d.bytes, scratch)
		}
		next = filled + 1
	}
	runtime.KeepAlive(sc)
	runtime.KeepAlive(lines)
	runtime.KeepAlive(want)
}

// A pattern whose program alone would take most of the bound gets no DFA;
// it still matches as regexp does.
func TestGrokNoDFAForHugePrograms(t *testing.T) {
	pat := strings.Repeat("(?:%{IPV6}|x)", 30) + "%{WORD:w}"
	m, err := compileGrok([]string{pat}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := m.pats[0]
	if n := len(p.prog.inst); grokDFAFixedBytes(n) <= grokDFAMaxBytes/2 {
		t.Fatalf("the program has %d instructions, %d bytes of DFA buffers: not huge enough for this test", n, grokDFAFixedBytes(n))
	}
	std := regexp.MustCompile(p.expanded)
	sc := new(grokScratch)
	for _, l := range []string{strings.Repeat("x", 30) + "word", "::1" + strings.Repeat("x", 29) + "w", "no", ""} {
		_, ok := m.match(l, sc, nil, false)
		if want := std.MatchString(l); ok != want {
			t.Fatalf("%q: matched %v, regexp %v", l, ok, want)
		}
	}
	if d, ok := sc.dfas[p.prog]; !ok || d != nil {
		t.Fatalf("DFA %v (present %v), want none", d, ok)
	}
}

// liveHeap returns the bytes of live heap objects, once the collector has
// run twice: what a sync.Pool held (regexp's machines) survives one
// collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

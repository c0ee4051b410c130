package processors

import (
	"strings"
	"testing"

	grok "github.com/elastic/go-grok"
)

// FuzzGrokRegexp checks grok's matching engine against Go's regexp on
// fuzzed expressions and inputs: the engine promises regexp's results
// (leftmost-first, the same submatches) on any expression regexp
// accepts, and it runs on untrusted event text. Grok references (%{...})
// are left out: FuzzGrokLine covers them.
func FuzzGrokRegexp(f *testing.F) {
	f.Add(`(?P<a>a+)b|c`, "xaab c")
	f.Add(`\b(?P<w>\w+)\b(?:\s+(?P<n>\d{1,3}))?`, "word 123 é")
	f.Add(`(?i:é)+$|(?<x>[^a]*?)\B`, "ÉéÉ aé\xff")
	f.Add(`^(?P<ip>(?:[0-9]{1,3}\.){3}[0-9]{1,3})(?: (?P<rest>.*))?$`, "10.0.0.1 GET /")
	f.Add(`(?s:.)*?(?P<q>"(?:[^"\\]|\\.)*")`, `a "b\"c" d`)
	f.Add(`(?P<g>a|ab)(?P<h>c|bcd)(?P<i>d*)`, "abcd")
	f.Add(`(?:(?P<e>)|x)+y`, "xxy")
	f.Add(`[\pL\d_]{2,}\S+?(?P<t>\s|$)`, "ab_1 x\n")
	f.Fuzz(func(t *testing.T, expr, in string) {
		// Bounds keep one input to milliseconds, not the engine's:
		// long inputs go to regexp by design (maxLen), and
		// TestGrokEngineLongInputFallback covers that switch.
		if len(expr) > 256 || len(in) > 4096 || strings.Contains(expr, "%{") {
			return
		}
		std, p, ok := grokTestCompileRegexp(t, expr)
		if !ok {
			return
		}
		var sc grokScratch
		grokTestSameAsRegexp(t, expr, std, p, &sc, in)
		// Once more on the same scratch: its memo and buffers are
		// reused from event to event.
		grokTestSameAsRegexp(t, expr, std, p, &sc, in)
	})
}

// FuzzGrokLine matches fuzzed lines with the standard patterns the tests
// compare (grokTestPatterns), here and with go-grok: whether each
// matches, and every field, as text and typed.
func FuzzGrokLine(f *testing.F) {
	for _, l := range grokTestLines {
		f.Add(l)
	}
	ms := make([]*grokMatcher, len(grokTestPatterns))
	gs := make([]*grok.Grok, len(grokTestPatterns))
	for i, pat := range grokTestPatterns {
		m, g := grokTestPair(f, pat, nil, nil)
		ms[i], gs[i] = m, g
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return
		}
		var sc grokScratch
		for i, pat := range grokTestPatterns {
			grokTestCompare(t, pat, ms[i], gs[i], &sc, line)
		}
	})
}

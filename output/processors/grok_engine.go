package processors

// This file is the matching engine of the grok processor: Logstash's grok
// patterns (go-grok's standard set, github.com/elastic/go-grok/patterns)
// expanded the way go-grok expands them, and matched with exactly the
// results of Go's regexp on that expansion (leftmost-first, the same
// submatches) by a faster engine of its own:
//
//   - the expanded regexp is parsed with regexp/syntax, its unnamed groups
//     dropped (grok keeps named captures only) and compiled to a
//     syntax.Prog;
//   - the Prog runs on a backtracker like regexp's own (backtrack.go), which
//     Go only uses for programs of at most 500 instructions: the expansion
//     of COMBINEDAPACHELOG has about 2,500 (IPORHOST holds the IPv6
//     pattern), so regexp runs its much slower NFA (about 350 µs a line);
//   - the memo of visited (instruction, position) states is kept only for
//     the instructions two or more others lead to (160 of 2,135 here),
//     which is enough for the same result in linear time;
//   - each alternative is skipped when the next byte cannot start it;
//   - loops over one character class (\S+, .*?, [0-9]*) run as tight
//     loops over the bytes, with the memo bits set a word at a time;
//   - when the attempt at the first possible start fails, the literals
//     every match needs and then a lazily built DFA rule out lines that
//     cannot match anywhere before any other start is tried;
//   - inputs too long for the memo go to Go's regexp on the expansion.
//
// The engine is checked against regexp on random expressions and inputs,
// and against go-grok on log lines (grok_engine_test.go).

import (
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	grok "github.com/elastic/go-grok"
	grokpatterns "github.com/elastic/go-grok/patterns"
)

// grokCapture is one field captured by a grok match.
type grokCapture struct {
	Field string // the semantic with its dots, e.g. "http.request.method"
	Value string // a substring of the input; empty only with keepEmpty
	Type  string // "" or the type of %{SYNTAX:semantic:type}, as written
	// Missing: no group of the field took part in the match (only with
	// keepEmpty; Logstash then sets the field to null).
	Missing bool
}

// grokMatcher is a compiled list of patterns for one field; immutable,
// safe for concurrent use when each goroutine uses its own grokScratch.
type grokMatcher struct {
	pats  []*grokCompiled
	names []string
}

// grokScratch is the reusable state of grokMatcher.match: the zero value is
// ready, one goroutine at a time may use it, with any number of matchers.
// It keeps its buffers (and a DFA cache per pattern) between calls.
type grokScratch struct {
	run  grokRun
	cap  []int
	out  []int
	dfas map[*grokProg]*grokDFA
}

// grokCompiled is one compiled pattern.
type grokCompiled struct {
	src      string
	expanded string         // go-grok's expansion, a Go regexp
	std      *regexp.Regexp // expanded, compiled by regexp: for huge inputs
	prog     *grokProg
	fields   []grokCapGroup
	stdIdx   []int // std's submatch index of each named group, in order
}

// grokCapGroup is one output field of a pattern: the named groups that
// carry its name; the last one that captured something gives the value, as
// go-grok's maps have it.
type grokCapGroup struct {
	name   string
	typ    string
	groups []int // group numbers in prog (named groups only, from 1), last first
}

// grokRefRE is go-grok's reference syntax: %{SYNTAX}, %{SYNTAX:semantic},
// %{SYNTAX:semantic:type}.
var grokRefRE = regexp.MustCompile(`%{(\w+(?::[\w+.]+(?::\w+)?)?)}`)

// grokDotSep stands for the dots of a semantic inside a group name.
const grokDotSep = "___"

// grokCompleteSets are the pattern maps grok.NewComplete loads, in its
// order (a later map overrides an earlier one); patterns.Default is looked
// up last.
var grokCompleteSets = []map[string]string{
	grokpatterns.AWS, grokpatterns.Bind9, grokpatterns.Bro, grokpatterns.Exim,
	grokpatterns.HAProxy, grokpatterns.Httpd, grokpatterns.Firewalls,
	grokpatterns.Java, grokpatterns.Junos, grokpatterns.Maven,
	grokpatterns.MCollective, grokpatterns.MongoDB, grokpatterns.PostgreSQL,
	grokpatterns.Rails, grokpatterns.Redis, grokpatterns.Ruby,
	grokpatterns.Squid, grokpatterns.Syslog,
}

// grokTypeHints are the types go-grok converts to (Logstash's int and
// float among them).
var grokTypeHints = map[string]bool{
	"int": true, "long": true, "float": true, "double": true,
	"bool": true, "boolean": true, "string": true,
}

// compileGrok compiles patterns, to be tried in order, with definitions
// adding to or overriding go-grok's standard set (the set grok.NewComplete
// loads). A pattern is expanded as go-grok expands it, %{SYNTAX} as an
// unnamed group and %{SYNTAX:semantic[:type]} as a group named after the
// semantic, and must then be a valid Go regexp; (?<name>...) groups of its
// own capture too. The error names the pattern by index (or the
// definition) and says what is wrong: an unknown pattern name, an unknown
// type, a recursive definition, a reference go-grok would leave as literal
// text (%{WORD:[a][b]}), a bad regexp, or a definition name go-grok
// refuses.
func compileGrok(patterns []string, definitions map[string]string) (*grokMatcher, error) {
	if len(patterns) == 0 {
		return nil, errors.New("grok: no pattern")
	}
	// go-grok checks the definition names (no ':').
	if _, err := grok.NewComplete(definitions); err != nil {
		return nil, fmt.Errorf("grok: pattern_definitions: %w", err)
	}
	// References go-grok would take as literal text are refused in the
	// patterns and definitions given (go-grok's own sets have one, kept).
	for name, def := range definitions {
		if err := grokCheckRefs(def); err != nil {
			return nil, fmt.Errorf("grok: pattern_definitions %s: %w", name, err)
		}
	}
	lookup := func(name string) (string, bool) {
		if p, ok := definitions[name]; ok {
			return p, true
		}
		for i := len(grokCompleteSets) - 1; i >= 0; i-- {
			if p, ok := grokCompleteSets[i][name]; ok {
				return p, true
			}
		}
		p, ok := grokpatterns.Default[name]
		return p, ok
	}
	m := &grokMatcher{}
	seen := map[string]bool{}
	for i, src := range patterns {
		p, err := grokCompilePattern(src, lookup)
		if err != nil {
			return nil, fmt.Errorf("grok: pattern %d (%q): %w", i, src, err)
		}
		m.pats = append(m.pats, p)
		for _, f := range p.fields {
			if !seen[f.name] {
				seen[f.name] = true
				m.names = append(m.names, f.name)
			}
		}
	}
	return m, nil
}

// fields lists the names of the fields the patterns can capture, each
// once, in the order of their first appearance; the caller owns the slice.
func (m *grokMatcher) fields() []string { return slices.Clone(m.names) }

// match tries the patterns in order on s and appends the captures of the
// first that matches to dst[:0], one per field that captured a non-empty
// value, in the order of fields; ok is false, and caps empty, when none
// matches. A match is the one Go's regexp finds on go-grok's expansion of
// the pattern (unanchored, leftmost-first), and the captures are those
// go-grok's ParseString returns for it. Values are substrings of s.
//
// With keepEmpty (Logstash's keep_empty_captures), every field of the
// pattern is a capture: one that captured only the empty string has the
// empty value, one whose groups took no part in the match is Missing.
func (m *grokMatcher) match(s string, sc *grokScratch, dst []grokCapture, keepEmpty bool) (caps []grokCapture, ok bool) {
	dst = dst[:0]
	for _, p := range m.pats {
		slots, ok := p.exec(s, sc)
		if !ok {
			continue
		}
		for _, f := range p.fields {
			c := grokCapture{Field: f.name, Type: f.typ, Missing: true}
			for _, g := range f.groups {
				a, b := slots[2*g], slots[2*g+1]
				if a < 0 {
					continue // the group took no part in the match
				}
				if b > a {
					c.Value, c.Missing = s[a:b], false
					break
				}
				c.Missing = false // empty: kept only if no group has more
			}
			if c.Value != "" || keepEmpty {
				dst = append(dst, c)
			}
		}
		return dst, true
	}
	return dst, false
}

// grokExpand expands the references of pattern as go-grok's expand does
// (rounds of replacing every reference found, the same groups and type
// hints, keyed by group name), but fails where go-grok would stop after
// 1,000 rounds or grow without end (grokCheckCycles tells why first).
func grokExpand(pattern string, lookup func(string) (string, bool)) (string, map[string]string, error) {
	hints := map[string]string{}
	exp := pattern
	for round := 0; ; round++ {
		subs := grokRefRE.FindAllStringSubmatch(exp, -1)
		if len(subs) == 0 {
			break
		}
		if round >= 1000 || len(exp) > 1<<22 {
			return "", nil, errors.New("pattern expansion does not end")
		}
		done := map[string]bool{}
		for _, sm := range subs {
			if done[sm[0]] {
				continue // replaced already, with the same hint
			}
			done[sm[0]] = true
			parts := strings.Split(sm[1], ":")
			id := parts[0]
			target := id
			if len(parts) > 1 {
				target = strings.ReplaceAll(parts[1], ".", grokDotSep)
			}
			if len(parts) == 3 {
				if !grokTypeHints[parts[2]] {
					return "", nil, fmt.Errorf("unknown type %q in %s (want int, long, float, double, bool, boolean or string)", parts[2], sm[0])
				}
				hints[target] = parts[2]
			}
			def, ok := lookup(id)
			if !ok {
				return "", nil, fmt.Errorf("unknown pattern name %q", id)
			}
			var repl string
			if len(parts) == 1 {
				repl = "(" + def + ")"
			} else {
				repl = "(?P<" + target + ">" + def + ")"
			}
			exp = strings.ReplaceAll(exp, sm[0], repl)
			if len(exp) > 1<<22 {
				return "", nil, errors.New("pattern expands to more than 4 MiB")
			}
		}
	}
	return exp, hints, nil
}

// grokBadRefRE finds a reference go-grok does not take, such as Logstash's
// %{WORD:[nested][field]}, which go-grok would leave as literal text.
var grokBadRefRE = regexp.MustCompile(`%\{\w+(?::[^}]*)?\}`)

// grokCheckRefs fails on a reference in text that go-grok would not expand.
func grokCheckRefs(text string) error {
	for _, ref := range grokBadRefRE.FindAllString(text, -1) {
		if !grokRefRE.MatchString(ref) {
			return fmt.Errorf("bad pattern reference %s (want %%{SYNTAX}, %%{SYNTAX:semantic} or %%{SYNTAX:semantic:type}, the semantic of letters, digits, _ and dots)", ref)
		}
	}
	return nil
}

// grokCheckCycles fails when a reference of pattern leads, through the
// definitions, back to itself.
func grokCheckCycles(pattern string, lookup func(string) (string, bool)) error {
	state := map[string]int{} // 1 on the path, 2 done
	var visit func(text string) error
	visit = func(text string) error {
		for _, sm := range grokRefRE.FindAllStringSubmatch(text, -1) {
			name, _, _ := strings.Cut(sm[1], ":")
			switch state[name] {
			case 1:
				return fmt.Errorf("recursive pattern definition %q", name)
			case 2:
				continue
			}
			def, ok := lookup(name)
			if !ok {
				continue // reported by grokExpand
			}
			state[name] = 1
			if err := visit(def); err != nil {
				return err
			}
			state[name] = 2
		}
		return nil
	}
	return visit(pattern)
}

// grokCompilePattern compiles one grok pattern, its references looked up
// with lookup.
func grokCompilePattern(src string, lookup func(string) (string, bool)) (*grokCompiled, error) {
	if err := grokCheckRefs(src); err != nil {
		return nil, err
	}
	if err := grokCheckCycles(src, lookup); err != nil {
		return nil, err
	}
	exp, hints, err := grokExpand(src, lookup)
	if err != nil {
		return nil, err
	}
	std, err := regexp.Compile(exp)
	if err != nil {
		return nil, fmt.Errorf("bad regexp: %w", err)
	}
	tree, err := syntax.Parse(exp, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("bad regexp: %w", err)
	}
	var names []string
	tree = grokStripCaptures(tree, &names)
	sp, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, fmt.Errorf("bad regexp: %w", err)
	}
	p := &grokCompiled{src: src, expanded: exp, std: std}
	p.prog = grokNewProg(sp, len(names))
	p.prog.lits = grokRequiredLiterals(tree)
	for i, n := range std.SubexpNames() {
		if n != "" {
			p.stdIdx = append(p.stdIdx, i)
		}
	}
	if len(p.stdIdx) != len(names) {
		return nil, fmt.Errorf("internal error: %d named groups, regexp has %d", len(names), len(p.stdIdx))
	}
	idx := map[string]int{}
	for i, n := range names {
		field := strings.ReplaceAll(n, grokDotSep, ".")
		j, ok := idx[field]
		if !ok {
			j = len(p.fields)
			idx[field] = j
			p.fields = append(p.fields, grokCapGroup{name: field, typ: hints[n]})
		}
		p.fields[j].groups = append([]int{i + 1}, p.fields[j].groups...)
	}
	return p, nil
}

// grokStripCaptures replaces the unnamed groups of re by their contents
// (which does not change what matches) and numbers the named ones 1..k in
// order, appending their names to names.
func grokStripCaptures(re *syntax.Regexp, names *[]string) *syntax.Regexp {
	for re.Op == syntax.OpCapture && re.Name == "" {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpCapture {
		*names = append(*names, re.Name)
		re.Cap = len(*names)
	}
	for i, sub := range re.Sub {
		re.Sub[i] = grokStripCaptures(sub, names)
	}
	return re
}

// exec matches s: the capture slots (2g and 2g+1 for named group g, -1
// when it did not take part; 0 and 1 the whole match) and whether it
// matched.
func (p *grokCompiled) exec(s string, sc *grokScratch) ([]int, bool) {
	if len(s) <= p.prog.maxLen {
		return p.prog.exec(s, sc)
	}
	loc := p.std.FindStringSubmatchIndex(s)
	if loc == nil {
		return nil, false
	}
	out := append(sc.out[:0], loc[0], loc[1])
	for _, i := range p.stdIdx {
		out = append(out, loc[2*i], loc[2*i+1])
	}
	sc.out = out
	return out, true
}

// ---- backtracking engine ----
//
// grokProg.try is regexp's backtracker (regexp/backtrack.go) run on a copy
// of the syntax.Prog, with changes that leave the match it finds as it is:
//
//   - the memo bit of (instruction, position) is kept only for the start
//     and for instructions with two or more predecessors. The first state
//     to repeat on a search path always is such an instruction (two
//     different predecessors lead to it at the same position), so cycles
//     are cut where regexp cuts them; any other state reached again was
//     explored without success and can only lead to states explored
//     before, so exploring it again changes nothing but time;
//   - an alternative whose first rune cannot be the next byte is not
//     tried (it would fail at once, whatever state it reached first);
//   - a loop of one rune instruction (x*, x+, x*?) runs as a loop over the
//     bytes, setting the same memo bits and trying the exits in the same
//     order (greedy: one range job for all exits, last first).

const (
	grokOpFail uint8 = iota
	grokOpAlt
	grokOpRune
	grokOpCapture
	grokOpEmpty
	grokOpNop
	grokOpMatch
	grokOpStarGreedy // Alt L with out = R, R a rune instruction whose out is L
	grokOpStarLazy   // Alt L with arg = R, R a rune instruction whose out is L
)

// grokInst is an instruction of the prog: syntax.Inst's op, out and arg.
type grokInst struct {
	op   uint8
	out  uint32
	arg  uint32
	aux  uint32 // rune: index into classes; alt: index into looks
	memo int32  // row in the memo bitmap, -1 when not memoized
}

// grokClass is a rune instruction's class: exact for ASCII with set;
// non-ASCII runes per na (0 none, 1 all, 2 ask si).
type grokClass struct {
	set [2]uint64
	na  uint8
	si  *syntax.Inst
}

// has reports whether the class holds ASCII byte b.
func (c *grokClass) has(b byte) bool { return c.set[b>>6]&(1<<(b&63)) != 0 }

// grokByteSet is a necessary condition for a state to lead to a match:
// the byte at the position is in bits (all of 0x80-0xff when a non-ASCII
// rune may come first), unless any is set (a match may need no rune).
type grokByteSet struct {
	bits [4]uint64
	any  bool
}

// grokLook holds the first bytes of both branches of an Alt.
type grokLook struct{ out, arg grokByteSet }

// grokProg is a compiled pattern for the engine; read-only once built.
type grokProg struct {
	lits     []string // literals every match contains, in this order
	inst     []grokInst
	classes  []grokClass
	looks    []grokLook
	start    uint32
	startSet grokByteSet
	nmemo    int // memoized instructions (rows of the memo)
	maxLen   int // longest input exec takes
	ncap     int // capture slots, 2*(groups+1)
	anchored bool
	never    bool
}

// grokJob is an entry of the backtracker's stack: an Alt to resume at its
// arg (grokArgBit), a capture slot to restore (grokArgBit, pos the old
// value), or the exits of a greedy loop from pos down to lo
// (grokRangeBit).
type grokJob struct {
	pc  uint32 // low 30 bits: the instruction
	pos int32
	lo  int32
}

const (
	grokArgBit   = 1 << 31
	grokRangeBit = 1 << 30
	grokPCMask   = grokRangeBit - 1
)

// grokMaxVisitedBits bounds the memo of one search (4 MiB); longer inputs
// go to regexp.
const grokMaxVisitedBits = 32 << 20

// grokNewProg builds the engine's program from a compiled syntax.Prog with
// ngroups capture groups.
func grokNewProg(sp *syntax.Prog, ngroups int) *grokProg {
	p := &grokProg{start: uint32(sp.Start), ncap: 2 * (ngroups + 1)}
	cond := sp.StartCond()
	p.never = cond == ^syntax.EmptyOp(0)
	p.anchored = cond&syntax.EmptyBeginText != 0
	p.inst = make([]grokInst, len(sp.Inst))
	classIdx := map[string]uint32{}
	indeg := make([]int, len(sp.Inst))
	for i := range sp.Inst {
		si := &sp.Inst[i]
		gi := &p.inst[i]
		gi.out, gi.arg = si.Out, si.Arg
		switch si.Op {
		case syntax.InstFail:
			gi.op = grokOpFail
		case syntax.InstAlt, syntax.InstAltMatch:
			gi.op = grokOpAlt
			indeg[si.Arg]++
		case syntax.InstCapture:
			gi.op = grokOpCapture
		case syntax.InstEmptyWidth:
			gi.op = grokOpEmpty
		case syntax.InstNop:
			gi.op = grokOpNop
		case syntax.InstMatch:
			gi.op = grokOpMatch
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			gi.op = grokOpRune
			var c grokClass
			for r := rune(0); r < utf8.RuneSelf; r++ {
				var ok bool
				switch si.Op {
				case syntax.InstRune:
					ok = si.MatchRune(r)
				case syntax.InstRune1:
					ok = r == si.Rune[0]
				case syntax.InstRuneAny:
					ok = true
				case syntax.InstRuneAnyNotNL:
					ok = r != '\n'
				}
				if ok {
					c.set[r>>6] |= 1 << (r & 63)
				}
			}
			switch si.Op {
			case syntax.InstRune:
				c.na, c.si = 2, si
			case syntax.InstRune1:
				if si.Rune[0] >= utf8.RuneSelf {
					c.na, c.si = 2, si
				}
			default:
				c.na = 1
			}
			key := fmt.Sprint(si.Op, si.Rune, si.Arg)
			if si.Op == syntax.InstRuneAny || si.Op == syntax.InstRuneAnyNotNL {
				key = fmt.Sprint(si.Op)
			}
			idx, ok := classIdx[key]
			if !ok {
				idx = uint32(len(p.classes))
				classIdx[key] = idx
				p.classes = append(p.classes, c)
			}
			gi.aux = idx
		}
		if si.Op != syntax.InstMatch && si.Op != syntax.InstFail {
			indeg[si.Out]++
		}
	}
	// Memoize only the start and the join points (see above).
	indeg[sp.Start] += 2
	for i := range p.inst {
		if indeg[i] >= 2 {
			p.inst[i].memo = int32(p.nmemo)
			p.nmemo++
		} else {
			p.inst[i].memo = -1
		}
	}
	lookIdx := map[grokLook]uint32{}
	for i := range p.inst {
		gi := &p.inst[i]
		if gi.op != grokOpAlt {
			continue
		}
		l := grokLook{out: p.firstSet(gi.out), arg: p.firstSet(gi.arg)}
		idx, ok := lookIdx[l]
		if !ok {
			idx = uint32(len(p.looks))
			lookIdx[l] = idx
			p.looks = append(p.looks, l)
		}
		gi.aux = idx
		if r := &p.inst[gi.out]; r.op == grokOpRune && r.out == uint32(i) && gi.arg != gi.out {
			gi.op = grokOpStarGreedy
		} else if r := &p.inst[gi.arg]; r.op == grokOpRune && r.out == uint32(i) && gi.arg != gi.out {
			gi.op = grokOpStarLazy
		}
	}
	p.startSet = p.firstSet(p.start)
	p.maxLen = 1<<30 - 1
	if p.nmemo > 0 {
		p.maxLen = min(p.maxLen, grokMaxVisitedBits/p.nmemo-1)
	}
	return p
}

// firstSet computes the bytes a match continuing from pc can start with:
// the union over the rune instructions reachable without consuming input;
// any when Match is reachable that way.
func (p *grokProg) firstSet(pc uint32) grokByteSet {
	var b grokByteSet
	seen := map[uint32]bool{}
	stack := []uint32{pc}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &p.inst[pc]
		switch in.op {
		case grokOpMatch:
			b.any = true
			return b
		case grokOpAlt, grokOpStarGreedy, grokOpStarLazy:
			stack = append(stack, in.out, in.arg)
		case grokOpCapture, grokOpNop, grokOpEmpty:
			stack = append(stack, in.out)
		case grokOpRune:
			c := &p.classes[in.aux]
			b.bits[0] |= c.set[0]
			b.bits[1] |= c.set[1]
			if c.na != 0 {
				b.bits[2], b.bits[3] = ^uint64(0), ^uint64(0)
			}
		}
	}
	return b
}

// has reports whether a state with this first set can match at s[pos:].
func (b *grokByteSet) has(s string, pos int) bool {
	if b.any {
		return true
	}
	if pos >= len(s) {
		return false
	}
	c := s[pos]
	return b.bits[c>>6]&(1<<(c&63)) != 0
}

// grokKeepRunWords bounds the memo (in 64-bit words), the job stack and
// the dirty list (in entries) a search leaves for the next one: 1 MiB of
// memo holds lines of about 50 KiB for COMBINEDAPACHELOG (160 memoized
// instructions). A longer line allocates its own. Reusing the memo is
// what keeps long lines fast: allocating it for each line of 10 KiB made
// their match 10 to 16 times slower.
const grokKeepRunWords = 1 << 17

// grokRunMaxBytes is the most a grokRun keeps between searches, which
// the memory formula counts per goroutine running a chain with grok
// (conf.GrokRunBytes, which a test holds to it).
const grokRunMaxBytes = grokKeepRunWords * (8 + int(unsafe.Sizeof(grokJob{})) + 4)

// grokRun is the state of one search.
type grokRun struct {
	visited []uint64
	dirty   []uint32
	jobs    []grokJob
	stride  int
}

// visit marks (row, pos) and reports whether it was not marked before.
func (r *grokRun) visit(row int32, pos int) bool {
	n := uint(int(row)*r.stride + pos)
	w := r.visited[n>>6]
	if w&(1<<(n&63)) != 0 {
		return false
	}
	if w == 0 {
		r.dirty = append(r.dirty, uint32(n>>6))
	}
	r.visited[n>>6] = w | 1<<(n&63)
	return true
}

// firstMarked returns the first position in [from, to] marked in row, or
// to+1 when there is none.
func (r *grokRun) firstMarked(row int32, from, to int) int {
	if from > to {
		return to + 1
	}
	base := int(row) * r.stride
	a, b := uint(base+from), uint(base+to)
	wa, wb := a>>6, b>>6
	for w := wa; w <= wb; w++ {
		x := r.visited[w]
		if w == wa {
			x &= ^uint64(0) << (a & 63)
		}
		if w == wb {
			x &= ^uint64(0) >> (63 - b&63)
		}
		if x != 0 {
			return int(w<<6) + bits.TrailingZeros64(x) - base
		}
	}
	return to + 1
}

// markRange marks positions [from, to] in row.
func (r *grokRun) markRange(row int32, from, to int) {
	if from > to {
		return
	}
	base := int(row) * r.stride
	a, b := uint(base+from), uint(base+to)
	wa, wb := a>>6, b>>6
	for w := wa; w <= wb; w++ {
		x := ^uint64(0)
		if w == wa {
			x &= ^uint64(0) << (a & 63)
		}
		if w == wb {
			x &= ^uint64(0) >> (63 - b&63)
		}
		old := r.visited[w]
		if old == 0 {
			r.dirty = append(r.dirty, uint32(w))
		}
		r.visited[w] = old | x
	}
}

// exec runs the leftmost-first search on s; it returns the capture slots
// (2*g, 2*g+1 for group g; -1 when unset) and whether it matched.
func (p *grokProg) exec(s string, sc *grokScratch) ([]int, bool) {
	if p.never {
		return nil, false
	}
	n := len(s)
	r := &sc.run
	r.stride = n + 1
	nw := (p.nmemo*r.stride + 63) >> 6
	if cap(r.visited) < nw {
		r.visited = make([]uint64, nw)
	} else {
		r.visited = r.visited[:nw]
	}
	if cap(sc.cap) < p.ncap {
		sc.cap = make([]int, p.ncap)
	}
	caps := sc.cap[:p.ncap]
	for i := range caps {
		caps[i] = -1
	}
	ok := false
	if p.anchored {
		ok = p.startSet.has(s, 0) && p.try(s, r, caps, 0)
	} else {
		attempts := 0
		for pos := 0; pos <= n; {
			if p.startSet.has(s, pos) {
				// When the first attempt fails, make sure there is a match
				// at all before trying every other start.
				if attempts == 1 && !p.mayMatch(s, sc) {
					break
				}
				attempts++
				if p.try(s, r, caps, pos) {
					ok = true
					break
				}
			}
			if pos == n {
				break
			}
			if s[pos] < utf8.RuneSelf {
				pos++
			} else {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			}
		}
	}
	for _, w := range r.dirty {
		r.visited[w] = 0
	}
	r.dirty = r.dirty[:0]
	r.jobs = r.jobs[:0]
	if cap(r.visited) > grokKeepRunWords || cap(r.jobs) > grokKeepRunWords || cap(r.dirty) > grokKeepRunWords {
		// Do not keep what one long line needed.
		r.visited, r.jobs, r.dirty = nil, nil, nil
	}
	return caps, ok
}

// try runs the backtracker from pos0, leaving the captures of the match
// in caps; r.jobs is empty on return, caps as they were when it fails.
func (p *grokProg) try(s string, r *grokRun, caps []int, pos0 int) bool {
	inst := p.inst
	pc := p.start
	pos := pos0
	arg := false
	check := true
	end := len(s)
	for {
		if check {
			if m := inst[pc].memo; m >= 0 && !r.visit(m, pos) {
				goto fail
			}
		}
		check = true
		{
			in := &inst[pc]
			switch in.op {
			case grokOpAlt:
				if arg {
					arg = false
					pc = in.arg
					continue
				}
				l := &p.looks[in.aux]
				if l.arg.has(s, pos) {
					if !l.out.has(s, pos) {
						pc = in.arg
						continue
					}
					r.jobs = append(r.jobs, grokJob{pc: pc | grokArgBit, pos: int32(pos)})
				} else if !l.out.has(s, pos) {
					goto fail
				}
				pc = in.out
				continue
			case grokOpStarGreedy:
				// Same search as the Alt loop it replaces: consume the class
				// as far as possible with the same memo marks, leaving the
				// exits as range jobs (tried from the last one down).
				l := &p.looks[in.aux]
				rin := &inst[in.out]
				cl := &p.classes[rin.aux]
				lm, rm := in.memo, rin.memo
				lo := pos
				var stop int
				for {
					q := pos
					for q < end {
						c := s[q]
						if c >= utf8.RuneSelf || !cl.has(c) {
							break
						}
						q++
					}
					// Go's order of visits: R(pos) L(pos+1) R(pos+1) ... R(q);
					// a marked R(a) stops after a, a marked L(b) before b.
					stop = q
					stopped := false
					if rm >= 0 {
						if a := r.firstMarked(rm, pos, q); a <= q {
							stop, stopped = a, true
						}
					}
					if lm >= 0 {
						if b := r.firstMarked(lm, pos+1, stop); b <= stop {
							stop, stopped = b-1, true
						}
						r.markRange(lm, pos+1, stop)
					}
					if rm >= 0 {
						r.markRange(rm, pos, stop)
					}
					if stopped || q >= end || s[q] < utf8.RuneSelf {
						break
					}
					ru, w := utf8.DecodeRuneInString(s[q:])
					if cl.na == 0 || cl.na == 2 && !cl.si.MatchRune(ru) {
						break
					}
					if lm >= 0 && !r.visit(lm, q+w) {
						break
					}
					r.jobs = append(r.jobs, grokJob{pc: pc | grokRangeBit, pos: int32(q), lo: int32(lo)})
					pos = q + w
					lo = pos
				}
				pos = stop
				if !l.arg.any {
					for pos >= lo && !l.arg.has(s, pos) {
						pos--
					}
					if pos < lo {
						goto fail
					}
				}
				if pos > lo {
					r.jobs = append(r.jobs, grokJob{pc: pc | grokRangeBit, pos: int32(pos - 1), lo: int32(lo)})
				}
				pc = in.arg
				continue
			case grokOpStarLazy:
				if arg {
					arg = false
					pc = in.arg
					continue
				}
				{
					l := &p.looks[in.aux]
					if !l.out.any {
						// While the exit cannot match, take the class; same
						// memo marks as the Alt loop it replaces.
						rin := &inst[in.arg]
						cl := &p.classes[rin.aux]
						lm, rm := in.memo, rin.memo
						skip0 := cl.set[0] &^ l.out.bits[0]
						skip1 := cl.set[1] &^ l.out.bits[1]
						for {
							q := pos
							for q < end {
								c := s[q]
								if c >= 64 {
									if c >= utf8.RuneSelf || skip1&(1<<(c&63)) == 0 {
										break
									}
								} else if skip0&(1<<c) == 0 {
									break
								}
								q++
							}
							// consumed pos..q-1: R marks [pos,q-1], L marks [pos+1,q]
							ra, lb := q, q+1
							if rm >= 0 {
								ra = r.firstMarked(rm, pos, q-1)
							}
							if lm >= 0 {
								lb = r.firstMarked(lm, pos+1, q)
							}
							if ra < q && ra <= lb-1 {
								r.markRange(rm, pos, ra)
								if lm >= 0 {
									r.markRange(lm, pos+1, ra)
								}
								goto fail
							}
							if lb <= q {
								if rm >= 0 {
									r.markRange(rm, pos, lb-1)
								}
								r.markRange(lm, pos+1, lb)
								goto fail
							}
							if rm >= 0 {
								r.markRange(rm, pos, q-1)
							}
							if lm >= 0 {
								r.markRange(lm, pos+1, q)
							}
							pos = q
							if l.out.has(s, pos) {
								break
							}
							if rm >= 0 && !r.visit(rm, pos) {
								goto fail
							}
							if pos >= end || s[pos] < utf8.RuneSelf {
								goto fail
							}
							ru, w := utf8.DecodeRuneInString(s[pos:])
							if cl.na == 0 || cl.na == 2 && !cl.si.MatchRune(ru) {
								goto fail
							}
							pos += w
							if lm >= 0 && !r.visit(lm, pos) {
								goto fail
							}
						}
					}
					if l.arg.has(s, pos) {
						r.jobs = append(r.jobs, grokJob{pc: pc | grokArgBit, pos: int32(pos)})
					}
					pc = in.out
					continue
				}
			case grokOpRune:
				if pos >= end {
					goto fail
				}
				c := s[pos]
				cl := &p.classes[in.aux]
				if c < utf8.RuneSelf {
					if !cl.has(c) {
						goto fail
					}
					pos++
				} else {
					ru, w := utf8.DecodeRuneInString(s[pos:])
					if cl.na == 0 || cl.na == 2 && !cl.si.MatchRune(ru) {
						goto fail
					}
					pos += w
				}
				pc = in.out
				continue
			case grokOpCapture:
				if arg {
					caps[in.arg] = pos
					goto fail
				}
				r.jobs = append(r.jobs, grokJob{pc: pc | grokArgBit, pos: int32(caps[in.arg])})
				caps[in.arg] = pos
				pc = in.out
				continue
			case grokOpEmpty:
				if !grokEmptyOK(s, pos, syntax.EmptyOp(in.arg)) {
					goto fail
				}
				pc = in.out
				continue
			case grokOpNop:
				pc = in.out
				continue
			case grokOpMatch:
				caps[0] = pos0
				caps[1] = pos
				r.jobs = r.jobs[:0]
				return true
			}
		}
	fail:
		for {
			n := len(r.jobs)
			if n == 0 {
				return false
			}
			j := &r.jobs[n-1]
			if j.pc&grokRangeBit == 0 {
				pc = j.pc & grokPCMask
				arg = j.pc&grokArgBit != 0
				pos = int(j.pos)
				r.jobs = r.jobs[:n-1]
				check = false
				break
			}
			// range job of a greedy star: exits from j.pos down to j.lo
			in := &inst[j.pc&grokPCMask]
			la := &p.looks[in.aux].arg
			i, lo := int(j.pos), int(j.lo)
			if !la.any {
				for i >= lo && !la.has(s, i) {
					i--
				}
			}
			if i > lo {
				j.pos = int32(i - 1)
			} else {
				r.jobs = r.jobs[:n-1]
			}
			if i >= lo {
				pc = in.arg
				pos = i
				arg = false
				check = true
				break
			}
		}
	}
}

// grokEmptyOK reports whether the empty-width assertions op hold at pos,
// as regexp decides it.
func grokEmptyOK(s string, pos int, op syntax.EmptyOp) bool {
	r1, r2 := rune(-1), rune(-1)
	if pos > 0 {
		if c := s[pos-1]; c < utf8.RuneSelf {
			r1 = rune(c)
		} else {
			r1, _ = utf8.DecodeLastRuneInString(s[:pos])
		}
	}
	if pos < len(s) {
		if c := s[pos]; c < utf8.RuneSelf {
			r2 = rune(c)
		} else {
			r2, _ = utf8.DecodeRuneInString(s[pos:])
		}
	}
	return op&^syntax.EmptyOpContext(r1, r2) == 0
}

// grokHasLiterals reports whether s contains lits in order, without overlap.
func grokHasLiterals(s string, lits []string) bool {
	for _, l := range lits {
		i := strings.Index(s, l)
		if i < 0 {
			return false
		}
		s = s[i+len(l):]
	}
	return true
}

// grokRequiredLiterals lists literal strings that every match of re
// contains in this order, without overlap (a necessary condition only).
func grokRequiredLiterals(re *syntax.Regexp) []string {
	var toks []string // "" stands for a gap of unknown text
	var walk func(re *syntax.Regexp)
	gap := func() { toks = append(toks, "") }
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			if re.Flags&syntax.FoldCase != 0 {
				gap()
				return
			}
			for _, r := range re.Rune {
				if r == utf8.RuneError {
					gap()
				} else {
					toks = append(toks, string(r))
				}
			}
		case syntax.OpCharClass:
			if len(re.Rune) == 2 && re.Rune[0] == re.Rune[1] && re.Rune[0] != utf8.RuneError {
				toks = append(toks, string(re.Rune[0]))
			} else {
				gap()
			}
		case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
			syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		case syntax.OpCapture:
			walk(re.Sub[0])
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				walk(sub)
			}
		case syntax.OpPlus:
			walk(re.Sub[0])
			gap()
		case syntax.OpRepeat:
			if re.Min >= 1 {
				walk(re.Sub[0])
			}
			gap()
		default: // alternation, star, quest, any char, no match
			gap()
		}
	}
	walk(re)
	var lits []string
	var cur strings.Builder
	for _, t := range toks {
		if t == "" {
			if cur.Len() > 0 {
				lits = append(lits, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteString(t)
	}
	if cur.Len() > 0 {
		lits = append(lits, cur.String())
	}
	return lits
}

// mayMatch reports whether s may contain a match: false only when it
// certainly does not (missing literals, or the DFA finds no match).
func (p *grokProg) mayMatch(s string, sc *grokScratch) bool {
	if len(p.lits) > 0 && !grokHasLiterals(s, p.lits) {
		return false
	}
	if sc.dfas == nil {
		sc.dfas = map[*grokProg]*grokDFA{}
	}
	d, ok := sc.dfas[p]
	if !ok {
		if len(sc.dfas) >= 64 {
			clear(sc.dfas) // programs of matchers gone, most likely
		}
		d = newGrokDFA(p)
		sc.dfas[p] = d
	}
	if d == nil {
		return true
	}
	return d.mayMatch(p, s)
}

// grokDFA is a lazily built DFA deciding whether a prog matches anywhere in
// a string (no positions, no captures). Its states are sets of instructions
// of the prog waiting for the next rune, plus what the previous rune was
// (for \b, ^ and $); transitions on ASCII are cached.
//
// Its memory is bounded by grokDFAMaxBytes, counted as it is allocated
// (bytes): the buffers sized by the prog once, then each state. A state
// that would cross the bound is not made: the search in progress gives up
// (the line may match), and the next one starts the cache afresh.
type grokDFA struct {
	states []*grokDState
	index  map[string]int32
	mark   []uint32
	gen    uint32
	stack  []uint32
	next   []uint32
	key    []byte
	fails  int
	bytes  int  // what the DFA holds, as grokDFAFixedBytes and grokDStateBytes count it
	full   bool // a state was refused since the cache last started afresh
}

// newGrokDFA returns an empty DFA for p, or nil when the buffers sized by
// p alone would take most of grokDFAMaxBytes: the backtracker then tries
// every start, as it would with no DFA.
func newGrokDFA(p *grokProg) *grokDFA {
	fixed := grokDFAFixedBytes(len(p.inst))
	if fixed > grokDFAMaxBytes/2 {
		return nil
	}
	return &grokDFA{index: map[string]int32{}, mark: make([]uint32, len(p.inst)), bytes: fixed}
}

// grokDFAFixedBytes bounds the buffers of a DFA for a prog of n
// instructions: mark (one uint32 each); stack, which holds each
// instruction's successors at most once a step (two uint32s each); next
// and key, a state's instructions (a uint32 each, four key bytes each).
func grokDFAFixedBytes(n int) int { return 4*n + 8*n + 4*n + 4*n + 64 }

// grokDStateBytes bounds what a state of npc instructions holds: the state
// with its transitions, its instructions, its key in the index (each
// rounded up as the allocator's size classes round them), and its share
// of the index's and the states slice's growth (either may be up to
// twice its entries' size).
func grokDStateBytes(npc int) int {
	up := func(n, to int) int { return (n + to - 1) / to * to }
	return up(int(unsafe.Sizeof(grokDState{})), 64) + up(4*npc, 16) + up(1+4*npc, 16) +
		2*(int(unsafe.Sizeof(""))+4+8) + 2*8
}

// grokDState is a state of grokDFA.
type grokDState struct {
	pcs   []uint32
	prev  rune       // a rune standing for the previous one: -1, '\n', 'a' or ' '
	trans [128]int32 // 0 unknown, -1 match, k>0 state k-1
	end   int8       // at end of text: 0 unknown, 1 match, 2 no match
}

const (
	// grokDFAMaxBytes bounds one DFA: one per grok pattern per goroutine
	// running a chain. The memory formula counts it per pattern
	// (conf.GrokPatternBytes, which a test holds to it). About 1,300
	// states of COMBINEDAPACHELOG fit: on varied lines it builds about
	// 1,000, and a bound that held half as many made matching them twice
	// as slow.
	grokDFAMaxBytes = 1 << 20
	// grokDFAMaxFails is how many times a DFA may fill up before it is
	// given up: lines so varied that the cache keeps filling gain little
	// from it.
	grokDFAMaxFails = 50
)

// grokPrevClass returns the rune standing for r as the previous rune in
// syntax.EmptyOpContext.
func grokPrevClass(r rune) rune {
	switch {
	case r < 0:
		return -1
	case syntax.IsWordChar(r):
		return 'a'
	case r == '\n':
		return '\n'
	}
	return ' '
}

// stateFor returns the index of the state for (pcs in d.next, prev),
// creating it; -1 when the cache is full.
func (d *grokDFA) stateFor(prev rune) int32 {
	next := d.next
	slices.Sort(next)
	next = slices.Compact(next)
	d.next = next
	key := d.key[:0]
	key = append(key, byte(prev+1))
	for _, pc := range next {
		key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	d.key = key
	if i, ok := d.index[string(key)]; ok {
		return i
	}
	cost := grokDStateBytes(len(next))
	if d.bytes+cost > grokDFAMaxBytes {
		d.full = true
		return -1
	}
	d.bytes += cost
	st := &grokDState{pcs: slices.Clone(next), prev: prev}
	i := int32(len(d.states))
	d.states = append(d.states, st)
	d.index[string(key)] = i
	return i
}

// step computes the transition of st on rune r (r < 0: end of text). It
// reports whether a match ends before r; otherwise it leaves the next
// kernel in d.next.
func (d *grokDFA) step(p *grokProg, st *grokDState, r rune, addStart bool) bool {
	d.gen++
	if d.gen == 0 {
		clear(d.mark)
		d.gen = 1
	}
	flags := syntax.EmptyOpContext(st.prev, r)
	stack := append(d.stack[:0], st.pcs...)
	next := d.next[:0]
	matched := false
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.mark[pc] == d.gen {
			continue
		}
		d.mark[pc] = d.gen
		in := &p.inst[pc]
		switch in.op {
		case grokOpAlt, grokOpStarGreedy, grokOpStarLazy:
			stack = append(stack, in.arg, in.out)
		case grokOpCapture, grokOpNop:
			stack = append(stack, in.out)
		case grokOpEmpty:
			if syntax.EmptyOp(in.arg)&^flags == 0 {
				stack = append(stack, in.out)
			}
		case grokOpMatch:
			matched = true
			stack = stack[:0]
		case grokOpRune:
			if r >= 0 && p.classes[in.aux].matchRune(r) {
				next = append(next, in.out)
			}
		}
	}
	if addStart && !matched {
		next = append(next, p.start)
	}
	d.stack, d.next = stack, next
	return matched
}

// matchRune reports whether the class holds r.
func (c *grokClass) matchRune(r rune) bool {
	if r < utf8.RuneSelf {
		return c.has(byte(r))
	}
	switch c.na {
	case 1:
		return true
	case 2:
		return c.si.MatchRune(r)
	}
	return false
}

// mayMatch runs the DFA over s; false means no match anywhere.
func (d *grokDFA) mayMatch(p *grokProg, s string) bool {
	if d.fails >= grokDFAMaxFails {
		return true
	}
	if d.full {
		// Start afresh, on a new index and states slice: the old ones,
		// whose growth grokDStateBytes counted, go to the collector with
		// the states.
		d.fails++
		d.full = false
		d.bytes = grokDFAFixedBytes(len(p.inst))
		d.states = nil
		d.index = map[string]int32{}
	}
	unanchored := !p.anchored
	d.next = append(d.next[:0], p.start)
	cur := d.stateFor(-1)
	if cur < 0 {
		return true
	}
	for pos := 0; pos < len(s); {
		st := d.states[cur]
		c := s[pos]
		if c < utf8.RuneSelf {
			t := st.trans[c]
			if t > 0 {
				cur = t - 1
				pos++
				continue
			}
			if t < 0 {
				return true
			}
			if d.step(p, st, rune(c), unanchored) {
				st.trans[c] = -1
				return true
			}
			nx := d.stateFor(grokPrevClass(rune(c)))
			if nx < 0 {
				return true
			}
			st.trans[c] = nx + 1
			cur = nx
			pos++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[pos:])
		if d.step(p, st, r, unanchored) {
			return true
		}
		nx := d.stateFor(grokPrevClass(r))
		if nx < 0 {
			return true
		}
		cur = nx
		pos += w
	}
	st := d.states[cur]
	if st.end == 0 {
		st.end = 2
		if d.step(p, st, -1, false) {
			st.end = 1
		}
	}
	return st.end == 1
}

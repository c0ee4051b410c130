package processors

// This file is the tokenizer engine of Filebeat's dissect processor
// (libbeat/processors/dissect), written from scratch for speed: a pattern
// is compiled once, and matching is a walk over the input with
// strings.Index that allocates nothing beyond the caller's result slice
// (only joining non-adjacent %{+key} parts builds a new string).
//
// Tokenizer syntax, as in Filebeat:
//
//	%{[prefix]key[/ordinal][#length][->][|type]}
//
//	%{key}        plain field
//	%{} %{?key}   skipped field (a named skip is a reference for %{&key})
//	%{+key}       append: joined to earlier values of key with the text
//	              that precedes the field in the tokenizer (" " if none)
//	%{+key/2}     append with an ordinal: fields are applied in ordinal
//	              order (unordered ones count as 0), ties in tokenizer order
//	%{*key}       pointer: not saved; its value names the key of %{&key}
//	%{&key}       indirect: saved under the value of %{*key} or %{?key}
//	%{key->}      right padding: repeats of the following delimiter are
//	              skipped
//	%{key#5}      fixed length: exactly 5 bytes
//	%{key|type}   conversion: integer, long, float, double, boolean, ip,
//	              string (kept on plain and indirect fields, ignored on the
//	              others, as Filebeat does)
//
// The text before the first field must start the input; the last field,
// when nothing follows it in the tokenizer, takes the rest of the input;
// when literal text ends the tokenizer, whatever follows its first match
// is ignored. All of that is Filebeat's behaviour.

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// dissectConv is the data type a field's value is converted to, from the
// |type suffix of its key.
type dissectConv uint8

// The conversions of the |type suffix. dissectConvString (|string) keeps
// the value as a string with trailing spaces removed, as Filebeat does
// before every conversion.
const (
	dissectConvNone dissectConv = iota
	dissectConvInteger
	dissectConvLong
	dissectConvFloat
	dissectConvDouble
	dissectConvBoolean
	dissectConvIP
	dissectConvString
)

// dissectConvNames maps the |type names Filebeat accepts to conversions.
var dissectConvNames = map[string]dissectConv{
	"integer": dissectConvInteger,
	"long":    dissectConvLong,
	"float":   dissectConvFloat,
	"double":  dissectConvDouble,
	"boolean": dissectConvBoolean,
	"ip":      dissectConvIP,
	"string":  dissectConvString,
}

// String returns the |type name of c, or "none".
func (c dissectConv) String() string {
	switch c {
	case dissectConvInteger:
		return "integer"
	case dissectConvLong:
		return "long"
	case dissectConvFloat:
		return "float"
	case dissectConvDouble:
		return "double"
	case dissectConvBoolean:
		return "boolean"
	case dissectConvIP:
		return "ip"
	case dissectConvString:
		return "string"
	case dissectConvNone:
		return "none"
	}
	return "conv(" + strconv.Itoa(int(c)) + ")"
}

// dissectField is one result of dissect: Key is never empty; Value is a
// substring of the input, except for a key built by %{+key} fields from
// parts that are not adjacent in the input, which is a new string; Conv
// is the conversion asked by the |type suffix of the field that last set
// the key.
type dissectField struct {
	Key, Value string
	Conv       dissectConv
}

// Field kinds.
const (
	dissectKindNormal    uint8 = iota // %{key}
	dissectKindSkip                   // %{}, %{?}, %{->}
	dissectKindNamedSkip              // %{?key}
	dissectKindPointer                // %{*key}
	dissectKindAppend                 // %{+key}
	dissectKindIndirect               // %{&key}
)

// dissectStackFields is how many fields a pattern may have for dissect to
// keep its scratch space on the stack; longer patterns allocate it.
const dissectStackFields = 32

// dissectTok is one %{...} of a tokenizer, with the literal that follows it.
type dissectTok struct {
	raw     string // the field as written, "%{...}", for messages
	key     string
	kind    uint8
	conv    dissectConv
	greedy  bool   // ->: skip repeats of delim
	length  int    // #N: fixed length in bytes, 0 if none
	ordinal int    // /N: order of application, 0 if none
	delim   string // literal between this field and the next (or the end)
	join    string // for appends: the literal before the field, or " "
	slot    int    // key slot (the referenced key for indirect), -1 for skips
}

// dissectSlot is a key known at compile time.
type dissectSlot struct {
	key     string
	creator int  // index of the first field, in tokenizer order, with key
	deleted bool // a %{?key} or %{*key} has this key: never in results
}

// dissectPart is one value joined into a result: the capture of field cap,
// preceded by join unless it is the first part.
type dissectPart struct {
	cap  int
	join string
}

// dissectOut is one result of a pattern without indirect fields.
type dissectOut struct {
	key   string
	conv  dissectConv
	parts []dissectPart
}

// dissectSpan is the byte range of the input a field captured.
type dissectSpan struct{ start, end int }

// dissectPattern is a compiled tokenizer; immutable, safe for concurrent
// use.
type dissectPattern struct {
	raw      string
	prefix   string // literal the input must start with
	toks     []dissectTok
	trailing bool // the last field takes the rest of the input

	indirect bool          // has %{&key}: results are resolved per call
	outs     []dissectOut  // results when !indirect, in tokenizer order
	slots    []dissectSlot // keys known at compile time
	order    []int         // field indexes in order of application
	keyList  []string      // keys(): static result keys
}

// dissectErrInvalidTokenizer is wrapped by every error of compileDissect.
var dissectErrInvalidTokenizer = errors.New("dissect: invalid tokenizer")

// dissectErrNoMatch is wrapped by every error of dissect: the input does
// not match the tokenizer.
var dissectErrNoMatch = errors.New("dissect: input does not match the tokenizer")

// compileDissect parses a Filebeat dissect tokenizer. Its errors wrap
// dissectErrInvalidTokenizer and name the tokenizer and the field at
// fault: an empty tokenizer, one without a %{...} field, an unterminated
// "%{", fields not separated by a delimiter (unless the first has a fixed
// length), an unknown or missing |type, the mixed prefixes "+&" and "&+",
// an empty key on +, * or &, misplaced or malformed modifiers (the
// characters / # | and "->" left in a key), a key with a newline, and an
// indirect %{&key} with no %{?key} or %{*key} to name it.
func compileDissect(tokenizer string) (*dissectPattern, error) {
	fail := func(format string, args ...any) (*dissectPattern, error) {
		return nil, fmt.Errorf("%w %q: %s", dissectErrInvalidTokenizer, tokenizer, fmt.Sprintf(format, args...))
	}
	if tokenizer == "" {
		return fail("the tokenizer is empty")
	}
	p := &dissectPattern{raw: tokenizer}
	pos := 0
	for {
		i := strings.Index(tokenizer[pos:], "%{")
		if i < 0 {
			break
		}
		open := pos + i
		j := strings.IndexByte(tokenizer[open+2:], '}')
		if j < 0 {
			return fail("unterminated field at offset %d: %q has no closing '}'", open, dissectTruncate(tokenizer[open:], 40))
		}
		end := open + 2 + j
		lit := tokenizer[pos:open]
		t, err := dissectParseField(tokenizer[open+2 : end])
		if err != nil {
			return fail("field %s: %v", t.raw, err)
		}
		if len(p.toks) == 0 {
			p.prefix = lit
		} else {
			p.toks[len(p.toks)-1].delim = lit
		}
		t.join = lit
		if t.join == "" {
			t.join = " "
		}
		p.toks = append(p.toks, t)
		pos = end + 1
	}
	if len(p.toks) == 0 {
		return fail("no field: a tokenizer needs at least one %%{key}")
	}
	if pos < len(tokenizer) {
		p.toks[len(p.toks)-1].delim = tokenizer[pos:]
	} else {
		p.trailing = true
	}
	for i := 0; i+1 < len(p.toks); i++ {
		if t := &p.toks[i]; t.delim == "" && t.length == 0 {
			return fail("fields %s and %s are not separated by a delimiter (only a fixed-length field such as %%{key#4} may be followed directly by another field)", t.raw, p.toks[i+1].raw)
		}
	}

	// Keys known at compile time, in order of first appearance.
	slotOf := map[string]int{}
	refs := map[string]bool{}
	for i := range p.toks {
		t := &p.toks[i]
		switch t.kind {
		case dissectKindNormal, dissectKindAppend, dissectKindNamedSkip, dissectKindPointer:
			s, ok := slotOf[t.key]
			if !ok {
				s = len(p.slots)
				slotOf[t.key] = s
				p.slots = append(p.slots, dissectSlot{key: t.key, creator: i})
			}
			t.slot = s
			if t.kind == dissectKindNamedSkip || t.kind == dissectKindPointer {
				refs[t.key] = true
			}
		}
	}
	for i := range p.slots {
		p.slots[i].deleted = refs[p.slots[i].key]
	}
	for i := range p.toks {
		t := &p.toks[i]
		if t.kind != dissectKindIndirect {
			continue
		}
		if !refs[t.key] {
			return fail("indirect field %s has no reference field %%{?%s} or %%{*%s} to name its key", t.raw, t.key, t.key)
		}
		t.slot = slotOf[t.key]
		p.indirect = true
	}

	// Fields are applied in ordinal order, ties in tokenizer order.
	p.order = make([]int, len(p.toks))
	for i := range p.order {
		p.order[i] = i
	}
	sort.SliceStable(p.order, func(a, b int) bool {
		return p.toks[p.order[a]].ordinal < p.toks[p.order[b]].ordinal
	})

	for _, s := range p.slots {
		if !s.deleted {
			p.keyList = append(p.keyList, s.key)
		}
	}
	if !p.indirect {
		p.outs = p.staticPlan()
	}
	return p, nil
}

// staticPlan resolves, once, what each key of a pattern without indirect
// fields is made of, by applying the fields to their keys in order as
// Filebeat applies them to its map: a plain, named skip or pointer field
// sets its key, an append joins to it, and keys of named skips and
// pointers are dropped at the end.
func (p *dissectPattern) staticPlan() []dissectOut {
	type ent struct {
		parts []dissectPart
		conv  dissectConv
		set   bool
	}
	ents := make([]ent, len(p.slots))
	for _, i := range p.order {
		t := &p.toks[i]
		if t.kind == dissectKindSkip {
			continue
		}
		e := &ents[t.slot]
		if t.kind == dissectKindAppend && e.set {
			e.parts = append(e.parts, dissectPart{cap: i, join: t.join})
		} else {
			e.parts = []dissectPart{{cap: i}}
		}
		e.conv = t.conv
		e.set = true
	}
	var outs []dissectOut
	for i, s := range p.slots {
		if s.deleted || !ents[i].set {
			continue
		}
		outs = append(outs, dissectOut{key: s.key, conv: ents[i].conv, parts: ents[i].parts})
	}
	return outs
}

// dissectParseField parses the inside of one %{...}. The returned token
// has raw set even on error.
func dissectParseField(raw string) (dissectTok, error) {
	t := dissectTok{raw: "%{" + raw + "}", slot: -1}
	if raw == "" {
		t.kind = dissectKindSkip
		return t, nil
	}
	if strings.IndexByte(raw, '\n') >= 0 {
		return t, errors.New("invalid field name: a key cannot contain a newline")
	}
	// Suffixes are taken from the right, in the order of Filebeat's
	// grammar: key[/ordinal][#length][->][|type].
	rest := raw
	conv := dissectConvNone
	if i := strings.LastIndexByte(rest, '|'); i >= 0 && dissectIsAlpha(rest[i+1:]) {
		name := rest[i+1:]
		if name == "" {
			return t, errors.New("missing data type after '|' (want integer, long, float, double, boolean, ip or string)")
		}
		c, ok := dissectConvNames[name]
		if !ok {
			return t, fmt.Errorf("unknown data type %q (want integer, long, float, double, boolean, ip or string)", name)
		}
		conv = c
		rest = rest[:i]
	}
	if strings.HasSuffix(rest, "->") {
		t.greedy = true
		rest = rest[:len(rest)-2]
	}
	if n, k, ok := dissectNumSuffix(rest, '#'); ok {
		t.length = n
		rest = rest[:k]
	}
	ordinal := 0
	if n, k, ok := dissectNumSuffix(rest, '/'); ok {
		ordinal = n
		rest = rest[:k]
	}

	switch {
	case rest == "":
		// Only modifiers, as in %{->}: a skipped field.
		t.kind = dissectKindSkip
		return t, nil
	case strings.HasPrefix(rest, "+&"), strings.HasPrefix(rest, "&+"):
		return t, fmt.Errorf("mixed prefix %q: a field is either an append (+) or an indirect (&) field", rest[:2])
	case rest[0] == '?':
		t.kind, t.key = dissectKindNamedSkip, rest[1:]
	case rest[0] == '*':
		t.kind, t.key = dissectKindPointer, rest[1:]
	case rest[0] == '+':
		t.kind, t.key, t.ordinal = dissectKindAppend, rest[1:], ordinal
	case rest[0] == '&':
		t.kind, t.key, t.conv = dissectKindIndirect, rest[1:], conv
	default:
		t.kind, t.key, t.ordinal, t.conv = dissectKindNormal, rest, ordinal, conv
	}
	if t.key == "" {
		if t.kind == dissectKindNamedSkip { // %{?}
			t.kind = dissectKindSkip
			return t, nil
		}
		return t, fmt.Errorf("empty key after the %q prefix", rest[:1])
	}
	if i := strings.LastIndexByte(t.key, '|'); i >= 0 {
		tail := t.key[i+1:]
		if _, known := dissectConvNames[tail]; known && t.greedy {
			return t, errors.New("misplaced modifier: '->' must come before '|type' (order: %{[prefix]key[/ordinal][#length][->][|type]})")
		}
		return t, fmt.Errorf("unknown data type %q (want integer, long, float, double, boolean, ip or string)", tail)
	}
	if strings.Contains(t.key, "->") {
		return t, errors.New("misplaced modifier '->' (order: %{[prefix]key[/ordinal][#length][->][|type]})")
	}
	if strings.IndexByte(t.key, '#') >= 0 {
		return t, errors.New("invalid fixed length: want #N with 1 or 2 digits, after the key and any /ordinal (order: %{[prefix]key[/ordinal][#length][->][|type]})")
	}
	if strings.IndexByte(t.key, '/') >= 0 {
		return t, errors.New("invalid ordinal: want /N with 1 or 2 digits, right after the key (order: %{[prefix]key[/ordinal][#length][->][|type]})")
	}
	return t, nil
}

// dissectNumSuffix reports whether s ends with mark and 1 or 2 ASCII
// digits, preceded by at least one byte; it returns the number and where
// the suffix starts.
func dissectNumSuffix(s string, mark byte) (n, at int, ok bool) {
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	l := len(s)
	if l >= 3 && s[l-2] == mark && digit(s[l-1]) {
		return int(s[l-1] - '0'), l - 2, true
	}
	if l >= 4 && s[l-3] == mark && digit(s[l-2]) && digit(s[l-1]) {
		return int(s[l-2]-'0')*10 + int(s[l-1]-'0'), l - 3, true
	}
	return 0, 0, false
}

// dissectIsAlpha reports whether s has only ASCII letters ([[:alpha:]]).
func dissectIsAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// keys lists the result keys the pattern can produce that are known at
// compile time (not indirect ones), in the order dissect returns them; a
// fresh slice the caller may keep. A pattern without indirect fields
// returns exactly these keys on every match.
func (p *dissectPattern) keys() []string {
	return slices.Clone(p.keyList)
}

// dissect appends the fields of s to dst[:0] in tokenizer order (skip
// fields omitted; append fields joined into one result; indirect
// resolved), or returns dst[:0] and an error wrapping dissectErrNoMatch
// when s does not match (an empty s never matches, as in Filebeat). Each
// key appears once: a key set by several fields holds the value of the
// last one applied, as in Filebeat's map. Results are ordered by the
// first field, in the tokenizer, of their key; an indirect key comes at
// the place of its %{&key} field and is dropped when its name is empty.
// It allocates nothing when cap(dst) is enough, except to join appended
// values that are not adjacent in s (and, for patterns of more than 32
// fields, scratch space).
func (p *dissectPattern) dissect(s string, dst []dissectField) ([]dissectField, error) {
	dst = dst[:0]
	if s == "" {
		return dst, dissectErrEmptyInput
	}
	var buf [dissectStackFields]dissectSpan
	var spans []dissectSpan
	if len(p.toks) <= len(buf) {
		spans = buf[:len(p.toks)]
	} else {
		spans = make([]dissectSpan, len(p.toks))
	}
	if err := p.extract(s, spans); err != nil {
		return dst, err
	}
	if p.indirect {
		return p.resolveGeneral(s, spans, dst), nil
	}
	return p.resolveStatic(s, spans, dst), nil
}

// extract finds the span of every field of s, walking the delimiters as
// Filebeat does: each field ends at the first match of the delimiter that
// follows it (or after its fixed length), a padded field also skips the
// repeats of that delimiter, and the last field takes the rest of s
// unless the tokenizer ends with a literal.
func (p *dissectPattern) extract(s string, spans []dissectSpan) error {
	if !strings.HasPrefix(s, p.prefix) {
		return &dissectMatchError{reason: dissectMissPrefix, delim: p.prefix, input: s}
	}
	off := len(p.prefix)
	last := len(p.toks)
	if p.trailing {
		last--
	}
	for i := 0; i < last; i++ {
		t := &p.toks[i]
		start := off
		var end int
		if t.length > 0 {
			end = off + t.length
			if end > len(s) {
				return &dissectMatchError{reason: dissectMissLength, tok: t, input: s, offset: off}
			}
			if !strings.HasPrefix(s[end:], t.delim) {
				return &dissectMatchError{reason: dissectMissAfterFixed, tok: t, delim: t.delim, input: s, offset: end}
			}
		} else {
			j := strings.Index(s[off:], t.delim)
			if j < 0 {
				return &dissectMatchError{reason: dissectMissDelim, tok: t, delim: t.delim, input: s, offset: off}
			}
			end = off + j
		}
		off = end
		if t.greedy && t.delim != "" {
			// Filebeat's padding: step one byte while the delimiter
			// also matches there.
			for strings.HasPrefix(s[off+1:], t.delim) {
				off++
			}
		}
		spans[i] = dissectSpan{start, end}
		off += len(t.delim)
	}
	if p.trailing {
		t := &p.toks[len(p.toks)-1]
		if t.length > 0 && len(s)-off != t.length {
			return &dissectMatchError{reason: dissectMissLastLength, tok: t, input: s, offset: off}
		}
		spans[len(p.toks)-1] = dissectSpan{off, len(s)}
	}
	return nil
}

// resolveStatic appends the results of a pattern without indirect fields.
func (p *dissectPattern) resolveStatic(s string, spans []dissectSpan, dst []dissectField) []dissectField {
	if cap(dst) < len(p.outs) {
		dst = make([]dissectField, len(p.outs))
	}
	dst = dst[:len(p.outs)]
	for i := range p.outs {
		o := &p.outs[i]
		// Fields are stored one by one: building a dissectField and
		// copying it stalls on store forwarding.
		d := &dst[i]
		d.Key = o.key
		d.Conv = o.conv
		if len(o.parts) == 1 {
			sp := spans[o.parts[0].cap]
			d.Value = s[sp.start:sp.end]
		} else {
			d.Value = dissectJoinStatic(s, spans, o.parts)
		}
	}
	return dst
}

// dissectJoinStatic joins the captures of parts: a substring of s when
// they follow each other in s separated by their join strings, otherwise
// a new string.
func dissectJoinStatic(s string, spans []dissectSpan, parts []dissectPart) string {
	first := spans[parts[0].cap]
	prevEnd := first.end
	total := first.end - first.start
	adjacent := true
	for _, pt := range parts[1:] {
		sp := spans[pt.cap]
		total += len(pt.join) + sp.end - sp.start
		if adjacent && !(sp.start-prevEnd == len(pt.join) && s[prevEnd:sp.start] == pt.join) {
			adjacent = false
		}
		prevEnd = sp.end
	}
	if adjacent {
		return s[first.start:prevEnd]
	}
	var b strings.Builder
	b.Grow(total)
	b.WriteString(s[first.start:first.end])
	for _, pt := range parts[1:] {
		sp := spans[pt.cap]
		b.WriteString(pt.join)
		b.WriteString(s[sp.start:sp.end])
	}
	return b.String()
}

// dissectEnt is a key during resolveGeneral: its value is the chain of
// parts from head to tail.
type dissectEnt struct {
	key        string
	head, tail int32
	conv       dissectConv
	set        bool
}

// dissectChainPart is a link of an entry's value chain.
type dissectChainPart struct {
	span dissectSpan
	join string
	next int32
}

// resolveGeneral applies the fields to their keys one by one, as Filebeat
// applies them to a map, for patterns with indirect fields, whose keys
// are only known per input. The map is a small array: the keys known at
// compile time first, then those named by indirect fields.
func (p *dissectPattern) resolveGeneral(s string, spans []dissectSpan, dst []dissectField) []dissectField {
	n := len(p.toks)
	var entBuf [dissectStackFields]dissectEnt
	var partBuf [dissectStackFields]dissectChainPart
	var dynBuf [dissectStackFields]int32
	var ents []dissectEnt
	var parts []dissectChainPart
	var dyn []int32
	if n <= dissectStackFields {
		ents, parts, dyn = entBuf[:n], partBuf[:n], dynBuf[:n]
	} else {
		ents, parts, dyn = make([]dissectEnt, n), make([]dissectChainPart, n), make([]int32, n)
	}
	// Every slot has its own creating field and every indirect field
	// creates at most one entry, so n entries and n parts are enough.
	nEnts := len(p.slots)
	for i := range p.slots {
		ents[i] = dissectEnt{key: p.slots[i].key, head: -1, tail: -1}
	}
	for i := range dyn {
		dyn[i] = -1
	}
	nParts := int32(0)
	for _, i := range p.order {
		t := &p.toks[i]
		var e *dissectEnt
		switch t.kind {
		case dissectKindSkip:
			continue
		case dissectKindIndirect:
			ref := &ents[t.slot]
			if !ref.set {
				continue
			}
			name := dissectJoinChain(s, parts, ref.head)
			idx := -1
			for k := 0; k < nEnts; k++ {
				if ents[k].key == name {
					idx = k
					break
				}
			}
			if idx < 0 {
				idx = nEnts
				nEnts++
				ents[idx] = dissectEnt{key: name, head: -1, tail: -1}
				dyn[i] = int32(idx)
			}
			e = &ents[idx]
		default:
			e = &ents[t.slot]
		}
		parts[nParts] = dissectChainPart{span: spans[i], join: t.join, next: -1}
		if t.kind == dissectKindAppend && e.set {
			parts[e.tail].next = nParts
			e.tail = nParts
		} else {
			e.head, e.tail = nParts, nParts
		}
		nParts++
		e.conv = t.conv
		e.set = true
	}
	if cap(dst) < nEnts {
		dst = make([]dissectField, 0, nEnts)
	}
	for i := 0; i < n; i++ {
		t := &p.toks[i]
		idx := -1
		switch {
		case t.kind == dissectKindIndirect:
			idx = int(dyn[i])
		case t.slot >= 0 && p.slots[t.slot].creator == i && !p.slots[t.slot].deleted:
			idx = t.slot
		}
		if idx < 0 {
			continue
		}
		e := &ents[idx]
		if !e.set || e.key == "" {
			continue
		}
		dst = append(dst, dissectField{Key: e.key, Value: dissectJoinChain(s, parts, e.head), Conv: e.conv})
	}
	return dst
}

// dissectJoinChain is dissectJoinStatic for a chain of parts.
func dissectJoinChain(s string, parts []dissectChainPart, head int32) string {
	first := parts[head]
	if first.next < 0 {
		return s[first.span.start:first.span.end]
	}
	prevEnd := first.span.end
	total := first.span.end - first.span.start
	adjacent := true
	for k := first.next; k >= 0; k = parts[k].next {
		pt := &parts[k]
		total += len(pt.join) + pt.span.end - pt.span.start
		if adjacent && !(pt.span.start-prevEnd == len(pt.join) && s[prevEnd:pt.span.start] == pt.join) {
			adjacent = false
		}
		prevEnd = pt.span.end
	}
	if adjacent {
		return s[first.span.start:prevEnd]
	}
	var b strings.Builder
	b.Grow(total)
	b.WriteString(s[first.span.start:first.span.end])
	for k := first.next; k >= 0; k = parts[k].next {
		pt := &parts[k]
		b.WriteString(pt.join)
		b.WriteString(s[pt.span.start:pt.span.end])
	}
	return b.String()
}

// Reasons of a dissectMatchError.
const (
	dissectMissEmpty      uint8 = iota // empty input
	dissectMissPrefix                  // input does not start with the leading literal
	dissectMissDelim                   // delimiter after a field not found
	dissectMissLength                  // fixed-length field longer than the rest
	dissectMissAfterFixed              // delimiter not right after a fixed-length field
	dissectMissLastLength              // last fixed-length field is not the rest
)

// dissectMatchError says where an input stopped matching a tokenizer. It
// is built only on failure and formatted only when read.
type dissectMatchError struct {
	reason uint8
	tok    *dissectTok
	delim  string
	input  string
	offset int
}

// dissectErrEmptyInput is the error of dissect on an empty input.
var dissectErrEmptyInput error = &dissectMatchError{reason: dissectMissEmpty}

// dissectTruncate shortens s for an error message.
func dissectTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Error names the delimiter or field that failed and the input left.
func (e *dissectMatchError) Error() string {
	rest := ""
	if e.offset <= len(e.input) {
		rest = dissectTruncate(e.input[e.offset:], 80)
	}
	switch e.reason {
	case dissectMissEmpty:
		return "dissect: empty string provided"
	case dissectMissPrefix:
		return fmt.Sprintf("dissect: could not find beginning delimiter %q at the start of %q", e.delim, rest)
	case dissectMissDelim:
		return fmt.Sprintf("dissect: could not find delimiter %q after field %s in remaining %q (offset %d)", e.delim, e.tok.raw, rest, e.offset)
	case dissectMissLength:
		return fmt.Sprintf("dissect: fixed-length field %s needs %d bytes, only %d remain: %q (offset %d)", e.tok.raw, e.tok.length, len(e.input)-e.offset, rest, e.offset)
	case dissectMissAfterFixed:
		return fmt.Sprintf("dissect: could not find delimiter %q right after fixed-length field %s in remaining %q (offset %d)", e.delim, e.tok.raw, rest, e.offset)
	case dissectMissLastLength:
		return fmt.Sprintf("dissect: last fixed-length field %s (length %d) does not fit the remaining %q (%d bytes, offset %d)", e.tok.raw, e.tok.length, rest, len(e.input)-e.offset, e.offset)
	}
	return dissectErrNoMatch.Error()
}

// Unwrap makes every match error a dissectErrNoMatch.
func (e *dissectMatchError) Unwrap() error { return dissectErrNoMatch }

// convertedValue is a converted field value without boxing it in an
// interface, which would allocate for every number of every event.
type convertedValue struct {
	kind convertedKind
	i    int64
	f    float64
	b    bool
	s    string
}

type convertedKind uint8

const (
	convertedString convertedKind = iota
	convertedInt
	convertedFloat
	convertedBool
)

// converted turns a value into its typed form per Conv: an int for
// integer and long (integer must fit 32 bits), a float for float and
// double (float must fit a float32), a bool for boolean
// (strconv.ParseBool's forms), the string itself for ip (after validating
// with net/netip; zones are refused, as net.ParseIP does) and string, and
// the value unchanged for none. As in Filebeat, trailing spaces are
// removed before converting and integers may be written in hex with a 0x
// or 0X prefix. An error names the value, the key and the type.
func (f dissectField) converted() (convertedValue, error) {
	if f.Conv == dissectConvNone {
		return convertedValue{s: f.Value}, nil
	}
	v := strings.TrimRight(f.Value, " ")
	var out convertedValue
	var err error
	switch f.Conv {
	case dissectConvInteger, dissectConvLong:
		bits := 64
		if f.Conv == dissectConvInteger {
			bits = 32
		}
		base := 10
		if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
			base = 0
		}
		out.kind = convertedInt
		out.i, err = strconv.ParseInt(v, base, bits)
	case dissectConvFloat:
		out.kind = convertedFloat
		if _, err = strconv.ParseFloat(v, 32); err == nil {
			out.f, err = strconv.ParseFloat(v, 64)
		}
	case dissectConvDouble:
		out.kind = convertedFloat
		out.f, err = strconv.ParseFloat(v, 64)
	case dissectConvBoolean:
		out.kind = convertedBool
		out.b, err = strconv.ParseBool(v)
	case dissectConvIP:
		var a netip.Addr
		a, err = netip.ParseAddr(v)
		if err == nil && a.Zone() != "" {
			err = errors.New("an IP zone is not allowed")
		}
		out.s = v
	case dissectConvString:
		out.s = v
	default:
		err = errors.New("unknown conversion")
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = ne.Err
		}
		return convertedValue{}, fmt.Errorf("dissect: cannot convert value %q of key %q to %s: %v", f.Value, f.Key, f.Conv, err)
	}
	return out, nil
}

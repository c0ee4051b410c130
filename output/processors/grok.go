package processors

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/logpond/logpond/internal/jsontree"
)

func init() { register("grok", buildGrok) }

// errGrokNoMatch is grok's failure, counted; the event carries
// tag_on_failure, as Logstash marks it.
var errGrokNoMatch = errors.New("no pattern matched")

// grokProcessor is Logstash's grok filter, as a processor: the options
// keep Logstash's names (match, pattern_definitions, break_on_match,
// overwrite, tag_on_failure, target, keep_empty_captures) and its
// behaviour (captures added beside the fields, a capture into a field
// that already holds a string turning it into an array unless overwrite
// names it, _grokparsefailure in tags when nothing matched). Patterns are
// go-grok's standard set (grok_engine.go).
type grokProcessor struct {
	fields       []grokField
	breakOnMatch bool
	overwrite    map[string]bool
	tags         []string
	target       string // "" or a field with a dot after it
	keepEmpty    bool
	paths        map[string]path // target paths of every capture
}

type grokField struct {
	p path
	m *grokMatcher
}

func buildGrok(o *options) (processor, error) {
	p := &grokProcessor{
		breakOnMatch: o.boolean("break_on_match", true),
		keepEmpty:    o.boolean("keep_empty_captures", false),
		overwrite:    map[string]bool{},
		paths:        map[string]path{},
	}
	for _, f := range o.strings("overwrite") {
		p.overwrite[f] = true
	}
	p.tags = []string{"_grokparsefailure"}
	if o.has("tag_on_failure") {
		p.tags = o.strings("tag_on_failure")
	}
	if t := o.str("target", ""); t != "" {
		p.target = t + "."
	}
	defs := map[string]string{}
	pdefs := o.table("pattern_definitions")
	for _, k := range sortedKeys(pdefs) {
		v := pdefs[k]
		s, ok := v.(string)
		if !ok {
			o.fail("pattern_definitions."+k, "want a pattern (a string), got %s", describe(v))
			return nil, o.err
		}
		defs[k] = s
	}
	match := o.table("match")
	if o.err == nil && len(match) == 0 {
		o.fail("match", "missing (required): a table of field = pattern (or a list of patterns)")
	}
	if o.err != nil {
		return nil, o.err
	}
	for _, name := range sortedKeys(match) {
		mo := &options{at: o.key("match"), m: match}
		patterns := mo.strings(name)
		if mo.err != nil {
			return nil, mo.err
		}
		if len(patterns) == 0 {
			return nil, &ConfigError{At: mo.key(name), Err: fmt.Errorf("no pattern")}
		}
		fp, err := newPath(name)
		if err != nil {
			return nil, &ConfigError{At: mo.key(name), Err: err}
		}
		// With break_on_match, a field's patterns are one matcher (the
		// first that matches wins); without, Logstash applies every
		// pattern that matches: one matcher each.
		groups := [][]string{patterns}
		if !p.breakOnMatch {
			groups = groups[:0]
			for _, pt := range patterns {
				groups = append(groups, []string{pt})
			}
		}
		for _, g := range groups {
			m, err := compileGrok(g, defs)
			if err != nil {
				return nil, &ConfigError{At: mo.key(name), Err: err}
			}
			for _, c := range m.fields() {
				tp, err := newPath(p.target + c)
				if err != nil {
					return nil, &ConfigError{At: mo.key(name), Err: fmt.Errorf("capture %q: %w", c, err)}
				}
				p.paths[c] = tp
			}
			p.fields = append(p.fields, grokField{p: fp, m: m})
		}
	}
	return p, nil
}

// run tries the fields' patterns in order; break_on_match stops at the
// first that matches. No match at all adds tag_on_failure to tags.
func (p *grokProcessor) run(e *event) (bool, error) {
	matched := false
	for _, f := range p.fields {
		v := e.get(&f.p)
		if v == nil {
			continue
		}
		if v.Type() == jsontree.TypeArray {
			items, _ := v.Array()
			for _, it := range items {
				if p.matchValue(e, f, it) {
					matched = true
				}
			}
		} else if p.matchValue(e, f, v) {
			matched = true
		}
		if matched && p.breakOnMatch {
			break
		}
	}
	if !matched {
		if len(p.tags) > 0 {
			_ = e.appendStrings(&tagsPath, p.tags, true)
		}
		return false, errGrokNoMatch
	}
	return false, nil
}

func (p *grokProcessor) matchValue(e *event, f grokField, v *jsontree.Value) bool {
	b, err := v.StringBytes()
	if err != nil {
		return false
	}
	caps, ok := f.m.match(unsafeString(b), &e.grok, e.grokked[:0], p.keepEmpty)
	e.grokked = caps[:0]
	if !ok {
		return false
	}
	for _, c := range caps {
		tp, ok := p.paths[c.Field]
		if !ok {
			if tp, err = newPath(p.target + c.Field); err != nil {
				continue
			}
		}
		p.set(e, &tp, c.Field, grokValue(e, c))
	}
	return true
}

// set stores a capture as Logstash's grok does: into an absent field, or
// over one overwrite names; into an array already there, appended; a
// string already there becomes an array of both. Other values stay.
func (p *grokProcessor) set(e *event, tp *path, field string, v *jsontree.Value) {
	// One walk for the read and the write: the objects it makes on the
	// way are made only for a field that is absent, which is then set.
	var at spot
	if e.find(&at, tp, true, nil) != nil {
		return // a path through a value that is not an object
	}
	cur := at.value()
	switch {
	case cur == nil || p.overwrite[field] || p.overwrite[tp.name]:
		at.set(v)
	case cur.Type() == jsontree.TypeArray:
		items, _ := cur.Array()
		cur.SetArrayItem(len(items), v)
	case cur.Type() == jsontree.TypeString:
		arr := e.arena.NewArray()
		arr.SetArrayItem(0, cur)
		arr.SetArrayItem(1, v)
		at.set(arr)
	}
}

// grokValue converts a capture by its type hint (%{NUMBER:n:int}); a
// value the hint does not fit stays a string.
//
// keep_empty_captures keeps captures that are empty or Missing. As in
// Logstash, where the int and float hints convert with Ruby's to_i and
// to_f, such a capture with an int or float hint is 0; otherwise an empty
// one is "" and a Missing one null.
func grokValue(e *event, c grokCapture) *jsontree.Value {
	if c.Value == "" {
		switch c.Type {
		case "int", "long", "float", "double":
			return e.arena.NewNumberString("0")
		}
		if c.Missing {
			return e.arena.NewNull()
		}
		return e.arena.NewString("")
	}
	switch c.Type {
	case "int", "long":
		if n, err := strconv.ParseInt(c.Value, 10, 64); err == nil {
			return e.arena.NewNumberString(strconv.FormatInt(n, 10))
		}
	case "float", "double":
		if f, err := strconv.ParseFloat(c.Value, 64); err == nil {
			return e.arena.NewNumberFloat64(f)
		}
	case "bool", "boolean":
		if b, err := strconv.ParseBool(c.Value); err == nil {
			if b {
				return e.arena.NewTrue()
			}
			return e.arena.NewFalse()
		}
	}
	return e.arena.NewString(c.Value)
}

package processors

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/logpond/logpond/internal/jsontree"
)

// The processors here edit fields, with Filebeat's names, options,
// defaults and failures (docs/configuration.md, "Processors").

func init() {
	register("add_fields", buildAddFields)
	register("add_tags", buildAddTags)
	register("drop_fields", buildDropFields)
	register("include_fields", buildIncludeFields)
	register("rename", buildRename)
	register("copy_fields", buildCopyFields)
	register("truncate_fields", buildTruncateFields)
	register("replace", buildReplace)
	register("drop_event", buildDropEvent)
}

// --- add_fields ---

type addFields struct {
	target path // empty parts: the root
	fields *static
}

func buildAddFields(o *options) (processor, error) {
	p := &addFields{}
	target := o.str("target", "fields")
	fields := o.table("fields")
	switch {
	case o.err != nil:
	case fields == nil:
		o.fail("fields", "missing (required)")
	case len(fields) == 0:
		o.fail("fields", "empty: list at least one field to add") // as Filebeat refuses it
	}
	p.fields = compileStatic(fields)
	if target != "" {
		t, err := newTarget(target)
		if err != nil {
			o.fail("target", "%w", err)
		}
		p.target = t
	} else if p.fields.member("@timestamp") != nil {
		o.fail("fields", "%w", errTimestampTarget)
	}
	return p, o.err
}

func (p *addFields) run(e *event) (bool, error) {
	val := p.fields.build(e.arena)
	if len(p.target.parts) == 0 {
		merge(e.root, val, true)
		return false, nil
	}
	cur := e.get(&p.target)
	if cur != nil && cur.Type() == jsontree.TypeObject {
		merge(cur, val, true)
		return false, nil
	}
	return false, e.put(&p.target, val, nil)
}

// --- add_tags ---

type addTags struct {
	tags   []string
	target path
}

func buildAddTags(o *options) (processor, error) {
	p := &addTags{tags: o.strings("tags")}
	if o.err == nil && len(p.tags) == 0 {
		o.fail("tags", "missing (required): the list of tags to add")
	}
	target := o.str("target", "tags")
	if target == "" {
		target = "tags" // as Filebeat reads an empty target
	}
	t, err := newTarget(target)
	if err != nil {
		o.fail("target", "%w", err)
	}
	p.target = t
	return p, o.err
}

// run appends the tags, duplicates included, as Filebeat's add_tags
// does; a target that holds something other than a list is left alone
// without an error, as there.
func (p *addTags) run(e *event) (bool, error) {
	_ = e.appendStrings(&p.target, p.tags, false)
	return false, nil
}

// --- drop_fields / include_fields ---

// fieldMatcher is one entry of drop_fields' list: a field name, or a
// regular expression between slashes matched against full field names.
type fieldMatcher struct {
	p  path
	re *regexp.Regexp
}

func compileFieldMatchers(o *options, key string, allowRegexp bool) []fieldMatcher {
	names := o.strings(key)
	if o.err == nil && len(names) == 0 {
		o.fail(key, "missing (required): the list of fields")
	}
	var out []fieldMatcher
	for i, n := range names {
		// "/…/" is a regular expression, as in Filebeat: longer than two
		// characters ("//" is a field name).
		if allowRegexp && len(n) > 2 && strings.HasPrefix(n, "/") && strings.HasSuffix(n, "/") {
			re, err := regexp.Compile(n[1 : len(n)-1])
			if err != nil {
				o.fail(fmt.Sprintf("%s[%d]", key, i), "invalid regular expression: %v", err)
				return nil
			}
			out = append(out, fieldMatcher{re: re})
			continue
		}
		p, err := newPath(n)
		if err != nil {
			o.fail(fmt.Sprintf("%s[%d]", key, i), "%v", err)
			return nil
		}
		out = append(out, fieldMatcher{p: p})
	}
	return out
}

type dropFields struct {
	fields        []fieldMatcher
	ignoreMissing bool
}

func buildDropFields(o *options) (processor, error) {
	p := &dropFields{fields: compileFieldMatchers(o, "fields", true), ignoreMissing: o.boolean("ignore_missing", false)}
	return p, o.err
}

// protected are the fields drop_fields cannot remove: Filebeat keeps
// type out of its list, and refuses to delete @timestamp.
func protected(name string) bool { return name == "@timestamp" || name == "type" }

func (p *dropFields) run(e *event) (bool, error) {
	var errs []string
	for _, f := range p.fields {
		if f.re != nil {
			dropMatching(e.root, "", f.re)
			continue
		}
		if f.p.name == "type" {
			continue
		}
		if err := e.delete(&f.p, nil); err != nil && (err != errKeyNotFound || !p.ignoreMissing) {
			errs = append(errs, fmt.Sprintf("failed to drop field [%s], error: %v", f.p.name, err))
		}
	}
	if errs != nil {
		return false, errors.New(strings.Join(errs, "; "))
	}
	return false, nil
}

// dropMatching removes from obj every member whose full name (prefix
// plus key) matches re, and looks for more inside the objects it keeps.
// @metadata is not among the fields a regular expression reaches, as in
// Filebeat, where it lives apart from them.
func dropMatching(obj *jsontree.Value, prefix string, re *regexp.Regexp) {
	o, _ := obj.Object()
	var drop []string
	o.Visit(func(key []byte, v *jsontree.Value) {
		name := prefix + string(key)
		if prefix == "" && name == "@metadata" {
			return
		}
		if !protected(name) && re.MatchString(name) {
			drop = append(drop, string(key))
			return
		}
		if v.Type() == jsontree.TypeObject {
			dropMatching(v, name+".", re)
		}
	})
	for _, k := range drop {
		o.Del(k)
	}
}

type includeFields struct {
	fields []path
}

func buildIncludeFields(o *options) (processor, error) {
	ms := compileFieldMatchers(o, "fields", false)
	p := &includeFields{}
	for _, m := range ms {
		p.fields = append(p.fields, m.p)
	}
	return p, o.err
}

// run keeps only the listed fields, plus @timestamp, type and @metadata,
// which Filebeat keeps outside the fields include_fields filters.
func (p *includeFields) run(e *event) (bool, error) {
	keep := e.arena.NewObject()
	ro, _ := e.root.Object()
	for _, k := range []string{"@timestamp", "type", "@metadata"} {
		if v := ro.Get(k); v != nil {
			keep.Set(k, v)
		}
	}
	for _, f := range p.fields {
		if v := e.get(&f); v != nil {
			e.putInto(keep, f.name, v)
		}
	}
	ro.Reset()
	ko, _ := keep.Object()
	ko.Visit(func(key []byte, v *jsontree.Value) { ro.Set(string(key), v) })
	return false, nil
}

// --- rename / copy_fields ---

type fromTo struct{ from, to path }

func compileFromTo(o *options) []fromTo {
	list := o.tables("fields")
	if o.err == nil && len(list) == 0 {
		o.fail("fields", "missing (required): a list of {from, to}")
	}
	var out []fromTo
	for i, m := range list {
		at := fmt.Sprintf("fields[%d]", i)
		fo, err := newOptions(o.key(at), m)
		if err != nil {
			o.err = err
			return nil
		}
		from, to := fo.required("from"), fo.required("to")
		if err := fo.done("from", "to"); err != nil {
			o.err = err
			return nil
		}
		fp, err1 := newPath(from)
		tp, err2 := newTarget(to)
		if err := errors.Join(err1, err2); err != nil {
			o.fail(at, "%w", err)
			return nil
		}
		out = append(out, fromTo{fp, tp})
	}
	return out
}

type rename struct {
	fields                     []fromTo
	ignoreMissing, failOnError bool
	copy                       bool   // copy_fields: the source stays
	failure                    string // error.message's prefix, as Filebeat's
}

func buildRename(o *options) (processor, error) {
	p := &rename{fields: compileFromTo(o), ignoreMissing: o.boolean("ignore_missing", false), failOnError: o.boolean("fail_on_error", true),
		failure: "Failed to rename fields in processor: "}
	return p, o.err
}

func buildCopyFields(o *options) (processor, error) {
	p := &rename{fields: compileFromTo(o), ignoreMissing: o.boolean("ignore_missing", false), failOnError: o.boolean("fail_on_error", true), copy: true,
		failure: "Failed to copy fields in copy_fields processor: "}
	return p, o.err
}

func (p *rename) run(e *event) (bool, error) {
	undo := e.undoLog()
	defer func() { e.keepUndo(undo) }()
	for _, f := range p.fields {
		if err := p.one(e, f, &undo); err != nil {
			if p.failOnError {
				undo.revert()
				e.setErrorMessage(p.failure + err.Error())
				return false, err
			}
			// Filebeat goes on with the next field, and reports
			// nothing.
			continue
		}
	}
	return false, nil
}

func (p *rename) one(e *event, f fromTo, undo *undoLog) error {
	// Filebeat's order: the target first, then the source, where only a
	// missing part (not one that is not an object) is "missing".
	if e.get(&f.to) != nil {
		return fmt.Errorf("target field %s already exists, drop or rename this field first", f.to.name)
	}
	v, err := e.lookup(&f.from)
	switch {
	case err == errKeyNotFound && p.ignoreMissing:
		return nil
	case err != nil:
		return fmt.Errorf("could not fetch value for key: %s, Error: %w", f.from.name, err)
	}
	if p.copy {
		v = e.clone(v)
	} else if err := e.delete(&f.from, undo); err != nil {
		return fmt.Errorf("could not delete key: %s,  %w", f.from.name, err) // two spaces, as Filebeat's
	}
	// to is absent (checked above), and removing from cannot make it
	// appear: the write takes one walk, and taking it back is deleting
	// what it created.
	existed, created, err := e.putNew(&f.to, v)
	switch {
	case existed:
		return fmt.Errorf("target field %s already exists, drop or rename this field first", f.to.name)
	case err != nil && p.copy:
		return fmt.Errorf("could not copy value to %s: %s, %w", f.to.name, convRender(v), mapErr(err))
	case err != nil:
		return fmt.Errorf("could not put value: %s: %s, %w", f.to.name, convRender(v), mapErr(err))
	}
	undo.add(created, nil)
	return nil
}

// --- truncate_fields ---

type truncateFields struct {
	fields                     []path
	maxBytes, maxChars         int
	ignoreMissing, failOnError bool
}

func buildTruncateFields(o *options) (processor, error) {
	// fail_on_error defaults to false, as in Filebeat's code (its docs
	// say true).
	p := &truncateFields{ignoreMissing: o.boolean("ignore_missing", false), failOnError: o.boolean("fail_on_error", false)}
	for _, m := range compileFieldMatchers(o, "fields", false) {
		if err := writable(&m.p); err != nil {
			o.fail("fields", "%w", err)
		}
		p.fields = append(p.fields, m.p)
	}
	p.maxBytes = int(o.integer("max_bytes", 0))
	p.maxChars = int(o.integer("max_characters", 0))
	switch {
	case o.err != nil:
	case p.maxBytes < 0:
		o.fail("max_bytes", "must be positive")
	case p.maxChars < 0:
		o.fail("max_characters", "must be positive")
	case p.maxBytes == 0 && p.maxChars == 0:
		o.fail("", "one of max_bytes and max_characters is required")
	case p.maxBytes > 0 && p.maxChars > 0:
		o.fail("", "max_bytes and max_characters cannot be set together")
	}
	return p, o.err
}

func (p *truncateFields) run(e *event) (bool, error) {
	undo := e.undoLog()
	defer func() { e.keepUndo(undo) }()
	truncated := 0
	for _, f := range p.fields {
		v, err := e.lookup(&f)
		switch {
		case err == errKeyNotFound && p.ignoreMissing:
			continue
		case err != nil:
			err = fmt.Errorf("could not fetch value for key '%s': %w", f.name, err)
		case v.Type() != jsontree.TypeString:
			err = fmt.Errorf("value cannot be truncated: %s", convRender(v))
		}
		if err != nil {
			if p.failOnError {
				undo.revert()
				return false, err
			}
			continue
		}
		cut, ok := truncate(v.Str(), p.maxBytes, p.maxChars)
		if !ok {
			continue
		}
		_ = e.put(&f, e.arena.NewString(cut), &undo)
		truncated++
	}
	// Filebeat flags the event once for each field it truncated.
	for range truncated {
		e.flag("truncated")
	}
	return false, nil
}

// truncate cuts s to at most maxBytes bytes (never inside a UTF-8
// character) or maxChars characters; ok says it was longer.
func truncate(s string, maxBytes, maxChars int) (string, bool) {
	if maxBytes > 0 {
		if len(s) <= maxBytes {
			return s, false
		}
		n := maxBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n], true
	}
	if utf8.RuneCountInString(s) <= maxChars {
		return s, false
	}
	i, n := 0, 0
	for i < len(s) && n < maxChars {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return s[:i], true
}

// --- replace ---

type replaceField struct {
	p           path
	re          *regexp.Regexp
	replacement string
}

type replace struct {
	fields                     []replaceField
	ignoreMissing, failOnError bool
}

func buildReplace(o *options) (processor, error) {
	p := &replace{ignoreMissing: o.boolean("ignore_missing", false), failOnError: o.boolean("fail_on_error", true)}
	list := o.tables("fields")
	if o.err == nil && len(list) == 0 {
		o.fail("fields", "missing (required): a list of {field, pattern, replacement}")
	}
	for i, m := range list {
		fo, err := newOptions(o.key(fmt.Sprintf("fields[%d]", i)), m)
		if err != nil {
			return nil, err
		}
		field, pattern := fo.required("field"), fo.required("pattern")
		if !fo.has("replacement") {
			fo.fail("replacement", "missing (required; it may be empty)")
		}
		replacement := fo.str("replacement", "")
		if err := fo.done("field", "pattern", "replacement"); err != nil {
			return nil, err
		}
		fp, err := newTarget(field)
		if err != nil {
			return nil, &ConfigError{At: fo.key("field"), Err: err}
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, &ConfigError{At: fo.key("pattern"), Err: fmt.Errorf("invalid regular expression: %w", err)}
		}
		p.fields = append(p.fields, replaceField{p: fp, re: re, replacement: replacement})
	}
	return p, o.err
}

func (p *replace) run(e *event) (bool, error) {
	undo := e.undoLog()
	defer func() { e.keepUndo(undo) }()
	for _, f := range p.fields {
		v, err := e.lookup(&f.p)
		switch {
		case err == errKeyNotFound && p.ignoreMissing:
			continue
		case err != nil:
			err = fmt.Errorf("could not fetch value for key: %s, Error: %w", f.p.name, err)
		case v.Type() != jsontree.TypeString:
			err = fmt.Errorf("key '%s' expected type string, but got %s with value '%s'", f.p.name, convGoType(v), convRender(v))
		}
		if err != nil {
			if p.failOnError {
				undo.revert()
				e.setErrorMessage("Failed to replace fields in processor: " + err.Error())
				return false, err
			}
			continue
		}
		_ = e.put(&f.p, e.arena.NewString(f.re.ReplaceAllString(v.Str(), f.replacement)), &undo)
	}
	return false, nil
}

// --- drop_event ---

type dropEvent struct{}

// buildDropEvent takes no option but `when` (read by the chain): without
// one it drops every event, as Filebeat's does.
func buildDropEvent(*options) (processor, error) { return dropEvent{}, nil }

func (dropEvent) run(*event) (bool, error) { return true, nil }

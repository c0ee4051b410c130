package processors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/jsontree"
)

// decode_json_fields is Filebeat's processor of that name
// (libbeat/processors/actions/decode_json_fields.go, with the
// jsontransform helpers it calls): it replaces fields holding JSON text
// with the value the text holds, with Filebeat's options, defaults and
// failures:
//
//   - fields (required): the fields to decode. One that is absent, or
//     whose value is not a string, is left alone; one whose text is not
//     JSON fails (the field is kept as it was).
//   - max_depth (1): how many times JSON found inside JSON is decoded. At
//     each level only the strings directly inside the decoded object (or
//     array) are tried, and only those that look like an object or an
//     array ({...} or [...]); one that does not decode stays a string.
//   - process_array (false): without it, an array is not decoded where
//     depth is left to decode inside it: a string holding one stays a
//     string, and a field holding one fails with "processing skipped"
//     (with max_depth above 1); the last level decodes arrays all the
//     same (Filebeat's quirks, kept). With it, the strings directly inside
//     a decoded array are decoded too.
//   - target: unset, the field is replaced; "" merges an object into the
//     event's root; otherwise the value goes to that field.
//   - overwrite_keys (false): when merging into the root, whether the
//     decoded keys replace the event's. Without it, @timestamp and
//     @metadata are dropped and existing values kept; with it, @timestamp
//     must be an RFC 3339 time (it is written in UTC with milliseconds),
//     @metadata an object (merged into the event's), type a string not
//     empty nor starting with "_". Objects always merge into objects, and
//     replace what is not one, as Filebeat's DeepUpdate does.
//   - expand_keys (false): dotted keys are expanded into objects
//     ({"a.b":1} becomes {"a":{"b":1}}); a conflict fails (see djExpand).
//   - add_error_key (false): on failure, sets error to {message, type:
//     "json", data, field} (or {message, type} for a merge failure), as
//     Filebeat does; without it the event gets no error from the
//     processor itself.
//   - document_id: a key of the decoded object, moved (when it is a
//     string) to @metadata._id (an empty one is only removed).
//
// The error run returns joins, with ", ", the failures of the fields, as
// Filebeat's does ("invalid character 'x' looking for beginning of
// value"...: the messages of Go's encoding/json, which Filebeat uses).
//
// A text is checked with gjson.Valid (it takes what encoding/json takes,
// up to encoding/json's nesting limit, 10000), then parsed lazily into
// the event's arena (jsontree's Arena.ParseValid): nothing is copied, and
// what no later processor touches is written back as the text it was.
// So numbers keep their text (Filebeat rewrites them from int64 or
// float64: 1.0 becomes 1, an integer beyond int64 loses digits), spaces
// inside the text stay, and so do the repeated keys of an object the
// processor does not edit: Filebeat keeps the last value of a key an
// object repeats (and Elasticsearch refuses a document that repeats
// one). An object it edits or looks into (document_id, a merge into the
// root, expand_keys, the levels max_depth decodes) keeps the last value,
// as Filebeat's.

func init() { register("decode_json_fields", djBuild) }

// djProcessor is a compiled decode_json_fields. Immutable once built,
// safe for concurrent use: what it decodes lives in the event's arena.
type djProcessor struct {
	fields        []path
	maxDepth      int
	processArray  bool
	targetSet     bool // target given: the root when target.parts is empty
	target        path
	overwriteKeys bool
	addErrorKey   bool
	expandKeys    bool
	documentID    string
}

// djBuild reads decode_json_fields' options (see the top of this file).
// fields is required (a list, or one name); max_depth must be at least
// 1; target distinguishes unset (in place) from "" (the root).
func djBuild(o *options) (processor, error) {
	p := &djProcessor{}
	if !o.has("fields") {
		o.fail("fields", "missing (required)")
	}
	names := o.strings("fields")
	if o.err == nil && len(names) == 0 {
		o.fail("fields", "must name at least one field")
	}
	for i, n := range names {
		fp, err := newPath(n)
		if err != nil {
			o.fail(fmt.Sprintf("fields[%d]", i), "%v", err)
			break
		}
		p.fields = append(p.fields, fp)
	}
	p.processArray = o.boolean("process_array", false)
	depth := o.integer("max_depth", 1)
	if depth < 1 && o.err == nil {
		o.fail("max_depth", "requires value >= 1, got %d", depth)
	}
	p.maxDepth = int(min(depth, 1<<20))
	if o.has("target") {
		p.targetSet = true
		if t := o.str("target", ""); t != "" {
			tp, err := newTarget(t)
			if err != nil {
				o.fail("target", "%w", err)
			}
			p.target = tp
		}
	}
	p.overwriteKeys = o.boolean("overwrite_keys", false)
	p.addErrorKey = o.boolean("add_error_key", false)
	p.expandKeys = o.boolean("expand_keys", false)
	p.documentID = o.str("document_id", "")
	return p, o.err
}

var (
	djErrSkipped = errors.New("processing skipped")
	djErrInvalid = errors.New("invalid JSON") // replaced by encoding/json's message
)

// run decodes each field in turn; the failures of the fields are joined
// into the error it returns, and do not stop the other fields.
func (p *djProcessor) run(e *event) (bool, error) {
	var small [2]error
	errs := small[:0]
	for _, f := range p.fields {
		errs = p.decodeField(e, f, errs)
	}
	switch len(errs) {
	case 0:
		return false, nil
	case 1:
		return false, errs[0]
	default:
		return false, djJoined(slices.Clone(errs))
	}
}

// djJoined is the failures of several fields, joined as Filebeat joins
// them.
type djJoined []error

func (j djJoined) Error() string {
	msgs := make([]string, len(j))
	for i, err := range j {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, ", ")
}

func (j djJoined) Unwrap() []error { return j }

// djSyntaxErr is a text that does not decode; its message, encoding/json's
// as Filebeat gives it, is worked out when asked for (the chain only
// counts failures).
type djSyntaxErr struct{ text string }

func (e *djSyntaxErr) Error() string { return djSyntaxError(e.text) }

// decodeField decodes the field f and puts the value where target says,
// appending its failures to errs.
func (p *djProcessor) decodeField(e *event, f path, errs []error) []error {
	v, err := e.lookup(&f)
	if err != nil {
		if err != errKeyNotFound {
			errs = append(errs, err)
		}
		return errs
	}
	if v.Type() != jsontree.TypeString {
		return errs // Filebeat ignores a field that is not a string
	}
	text := v.Str()
	out, err := p.unmarshal(e, text, p.maxDepth)
	if err != nil {
		if err == djErrInvalid {
			if p.addErrorKey {
				err = errors.New(djSyntaxError(text))
			} else {
				// The text is the event's: the error keeps a copy.
				err = &djSyntaxErr{text: strings.Clone(text)}
			}
		}
		errs = append(errs, err)
		if p.addErrorKey {
			djSetError(e, "parsing input as JSON: "+err.Error(), v, text != "", f.name)
		}
		return errs
	}

	var id *jsontree.Value
	if p.documentID != "" && out.Type() == jsontree.TypeObject {
		id = djTakeID(out, p.documentID)
	}
	if p.targetSet && len(p.target.parts) == 0 {
		if out.Type() != jsontree.TypeObject {
			errs = append(errs, errors.New("failed to add target to root"))
		} else {
			p.writeRoot(e, out)
		}
	} else {
		target := f
		if p.targetSet {
			target = p.target
		}
		if p.expandKeys {
			if out.Type() != jsontree.TypeObject {
				errs = append(errs, errors.New("failed to expand keys"))
			} else if err := djExpand(e, out); err != nil && p.addErrorKey {
				djSetJSONError(e, err.Error())
			}
		}
		if err := e.put(&target, out, nil); err != nil {
			return append(errs, err)
		}
	}
	if id != nil && id.Str() != "" { // Filebeat sets no empty id
		djMeta(e).Set("_id", id)
	}
	return errs
}

// unmarshal decodes text into a value of the event's arena, then, while
// depth is left, the strings directly inside it that look like JSON
// objects or arrays (Filebeat's unmarshal). text must live as long as
// the event (it is the event's, or decoded into its arena).
func (p *djProcessor) unmarshal(e *event, text string, depth int) (*jsontree.Value, error) {
	if !djValid(text) {
		return nil, djErrInvalid
	}
	depth--
	if depth > 0 && !p.processArray && djFirstByte(text) == '[' {
		return nil, djErrSkipped
	}
	out := e.arena.ParseValid(text)
	if depth == 0 {
		return out, nil
	}
	switch out.Type() {
	case jsontree.TypeObject:
		o, _ := out.Object()
		djDedupe(o)
		o.Visit(func(key []byte, m *jsontree.Value) {
			if sub := p.decodeChild(e, m, depth); sub != nil {
				o.Set(unsafeString(key), sub) // replaces m: keys are unique
			}
		})
	case jsontree.TypeArray:
		items, _ := out.Array()
		for i, it := range items {
			if sub := p.decodeChild(e, it, depth); sub != nil {
				out.SetArrayItem(i, sub)
			}
		}
	}
	return out, nil
}

// decodeChild decodes m when it is a string that looks like a JSON
// object or array and decodes; nil otherwise.
func (p *djProcessor) decodeChild(e *event, m *jsontree.Value, depth int) *jsontree.Value {
	if m.Type() != jsontree.TypeString || !djStructured(m.Str()) {
		return nil
	}
	sub, err := p.unmarshal(e, m.Str(), depth)
	if err != nil {
		return nil
	}
	return sub
}

// djStructured reports whether s, trimmed of white space, starts and ends
// as an object or an array (Filebeat's isStructured).
func djStructured(s string) bool {
	s = strings.TrimSpace(s)
	n := len(s) - 1
	return n > 0 && (s[0] == '[' && s[n] == ']' || s[0] == '{' && s[n] == '}')
}

// djFirstByte is the first byte of s that is not JSON white space.
func djFirstByte(s string) byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// djMaxNesting is encoding/json's limit on nesting.
const djMaxNesting = 10000

// djValid reports whether text is one JSON value that encoding/json
// decodes. gjson.Valid recurses once per level of nesting: a text that
// could nest deeper than encoding/json allows is counted first.
func djValid(text string) bool {
	if len(text) > djMaxNesting && !djNestingOK(text) {
		return false
	}
	return gjson.Valid(text)
}

// djNestingOK reports whether text, outside its strings, nests no deeper
// than djMaxNesting.
func djNestingOK(text string) bool {
	depth, inString := 0, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > djMaxNesting {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

// djSyntaxError returns the message encoding/json gives for text, as
// Filebeat's decodeJSON: the decoder's error, "multiple json elements
// found" when more follows the first value, or the error of the token
// after it.
func djSyntaxError(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return err.Error()
	}
	if dec.More() {
		return "multiple json elements found"
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return err.Error()
	}
	return djErrInvalid.Error() // not reached: gjson and encoding/json agree
}

// djSetError sets the event's error as Filebeat's SetErrorWithOption
// does: the whole error field is replaced by {message, type: "json",
// data, field}.
func djSetError(e *event, msg string, data *jsontree.Value, hasData bool, field string) {
	obj := e.arena.NewObject()
	o, _ := obj.Object()
	o.Set("message", e.arena.NewString(msg))
	o.Set("type", e.arena.NewString("json"))
	if hasData {
		o.Set("data", data) // the field's own value: the text it holds
	}
	o.Set("field", e.arena.NewString(field))
	ro, _ := e.root.Object()
	ro.Set("error", obj)
}

// djSetJSONError sets error to {message, type: "json"}, as Filebeat's
// jsontransform does when it cannot merge or expand the decoded keys.
func djSetJSONError(e *event, msg string) {
	obj := e.arena.NewObject()
	o, _ := obj.Object()
	o.Set("message", e.arena.NewString(msg))
	o.Set("type", e.arena.NewString("json"))
	ro, _ := e.root.Object()
	ro.Set("error", obj)
}

// djMeta returns the event's @metadata object, made (or replacing a
// value that is not an object) when needed.
func djMeta(e *event) *jsontree.Object {
	ro, _ := e.root.Object()
	if m := ro.Get("@metadata"); m != nil && m.Type() == jsontree.TypeObject {
		o, _ := m.Object()
		return o
	}
	m := e.arena.NewObject()
	ro.Set("@metadata", m)
	o, _ := m.Object()
	return o
}

// djTakeID removes the string at key from the decoded object out and
// returns it, finding key as Filebeat's GetValue does (the whole dotted
// key first, then its parts); nil when there is none.
func djTakeID(out *jsontree.Value, key string) *jsontree.Value {
	obj := out
	for {
		o, _ := obj.Object()
		djDedupe(o)
		if v := o.Get(key); v != nil {
			if v.Type() != jsontree.TypeString {
				return nil
			}
			o.Del(key)
			return v
		}
		i := strings.IndexByte(key, '.')
		if i < 0 {
			return nil
		}
		sub := o.Get(key[:i])
		if sub == nil || sub.Type() != jsontree.TypeObject {
			return nil
		}
		obj, key = sub, key[i+1:]
	}
}

// djDedupe keeps, of a key o repeats, the last value (at the first
// key's place), as Filebeat's decoder, which fills a Go map, does. The
// processor calls it on the decoded objects it edits or looks into.
func djDedupe(o *jsontree.Object) {
	dup := false
	o.Visit(func(key []byte, m *jsontree.Value) {
		if !dup && o.Get(unsafeString(key)) != m {
			dup = true // an earlier member has this key
		}
	})
	if !dup {
		return
	}
	type kv struct {
		k string
		v *jsontree.Value
	}
	kvs := make([]kv, 0, o.Len())
	o.Visit(func(key []byte, m *jsontree.Value) { kvs = append(kvs, kv{unsafeString(key), m}) })
	o.Reset()
	for _, it := range kvs {
		o.Set(it.k, it.v) // a repeated key replaces the value in place
	}
}

// djTimestampLayouts are the formats Filebeat takes for a decoded
// @timestamp that overwrites the event's.
var djTimestampLayouts = []string{time.RFC3339, "2006-01-02T15:04:05.000Z0700"}

// writeRoot merges the decoded object out into the event's root, as
// Filebeat's jsontransform.WriteJSONKeys does.
func (p *djProcessor) writeRoot(e *event, out *jsontree.Value) {
	oo, _ := out.Object()
	djDedupe(oo)
	if p.expandKeys {
		if err := djExpand(e, out); err != nil {
			if p.addErrorKey {
				djSetJSONError(e, err.Error())
			}
			return
		}
	}
	if !p.overwriteKeys {
		oo.Del("@timestamp")
		oo.Del("@metadata")
		djDeepUpdate(e.root, out, false)
		return
	}
	ro, _ := e.root.Object()
	if v := oo.Get("@timestamp"); v != nil {
		if v.Type() != jsontree.TypeString {
			p.jsonError(e, "@timestamp not overwritten (not string)")
		} else {
			var ts time.Time
			var err error
			for _, layout := range djTimestampLayouts {
				if ts, err = time.Parse(layout, v.Str()); err == nil {
					break
				}
			}
			if err != nil {
				p.jsonError(e, "@timestamp not overwritten (parse error on "+v.Str()+")")
			} else {
				ro.Set("@timestamp", tsFormat(e, ts))
			}
		}
	}
	if v := oo.Get("@metadata"); v != nil {
		if v.Type() == jsontree.TypeObject {
			djDeepUpdateObject(djMeta(e), v, true)
		} else {
			p.jsonError(e, "failed to update @metadata")
		}
	}
	if v := oo.Get("type"); v != nil {
		switch s := v.Str(); {
		case v.Type() != jsontree.TypeString:
			p.jsonError(e, "type not overwritten (not string)")
		case s == "" || s[0] == '_':
			p.jsonError(e, "type not overwritten (invalid value ["+s+"])")
		default:
			ro.Set("type", v)
		}
	}
	oo.Del("@timestamp")
	oo.Del("@metadata")
	oo.Del("type")
	djDeepUpdate(e.root, out, true)
}

// jsonError sets error to {message, type: "json"} with add_error_key.
func (p *djProcessor) jsonError(e *event, msg string) {
	if p.addErrorKey {
		djSetJSONError(e, msg)
	}
}

// djDeepUpdate merges the object src into the object dst as Filebeat's
// DeepUpdate (overwrite) and DeepUpdateNoOverwrite do: an object merges
// into an object and replaces any other value, even without overwrite;
// another value replaces an existing one only with overwrite.
func djDeepUpdate(dst, src *jsontree.Value, overwrite bool) {
	do, _ := dst.Object()
	djDeepUpdateObject(do, src, overwrite)
}

// djDeepUpdateObject is djDeepUpdate into the object do.
func djDeepUpdateObject(do *jsontree.Object, src *jsontree.Value, overwrite bool) {
	so, _ := src.Object()
	so.Visit(func(key []byte, v *jsontree.Value) {
		k := unsafeString(key) // a decoded key: it lives as long as the event
		cur := do.Get(k)
		if v.Type() == jsontree.TypeObject {
			if cur != nil && cur.Type() == jsontree.TypeObject {
				co, _ := cur.Object()
				djDeepUpdateObject(co, v, overwrite)
				return
			}
			do.Set(k, v)
			return
		}
		if overwrite || cur == nil {
			do.Set(k, v)
		}
	})
}

// djExpand expands the dotted keys of the decoded object m, and of the
// objects inside it, into objects, merging objects that meet, as
// Filebeat's jsontransform.expandFields does. A key that meets a value
// that is not an object, or a value that is not an object meeting
// another value, fails with Filebeat's message; m may be left partly
// expanded then. Keys are taken in their order (Filebeat's, from a Go
// map, is random: which of two conflicting keys is named may differ).
func djExpand(e *event, m *jsontree.Value) error {
	o, _ := m.Object()
	djDedupe(o)
	type kv struct {
		k string
		v *jsontree.Value
	}
	kvs := make([]kv, 0, o.Len())
	o.Visit(func(key []byte, v *jsontree.Value) { kvs = append(kvs, kv{unsafeString(key), v}) })
	for _, it := range kvs {
		isMap := it.v.Type() == jsontree.TypeObject
		if isMap {
			if err := djExpand(e, it.v); err != nil {
				return fmt.Errorf("error expanding %q: %w", it.k, err)
			}
		}
		if strings.IndexByte(it.k, '.') < 0 {
			continue
		}
		o.Del(it.k)
		old, err := djMapPut(e, m, it.k, it.v)
		if err != nil {
			return fmt.Errorf("cannot expand %q: found conflicting key: %w", it.k, err)
		}
		if old == nil || old.Type() == jsontree.TypeNull {
			continue
		}
		if !isMap {
			return fmt.Errorf("cannot expand %q: found existing (%s) value", it.k, convGoType(old))
		}
		if old.Type() != jsontree.TypeObject {
			return fmt.Errorf("cannot expand %q: found conflicting key", it.k)
		}
		if err := djMergeObjects(it.v, old); err != nil {
			return fmt.Errorf("cannot expand %q: %w", it.k, err)
		}
	}
	return nil
}

// djMapPut sets the dotted key in the object m as Filebeat's mapstr Put
// does (see spot), returning the value it replaced.
func djMapPut(e *event, m *jsontree.Value, key string, v *jsontree.Value) (*jsontree.Value, error) {
	var s spot
	if err := e.walk(&s, m, &path{name: key}, true, nil); err != nil {
		return nil, mapErr(err)
	}
	cur := s.value()
	s.set(v)
	return cur, nil
}

// djMergeObjects merges rhs into lhs, recursively, as Filebeat's
// mergeObjects: two values under one key must both be objects.
func djMergeObjects(lhs, rhs *jsontree.Value) error {
	lo, _ := lhs.Object()
	ro, _ := rhs.Object()
	var err error
	ro.Visit(func(key []byte, rv *jsontree.Value) {
		if err != nil {
			return
		}
		k := unsafeString(key)
		lv := lo.Get(k)
		switch {
		case lv == nil:
			lo.Set(k, rv)
		case lv.Type() != jsontree.TypeObject:
			err = fmt.Errorf("cannot merge %q: found (%s) value", k, convGoType(lv))
		case rv.Type() != jsontree.TypeObject:
			err = fmt.Errorf("cannot merge %q: found (%s) value", k, convGoType(rv))
		default:
			if e := djMergeObjects(lv, rv); e != nil {
				err = fmt.Errorf("cannot merge %q: %w", k, e)
			}
		}
	})
	return err
}

package processors

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/logpond/logpond/internal/jsontree"
)

// A path is a field name split at its dots: "http.request.method" walks
// the objects http and request to the key method, as Filebeat's field
// names do (after looking for the rest of the name as one key at each
// object: see spot). Paths are split once, when a chain is compiled.
type path struct {
	// name is the field name as configured, which is its parts joined
	// by dots: the rest of it from any part on is looked up whole (spot).
	name string
	// parts are never empty, but nil in a path made for one walk of a
	// name found in the event (walk splits it as it goes).
	parts []string
	// quoted are the parts as JSON strings (jsontree.Quote), for writing
	// keys without checking them for escapes on every event; nil for
	// paths that are only read.
	quoted []string
}

// quotedPart is parts[i] quoted, or "" when p does not hold it.
func (p path) quotedPart(i int) string {
	if i < len(p.quoted) {
		return p.quoted[i]
	}
	return ""
}

func newPath(name string) (path, error) {
	if name == "" {
		return path{}, errors.New("a field name is empty")
	}
	parts := strings.Split(name, ".")
	for _, p := range parts {
		if p == "" {
			return path{}, fmt.Errorf("field name %q has an empty part", name)
		}
	}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = jsontree.Quote(p)
	}
	return path{name: name, parts: parts, quoted: quoted}, nil
}

func (p path) String() string { return p.name }

// event is one event being processed: its JSON parsed once into a tree
// that processors edit in place, serialized once at the end of the chain.
// It belongs to one Runner and is not safe for concurrent use.
type event struct {
	root  *jsontree.Value // always an object
	arena *jsontree.Arena // new values; reset with the event
	// undo is the memory of the processors' undo logs.
	undo undoLog
	// timed says the processors' time is measured on this event.
	timed bool
	// shard is the Runner's shard of the steps' counters.
	shard int
	// failed says the last processor run failed (for if/then/else).
	failed bool
	// dissected and grokked are reused result slices of dissect and grok.
	dissected []dissectField
	grokked   []grokCapture
	grok      grokScratch
}

// errNotObject says a path runs through a value that is not an object.
// It holds no part of the event: an error may outlive it.
type errNotObject struct {
	at     string        // the prefix of the path that is not an object
	kind   jsontree.Type // what is there
	goType string        // and its type as Filebeat's errors name it
}

func (e *errNotObject) Error() string {
	return fmt.Sprintf("expected an object at %q but it is %s", e.at, typeName(e.kind))
}

func typeName(t jsontree.Type) string {
	switch t {
	case jsontree.TypeObject:
		return "an object"
	case jsontree.TypeArray:
		return "an array"
	case jsontree.TypeString:
		return "a string"
	case jsontree.TypeNumber:
		return "a number"
	case jsontree.TypeTrue, jsontree.TypeFalse:
		return "a boolean"
	default:
		return "null"
	}
}

// A spot is where a field name leads in an event: the object that holds
// the field (or would), and the field's key there. It is found as
// Filebeat's mapstr finds a name: in each object on the way, the rest of
// the name is first looked up whole, as one key, and only when it is not
// there split at its first dot to go one object down. So "log.level"
// names a member "log.level" of the event, as ECS loggers write it flat,
// before the member level of the object log; when both are there, the
// flat one is the field.
type spot struct {
	in     *jsontree.Value // an object; nil: a part on the way is absent
	key    string          // the last part, or a dotted rest found whole
	quoted string          // key as a JSON string, or "" (quoted when written)
}

// value is what the spot holds, or nil.
func (s spot) value() *jsontree.Value {
	if s.in == nil {
		return nil
	}
	o, _ := s.in.Object()
	return o.Get(s.key)
}

// set sets the spot to val (s.in must not be nil).
func (s spot) set(val *jsontree.Value) {
	o, _ := s.in.Object()
	o.SetQuoted(s.key, s.quoted, val)
}

// find sets s to where p leads from the event's root; see walk.
func (e *event) find(s *spot, p *path, create bool, made *spot) error {
	return e.walk(s, e.root, p, create, made)
}

// walk sets s to where the field p names leads from the object obj,
// found as Filebeat's mapstr finds it (see spot), making the missing
// objects on the way when create is set; made, when not nil, is then set
// to the first member walk made (the one to delete to take the write
// back), and left alone when it made none. A path without parts is split
// here, at each dot, as walk goes. Without create, a missing part on the
// way leaves s without an object. A part on the way that is not an
// object is an *errNotObject, as Filebeat's "expected map"; walk changes
// nothing then.
//
// Its results go through pointers, and p is one, because walk runs for
// every field a processor reads or writes: a spot returned by value, or
// a path passed by value, is copied through the stack on the way, which
// costs more than the lookups walk makes.
func (e *event) walk(s *spot, obj *jsontree.Value, p *path, create bool, made *spot) error {
	rest := p.name
	for i := 0; ; i++ {
		var k string
		if p.parts != nil {
			if i == len(p.parts)-1 {
				s.in, s.key, s.quoted = obj, p.parts[i], p.quotedPart(i)
				return nil
			}
			k = p.parts[i]
		} else {
			dot := strings.IndexByte(rest, '.')
			if dot < 0 {
				s.in, s.key, s.quoted = obj, rest, ""
				return nil
			}
			k = rest[:dot]
		}
		o, _ := obj.Object()
		if o.Get(rest) != nil {
			s.in, s.key, s.quoted = obj, rest, ""
			return nil
		}
		next := o.Get(k)
		switch {
		case next == nil && !create:
			s.in = nil
			return nil
		case next == nil:
			next = e.arena.NewObject()
			o.SetNewQuoted(k, p.quotedPart(i), next)
			if made != nil && made.in == nil {
				made.in, made.key, made.quoted = obj, k, ""
			}
		case next.Type() != jsontree.TypeObject:
			s.in = nil
			return &errNotObject{at: p.name[:len(p.name)-len(rest)+len(k)], kind: next.Type(), goType: convGoType(next)}
		}
		obj, rest = next, rest[len(k)+1:]
	}
}

// get returns the value at p, or nil when it is absent (or a part of the
// path on the way is not an object).
func (e *event) get(p *path) *jsontree.Value {
	var s spot
	if e.find(&s, p, false, nil) != nil {
		return nil
	}
	return s.value()
}

// errKeyNotFound is Filebeat's mapstr.ErrKeyNotFound: a field, or a part
// of the way to it, is not there.
var errKeyNotFound = errors.New("key not found")

// lookup returns the value at p as Filebeat's GetValue does: the error
// is errKeyNotFound when a part of p is absent, and "expected map but
// type is T" when p runs through a value that is not an object (which
// ignore_missing does not skip).
func (e *event) lookup(p *path) (*jsontree.Value, error) {
	var s spot
	if err := e.find(&s, p, false, nil); err != nil {
		return nil, mapErr(err)
	}
	if v := s.value(); v != nil {
		return v, nil
	}
	return nil, errKeyNotFound
}

// mapErr words find's error as Filebeat's mapstr does.
func mapErr(err error) error {
	var no *errNotObject
	if errors.As(err, &no) {
		return notMap(no.goType)
	}
	return err
}

// notMap is Filebeat's error for a path through a value of the Go type
// goType (convGoType), not an object.
func notMap(goType string) error { return errors.New("expected map but type is " + goType) }

// peek is get for reading only: objects on the way that nothing has
// split are searched rather than split (jsontree's Peek), so the value
// returned must not be changed. Conditions read this way: most read one
// field of a large object, or of a subtree a processor wrote whole.
//
// The event's top level is split all the same: nearly every chain reads
// or writes it, and its members are then the tree's own.
func (e *event) peek(p *path) *jsontree.Value {
	o, _ := e.root.Object()
	rest := p.name
	if len(p.parts) > 1 {
		if v := o.Get(rest); v != nil {
			return v // a dotted name found whole, as find does
		}
	}
	v := o.Get(p.parts[0])
	for i, k := range p.parts[1:] {
		if v == nil {
			return nil
		}
		rest = rest[len(p.parts[i])+1:]
		if i+2 < len(p.parts) {
			if w := v.Peek(rest); w != nil {
				return w
			}
		}
		v = v.Peek(k)
	}
	return v
}

// putNew sets the value at p unless a value is there already (existed),
// in one walk, creating the objects on the way. undo is the spot to
// delete to take the write back.
func (e *event) putNew(p *path, val *jsontree.Value) (existed bool, undo spot, err error) {
	var s, made spot
	if err := e.find(&s, p, true, &made); err != nil {
		return false, spot{}, err
	}
	o, _ := s.in.Object()
	if made.in == nil && o.Get(s.key) != nil {
		return true, spot{}, nil
	}
	o.SetNewQuoted(s.key, s.quoted, val)
	if made.in != nil {
		return false, made, nil
	}
	return false, s, nil
}

// put sets the value at p as Filebeat's PutValue does: the objects on
// the way are made, and a part that is not an object fails with
// "expected map but type is T", changing nothing. @timestamp is refused
// (errNotTimestamp): Filebeat holds an event's time apart from its
// fields, as a time, and only the timestamp processor sets it
// (putTime). With undo, it records what it changes.
func (e *event) put(p *path, val *jsontree.Value, undo *undoLog) error {
	if writable(p) != nil {
		return errNotTimestamp
	}
	return e.putTime(p, val, undo)
}

// putTime is put without its refusal of @timestamp: for the timestamp
// processor, whose value is a time it parsed and wrote as Filebeat's
// encoder writes one.
func (e *event) putTime(p *path, val *jsontree.Value, undo *undoLog) error {
	var s, made spot
	if err := e.find(&s, p, true, &made); err != nil {
		return mapErr(err)
	}
	undo.set(made, s)
	s.set(val)
	return nil
}

// Filebeat keeps @timestamp and @metadata apart from the other fields,
// and refuses to delete them: an event without @timestamp is refused by
// Elasticsearch's data streams, and @metadata carries what the outputs
// route by. It holds @timestamp as a time, and refuses to put anything
// else there: text written into it by dissect or convert would be a
// date Elasticsearch may not read, where the timestamp processor parses
// it with the layouts it is given.
var (
	errDeleteTimestamp = errors.New(`deleting "@timestamp" key is not supported`)
	errAlterMetadata   = errors.New(`deleting/replacing "@metadata" key is not supported`)
	errNotTimestamp    = errors.New("value is not a timestamp")
)

// errTimestampTarget refuses, when the configuration loads, a setting
// that names @timestamp as the place a processor writes: Filebeat fails
// or ignores such a write on every event (errNotTimestamp).
var errTimestampTarget = errors.New("@timestamp is the event's time, which only the timestamp processor sets (Filebeat refuses or ignores other writes of it): write the text to another field and parse it with a timestamp processor")

// newTarget is newPath for a field a processor is set to write: it
// refuses what writable refuses.
func newTarget(name string) (path, error) {
	p, err := newPath(name)
	if err == nil {
		err = writable(&p)
	}
	return p, err
}

// writable says whether a processor may be set to write p: not
// @timestamp (errTimestampTarget).
func writable(p *path) error {
	if p.name == "@timestamp" {
		return errTimestampTarget
	}
	return nil
}

// deletable says whether p may be deleted: not @timestamp nor @metadata
// whole, whose deletion Filebeat refuses with these errors.
func deletable(p *path) error {
	switch p.name {
	case "@timestamp":
		return errDeleteTimestamp
	case "@metadata":
		return errAlterMetadata
	}
	return nil
}

// delete removes the value at p as Filebeat's Delete does: the error is
// errKeyNotFound when it is absent, "expected map but type is T" when p
// runs through a value that is not an object, and deletable's for
// @timestamp and @metadata. With undo, it records the member removed,
// with its place and spelling, for revert.
func (e *event) delete(p *path, undo *undoLog) error {
	if err := deletable(p); err != nil {
		return err
	}
	var s spot
	if err := e.find(&s, p, false, nil); err != nil {
		return mapErr(err)
	}
	if s.in == nil {
		return errKeyNotFound
	}
	if undo == nil {
		// The object holding the field is not split for it (jsontree's
		// Delete cuts the member out of its text): drop_fields on a few
		// members of large objects (host, agent) is the common case.
		// find splits only the objects it goes through.
		if !s.in.Delete(s.key) {
			return errKeyNotFound
		}
		return nil
	}
	o, _ := s.in.Object()
	m, ok := o.Take(s.key)
	if !ok {
		return errKeyNotFound
	}
	undo.took(s, m)
	return nil
}

// str returns the value at p when it is a string, with ok false when it
// is absent or not a string.
func (e *event) str(p *path) (s string, found, ok bool) {
	v := e.get(p)
	if v == nil {
		return "", false, false
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", true, false
	}
	return unsafeString(b), true, true
}

// putString sets p to the string s.
func (e *event) putString(p *path, s string) error {
	return e.put(p, e.arena.NewString(s), nil)
}

// appendStrings adds vals to the array at p (made when p is absent),
// leaving out the strings it already holds when dedup is set. A value at
// p that is not an array is an error, and stays.
func (e *event) appendStrings(p *path, vals []string, dedup bool) error {
	var at spot
	if err := e.find(&at, p, true, nil); err != nil {
		return err
	}
	cur := at.value()
	var arr *jsontree.Value
	switch {
	case cur == nil:
		arr = e.arena.NewArray()
		at.set(arr)
	case cur.Type() == jsontree.TypeArray:
		arr = cur
	default:
		// Filebeat's AddTagsWithKey refuses a value that is not a list.
		return fmt.Errorf("expected string array by type is %s", typeName(cur.Type()))
	}
	items, _ := arr.Array()
	n := len(items)
next:
	for _, s := range vals {
		if dedup {
			items, _ = arr.Array()
			for _, it := range items {
				if b, err := it.StringBytes(); err == nil && string(b) == s {
					continue next
				}
			}
		}
		arr.SetArrayItem(n, e.arena.NewString(s))
		n++
	}
	return nil
}

// flag appends a value to log.flags, as Filebeat marks events a
// processor could not process (dissect_parsing_error) or changed
// (truncated); like Filebeat's, it does not deduplicate.
func (e *event) flag(f string) {
	// log.flags under a log that is not an object cannot be set; the
	// processor's failure is still counted.
	_ = e.appendStrings(&logFlags, []string{f}, false)
}

// setErrorMessage sets error.message, as Filebeat's rename, copy_fields
// and replace do when they fail (the last one wins).
func (e *event) setErrorMessage(msg string) {
	_ = e.putString(&errorMessage, msg)
}

var (
	logFlags     = path{name: "log.flags", parts: []string{"log", "flags"}}
	errorMessage = path{name: "error.message", parts: []string{"error", "message"}}
	tagsPath     = path{name: "tags", parts: []string{"tags"}}
)

// static is a configured value (add_fields' fields) compiled once: each
// event builds its own copy from it (processors after may edit it), with
// no key to split or sort.
type static struct {
	t       jsontree.Type
	text    string // a string's text, or a number's JSON text
	members []staticMember
	items   []*static
}

type staticMember struct {
	key    string
	quoted string // key as a JSON string
	val    *static
}

// compileStatic compiles a configured value (from TOML: string, int64,
// float64, bool, lists and tables of them); a dotted key in a table
// nests, as in Filebeat's fields.
func compileStatic(v any) *static {
	switch x := v.(type) {
	case nil:
		return &static{t: jsontree.TypeNull}
	case string:
		return &static{t: jsontree.TypeString, text: x}
	case bool:
		if x {
			return &static{t: jsontree.TypeTrue}
		}
		return &static{t: jsontree.TypeFalse}
	case int64:
		return &static{t: jsontree.TypeNumber, text: strconv.FormatInt(x, 10)}
	case int:
		return &static{t: jsontree.TypeNumber, text: strconv.Itoa(x)}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return &static{t: jsontree.TypeNull}
		}
		return &static{t: jsontree.TypeNumber, text: strconv.FormatFloat(x, 'g', -1, 64)}
	case []any:
		st := &static{t: jsontree.TypeArray}
		for _, it := range x {
			st.items = append(st.items, compileStatic(it))
		}
		return st
	case []map[string]any:
		st := &static{t: jsontree.TypeArray}
		for _, it := range x {
			st.items = append(st.items, compileStatic(it))
		}
		return st
	case map[string]any:
		st := &static{t: jsontree.TypeObject}
		for _, k := range sortedKeys(x) {
			st.put(strings.Split(k, "."), compileStatic(x[k]))
		}
		return st
	default:
		return &static{t: jsontree.TypeString, text: fmt.Sprint(x)}
	}
}

// put sets the member at parts inside st, nesting objects on the way.
func (st *static) put(parts []string, v *static) {
	for i := range st.members {
		m := &st.members[i]
		if m.key != parts[0] {
			continue
		}
		if len(parts) == 1 {
			m.val = v
			return
		}
		if m.val.t != jsontree.TypeObject {
			m.val = &static{t: jsontree.TypeObject}
		}
		m.val.put(parts[1:], v)
		return
	}
	if len(parts) == 1 {
		st.members = append(st.members, staticMember{key: parts[0], quoted: jsontree.Quote(parts[0]), val: v})
		return
	}
	child := &static{t: jsontree.TypeObject}
	child.put(parts[1:], v)
	st.members = append(st.members, staticMember{key: parts[0], quoted: jsontree.Quote(parts[0]), val: child})
}

// member returns the value of st's member key (st an object), or nil.
func (st *static) member(key string) *static {
	for _, m := range st.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// build makes the event's own copy of st.
func (st *static) build(a *jsontree.Arena) *jsontree.Value {
	switch st.t {
	case jsontree.TypeString:
		return a.NewString(st.text)
	case jsontree.TypeNumber:
		return a.NewNumberString(st.text)
	case jsontree.TypeTrue:
		return a.NewTrue()
	case jsontree.TypeFalse:
		return a.NewFalse()
	case jsontree.TypeArray:
		arr := a.NewArray()
		for i, it := range st.items {
			arr.SetArrayItem(i, it.build(a))
		}
		return arr
	case jsontree.TypeObject:
		obj := a.NewObject()
		o, _ := obj.Object()
		for _, m := range st.members {
			o.SetQuoted(m.key, m.quoted, m.val.build(a))
		}
		return obj
	}
	return a.NewNull()
}

// putInto sets the dotted key k inside obj, nesting at its dots.
func (e *event) putInto(obj *jsontree.Value, k string, v *jsontree.Value) {
	parts := strings.Split(k, ".")
	for _, p := range parts[:len(parts)-1] {
		next := obj.Get(p)
		if next == nil || next.Type() != jsontree.TypeObject {
			next = e.arena.NewObject()
			obj.Set(p, next)
		}
		obj = next
	}
	obj.Set(parts[len(parts)-1], v)
}

// merge copies the members of src into dst (both objects), recursing
// into objects both hold; with overwrite unset, dst's own values win.
func merge(dst, src *jsontree.Value, overwrite bool) {
	so, _ := src.Object()
	do, _ := dst.Object()
	so.Visit(func(key []byte, v *jsontree.Value) {
		k := string(key)
		cur := do.Get(k)
		switch {
		case cur == nil:
			do.Set(k, v)
		case cur.Type() == jsontree.TypeObject && v.Type() == jsontree.TypeObject:
			merge(cur, v, overwrite)
		case overwrite:
			do.Set(k, v)
		}
	})
}

// clone copies v into the event's arena, so that a value moved or copied
// in the tree does not share its members with the original.
func (e *event) clone(v *jsontree.Value) *jsontree.Value {
	switch v.Type() {
	case jsontree.TypeObject:
		obj := e.arena.NewObject()
		o, _ := v.Object()
		o.Visit(func(key []byte, m *jsontree.Value) {
			obj.Set(string(key), e.clone(m))
		})
		return obj
	case jsontree.TypeArray:
		arr := e.arena.NewArray()
		items, _ := v.Array()
		for i, it := range items {
			arr.SetArrayItem(i, e.clone(it))
		}
		return arr
	default:
		// Scalars are never edited in place: sharing them is safe.
		return v
	}
}

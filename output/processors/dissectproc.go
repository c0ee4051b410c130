package processors

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/logpond/logpond/internal/jsontree"
)

func init() { register("dissect", buildDissect) }

// dissectProcessor is Filebeat's dissect: it splits a string field with a
// tokenizer (dissect.go) into fields under target_prefix.
type dissectProcessor struct {
	pattern       *dissectPattern
	field         path
	prefix        string // target_prefix plus a dot, or empty for the root
	ignoreFailure bool
	overwrite     bool
	trim          func(string) string // nil: values kept as cut
	// paths are the target paths of the keys known when compiling, so
	// that a run splits no field name.
	paths map[string]path
	// keyPaths are the same in the order of the keys in the tokenizer,
	// which is the order of dissect's results: looked up by position.
	keyPaths []keyPath
	// tree is keyPaths as a tree of objects, for writing all the fields
	// of an event in one descent (nil when some key is a prefix of
	// another, or with overwrite_keys: then fields are written one by
	// one).
	tree []*writeNode
}

// writeNode is a member dissect writes: a field (field ≥ 0, its index in
// keyPaths) or an object holding some (kids).
type writeNode struct {
	key    string
	quoted string // key as a JSON string
	name   string // the path from the root to this member, for messages
	field  int
	kids   []*writeNode
	// whole are, for an object, the names of the fields under it from
	// its key on ("b.c" for a field a.b.c under a): before going into
	// the object, each is looked up whole, as Filebeat finds a name
	// (see spot).
	whole []wholeName
}

// wholeName is a field's dotted name from some object on, and its full
// name for messages.
type wholeName struct{ rest, name string }

// writeTree builds the tree of keyPaths, or returns nil when a key is a
// prefix of another (or repeats), which the tree cannot hold.
func writeTree(kps []keyPath) []*writeNode {
	var roots []*writeNode
	for i, kp := range kps {
		level := &roots
		off := 0 // where part d starts in the name
		for d, part := range kp.p.parts {
			leaf := d == len(kp.p.parts)-1
			var n *writeNode
			for _, c := range *level {
				if c.key == part {
					n = c
				}
			}
			switch {
			case n == nil:
				n = &writeNode{key: part, quoted: kp.p.quotedPart(d), field: -1, name: kp.p.name[:off+len(part)]}
				*level = append(*level, n)
			case leaf || n.field >= 0:
				return nil
			}
			if leaf {
				n.field = i
			} else {
				n.whole = append(n.whole, wholeName{rest: kp.p.name[off:], name: kp.p.name})
			}
			off += len(part) + 1
			level = &n.kids
		}
	}
	return roots
}

type keyPath struct {
	key string
	p   path
}

func buildDissect(o *options) (processor, error) {
	p := &dissectProcessor{
		ignoreFailure: o.boolean("ignore_failure", false),
		overwrite:     o.boolean("overwrite_keys", false),
	}
	tokenizer := o.required("tokenizer")
	field, err := newPath(o.str("field", "message"))
	if err != nil {
		o.fail("field", "%v", err)
	}
	p.field = field
	if prefix := o.str("target_prefix", "dissect"); prefix != "" {
		p.prefix = prefix + "."
	}
	trimChars := o.str("trim_chars", " ")
	switch mode := o.str("trim_values", "none"); mode {
	case "none":
	case "left":
		p.trim = func(s string) string { return strings.TrimLeft(s, trimChars) }
	case "right":
		p.trim = func(s string) string { return strings.TrimRight(s, trimChars) }
	case "all", "both": // both: Filebeat's other name for all
		p.trim = func(s string) string { return strings.Trim(s, trimChars) }
	default:
		o.fail("trim_values", "unknown mode %q; known: none, left, right, all", mode)
	}
	if o.err != nil {
		return nil, o.err
	}
	p.pattern, err = compileDissect(tokenizer)
	if err != nil {
		o.fail("tokenizer", "%v", err)
		return nil, o.err
	}
	p.paths = map[string]path{}
	for _, k := range p.pattern.keys() {
		tp, err := newTarget(p.prefix + k)
		if err != nil {
			o.fail("tokenizer", "key %q: %w", k, err)
			return nil, o.err
		}
		p.paths[k] = tp
		p.keyPaths = append(p.keyPaths, keyPath{key: k, p: tp})
	}
	if !p.overwrite {
		p.tree = writeTree(p.keyPaths)
	}
	return p, nil
}

// run cuts the field. A string that does not match marks the event with
// log.flags: dissect_parsing_error and fails (unless ignore_failure); a
// key already in the event fails unless overwrite_keys, with the event
// left as it was: Filebeat's behaviour.
func (p *dissectProcessor) run(e *event) (bool, error) {
	s, found, ok := e.str(&p.field)
	if !found {
		return false, fmt.Errorf("could not fetch value for key: %s, Error: %w", p.field.name, errKeyNotFound)
	}
	if !ok {
		return false, fmt.Errorf("field is not a string, value: `%s`, field: `%s`", e.get(&p.field).String(), p.field.name)
	}
	fields, err := p.pattern.dissect(s, e.dissected[:0])
	e.dissected = fields[:0]
	if err == nil && p.trim != nil {
		for i := range fields {
			fields[i].Value = p.trim(fields[i].Value)
		}
	}
	if err != nil {
		// Filebeat flags every tokenizing failure; ignore_failure only
		// stops it from reporting one.
		e.flag("dissect_parsing_error")
		if p.ignoreFailure {
			return false, nil
		}
		return false, err
	}
	// Each field is written unless its key is taken, or its path runs
	// through a value that is not an object (and overwrite_keys is off):
	// then what was written is taken back, and the processor fails with
	// the event as it was, as in Filebeat. With overwrite_keys, such a
	// path's field is left out, as there.
	undo := e.undoLog()
	defer func() { e.keepUndo(undo) }()
	if p.tree != nil && p.inOrder(fields) {
		// One descent for all the fields: each object on the way is
		// searched once, and nothing is searched (or recorded for
		// taking back) inside an object this write created.
		if err := p.writeTree(e, e.root, p.tree, fields, &undo); err != nil {
			undo.revert()
			return false, err
		}
		return false, nil
	}
	for i, f := range fields {
		var tp path
		if i < len(p.keyPaths) && p.keyPaths[i].key == f.Key {
			tp = p.keyPaths[i].p // the usual case: keys in tokenizer order
		} else if kp, ok := p.paths[f.Key]; ok {
			tp = kp
		} else if tp, err = newPath(p.prefix + f.Key); err != nil {
			// An indirect key, known only now.
			undo.revert()
			return false, fmt.Errorf("dissect: key %q: %w", f.Key, err)
		}
		if p.overwrite {
			// Filebeat writes over what is there, and leaves out a
			// field whose path runs through a value that is not an
			// object, without failing.
			_ = e.put(&tp, dissectValue(e, f), &undo)
			continue
		}
		existed, created, err := e.putNew(&tp, dissectValue(e, f))
		switch {
		case existed:
			undo.revert()
			return false, fmt.Errorf("cannot override existing key with `%s`", tp.name)
		case err != nil:
			undo.revert()
			return false, fmt.Errorf("cannot override existing key with `%s`: %w", tp.name, mapErr(err))
		}
		undo.add(created, nil)
	}
	return false, nil
}

// inOrder reports whether fields are keyPaths' keys, in order: no
// indirect key, which the tree does not hold.
func (p *dissectProcessor) inOrder(fields []dissectField) bool {
	if len(fields) != len(p.keyPaths) {
		return false
	}
	for i := range fields {
		if fields[i].Key != p.keyPaths[i].key {
			return false
		}
	}
	return true
}

// writeTree writes the fields of nodes into obj, an object of the event:
// into the objects it holds already, searched once each, and as the JSON
// text of each object it did not hold, written whole (nothing to search
// there, nor to record for taking back).
func (p *dissectProcessor) writeTree(e *event, obj *jsontree.Value, nodes []*writeNode, fields []dissectField, undo *undoLog) error {
	o, _ := obj.Object()
	for _, n := range nodes {
		for _, w := range n.whole {
			if o.Get(w.rest) != nil {
				return fmt.Errorf("cannot override existing key with `%s`", w.name)
			}
		}
		cur := o.Get(n.key)
		switch {
		case n.field >= 0 && cur != nil:
			return fmt.Errorf("cannot override existing key with `%s`", n.name)
		case n.field >= 0:
			o.SetNewQuoted(n.key, n.quoted, dissectValue(e, fields[n.field]))
		case cur == nil:
			buf := e.arena.Text()
			start := len(buf)
			buf = appendWriteTree(buf, n.kids, fields)
			o.SetNewQuoted(n.key, n.quoted, e.arena.NewText(buf, start))
		case cur.Type() != jsontree.TypeObject:
			// Filebeat names a field it could not write.
			return fmt.Errorf("cannot override existing key with `%s`: %w", n.whole[0].name, notMap(convGoType(cur)))
		default:
			if err := p.writeTree(e, cur, n.kids, fields, undo); err != nil {
				return err
			}
			continue
		}
		undo.add(spot{in: obj, key: n.key}, nil)
	}
	return nil
}

// appendWriteTree appends the JSON text of an object holding the fields
// of nodes.
func appendWriteTree(buf []byte, nodes []*writeNode, fields []dissectField) []byte {
	buf = append(buf, '{')
	for i, n := range nodes {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, n.quoted...)
		buf = append(buf, ':')
		if n.field >= 0 {
			buf = appendDissectValue(buf, fields[n.field])
		} else {
			buf = appendWriteTree(buf, n.kids, fields)
		}
	}
	return append(buf, '}')
}

// dissectValue is a field's value in the event: converted by its |type
// suffix, or, when that fails, the string as cut, as Filebeat keeps it.
func dissectValue(e *event, f dissectField) *jsontree.Value {
	buf := e.arena.Text()
	start := len(buf)
	buf = appendDissectValue(buf, f)
	return e.arena.NewText(buf, start)
}

// appendDissectValue appends the JSON text of dissectValue's value.
func appendDissectValue(buf []byte, f dissectField) []byte {
	if f.Conv == dissectConvNone {
		return jsontree.AppendString(buf, f.Value)
	}
	c, err := f.converted()
	if err != nil {
		return jsontree.AppendString(buf, f.Value)
	}
	switch c.kind {
	case convertedInt:
		return strconv.AppendInt(buf, c.i, 10)
	case convertedFloat:
		if math.IsNaN(c.f) || math.IsInf(c.f, 0) {
			return append(buf, "null"...) // JSON holds no NaN nor infinity
		}
		return strconv.AppendFloat(buf, c.f, 'g', -1, 64)
	case convertedBool:
		return strconv.AppendBool(buf, c.b)
	}
	return jsontree.AppendString(buf, f.Value)
}

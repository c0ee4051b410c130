package processors

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/logpond/logpond/internal/jsontree"
)

// convert is Filebeat's processor of that name: it converts fields to
// another type (integer, long, float, double, string, boolean, ip), in
// place or into another field (copied or renamed), with Filebeat's
// options, defaults, conversion rules and error texts
// (libbeat/processors/convert).
//
// The helpers at the end of this file (convGoType, convRender...) are
// shared with other processors: they name types and print values as
// Filebeat's errors do.

func init() { register("convert", convBuild) }

// convType is a target type of convert; convUnset copies or renames the
// field without converting it.
type convType uint8

const (
	convUnset convType = iota
	convInteger
	convLong
	convFloat
	convDouble
	convString
	convBoolean
	convIP
)

// convTypeNames are the names of the types, as Filebeat spells them in
// its configuration and in its errors ("[unset]" when only `to` is set).
var convTypeNames = [...]string{"[unset]", "integer", "long", "float", "double", "string", "boolean", "ip"}

func (t convType) String() string { return convTypeNames[t] }

// convField is one element of fields: the value at from, converted to
// typ, goes to to (or back to from when hasTo is unset).
type convField struct {
	from, to path
	hasTo    bool
	typ      convType
}

// convProcessor is a compiled convert. Immutable once built, safe for
// concurrent use.
type convProcessor struct {
	fields        []convField
	tag           string
	ignoreMissing bool
	failOnError   bool
	rename        bool // mode = "rename"; "copy" otherwise
}

// convBuild reads convert's options: fields (required: a list of {from,
// to, type}, each with a `to` or a `type`), ignore_missing (false),
// fail_on_error (true), tag, mode (copy or rename, default copy). Type
// and mode names are case-insensitive, as in Filebeat.
func convBuild(o *options) (processor, error) {
	p := &convProcessor{}
	list := o.tables("fields")
	if o.err == nil && len(list) == 0 {
		o.fail("fields", "missing (required): a list of {from, to, type}")
	}
	for i, m := range list {
		at := fmt.Sprintf("fields[%d]", i)
		fo, err := newOptions(o.key(at), m)
		if err != nil {
			return nil, err
		}
		var f convField
		from := fo.required("from")
		to := fo.str("to", "")
		typ := fo.str("type", "")
		if err := fo.done("from", "to", "type"); err != nil {
			return nil, err
		}
		if f.from, err = newPath(from); err != nil {
			return nil, &ConfigError{At: fo.key("from"), Err: err}
		}
		if to != "" {
			if f.to, err = newTarget(to); err != nil {
				return nil, &ConfigError{At: fo.key("to"), Err: err}
			}
			f.hasTo = true
		}
		if err := writable(&f.from); !f.hasTo && err != nil {
			return nil, &ConfigError{At: fo.key("from"), Err: fmt.Errorf("converted in place: %w", err)}
		}
		if typ != "" {
			f.typ = convParseType(typ)
			if f.typ == convUnset {
				return nil, &ConfigError{At: fo.key("type"), Err: fmt.Errorf(
					"unknown type %q; known: boolean, double, float, integer, ip, long, string", typ)}
			}
		}
		if !f.hasTo && f.typ == convUnset {
			return nil, &ConfigError{At: o.key(at), Err: errors.New("each field must have a 'to' or a 'type'")}
		}
		p.fields = append(p.fields, f)
	}
	p.tag = o.str("tag", "")
	p.ignoreMissing = o.boolean("ignore_missing", false)
	p.failOnError = o.boolean("fail_on_error", true)
	switch mode := o.str("mode", "copy"); strings.ToLower(mode) {
	case "copy":
	case "rename":
		p.rename = true
	default:
		o.fail("mode", "unknown mode %q; known: copy, rename", mode)
	}
	return p, o.err
}

// convParseType returns the type named s (any case), convUnset for
// none.
func convParseType(s string) convType {
	s = strings.ToLower(s)
	for t, n := range convTypeNames {
		if t != int(convUnset) && n == s {
			return convType(t)
		}
	}
	return convUnset
}

// run converts every field first, then writes the results, as Filebeat
// does. With fail_on_error (the default) the first failure returns its
// error and leaves the event as it was: a conversion fails before
// anything is written, and a write that fails (a `to` that runs through
// a value that is not an object) undoes the writes before it. Without
// fail_on_error, a field that is missing or does not convert is skipped
// and the others are written; a write that fails is skipped, and in
// rename mode its `from` is removed all the same, as Filebeat does.
func (p *convProcessor) run(e *event) (bool, error) {
	var small [8]*jsontree.Value
	vals := small[:0]
	if len(p.fields) > len(small) {
		vals = make([]*jsontree.Value, 0, len(p.fields))
	}
	for _, f := range p.fields {
		v, err := p.convertField(e, f)
		if err != nil {
			if p.failOnError {
				return false, err
			}
			v = nil
		}
		vals = append(vals, v) // nil: skipped
	}
	// Filebeat clones the event when more than one field may have to be
	// undone; a single write that fails has changed nothing.
	u := e.undoLog()
	defer func() { e.keepUndo(u) }()
	var undo *undoLog
	if p.failOnError && len(p.fields) > 1 {
		undo = &u
	}
	for i, f := range p.fields {
		v := vals[i]
		if v == nil {
			continue
		}
		if !f.hasTo {
			// In place: Filebeat ignores a failure (an earlier field made
			// a part of from a value that is not an object).
			_ = e.put(&f.from, v, undo)
			continue
		}
		// Filebeat's copy mode clones the value; its rename mode moves
		// it, which lets two fields read before the writes put an
		// object inside itself (from b to a, then from b to a.c): a
		// cycle, which serializing could not end. A copy in both modes
		// writes the same event without one. Only objects and arrays
		// are copied, and convert seldom writes those.
		v = e.clone(v)
		if err := e.put(&f.to, v, undo); err != nil && p.failOnError {
			if undo != nil {
				undo.revert()
			}
			return false, p.fail(f, err, "failed to put field ["+f.to.name+"]")
		}
		if p.rename {
			// Filebeat ignores Delete's error here: a from that is
			// gone, or @timestamp and @metadata, which stay.
			_ = e.delete(&f.from, undo)
		}
	}
	return false, nil
}

// convertField reads f.from and converts it: nil, nil when it is missing
// and ignore_missing is set.
func (p *convProcessor) convertField(e *event, f convField) (*jsontree.Value, error) {
	v, err := e.lookup(&f.from)
	if err != nil {
		if p.ignoreMissing && err == errKeyNotFound {
			return nil, nil
		}
		return nil, p.fail(f, err, "field ["+f.from.name+"] is missing")
	}
	if f.typ == convUnset {
		return v, nil
	}
	nv, err := convTransform(e, f.typ, v)
	if err != nil {
		return nil, p.fail(f, err, "unable to convert value ["+convRender(v)+"]")
	}
	return nv, nil
}

// convError is Filebeat's convert error: "failed in processor.convert
// [with instance_id=TAG]: conversion of field [FROM] to type [TYPE]
// [with target field [TO]] failed: MESSAGE: CAUSE".
type convError struct {
	msg   string
	cause error
}

func (e *convError) Error() string { return e.msg + ": " + e.cause.Error() }
func (e *convError) Unwrap() error { return e.cause }

// fail returns Filebeat's error for field f: message, then cause.
func (p *convProcessor) fail(f convField, cause error, message string) error {
	var b strings.Builder
	b.WriteString("failed in processor.convert")
	if p.tag != "" {
		b.WriteString(" with instance_id=")
		b.WriteString(p.tag)
	}
	b.WriteString(": conversion of field [")
	b.WriteString(f.from.name)
	b.WriteString("] to type [")
	b.WriteString(f.typ.String())
	b.WriteString("]")
	if f.hasTo {
		b.WriteString(" with target field [")
		b.WriteString(f.to.name)
		b.WriteString("]")
	}
	b.WriteString(" failed: ")
	b.WriteString(message)
	return &convError{msg: b.String(), cause: cause}
}

// convTransform converts v to typ with Filebeat's rules:
//   - integer, long: a string in base 10 (a leading + or - allowed, leading
//     zeros are decimal) or, with a 0x/0X prefix after the sign, base 16;
//     a number is truncated toward zero (integer wraps to 32 bits);
//   - float, double: strconv.ParseFloat of a string (32 or 64 bits), a
//     number as is; written as Go writes it ('g', shortest), float with 32
//     bits of precision;
//   - string: a number or boolean as Go's %v prints it; null fails;
//   - boolean: strconv.ParseBool (1 t T TRUE true True 0 f F FALSE false
//     False) or a boolean; numbers fail;
//   - ip: a string net.ParseIP accepts, unchanged.
//
// JSON cannot hold NaN or infinity, which Filebeat would fail to encode:
// a float or double conversion giving one fails here instead.
func convTransform(e *event, typ convType, v *jsontree.Value) (*jsontree.Value, error) {
	kind := v.Type()
	var (
		s     string // a string's content
		isInt bool
		i     int64
		f     float64
	)
	switch kind {
	case jsontree.TypeString:
		s = v.Str()
	case jsontree.TypeNumber:
		var k string
		switch k, i, f = convNumber(v); k {
		case "int64":
			isInt = true
		case "string": // a number Filebeat's decoder keeps as a string
			kind, s = jsontree.TypeString, string(v.MarshalTo(nil))
		}
	}
	switch typ {
	case convString:
		switch kind {
		case jsontree.TypeNull:
			return nil, errors.New("invalid conversion of [null] to string")
		case jsontree.TypeString:
			if v.Type() == jsontree.TypeString {
				return v, nil
			}
			return e.arena.NewString(s), nil
		case jsontree.TypeNumber:
			var buf [32]byte
			if isInt {
				return e.arena.NewStringBytes(strconv.AppendInt(buf[:0], i, 10)), nil
			}
			return e.arena.NewStringBytes(strconv.AppendFloat(buf[:0], f, 'g', -1, 64)), nil
		default:
			return e.arena.NewString(convRender(v)), nil
		}
	case convLong, convInteger:
		bits := 64
		if typ == convInteger {
			bits = 32
		}
		var n int64
		switch kind {
		case jsontree.TypeString:
			var err error
			if n, err = convStrToInt(s, bits); err != nil {
				return nil, err
			}
		case jsontree.TypeNumber:
			switch {
			case isInt:
				n = i
			case bits == 32:
				n = int64(int32(f))
			default:
				n = int64(f)
			}
		default:
			return nil, fmt.Errorf("invalid conversion of [%s] to %s", convGoType(v), typ)
		}
		if bits == 32 {
			n = int64(int32(n))
		}
		return e.arena.NewInt64(n), nil
	case convFloat, convDouble:
		bits := 64
		if typ == convFloat {
			bits = 32
		}
		switch kind {
		case jsontree.TypeString:
			var err error
			if f, err = strconv.ParseFloat(s, bits); err != nil {
				return nil, err
			}
		case jsontree.TypeNumber:
			switch {
			case isInt && bits == 32:
				f = float64(float32(i))
			case isInt:
				f = float64(i)
			case bits == 32:
				f = float64(float32(f))
			}
		default:
			return nil, fmt.Errorf("invalid conversion of [%s] to float", convGoType(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("the value is NaN or infinite, which JSON cannot hold")
		}
		if bits == 64 {
			return e.arena.NewNumberFloat64(f), nil // 'g', shortest
		}
		return e.arena.NewNumberString(strconv.FormatFloat(f, 'g', -1, 32)), nil
	case convBoolean:
		switch kind {
		case jsontree.TypeString:
			b, err := strconv.ParseBool(s)
			if err != nil {
				return nil, err
			}
			if b {
				return e.arena.NewTrue(), nil
			}
			return e.arena.NewFalse(), nil
		case jsontree.TypeTrue, jsontree.TypeFalse:
			return v, nil
		default:
			return nil, fmt.Errorf("invalid conversion of [%s] to boolean", convGoType(v))
		}
	case convIP:
		if kind != jsontree.TypeString {
			return nil, fmt.Errorf("invalid conversion of [%s] to IP", convGoType(v))
		}
		if net.ParseIP(s) == nil {
			return nil, errors.New("value is not a valid IP address")
		}
		if v.Type() != jsontree.TypeString {
			return e.arena.NewString(s), nil
		}
		return v, nil
	}
	return v, nil
}

// convStrToInt parses s in base 10, or in base 16 after a 0x or 0X
// prefix (itself after an optional sign), as Filebeat's strToInt.
func convStrToInt(s string, bits int) (int64, error) {
	base := 10
	if len(s) >= 3 {
		a, b := s[0], s[1]
		if a == '+' || a == '-' {
			a, b = b, s[2]
		}
		if a == '0' && (b == 'x' || b == 'X') {
			base = 0 // ParseInt takes the prefix only with base 0
		}
	}
	return strconv.ParseInt(s, base, bits)
}

// --- reading and writing the event as Filebeat does ---

// convNumber reads a number as Filebeat's JSON decoder does
// (jsontransform.TransformNumbers): an int64 when it is one, else a
// float64, else (out of range) Filebeat keeps its text as a string.
func convNumber(v *jsontree.Value) (kind string, i int64, f float64) {
	if n, err := v.Int64(); err == nil {
		return "int64", n, 0
	}
	if x, err := v.Float64(); err == nil {
		return "float64", 0, x
	}
	return "string", 0, 0
}

// convGoType names v's type as Filebeat's errors do (Go's %T of the
// value Filebeat would hold).
func convGoType(v *jsontree.Value) string {
	switch v.Type() {
	case jsontree.TypeObject:
		return "map[string]interface {}"
	case jsontree.TypeArray:
		return "[]interface {}"
	case jsontree.TypeString:
		return "string"
	case jsontree.TypeNumber:
		k, _, _ := convNumber(v)
		return k
	case jsontree.TypeTrue, jsontree.TypeFalse:
		return "bool"
	default:
		return "<nil>"
	}
}

// convRender writes v as Filebeat's errors print a value (Go's %v): a
// string's content, a number as Go prints an int64 or a float64, <nil>
// for null; an object or an array as its JSON text.
func convRender(v *jsontree.Value) string {
	switch v.Type() {
	case jsontree.TypeString:
		return v.Str()
	case jsontree.TypeNumber:
		switch k, i, f := convNumber(v); k {
		case "int64":
			return strconv.FormatInt(i, 10)
		case "float64":
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case jsontree.TypeNull:
		return "<nil>"
	}
	return v.String()
}

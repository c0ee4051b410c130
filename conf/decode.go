package conf

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// decoder overlays a TOML document, already parsed into maps, on a Config
// one key at a time, so that every key with a wrong type, a bad unit or a
// bad value is reported, not only the first: a whole-document decode stops
// at the first such key.
type decoder struct {
	env      func(string) (string, bool) // looks up ${VAR}
	problems []*KeyError                 // without file or line
	defined  map[string]bool             // dotted keys set by the document
	subst    []substitution              // ${VAR} references resolved, in key order
	failed   []string                    // dotted keys that did not decode
	keys     []toml.Key                  // every key of the document, in file order
}

// decodeTable overlays table on the struct v (a Config or one of its
// sections); path is the table's key ("" at the top level).
func (d *decoder) decodeTable(v reflect.Value, path toml.Key, table map[string]any) {
	if out, ok := v.Addr().Interface().(*Output); ok {
		d.decodeOutput(out, path, table)
		return
	}
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		f, ok := fieldByTag(v.Type(), name)
		if !ok {
			d.unknown(key)
			continue
		}
		val := table[name]
		fv := v.FieldByIndex(f.Index)
		if st, ok := sectionStruct(f.Type); ok {
			sub, ok := val.(map[string]any)
			if !ok {
				d.bad(key, "is a section: write it as a table, [%s], not as %s", key, aTOMLType(val))
				continue
			}
			if fv.Kind() == reflect.Pointer {
				// A table a file may leave out altogether: setting it
				// is a choice (partition.random), with defaults of its
				// own for the keys it leaves out.
				if fv.IsNil() {
					fv.Set(newSection(st))
				}
				fv = fv.Elem()
			}
			d.defined[key.String()] = true
			d.decodeTable(fv, key, sub)
			continue
		}
		if err := d.decodeLeaf(fv, key, val); err != nil {
			d.bad(key, "%v", err)
			continue
		}
		d.defined[key.String()] = true
	}
}

// unknown reports key as unknown.
func (d *decoder) unknown(key toml.Key) {
	// For an unknown table, name the first key below it that the file
	// spells out ([inputs.beats] rather than the implicit [inputs]): that
	// is the line to point at.
	for _, k := range d.keys {
		if len(k) >= len(key) && slices.Equal(k[:len(key)], key) {
			key = k
			break
		}
	}
	d.problems = append(d.problems, &KeyError{Key: key.String(), Msg: unknownKeyMessage(key)})
}

// isLeaf reports whether a struct type is a value (decoded from one TOML
// value) rather than a section. Config has no such struct today; Size and
// Duration are integers.
func isLeaf(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[toml.Unmarshaler]())
}

// sectionStruct returns the struct type a field of type t decodes a TOML
// table into, if it is a section: a struct, or a pointer to one (a table
// that is nil until a file sets it, such as partition.hash).
func sectionStruct(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && !isLeaf(t) {
		return t, true
	}
	return nil, false
}

// newSection returns a pointer to a new section of type t with its
// defaults: those its setDefaults method sets, zero values otherwise.
func newSection(t reflect.Type) reflect.Value {
	v := reflect.New(t)
	if d, ok := v.Interface().(interface{ setDefaults() }); ok {
		d.setDefaults()
	}
	return v
}

func (d *decoder) bad(key toml.Key, format string, args ...any) {
	d.failed = append(d.failed, key.String())
	d.problems = append(d.problems, &KeyError{Key: key.String(), Msg: fmt.Sprintf(format, args...)})
}

// decodeLeaf sets one key's field from its TOML value. Strings go through
// ${VAR} substitution first (also those read as sizes and durations).
func (d *decoder) decodeLeaf(fv reflect.Value, key toml.Key, val any) error {
	if s, ok := val.(string); ok {
		r, err := d.substitute(key.String(), s)
		if err != nil {
			return err
		}
		val = r
	}
	if u, ok := fv.Addr().Interface().(toml.Unmarshaler); ok {
		return u.UnmarshalTOML(val)
	}
	switch fv.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("is %s: want a string (in double quotes)", aTOMLType(val))
		}
		fv.SetString(s)
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			return fmt.Errorf("is %s: want true or false (without quotes)", aTOMLType(val))
		}
		fv.SetBool(b)
	case reflect.Int:
		n, ok := val.(int64)
		if !ok {
			return fmt.Errorf("is %s: want a whole number (without quotes)", aTOMLType(val))
		}
		if n < math.MinInt || n > math.MaxInt {
			return fmt.Errorf("%d is too large", n)
		}
		fv.SetInt(n)
	case reflect.Slice:
		if fv.Type().Elem().Kind() == reflect.Struct {
			return d.decodeTableList(fv, key, val)
		}
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("conf: no decoder for %s", fv.Type())
		}
		list, ok := val.([]any)
		if !ok {
			return fmt.Errorf("is %s: want a list of strings, like [\"a\", \"b\"]", aTOMLType(val))
		}
		out := make([]string, 0, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("entry %d is %s: want a string (in double quotes)", i+1, aTOMLType(e))
			}
			r, err := d.substitute(key.String(), s)
			if err != nil {
				return fmt.Errorf("entry %d: %w", i+1, err)
			}
			out = append(out, r)
		}
		fv.Set(reflect.ValueOf(out))
	default:
		return fmt.Errorf("conf: no decoder for %s", fv.Type())
	}
	return nil
}

// decodeTableList sets a list of small tables (headers: [{key, value}])
// from an array of tables ([[a.b]]) or a list of inline tables. Its
// entries are values of one key, not sections: each problem is an error
// of the whole key naming the entry, and ${VAR} references are recorded
// under the key.
func (d *decoder) decodeTableList(fv reflect.Value, key toml.Key, val any) error {
	var entries []any
	switch v := val.(type) {
	case []map[string]any:
		for _, e := range v {
			entries = append(entries, e)
		}
	case []any:
		entries = v
	default:
		return fmt.Errorf("is %s: want a list of tables, like [{ key = \"a\", value = \"b\" }], or [[%s]] tables", aTOMLType(val), key)
	}
	et := fv.Type().Elem()
	var known []string
	for i := range et.NumField() {
		known = append(known, et.Field(i).Tag.Get("toml"))
	}
	out := reflect.MakeSlice(fv.Type(), 0, len(entries))
	for i, e := range entries {
		table, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("entry %d is %s: want a table, like { %s }", i+1, aTOMLType(e), strings.Join(known, " = …, ")+" = …")
		}
		ev := reflect.New(et).Elem()
		for _, name := range sortedKeys(table) {
			f, ok := fieldByTag(et, name)
			if !ok {
				return fmt.Errorf("entry %d: unknown key %q; known keys there: %s", i+1, name, strings.Join(known, ", "))
			}
			if err := d.decodeLeaf(ev.FieldByIndex(f.Index), key, table[name]); err != nil {
				return fmt.Errorf("entry %d: %s: %w", i+1, name, err)
			}
		}
		out = reflect.Append(out, ev)
	}
	fv.Set(out)
	return nil
}

// tomlType names the TOML type of a decoded value for messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case []any:
		return "list"
	case []map[string]any:
		return "list of tables"
	case map[string]any:
		return "table"
	}
	return "date or time"
}

// aTOMLType is tomlType with its article.
func aTOMLType(v any) string {
	t := tomlType(v)
	if t == "integer" {
		return "an " + t
	}
	return "a " + t
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortProblems orders problems by line, then key, so that a file's
// problems come out in the same order on every run; problems with keys the
// file does not set (line 0) come last. Problems with the same line and key
// keep the order they were found in.
func sortProblems(ps []*KeyError) {
	slices.SortStableFunc(ps, func(a, b *KeyError) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = math.MaxInt
		}
		if lb == 0 {
			lb = math.MaxInt
		}
		return cmp.Or(cmp.Compare(la, lb), strings.Compare(a.Key, b.Key))
	})
}

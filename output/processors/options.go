package processors

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// ConfigError says which option of which processor is wrong: At is the
// full key, e.g. "output.elasticsearch.main.processors[2].dissect.tokenizer".
type ConfigError struct {
	At  string
	Err error
}

func (e *ConfigError) Error() string { return e.At + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// options reads one processor's options (a TOML table) and remembers
// which keys it read, so that done can refuse the others by name. The
// first error sticks: later reads return zero values.
type options struct {
	at   string // the key of the table, for messages
	m    map[string]any
	used map[string]bool
	// asked are the keys the processor looked for, present or not: the
	// options it knows, listed when refusing another.
	asked []string
	err   error
}

func newOptions(at string, v any) (*options, error) {
	if v == nil {
		return &options{at: at, m: map[string]any{}}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ConfigError{At: at, Err: fmt.Errorf("want a table of options, got %s", describe(v))}
	}
	return &options{at: at, m: m}, nil
}

// fail records the first error, naming key.
func (o *options) fail(key string, format string, args ...any) {
	if o.err == nil {
		o.err = &ConfigError{At: o.key(key), Err: fmt.Errorf(format, args...)}
	}
}

func (o *options) key(k string) string {
	if k == "" {
		return o.at
	}
	return o.at + "." + k
}

func (o *options) get(key string) (any, bool) {
	if !slices.Contains(o.asked, key) {
		o.asked = append(o.asked, key)
	}
	v, ok := o.m[key]
	if ok {
		if o.used == nil {
			o.used = map[string]bool{}
		}
		o.used[key] = true
	}
	return v, ok
}

func (o *options) has(key string) bool {
	if !slices.Contains(o.asked, key) {
		o.asked = append(o.asked, key)
	}
	_, ok := o.m[key]
	return ok
}

func (o *options) str(key, def string) string {
	v, ok := o.get(key)
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		o.fail(key, "want a string, got %s", describe(v))
		return def
	}
	return s
}

// required reads a string that must be present and not empty.
func (o *options) required(key string) string {
	if !o.has(key) {
		o.fail(key, "missing (required)")
		return ""
	}
	s := o.str(key, "")
	if s == "" && o.err == nil {
		o.fail(key, "must not be empty")
	}
	return s
}

func (o *options) boolean(key string, def bool) bool {
	v, ok := o.get(key)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		o.fail(key, "want true or false, got %s", describe(v))
		return def
	}
	return b
}

func (o *options) integer(key string, def int64) int64 {
	v, ok := o.get(key)
	if !ok {
		return def
	}
	n, ok := v.(int64)
	if !ok {
		o.fail(key, "want an integer, got %s", describe(v))
		return def
	}
	return n
}

// strings reads a list of strings; a single string is a list of one, as
// Filebeat's configuration accepts.
func (o *options) strings(key string) []string {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for i, it := range x {
			s, ok := it.(string)
			if !ok {
				o.fail(fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", describe(it))
				return nil
			}
			out = append(out, s)
		}
		return out
	case []string:
		return x
	default:
		o.fail(key, "want a list of strings, got %s", describe(v))
		return nil
	}
}

// table reads a table (a TOML table, or an inline one).
func (o *options) table(key string) map[string]any {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		o.fail(key, "want a table, got %s", describe(v))
		return nil
	}
	return m
}

// tables reads a list of tables ([[...]] or an inline array of tables).
func (o *options) tables(key string) []map[string]any {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	list, err := asTables(v)
	if err != nil {
		o.fail(key, "%v", err)
	}
	return list
}

func asTables(v any) ([]map[string]any, error) {
	switch x := v.(type) {
	case []map[string]any:
		return x, nil
	case []any:
		out := make([]map[string]any, 0, len(x))
		for i, it := range x {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("element %d: want a table, got %s", i, describe(it))
			}
			out = append(out, m)
		}
		return out, nil
	case map[string]any:
		return []map[string]any{x}, nil
	default:
		return nil, fmt.Errorf("want a list of tables, got %s", describe(v))
	}
}

// done returns the first error, or refuses a key nothing read, listing
// the keys the processor knows (known, else those it looked for).
func (o *options) done(known ...string) error {
	if o.err != nil {
		return o.err
	}
	if len(known) == 0 {
		known = o.asked
	}
	for _, k := range sortedKeys(o.m) {
		if !o.used[k] {
			if len(known) == 0 {
				return &ConfigError{At: o.key(k), Err: fmt.Errorf("unknown option (this takes none)")}
			}
			known = slices.Clone(known)
			sort.Strings(known)
			return &ConfigError{At: o.key(k), Err: fmt.Errorf("unknown option; known: %s", strings.Join(known, ", "))}
		}
	}
	return nil
}

// describe names the TOML type of v for messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		return fmt.Sprintf("the number %g", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case []any, []map[string]any, []string:
		return "a list"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// unsafeString views b as a string without copying; b must not change
// while the string is in use (event values are not edited in place).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

package conf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Processors is a list of processors as the file writes it: the global
// [[processors]], or an output's [[output.<type>.<name>.processors]].
// Each element is a table with one key, a processor's Filebeat name (or
// grok), holding its options, as Filebeat's YAML maps to TOML. conf
// keeps the lists as written: the processors package checks and compiles
// them (server.ConfigChecks), as conf depends on no component.
type Processors []map[string]any

// UnmarshalTOML keeps the list as written; the configuration's checks
// compile it, naming the list's key in their messages.
func (p *Processors) UnmarshalTOML(v any) error {
	var list []map[string]any
	switch x := v.(type) {
	case []map[string]any:
		list = x
	case []any:
		for i, el := range x {
			m, ok := el.(map[string]any)
			if !ok {
				return fmt.Errorf("element %d is %s: each element is a table naming one processor, e.g. [[processors]] then [processors.add_tags]", i, aTOMLType(el))
			}
			list = append(list, m)
		}
	default:
		return fmt.Errorf("is %s: write a list of tables, [[processors]], each naming one processor", aTOMLType(v))
	}
	if len(list) == 0 {
		list = nil
	}
	*p = list
	return nil
}

// Processors returns the output's own processors list (run after the
// global one).
func (o NamedOutput) Processors() Processors {
	switch {
	case o.Lumberjack != nil:
		return o.Lumberjack.Processors
	case o.Kafka != nil:
		return o.Kafka.Processors
	case o.Elasticsearch != nil:
		return o.Elasticsearch.Processors
	}
	return nil
}

// ProcessorList is one list of processors of a configuration.
type ProcessorList struct {
	// Key is the list's key: "processors" for the global list,
	// "output.kafka.events.processors" for an output's.
	Key  string
	List Processors
}

// ProcessorLists returns the global list and every output's, enabled or
// not, those that hold no processor included: what a check compiles
// (server.ConfigChecks), each error naming its list's key.
func (c *Config) ProcessorLists() []ProcessorList {
	out := []ProcessorList{{Key: "processors", List: c.Processors}}
	for _, o := range c.allOutputs() {
		out = append(out, ProcessorList{Key: o.Key + ".processors", List: o.Processors()})
	}
	return out
}

// MarshalTOML writes the list back as an inline array of inline tables,
// so that -check-config's effective configuration loads again as it was
// written.
func (p Processors) MarshalTOML() ([]byte, error) {
	list := make([]any, len(p))
	for i, m := range p {
		list[i] = m
	}
	return appendInlineTOML(nil, list)
}

// appendInlineTOML appends v, a value decoded from TOML, as an inline TOML
// value.
func appendInlineTOML(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendTOMLString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") { // n: nan, inf
			s += ".0"
		}
		return append(dst, s...), nil
	case time.Time:
		return x.AppendFormat(dst, time.RFC3339Nano), nil
	case []map[string]any:
		list := make([]any, len(x))
		for i, m := range x {
			list[i] = m
		}
		return appendInlineTOML(dst, list)
	case []any:
		dst = append(dst, '[')
		for i, it := range x {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = appendInlineTOML(dst, it); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		dst = append(dst, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendTOMLString(dst, k)
			dst = append(dst, " = "...)
			var err error
			if dst, err = appendInlineTOML(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	default:
		return nil, fmt.Errorf("processors: cannot write a %T as TOML", v)
	}
}

// appendTOMLString appends s as a TOML basic string.
func appendTOMLString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r < 0x20 || r == 0x7f:
			dst = fmt.Appendf(dst, `\u%04X`, r)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}

package sprintf

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

type partKind uint8

const (
	partLiteral partKind = iota
	partField            // %{[a][b]} or %{a}
	partDate             // %{+joda} or %{{java}}
	partEpoch            // %{+%s}
)

type part struct {
	kind partKind
	lit  string   // partLiteral: the text
	path []string // partField: the path components
	ops  []dateOp // partDate: the compiled pattern
}

// Format is a compiled sprintf template. It is immutable, so one Format may
// be used by any number of goroutines at once.
type Format struct {
	template string
	parts    []part
	fields   [][]string // distinct field paths, in template order
	usesTime bool
	needISO  bool
}

// Compile parses a template in Logstash's sprintf syntax (see the package
// documentation). Errors start with "sprintf: " and name the offset and text
// of the offending reference.
func Compile(template string) (*Format, error) {
	f := &Format{template: template}
	pos := 0
	for pos < len(template) {
		open := strings.Index(template[pos:], "%{")
		if open < 0 {
			break
		}
		open += pos
		closeRel := strings.IndexByte(template[open+2:], '}')
		if closeRel < 0 {
			return nil, fmt.Errorf("sprintf: unclosed \"%%{\" at offset %d: %q", open, template[open:])
		}
		end := open + 2 + closeRel // index of the closing '}'
		content := template[open+2 : end]
		f.addLiteral(template[pos:open])
		switch {
		case content == "":
			return nil, fmt.Errorf("sprintf: empty field reference \"%%{}\" at offset %d", open)
		case content == "+%s":
			f.parts = append(f.parts, part{kind: partEpoch})
			f.usesTime = true
		case content[0] == '+':
			ops, err := compileJoda(content[1:], open+3)
			if err != nil {
				return nil, err
			}
			f.addDate(ops)
		case content[0] == '{':
			if end+1 >= len(template) || template[end+1] != '}' {
				return nil, fmt.Errorf("sprintf: unclosed \"%%{{\" at offset %d: %q (a java time format ends with \"}}\")", open, template[open:end+1])
			}
			ops, err := compileJava(content[1:], open+3)
			if err != nil {
				return nil, err
			}
			f.addDate(ops)
			end++
		default:
			path, err := parseFieldRef(content, open+2)
			if err != nil {
				return nil, err
			}
			f.parts = append(f.parts, part{kind: partField, path: path})
			f.addField(path)
		}
		pos = end + 1
	}
	f.addLiteral(template[pos:])
	return f, nil
}

// MustCompile is like Compile but panics if the template cannot be parsed.
// It is meant for templates fixed in the program, such as defaults.
func MustCompile(template string) *Format {
	f, err := Compile(template)
	if err != nil {
		panic(err)
	}
	return f
}

func (f *Format) addLiteral(s string) {
	if s == "" {
		return
	}
	if n := len(f.parts); n > 0 && f.parts[n-1].kind == partLiteral {
		f.parts[n-1].lit += s
		return
	}
	f.parts = append(f.parts, part{kind: partLiteral, lit: s})
}

func (f *Format) addDate(ops []dateOp) {
	f.parts = append(f.parts, part{kind: partDate, ops: ops})
	f.usesTime = true
	f.needISO = f.needISO || needsISOWeek(ops)
}

func (f *Format) addField(path []string) {
	for _, p := range f.fields {
		if equalPath(p, path) {
			return
		}
	}
	f.fields = append(f.fields, path)
}

func equalPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// String returns the template the Format was compiled from.
func (f *Format) String() string { return f.template }

// Static reports whether the template has no references at all, so that
// Append always appends the template itself and always succeeds.
func (f *Format) Static() bool {
	for _, p := range f.parts {
		if p.kind != partLiteral {
			return false
		}
	}
	return true
}

// UsesTimestamp reports whether the template has a date reference
// (%{+...}, %{{...}} or %{+%s}), whose output depends on the event's
// @timestamp or, failing that, on the received time passed to Append.
func (f *Format) UsesTimestamp() bool { return f.usesTime }

// Fields returns the distinct field references of the template, in the
// order they first appear, in Logstash's canonical bracketed form: both
// "%{host}" and "%{[host]}" give "[host]", and "%{[@metadata][beat]}" gives
// "[@metadata][beat]". The date references, which read @timestamp, are not
// listed; see UsesTimestamp.
func (f *Format) Fields() []string {
	out := make([]string, len(f.fields))
	for i, p := range f.fields {
		out[i] = canonicalRef(p)
	}
	return out
}

// GJSONPaths returns the same references as Fields, as gjson paths: each
// component escaped with gjson.Escape and joined with ".", so that
// "[@metadata][beat]" gives `\@metadata.beat`. Numeric components select
// array elements in gjson as they do here, except that gjson has no
// negative indexes.
func (f *Format) GJSONPaths() []string {
	out := make([]string, len(f.fields))
	for i, p := range f.fields {
		var b strings.Builder
		for j, c := range p {
			if j > 0 {
				b.WriteByte('.')
			}
			b.WriteString(gjson.Escape(c))
		}
		out[i] = b.String()
	}
	return out
}

// Append renders the template for one event and appends the result to dst.
//
// event is one raw JSON object, as Beats send it; Append only reads it and
// keeps no reference to it. Only the parts of it that
// the template refers to are read, and the values rendered are validated;
// the rest of the event is not, so a malformed event still renders as long
// as the referenced values can be found and read. Whatever cannot be read
// counts as missing.
//
// received is the time used for date references when the event has no
// usable @timestamp; it is rendered in UTC.
//
// ok is false when a referenced field is missing, is null, or cannot be
// read; the caller can then choose a fallback (Logstash would instead leave
// the "%{...}" text in place). On failure out holds exactly the original
// len(dst) bytes of dst: nothing is appended, but the spare capacity of dst
// beyond its length may have been written to, and if dst had to grow, out
// is the grown buffer.
//
// Append does not allocate except to grow dst, unless a value or timestamp
// needs an unusual path (a timestamp only time.Parse can read, a float
// epoch).
func (f *Format) Append(dst []byte, event []byte, received time.Time) (out []byte, ok bool) {
	n0 := len(dst)
	w := walker{event: event}
	var (
		ts                 time.Time
		fields             dateFields
		haveTS, haveFields bool
	)
	for i := range f.parts {
		p := &f.parts[i]
		switch p.kind {
		case partLiteral:
			dst = append(dst, p.lit...)
		case partField:
			v, found := w.lookup(p.path)
			if !found {
				return dst[:n0], false
			}
			if dst, found = appendValue(dst, v); !found {
				return dst[:n0], false
			}
		case partDate, partEpoch:
			if !haveTS {
				ts = eventTime(&w, received)
				haveTS = true
			}
			if p.kind == partEpoch {
				dst = appendNum(dst, ts.Unix(), 1, false)
				break
			}
			if !haveFields {
				fields = breakDown(ts, f.needISO)
				haveFields = true
			}
			dst = appendDate(dst, p.ops, &fields)
		}
	}
	return dst, true
}

// MissingField returns the first field reference of the template, in
// Logstash's bracketed form ("[data_stream][dataset]"), that Append could
// not render for event (missing, null or unreadable), or "" when Append
// would succeed. It allocates: it is meant for messages about an event
// that failed, not for every event.
func (f *Format) MissingField(event []byte) string {
	w := walker{event: event}
	for i := range f.parts {
		p := &f.parts[i]
		if p.kind != partField {
			continue
		}
		v, found := w.lookup(p.path)
		if found {
			_, found = appendValue(nil, v)
		}
		if !found {
			return canonicalRef(p.path)
		}
	}
	return ""
}

// Render is a convenience wrapper around Append that returns a new string
// ("" when ok is false). It allocates; prefer Append on hot paths.
func (f *Format) Render(event []byte, received time.Time) (string, bool) {
	b, ok := f.Append(nil, event, received)
	return string(b), ok
}

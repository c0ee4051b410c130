package estest

import (
	"strconv"
	"strings"
)

// filterPath is a request's filter_path, which Elasticsearch applies to
// its response: only the members whose paths match one of the patterns
// are returned, with the objects on the way to them. Patterns are dotted
// paths whose parts are names or "*" (any one name); a pattern that
// matches an object keeps the whole object. The forms this server does
// not know ("**", "-" exclusions, partial wildcards) keep everything, as
// if there were no filter. nil keeps everything.
type filterPath [][]string

// parseFilterPath reads filter_path's value.
func parseFilterPath(v string) filterPath {
	if v == "" {
		return nil
	}
	var f filterPath
	for _, p := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(p), ".")
		for _, part := range parts {
			if part == "" || part == "**" || strings.HasPrefix(part, "-") || (part != "*" && strings.Contains(part, "*")) {
				return nil
			}
		}
		f = append(f, parts)
	}
	return f
}

// keeps says what the filter keeps of the member at path: all of it
// (a pattern matches the path or one of its prefixes), some of it (the
// path is a prefix of a pattern: some of its members may be kept), or
// nothing.
func (f filterPath) keeps(path ...string) (all, some bool) {
	if f == nil {
		return true, true
	}
	for _, pat := range f {
		n := min(len(pat), len(path))
		match := true
		for i := range n {
			if pat[i] != "*" && pat[i] != path[i] {
				match = false
				break
			}
		}
		switch {
		case !match:
		case len(pat) <= len(path):
			return true, true
		default:
			some = true
		}
	}
	return false, some
}

// appendBulkResponse appends a bulk response with results, as filtered.
func appendBulkResponse(b []byte, f filterPath, took int64, anyError bool, results []itemResult) []byte {
	b = append(b, '{')
	sep := ""
	if all, _ := f.keeps("took"); all {
		b = append(b, `"took":`...)
		b = strconv.AppendInt(b, took, 10)
		sep = ","
	}
	if all, _ := f.keeps("errors"); all {
		b = append(b, sep...)
		b = append(b, `"errors":`...)
		b = strconv.AppendBool(b, anyError)
		sep = ","
	}
	if _, some := f.keeps("items"); some {
		b = append(b, sep...)
		b = append(b, `"items":[`...)
		for i := range results {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, f, &results[i])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

package sprintf

import (
	"fmt"
	"strings"
)

// parseFieldRef splits a Logstash field reference into its path components,
// following Logstash's strict field-reference grammar: either a bare name
// (no brackets; any other character is part of the name) or a sequence of
// bracketed components, "[a][b][c]". Embedded references ("[a][[b][c]]")
// flatten into the enclosing path, as in Logstash. base is the offset of ref
// in the template, used in error messages.
func parseFieldRef(ref string, base int) ([]string, error) {
	if !strings.ContainsAny(ref, "[]") {
		return []string{ref}, nil
	}
	fail := func(i int, why string) error {
		return fmt.Errorf("sprintf: invalid field reference %q at offset %d: %s", ref, base+i, why)
	}
	var path []string
	depth, split := 0, 0
	var prev byte
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch c {
		case '[':
			if split != i {
				return nil, fail(i, "'[' must follow ']' or start the reference")
			}
			depth++
			split = i + 1
		case ']':
			if depth <= 0 {
				return nil, fail(i, "']' without a matching '['")
			}
			if split == i && prev != ']' {
				return nil, fail(i, "empty path element \"[]\"")
			}
			if split < i {
				path = append(path, ref[split:i])
			}
			depth--
			split = i + 1
		default:
			if prev == ']' {
				return nil, fail(i, "text after ']' must be inside brackets")
			}
		}
		prev = c
	}
	if depth > 0 {
		return nil, fail(len(ref), "unclosed '['")
	}
	return path, nil
}

// canonicalRef renders a path in Logstash's bracketed form, "[a][b]".
func canonicalRef(path []string) string {
	return "[" + strings.Join(path, "][") + "]"
}

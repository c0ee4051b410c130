package estest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// maxNestingDepth is Jackson's default StreamReadConstraints nesting limit,
// which Elasticsearch 8 inherits. Checking it before gjson also keeps gjson's
// recursive validator off deeply nested hostile input.
const maxNestingDepth = 1000

// indexNameError returns why Elasticsearch would refuse name as an index
// name (the text after "Invalid index name [name], "), or "" if it is valid.
func indexNameError(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if strings.ContainsAny(name, "\\/*?\"<>| ,") {
		return `must not contain the following characters [' ','"','*',',','/','<','>','?','\','|']`
	}
	if strings.Contains(name, "#") {
		return "must not contain '#'"
	}
	if strings.Contains(name, ":") {
		return "must not contain ':'"
	}
	if name[0] == '_' || name[0] == '-' || name[0] == '+' {
		return "must not start with '_', '-', or '+'"
	}
	if len(name) > 255 {
		return "index name is too long, (" + strconv.Itoa(len(name)) + " > 255)"
	}
	if name == "." || name == ".." {
		return "must not be '.' or '..'"
	}
	if strings.ToLower(name) != name {
		return "must be lowercase"
	}
	return ""
}

// nestingError reports input nested deeper than maxNestingDepth, skipping
// over strings. It does not otherwise validate.
func nestingError(b []byte) string {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxNestingDepth {
				return "Document nesting depth (" + strconv.Itoa(depth) + ") exceeds the maximum allowed (" +
					strconv.Itoa(maxNestingDepth) + ", from `StreamReadConstraints.getMaxNestingDepth()`)"
			}
		case '}', ']':
			depth--
		}
	}
	return ""
}

// sourceError returns why Elasticsearch would fail to parse src as a
// document (a document_parsing_exception reason), or "" if it is a valid
// JSON object without duplicate keys.
func sourceError(src []byte) string {
	if len(bytes.TrimSpace(src)) == 0 {
		return "failed to parse, document is empty"
	}
	if !utf8.Valid(src) {
		return "failed to parse: Invalid UTF-8 in document"
	}
	if msg := nestingError(src); msg != "" {
		return "failed to parse: " + msg
	}
	if !gjson.ValidBytes(src) {
		return syntaxReason(src)
	}
	v := gjson.ParseBytes(src)
	if !v.IsObject() {
		return "[1:1] failed to parse: Malformed content, must start with an object"
	}
	if dup := duplicateKey(v); dup != "" {
		return "failed to parse: Duplicate field '" + truncate(dup, 256) + "'"
	}
	return ""
}

// syntaxReason describes a JSON syntax error in src, with its position in
// Elasticsearch's [line:column] form. Only called on the error path.
func syntaxReason(src []byte) string {
	var v any
	err := json.Unmarshal(src, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "[1:" + strconv.FormatInt(se.Offset, 10) + "] failed to parse: " + se.Error()
	}
	if err != nil {
		return "failed to parse: " + err.Error()
	}
	return "failed to parse: invalid JSON"
}

// duplicateKey returns the first key that appears twice in one object
// anywhere inside v (Elasticsearch parses with strict duplicate detection),
// or "".
func duplicateKey(v gjson.Result) string {
	var dup string
	switch {
	case v.IsObject():
		var small []string
		var big map[string]struct{}
		v.ForEach(func(k, val gjson.Result) bool {
			name := k.String()
			if big != nil {
				if _, ok := big[name]; ok {
					dup = name
					return false
				}
				big[name] = struct{}{}
			} else {
				for _, s := range small {
					if s == name {
						dup = name
						return false
					}
				}
				small = append(small, name)
				if len(small) > 32 {
					big = make(map[string]struct{}, 2*len(small))
					for _, s := range small {
						big[s] = struct{}{}
					}
				}
			}
			if val.IsObject() || val.IsArray() {
				dup = duplicateKey(val)
			}
			return dup == ""
		})
	case v.IsArray():
		v.ForEach(func(_, val gjson.Result) bool {
			if val.IsObject() || val.IsArray() {
				dup = duplicateKey(val)
			}
			return dup == ""
		})
	}
	return dup
}

// tokenName names v's first token the way Jackson does in Elasticsearch's
// error messages.
func tokenName(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "START_OBJECT"
	case v.IsArray():
		return "START_ARRAY"
	}
	switch v.Type {
	case gjson.String:
		return "VALUE_STRING"
	case gjson.Number:
		if strings.ContainsAny(v.Raw, ".eE") {
			return "VALUE_NUMBER_FLOAT"
		}
		return "VALUE_NUMBER_INT"
	case gjson.True:
		return "VALUE_TRUE"
	case gjson.False:
		return "VALUE_FALSE"
	case gjson.Null:
		return "VALUE_NULL"
	}
	return "null"
}

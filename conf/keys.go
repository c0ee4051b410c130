package conf

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// unknownKeyMessage names the section the key is in and, when one is close,
// the known key or section that was probably meant.
func unknownKeyMessage(k toml.Key) string {
	// Find the first part of the path that logpond does not know.
	for i := range len(k) - 1 {
		if _, ok := sectionType(k[:i+1]); ok || namedTables(k[:i+1]) {
			continue
		}
		known := Keys(strings.Join(k[:i], "."))
		msg := fmt.Sprintf("unknown key: [%s] is not a section of logpond's configuration", strings.Join(k[:i+1], "."))
		if same := sameButCase(k[i], known); same != "" {
			msg += fmt.Sprintf(" (keys are case-sensitive: write [%s])", strings.Join(append(slices.Clone(k[:i]), same), "."))
		} else if best := closest(k[i], known); best != "" {
			msg += fmt.Sprintf(" (did you mean [%s]?)", strings.Join(append(slices.Clone(k[:i]), best), "."))
		}
		return msg
	}
	section := strings.Join(k[:len(k)-1], ".")
	known := Keys(section)
	if known == nil && namedTables(k[:len(k)-1]) {
		// A key written directly in a section of named tables that
		// also holds an unnamed output's settings ([output.kafka]).
		known = Keys(section + ".NAME")
	}
	where := "at the top level"
	if section != "" {
		where = "in [" + section + "]"
	}
	if same := sameButCase(k[len(k)-1], known); same != "" {
		return fmt.Sprintf("unknown key %s (keys are case-sensitive: write %q)", where, same)
	}
	if best := closest(k[len(k)-1], known); best != "" {
		return fmt.Sprintf("unknown key %s (did you mean %q?)", where, best)
	}
	return fmt.Sprintf("unknown key %s; known keys there: %s", where, strings.Join(known, ", "))
}

// Keys lists the keys (and sub-tables) that section accepts; "" is the top
// level. It is derived from Config's toml tags, so it cannot drift. A
// named output's table ("output.lumberjack.edge",
// "output.elasticsearch.siem", "output.kafka.events") accepts the keys of
// its kind; a section of named tables ("output.lumberjack",
// "output.kafka") has no fixed keys and gives nil, as does a key that is
// not a section. ([output.kafka] also takes the keys of
// "output.kafka.NAME", those of the output written directly in it; its
// table settings, "output.kafka.ssl" say, are that output's.)
func Keys(section string) []string {
	var path []string
	if section != "" {
		path = strings.Split(section, ".")
	}
	t, ok := sectionType(path)
	if !ok {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("toml"); tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// sectionType returns the struct type that the table at path decodes into.
// A part that follows a map of named tables ([output.lumberjack.NAME]), or
// a name in [output.elasticsearch] that is not one of its settings, is an
// output's name: any name leads to the output's type, as its validity is
// checked (and reported) apart. In [output.kafka], which also holds the
// unnamed Kafka output's settings, a part that is one of its table
// settings ([output.kafka.ssl]) is that setting, as in
// [output.elasticsearch].
func sectionType(path []string) (reflect.Type, bool) {
	t := reflect.TypeFor[Config]()
	for i := 0; i < len(path); i++ {
		f, ok := fieldByTag(t, path[i])
		switch {
		case ok && isSection(f.Type):
			t, _ = sectionStruct(f.Type)
		case ok && f.Type.Kind() == reflect.Map && i+1 < len(path):
			t = f.Type.Elem().Elem()
			if sf, ok := fieldByTag(t, path[i+1]); ok && isSection(sf.Type) && unnamedOutputTable(path[:i+1]) {
				continue // the unnamed output's setting: the next part is a field of t
			}
			i++
		case !ok && i == 2 && path[0] == "output" && path[1] == TypeElasticsearch:
			// [output.elasticsearch.NAME]: t is already Elasticsearch.
		default:
			return nil, false
		}
	}
	return t, true
}

// unnamedOutputTable reports whether path is a section of named tables
// that also holds an unnamed output's settings ("output.kafka").
func unnamedOutputTable(path []string) bool {
	return len(path) == 2 && path[0] == "output" && path[1] == TypeKafka
}

// namedTables reports whether path is a section of named tables
// ("output.lumberjack").
func namedTables(path []string) bool {
	if len(path) == 0 {
		return false
	}
	parent, ok := sectionType(path[:len(path)-1])
	if !ok {
		return false
	}
	f, ok := fieldByTag(parent, path[len(path)-1])
	return ok && f.Type.Kind() == reflect.Map
}

// fieldByTag returns the field of t with the TOML name tag; fields tagged
// "-" have none.
func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	if tag == "-" {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("toml") == tag {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// sameButCase returns the known key that k spells in other letter case,
// if any: TOML keys are case-sensitive, and so are logpond's.
func sameButCase(k string, known []string) string {
	for _, c := range known {
		if strings.EqualFold(k, c) {
			return c
		}
	}
	return ""
}

// closest returns the known key nearest to k by edit distance, if it is near
// enough to be a plausible typo.
func closest(k string, known []string) string {
	best, bestD := "", 1<<30
	for _, c := range known {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(k)/3) {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// splitKey splits a dotted key as KeyError holds it; parts that TOML
// quotes (an output named "my edge") lose their quotes.
func splitKey(dotted string) toml.Key { return parsePath(dotted) }

// keyLine finds the line where key is set (or, for a table, declared) in a
// TOML document, or 0. BurntSushi/toml does not expose key positions, so
// this follows table headers and (dotted) keys line by line; it is used
// only to point at the line in messages.
func keyLine(data []byte, key toml.Key) int {
	if i, n, ok := indexedPart(key); ok {
		base := append(slices.Clone(key[:i]), strings.TrimSuffix(key[i], fmt.Sprintf("[%d]", n)))
		return elementLine(data, base, n)
	}
	var table toml.Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			table = parsePath(strings.Trim(line[:end], "[]"))
			if slices.Equal(table, key) {
				return n
			}
			continue
		}
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			continue
		}
		full := append(slices.Clone(table), parsePath(line[:eq])...)
		if len(full) >= len(key) && slices.Equal(full[:len(key)], key) {
			return n
		}
	}
	return 0
}

// indexedPart finds the first part of key that names an element of a
// list of tables, as the processors' keys do ("processors[2]"): its
// position and the element's index.
func indexedPart(key toml.Key) (i, n int, ok bool) {
	for i, part := range key {
		open := strings.LastIndexByte(part, '[')
		if open <= 0 || !strings.HasSuffix(part, "]") {
			continue
		}
		if n, err := strconv.Atoi(part[open+1 : len(part)-1]); err == nil && n >= 0 {
			return i, n, true
		}
	}
	return 0, 0, false
}

// elementLine finds the line of element n of the list of tables base:
// its [[base]] header, or, for a list written inline (base = [...]),
// the line of the key. 0 when there is none.
func elementLine(data []byte, base toml.Key, n int) int {
	var table toml.Key
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		if strings.HasPrefix(text, "[[") {
			if end := strings.Index(text, "]]"); end > 0 {
				table = parsePath(text[2:end])
				if slices.Equal(table, base) {
					if seen == n {
						return line
					}
					seen++
				}
			}
			continue
		}
		if text[0] == '[' {
			if end := strings.IndexByte(text, ']'); end > 0 {
				table = parsePath(strings.Trim(text[:end], "[]"))
			}
			continue
		}
		if eq := strings.IndexByte(text, '='); eq > 0 {
			if full := append(slices.Clone(table), parsePath(text[:eq])...); slices.Equal(full, base) {
				return line
			}
		}
	}
	return 0
}

func parsePath(s string) toml.Key {
	var k toml.Key
	for _, part := range strings.Split(s, ".") {
		k = append(k, strings.Trim(strings.TrimSpace(part), `"'`))
	}
	return k
}

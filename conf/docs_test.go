package conf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// Keys written before any table (processors) are listed under the
// heading topLevelHeading of docs/configuration.md, and in the row
// "top level" of README.md's key table.
const (
	topLevelHeading = "Top-level keys"
	topLevel        = "top level"
)

// docKey is one row of a key table in docs/configuration.md.
type docKey struct {
	section, key string
	def, example string // TOML values, without the backticks
	meaning      string
	line         int
}

// readConfigDoc parses the key tables of docs/configuration.md: a
// "## [section]" heading, then rows "| `key` | `default` | unit | meaning |
// `example` |".
func readConfigDoc(t *testing.T) []docKey {
	t.Helper()
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var keys []docKey
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "## "); ok {
			section = ""
			if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
				section = strings.Trim(rest, "[]")
			}
			if rest == topLevelHeading {
				section = topLevel
			}
			continue
		}
		if section == "" || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 5 {
			t.Errorf("docs/configuration.md:%d: a key row has %d cells, want 5 (key, default, unit, meaning, example): %s", n, len(cells), line)
			continue
		}
		code := func(i int) string {
			c := strings.TrimSpace(cells[i])
			if len(c) < 2 || c[0] != '`' || c[len(c)-1] != '`' {
				t.Errorf("docs/configuration.md:%d: cell %d is not a `code` TOML value: %q", n, i+1, c)
				return ""
			}
			return c[1 : len(c)-1]
		}
		keys = append(keys, docKey{section: section, key: code(0), def: code(1), example: code(4), meaning: cells[3], line: n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// leafPaths lists every key of Config as a dotted path, walking Keys (what
// unknown-key messages use), so the doc is checked against the same list.
// The keys of named tables ([output.lumberjack.NAME]) are listed under the
// name NAME, as the doc's sections spell them.
func leafPaths(section string) []string {
	var out []string
	for _, k := range Keys(section) {
		path := k
		if section != "" {
			path = section + "." + k
		}
		if sub := Keys(path); sub != nil {
			out = append(out, leafPaths(path)...)
		} else if Keys(path+".NAME") != nil {
			out = append(out, leafPaths(path+".NAME")...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// bothEmptyLists reports whether a and b are lists without entries (a
// default of no entries is nil; the doc writes it []).
func bothEmptyLists(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Slice && vb.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0
}

// isNamedSection reports whether a doc section is (in) a named table
// ("output.lumberjack.NAME", "output.lumberjack.NAME.ssl").
func isNamedSection(section string) bool {
	return strings.HasSuffix(section, ".NAME") || strings.Contains(section, ".NAME.")
}

// namedRoot splits a key of a named table's section into the table
// ("output.lumberjack.NAME") and the key's path within it ("ssl.enabled").
func namedRoot(k docKey) (root, rel string) {
	i := strings.Index(k.section+".", ".NAME.") + len(".NAME")
	root, rel = k.section[:i], k.key
	if i < len(k.section) {
		rel = k.section[i+1:] + "." + k.key
	}
	return root, rel
}

// TestConfigurationDocIsComplete fails when docs/configuration.md leaves a
// key out, lists one twice, or lists one logpond does not have.
func TestConfigurationDocIsComplete(t *testing.T) {
	documented := map[string]int{}
	for _, k := range readConfigDoc(t) {
		path := k.section + "." + k.key
		if k.section == topLevel {
			path = k.key
		}
		if prev, ok := documented[path]; ok {
			t.Errorf("docs/configuration.md:%d: %s is already documented at line %d", k.line, path, prev)
		}
		documented[path] = k.line
	}
	want := leafPaths("")
	if got := leafKeys(reflect.TypeFor[Config](), ""); !slices.Equal(got, want) {
		t.Fatalf("walking Keys gives %v, the struct gives %v", want, got)
	}
	for _, k := range want {
		if _, ok := documented[k]; !ok {
			table := "top-level"
			if i := strings.LastIndexByte(k, '.'); i >= 0 {
				table = "[" + k[:i] + "]"
			}
			t.Errorf("docs/configuration.md does not document %s: add a row to its %s table", k, table)
		}
	}
	for k, line := range documented {
		if !slices.Contains(want, k) {
			t.Errorf("docs/configuration.md:%d documents %s, which is not a key of logpond's configuration", line, k)
		}
	}
}

// TestConfigurationDocDefaults loads the documented defaults as a
// configuration file and expects exactly Default(); and checks that every
// example is a value of the key's type.
func TestConfigurationDocDefaults(t *testing.T) {
	var keys, named []docKey
	for _, k := range readConfigDoc(t) {
		if isNamedSection(k.section) {
			named = append(named, k)
		} else {
			keys = append(keys, k)
		}
	}
	doc := func(value func(docKey) string) []byte {
		var b bytes.Buffer
		section := ""
		for _, k := range keys {
			if k.section != section && k.section != topLevel {
				section = k.section
				fmt.Fprintf(&b, "[%s]\n", section)
			}
			fmt.Fprintf(&b, "%s = %s\n", k.key, value(k))
		}
		return b.Bytes()
	}
	defaults := doc(func(k docKey) string { return k.def })
	cfg, err := Parse("documented defaults", defaults)
	if err != nil {
		t.Fatalf("the documented defaults do not load: %v\n%s", err, defaults)
	}
	if !reflect.DeepEqual(*cfg, Default()) {
		def := reflect.ValueOf(Default())
		got := reflect.ValueOf(*cfg)
		for _, k := range leafPaths("") {
			if a, b := field(got, k).Interface(), field(def, k).Interface(); !reflect.DeepEqual(a, b) {
				t.Errorf("docs/configuration.md gives %s the default %v; logpond's is %v", k, a, b)
			}
		}
	}
	// A named table's defaults are those of one table of its kind
	// (namedDefaults), whatever its name.
	tables := map[string]*bytes.Buffer{}
	for _, k := range named {
		root, rel := namedRoot(k)
		if tables[root] == nil {
			tables[root] = &bytes.Buffer{}
		}
		fmt.Fprintf(tables[root], "%s = %s\n", rel, k.def)
	}
	for section, b := range tables {
		typ, ok := sectionType(strings.Split(section, "."))
		if !ok {
			t.Errorf("docs/configuration.md: [%s] is not a section of logpond's configuration", section)
			continue
		}
		got := reflect.New(typ)
		if _, err := toml.Decode(b.String(), got.Interface()); err != nil {
			t.Errorf("docs/configuration.md: the documented defaults of [%s] do not decode: %v\n%s", section, err, b)
			continue
		}
		want := reflect.ValueOf(namedDefaults[typ])
		for _, k := range named {
			root, rel := namedRoot(k)
			if root != section {
				continue
			}
			if a, b := field(got.Elem(), rel).Interface(), field(want, rel).Interface(); !reflect.DeepEqual(a, b) && !bothEmptyLists(a, b) {
				t.Errorf("docs/configuration.md:%d gives %s.%s the default %v; logpond's is %v", k.line, k.section, k.key, a, b)
			}
		}
	}
	// Examples: each must decode into its key's type (validation across
	// keys is not checked: examples are independent of each other).
	for _, k := range append(keys, named...) {
		var c Config
		src := fmt.Sprintf("[%s]\n%s = %s\n", strings.ReplaceAll(k.section, "NAME", "name"), k.key, k.example)
		if k.section == topLevel {
			src = fmt.Sprintf("%s = %s\n", k.key, k.example)
		}
		md, err := toml.Decode(src, &c)
		if err != nil {
			t.Errorf("docs/configuration.md:%d: the example for %s.%s does not decode: %v", k.line, k.section, k.key, err)
			continue
		}
		if undecodedOutside(md, "processors") {
			t.Errorf("docs/configuration.md:%d: the example for %s.%s sets an unknown key", k.line, k.section, k.key)
		}
	}
}

// readREADMEKeys parses the key table of README.md's Configuration
// section: rows "| `[section]` | `key`, `key`, … |". It returns the line of
// each dotted key and of each section row.
func readREADMEKeys(t *testing.T) (keys, sections map[string]int) {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	keys, sections = map[string]int{}, map[string]int{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == "## Configuration"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `[") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			t.Errorf("README.md:%d: a key-table row has %d cells, want 2 (section, keys): %s", n, len(cells), line)
			continue
		}
		section := strings.Trim(strings.TrimSpace(cells[0]), "`[]")
		sections[section] = n
		for _, k := range strings.Split(cells[1], ",") {
			k = strings.TrimSpace(k)
			if len(k) < 3 || k[0] != '`' || k[len(k)-1] != '`' {
				t.Errorf("README.md:%d: %q is not a `key`", n, k)
				continue
			}
			path := section + "." + strings.Trim(k, "`")
			if section == topLevel {
				path = strings.Trim(k, "`")
			}
			if prev, ok := keys[path]; ok {
				t.Errorf("README.md:%d: %s is already listed at line %d", n, path, prev)
			}
			keys[path] = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(sections) == 0 {
		t.Fatal("README.md has no key table under \"## Configuration\"")
	}
	return keys, sections
}

// TestREADMEKeyTableIsComplete fails when the key table of README.md's
// Configuration section leaves a key out, naming it and the row to add it
// to, or lists one logpond does not have.
func TestREADMEKeyTableIsComplete(t *testing.T) {
	listed, sections := readREADMEKeys(t)
	want := leafPaths("")
	for _, k := range want {
		if _, ok := listed[k]; ok {
			continue
		}
		section, key := topLevel, k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			section, key = k[:i], k[i+1:]
		}
		if line, ok := sections[section]; ok {
			t.Errorf("README.md's key table does not list %s: add `%s` to its `[%s]` row (line %d)", k, key, section, line)
		} else {
			t.Errorf("README.md's key table does not list %s: add a `[%s]` row with `%s`", k, section, key)
		}
	}
	for k, line := range listed {
		if !slices.Contains(want, k) {
			t.Errorf("README.md:%d lists %s, which is not a key of logpond's configuration", line, k)
		}
	}
}

// TestMigrationGuideNamesEquivalents: where docs/configuration.md says a
// key is like a Logstash setting ("Logstash's `client_inactivity_timeout`"),
// the row of docs/migration-from-logstash.md for that setting maps it to
// that key, not to "no equivalent". Logstash names the guide has no row
// for (values, like `1gb`) are not settings and are not checked.
func TestMigrationGuideNamesEquivalents(t *testing.T) {
	data, err := os.ReadFile("../docs/migration-from-logstash.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		logstash, logpond string
		line              int
	}
	var rows []row
	for n, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) >= 2 {
			rows = append(rows, row{logstash: cells[0], logpond: cells[1], line: n + 1})
		}
	}
	cited := regexp.MustCompile("Logstash's `([^`]+)`")
	for _, k := range readConfigDoc(t) {
		for _, m := range cited.FindAllStringSubmatch(k.meaning, -1) {
			setting := "`" + m[1] + "`"
			for _, r := range rows {
				if !strings.Contains(r.logstash, setting) {
					continue
				}
				if !strings.Contains(r.logpond, "`"+k.section+"."+k.key+"`") && !strings.Contains(r.logpond, "`"+k.key+"`") {
					t.Errorf("docs/migration-from-logstash.md:%d maps %s to %q; docs/configuration.md:%d says %s.%s is its equivalent",
						r.line, setting, strings.TrimSpace(r.logpond), k.line, k.section, k.key)
				}
			}
		}
	}
}

// undecodedOutside reports whether md left a key undecoded other than
// those inside a list named list (processors: the list decodes whole, its
// processors' options are checked by the processors package).
func undecodedOutside(md toml.MetaData, list string) bool {
	for _, k := range md.Undecoded() {
		if !slices.Contains(k, list) {
			return true
		}
	}
	return false
}

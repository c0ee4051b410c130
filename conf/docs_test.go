package conf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// docKey is one row of a key table in docs/configuration.md.
type docKey struct {
	section, key string
	def, example string // TOML values, without the backticks
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
		keys = append(keys, docKey{section: section, key: code(0), def: code(1), example: code(4), line: n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// leafPaths lists every key of Config as a dotted path, walking Keys (what
// unknown-key messages use), so the doc is checked against the same list.
func leafPaths(section string) []string {
	var out []string
	for _, k := range Keys(section) {
		path := k
		if section != "" {
			path = section + "." + k
		}
		if sub := Keys(path); sub != nil {
			out = append(out, leafPaths(path)...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// TestConfigurationDocIsComplete fails when docs/configuration.md leaves a
// key out, lists one twice, or lists one logpond does not have.
func TestConfigurationDocIsComplete(t *testing.T) {
	documented := map[string]int{}
	for _, k := range readConfigDoc(t) {
		path := k.section + "." + k.key
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
			t.Errorf("docs/configuration.md does not document %s: add a row to its [%s] table", k, k[:strings.LastIndexByte(k, '.')])
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
	keys := readConfigDoc(t)
	doc := func(value func(docKey) string) []byte {
		var b bytes.Buffer
		section := ""
		for _, k := range keys {
			if k.section != section {
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
	// Examples: each must decode into its key's type (validation across
	// keys is not checked: examples are independent of each other).
	for _, k := range keys {
		var c Config
		src := fmt.Sprintf("[%s]\n%s = %s\n", k.section, k.key, k.example)
		md, err := toml.Decode(src, &c)
		if err != nil {
			t.Errorf("docs/configuration.md:%d: the example for %s.%s does not decode: %v", k.line, k.section, k.key, err)
			continue
		}
		if len(md.Undecoded()) > 0 {
			t.Errorf("docs/configuration.md:%d: the example for %s.%s sets an unknown key", k.line, k.section, k.key)
		}
	}
}

package kafka

import "testing"

// TestHashFieldLookup: partition.hash finds a field as Filebeat's
// GetValue does, a dotted name whole first at each object.
func TestHashFieldLookup(t *testing.T) {
	cases := []struct {
		name, field, doc string
		want             string
		exists           bool
	}{
		{"top level", "service", `{"service":"a"}`, "a", true},
		{"nested", "host.name", `{"host":{"name":"h"}}`, "h", true},
		{"flat", "log.level", `{"log.level":"warn"}`, "warn", true},
		{"flat before nested", "log.level", `{"log":{"level":"info"},"log.level":"warn"}`, "warn", true},
		{"flat one level down", "a.b.c", `{"a":{"b.c":1,"b":{"c":2}}}`, "1", true},
		{"nested three levels", "a.b.c", `{"a":{"b":{"c":2}}}`, "2", true},
		{"only the rest whole", "a.b.c", `{"a.b":{"c":1}}`, "", false},
		{"missing", "host.name", `{"host":{"ip":"x"}}`, "", false},
		{"through a string", "host.name", `{"host":"h"}`, "", false},
		{"arrays are not indexed", "tags.0", `{"tags":["x"]}`, "", false},
		{"no wildcards", "a*", `{"abc":1}`, "", false},
		{"@ is a plain character", "@metadata.beat", `{"@metadata":{"beat":"filebeat"}}`, "filebeat", true},
		{"a number", "n", `{"n":1.50}`, "1.5", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := compileHashField(c.field).lookup([]byte(c.doc))
			if v.Exists() != c.exists || v.String() != c.want {
				t.Fatalf("lookup(%q) in %s = %q (exists %v), want %q (exists %v)", c.field, c.doc, v.String(), v.Exists(), c.want, c.exists)
			}
		})
	}
}

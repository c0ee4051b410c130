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

// TestHashPartitionIsFilebeats: a key, or the hashed fields, go to the
// partition Filebeat's hash partitioner picks, so that Filebeat and
// logpond shipping to one topic keep a key's records in one partition.
// The expected partitions are what Filebeat's own partitioner (libbeat's
// outputs/kafka, at the Makefile's beats version) returned for the same
// keys and values.
func TestHashPartitionIsFilebeats(t *testing.T) {
	keys := []struct {
		key  string
		n    int
		want int
	}{
		{"svc0", 3, 0}, {"svc0", 7, 4}, {"svc1", 3, 1}, {"svc1", 7, 6},
		{"svc2", 3, 1}, {"svc2", 7, 0}, {"web-01", 3, 1}, {"web-01", 7, 3},
		{"a", 3, 2}, {"a", 7, 3}, {"order-4211", 3, 1}, {"order-4211", 7, 5},
		{"x", 3, 1}, {"x", 7, 2},
	}
	for _, c := range keys {
		if got := hashPartition(nil, []byte(c.key), nil, c.n); got != c.want {
			t.Errorf("key %q of %d partitions: %d, Filebeat's %d", c.key, c.n, got, c.want)
		}
	}
	values := []struct {
		fields []string
		doc    string
		n      int
		want   int
	}{
		{[]string{"s"}, `{"s":"svc1"}`, 3, 1}, {[]string{"s"}, `{"s":"svc1"}`, 7, 6},
		{[]string{"s"}, `{"s":42}`, 3, 1}, {[]string{"s"}, `{"s":42}`, 7, 4},
		{[]string{"s"}, `{"s":-7}`, 3, 0}, {[]string{"s"}, `{"s":-7}`, 7, 0},
		{[]string{"s"}, `{"s":1.5}`, 3, 1}, {[]string{"s"}, `{"s":1.5}`, 7, 0},
		{[]string{"s"}, `{"s":true}`, 3, 1}, {[]string{"s"}, `{"s":true}`, 7, 0},
		{[]string{"s"}, `{"s":false}`, 3, 0}, {[]string{"s"}, `{"s":false}`, 7, 5},
		{[]string{"s", "t"}, `{"s":"svc1","t":3}`, 3, 0}, {[]string{"s", "t"}, `{"s":"svc1","t":3}`, 7, 0},
	}
	for _, c := range values {
		fields := make([]hashField, len(c.fields))
		for i, f := range c.fields {
			fields[i] = compileHashField(f)
		}
		if got := hashPartition(fields, nil, []byte(c.doc), c.n); got != c.want {
			t.Errorf("fields %v of %s, %d partitions: %d, Filebeat's %d", c.fields, c.doc, c.n, got, c.want)
		}
	}
}

// TestHashPartitionSpreadsUnhashable: a record whose hashed field is
// missing, null, an object or an array goes to a random partition, as
// Filebeat's do by default (random = true), not all to one.
func TestHashPartitionSpreadsUnhashable(t *testing.T) {
	fields := []hashField{compileHashField("s")}
	for _, doc := range []string{`{}`, `{"s":null}`, `{"s":{"a":1}}`, `{"s":[1]}`} {
		seen := map[int]bool{}
		for range 200 {
			seen[hashPartition(fields, nil, []byte(doc), 3)] = true
		}
		if len(seen) != 3 {
			t.Errorf("%s: %d of 3 partitions used over 200 records", doc, len(seen))
		}
	}
}

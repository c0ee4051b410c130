package processors

import (
	"errors"
	"strings"
	"testing"
)

// The field processors against Filebeat's documented behaviour.
func TestFieldProcessors(t *testing.T) {
	runCases(t, []processorCase{
		{"add_fields default target", `
[[processors]]
[processors.add_fields.fields]
name = "myhost"
id = 574734885120952459
`, `{"message":"x"}`, `{"message":"x","fields":{"name":"myhost","id":574734885120952459}}`},
		{"add_fields at the root overwrites", `
[[processors]]
[processors.add_fields]
target = ""
fields = {message = "new", "a.b" = 1}
`, `{"message":"x"}`, `{"message":"new","a":{"b":1}}`},
		{"add_fields merges into an object", `
[[processors]]
[processors.add_fields]
target = "project"
fields = {name = "myproject", id = "574734885120952459"}
`, `{"project":{"owner":"me","name":"old"}}`, `{"project":{"owner":"me","name":"myproject","id":"574734885120952459"}}`},
		{"add_fields into @metadata", `
[[processors]]
[processors.add_fields]
target = "@metadata"
fields = {_id = "abc"}
`, `{"@metadata":{"beat":"filebeat"},"m":1}`, `{"@metadata":{"beat":"filebeat","_id":"abc"},"m":1}`},
		{"add_tags default target, appended as given", `
[[processors]]
[processors.add_tags]
tags = ["web", "production"]
`, `{"tags":["production"]}`, `{"tags":["production","web","production"]}`},
		{"add_tags custom target, nested", `
[[processors]]
[processors.add_tags]
tags = ["web"]
target = "labels.kind"
`, `{"labels":{"a":1}}`, `{"labels":{"a":1,"kind":["web"]}}`},
		{"add_tags leaves a target that is not a list", `
[[processors]]
[processors.add_tags]
tags = ["web"]
target = "environment"
`, `{"environment":"prod"}`, `{"environment":"prod"}`},
		{"drop_fields", `
[[processors]]
[processors.drop_fields]
fields = ["agent", "host.os", "@timestamp"]
`, `{"@timestamp":"t","agent":{"id":1},"host":{"os":{"x":1},"name":"h"}}`, `{"@timestamp":"t","host":{"name":"h"}}`},
		{"drop_fields missing fails, drops the others", `
[[processors]]
[processors.drop_fields]
fields = ["nope", "b"]
`, `{"a":1,"b":2}`, `{"a":1}`},
		{"drop_fields ignore_missing", `
[[processors]]
[processors.drop_fields]
fields = ["nope"]
ignore_missing = true
`, `{"a":1}`, `{"a":1}`},
		{"drop_fields regexp", `
[[processors]]
[processors.drop_fields]
fields = ['/^host\.(os|ip)$/']
`, `{"host":{"os":1,"ip":2,"name":3}}`, `{"host":{"name":3}}`},
		{"include_fields keeps @timestamp and @metadata", `
[[processors]]
[processors.include_fields]
fields = ["message", "host.name"]
`, `{"@timestamp":"t","@metadata":{"beat":"fb"},"message":"m","host":{"name":"h","os":"linux"},"agent":{}}`,
			`{"@timestamp":"t","@metadata":{"beat":"fb"},"message":"m","host":{"name":"h"}}`},
		{"rename", `
[[processors]]
[processors.rename]
fields = [{from = "a.g", to = "e.d"}, {from = "c", to = "x"}]
`, `{"a":{"g":1,"h":2},"c":3}`, `{"a":{"h":2},"e":{"d":1},"x":3}`},
		{"rename onto an existing field fails and restores", `
[[processors]]
[processors.rename]
fields = [{from = "a", to = "b"}, {from = "c", to = "d"}]
`, `{"a":1,"c":2,"d":3}`, `{"a":1,"c":2,"d":3,"error":{"message":"Failed to rename fields in processor: target field d already exists, drop or rename this field first"}}`},
		{"rename without fail_on_error keeps what worked", `
[[processors]]
[processors.rename]
fields = [{from = "a", to = "b"}, {from = "c", to = "d"}]
fail_on_error = false
`, `{"a":1,"c":2,"d":3}`, `{"b":1,"c":2,"d":3}`},
		{"rename missing source", `
[[processors]]
[processors.rename]
fields = [{from = "a", to = "b"}]
`, `{"c":2}`, `{"c":2,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: a, Error: key not found"}}`},
		{"rename missing source, ignore_missing", `
[[processors]]
[processors.rename]
fields = [{from = "a", to = "b"}]
ignore_missing = true
`, `{"c":2}`, `{"c":2}`},
		{"copy_fields", `
[[processors]]
[processors.copy_fields]
fields = [{from = "message", to = "event.original"}]
`, `{"message":"m"}`, `{"message":"m","event":{"original":"m"}}`},
		{"copy_fields deep copies", `
[[processors]]
[processors.copy_fields]
fields = [{from = "a", to = "b"}]
[[processors]]
[processors.add_fields]
target = "b"
fields = {y = 2}
`, `{"a":{"x":1}}`, `{"a":{"x":1},"b":{"x":1,"y":2}}`},
		{"truncate_fields max_bytes flags the event", `
[[processors]]
[processors.truncate_fields]
fields = ["message"]
max_bytes = 5
`, `{"message":"héllo world"}`, `{"message":"héll","log":{"flags":["truncated"]}}`},
		{"truncate_fields max_characters", `
[[processors]]
[processors.truncate_fields]
fields = ["message"]
max_characters = 5
`, `{"message":"héllo world","log":{"offset":1}}`, `{"message":"héllo","log":{"offset":1,"flags":["truncated"]}}`},
		{"truncate_fields short value untouched", `
[[processors]]
[processors.truncate_fields]
fields = ["message"]
max_bytes = 50
`, `{"message":"short"}`, `{"message":"short"}`},
		{"replace", `
[[processors]]
[processors.replace]
fields = [{field = "file.path", pattern = "/usr/", replacement = "/usr/local/"}]
`, `{"file":{"path":"/usr/bin"}}`, `{"file":{"path":"/usr/local/bin"}}`},
		{"replace missing field", `
[[processors]]
[processors.replace]
fields = [{field = "nope", pattern = "a", replacement = ""}]
`, `{"x":1}`, `{"x":1,"error":{"message":"Failed to replace fields in processor: could not fetch value for key: nope, Error: key not found"}}`},
		{"drop_event without a condition drops everything", `
[[processors]]
[processors.drop_event]
`, `{"x":1}`, ``},
		{"a failure does not stop the chain", `
[[processors]]
[processors.rename]
fields = [{from = "nope", to = "b"}]
[[processors]]
[processors.add_tags]
tags = ["after"]
`, `{"x":1}`, `{"x":1,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: nope, Error: key not found"},"tags":["after"]}`},
		{"drop_fields refuses @timestamp", `
[[processors]]
[processors.drop_fields]
fields = ["@timestamp", "type", "a"]
`, `{"@timestamp":"t","type":"x","a":1}`, `{"@timestamp":"t","type":"x"}`},
		{"escaped strings survive", `
[[processors]]
[processors.rename]
fields = [{from = "m", to = "n"}]
`, `{"m":"a\"b\\c\u00e9\n"}`, `{"n":"a\"b\\c\u00e9\n"}`},
	})
}

// A path through a value that is not an object fails as Filebeat's
// PutValue does, and the event stays as it was.
func TestPutThroughAScalar(t *testing.T) {
	got := runOne(t, `
[[processors]]
[processors.add_fields]
target = "a.b"
fields = {c = 1}
`, `{"a":"text"}`)
	if !sameJSON(t, got, `{"a":"text"}`) {
		t.Fatalf("got %s", got)
	}
}

// Configuration errors name the list, the index and the key.
func TestConfigErrors(t *testing.T) {
	cases := []struct{ name, doc, at, msg string }{
		{"unknown processor", `
[[processors]]
[processors.add_tag]
tags = ["x"]
`, "processors[0].add_tag", "unknown processor; known: "},
		{"two processors in one element", `
[[processors]]
add_tags = {tags = ["x"]}
drop_event = {}
`, "processors[0]", "names 2 processors"},
		{"unknown option", `
[[processors]]
[processors.add_tags]
tags = ["x"]
targt = "t"
`, "processors[0].add_tags.targt", "unknown option; known"},
		{"missing required", `
[[processors]]
[processors.add_tags]
[[processors]]
[processors.add_tags]
`, "processors[0].add_tags.tags", "missing (required)"},
		{"wrong type", `
[[processors]]
[processors.drop_fields]
fields = ["a"]
ignore_missing = "yes"
`, "processors[0].drop_fields.ignore_missing", "want true or false"},
		{"nested element", `
[[processors]]
[processors.add_tags]
tags = ["x"]
[[processors]]
[processors.rename]
fields = [{from = "a"}]
`, "processors[1].rename.fields[0].to", "missing (required)"},
		{"bad regexp", `
[[processors]]
[processors.replace]
fields = [{field = "a", pattern = "(", replacement = ""}]
`, "processors[0].replace.fields[0].pattern", "invalid regular expression"},
		{"truncate needs a size", `
[[processors]]
[processors.truncate_fields]
fields = ["a"]
`, "processors[0].truncate_fields", "one of max_bytes and max_characters is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileTOML(t, c.doc)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a ConfigError", err)
			}
			if ce.At != c.at || !strings.Contains(ce.Err.Error(), c.msg) {
				t.Fatalf("got %q: %q, want %q: …%q…", ce.At, ce.Err, c.at, c.msg)
			}
		})
	}
}

// An event that is not a JSON object is refused with ErrNotObject and
// counted; the chain's counters count per processor.
func TestRunnerCounts(t *testing.T) {
	c := mustChain(t, `
[[processors]]
[processors.drop_fields]
fields = ["nope"]
[[processors]]
[processors.drop_event]
`)
	r := c.NewRunner()
	if _, _, err := r.Run([]byte(`[1,2]`)); !errors.Is(err, ErrNotObject) {
		t.Fatalf("array: %v", err)
	}
	if _, _, err := r.Run([]byte(`"text"`)); !errors.Is(err, ErrNotObject) {
		t.Fatalf("string: %v", err)
	}
	for range 3 {
		if _, keep, err := r.Run([]byte(`{"a":1}`)); keep || err != nil {
			t.Fatalf("keep %v err %v", keep, err)
		}
	}
	st := c.Stats()
	if len(st) != 2 || st[0].Name != "processors[0].drop_fields" || st[0].In != 3 || st[0].Failed != 3 || st[1].Dropped != 3 || st[1].In != 3 {
		t.Fatalf("stats %+v", st)
	}
	if c.Unprocessable() != 2 {
		t.Fatalf("unprocessable %d", c.Unprocessable())
	}
}

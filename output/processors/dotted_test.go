package processors

import "testing"

// TestDottedKeysFoundWhole checks that every processor finds a member
// whose name holds a dot ("log.level" written flat) as Filebeat does:
// the rest of the name whole first, at each object on the way (spot).
// Each expected event is what Filebeat's own processors made of the
// same event and settings.
func TestDottedKeysFoundWhole(t *testing.T) {
	runCases(t, []processorCase{
		{"rename takes the flat member, not the nested one", `
[[processors]]
[processors.rename]
fields = [{from = "log.level", to = "level"}]
`, `{"log.level":"warn","log":{"level":"info"}}`, `{"level":"warn","log":{"level":"info"}}`},
		{"rename finds the target taken by a flat member", `
[[processors]]
[processors.rename]
fields = [{from = "lvl", to = "log.level"}]
`, `{"log.level":"warn","lvl":"x"}`,
			`{"log.level":"warn","lvl":"x","error":{"message":"Failed to rename fields in processor: target field log.level already exists, drop or rename this field first"}}`},
		{"rename puts a flat member back when a later field fails", `
[[processors]]
[processors.rename]
fields = [{from = "log.level", to = "level"}, {from = "nope", to = "x"}]
`, `{"log.level":"warn","a":1}`,
			`{"log.level":"warn","a":1,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: nope, Error: key not found"}}`},
		{"copy_fields one level down", `
[[processors]]
[processors.copy_fields]
fields = [{from = "a.b.c", to = "x.y"}]
`, `{"a":{"b.c":1,"b":{"c":2}}}`, `{"a":{"b.c":1,"b":{"c":2}},"x":{"y":1}}`},
		{"drop_fields", `
[[processors]]
[processors.drop_fields]
fields = ["log.level", "a.b.c"]
`, `{"log.level":"warn","log":{"level":"info"},"a":{"b.c":1,"b":{"c":2}}}`, `{"log":{"level":"info"},"a":{"b":{"c":2}}}`},
		{"convert in place and into a flat target", `
[[processors]]
[processors.convert]
fields = [{from = "http.status", type = "integer"}, {from = "a.b", to = "c.d", type = "string"}]
`, `{"http.status":"200","a.b":5,"c.d":"old"}`, `{"http.status":200,"a.b":5,"c.d":"5"}`},
		{"dissect refuses a key a flat member holds", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
`, `{"message":"x y","dissect.b":"old"}`, `{"message":"x y","dissect.b":"old"}`},
		{"dissect refuses a key a flat member holds one level down", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
target_prefix = "p.q"
`, `{"message":"x y","p":{"q.b":1}}`, `{"message":"x y","p":{"q.b":1}}`},
		{"dissect reads a flat field and writes beside a flat member", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
field = "event.original"
target_prefix = "p.q"
`, `{"event.original":"x y","p":{"q.c":1}}`, `{"event.original":"x y","p":{"q.c":1,"q":{"a":"x","b":"y"}}}`},
		{"dissect overwrites a flat member", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{b}"
overwrite_keys = true
`, `{"message":"x y","dissect.b":"old","dissect":{"a":"o"}}`, `{"message":"x y","dissect.b":"y","dissect":{"a":"x"}}`},
		{"truncate_fields", `
[[processors]]
[processors.truncate_fields]
fields = ["log.msg"]
max_bytes = 3
`, `{"log.msg":"abcdef"}`, `{"log.msg":"abc","log":{"flags":["truncated"]}}`},
		{"replace", `
[[processors]]
[processors.replace]
fields = [{field = "log.msg", pattern = "b", replacement = "X"}]
`, `{"log.msg":"abcb"}`, `{"log.msg":"aXcX"}`},
		{"add_tags", `
[[processors]]
[processors.add_tags]
tags = ["t"]
target = "a.tags"
`, `{"a.tags":["x"]}`, `{"a.tags":["x","t"]}`},
		{"timestamp", `
[[processors]]
[processors.timestamp]
field = "x.ts"
layouts = ['2006-01-02T15:04:05Z07:00']
target_field = "y.ts"
`, `{"x.ts":"2024-01-02T03:04:05Z","y.ts":"old"}`, `{"x.ts":"2024-01-02T03:04:05Z","y.ts":"2024-01-02T03:04:05.000Z"}`},
		{"a condition", `
[[processors]]
[processors.add_tags]
tags = ["hit"]
[processors.add_tags.when.equals]
"log.level" = "warn"
`, `{"log.level":"warn","log":{"level":"info"}}`, `{"log.level":"warn","log":{"level":"info"},"tags":["hit"]}`},
		{"has_fields one level down", `
[[processors]]
[processors.add_tags]
tags = ["hit"]
[processors.add_tags.when]
has_fields = ["a.b.c"]
`, `{"a":{"b.c":1}}`, `{"a":{"b.c":1},"tags":["hit"]}`},
		{"only the rest of the name is tried whole", `
[[processors]]
[processors.add_tags]
tags = ["hit"]
[processors.add_tags.when]
has_fields = ["a.b.c"]
`, `{"a.b":{"c":1}}`, `{"a.b":{"c":1}}`},
		{"decode_json_fields", `
[[processors]]
[processors.decode_json_fields]
fields = ["m.j"]
target = "out.x"
`, `{"m.j":"{\"k\":1}","out.x":"old"}`, `{"m.j":"{\"k\":1}","out.x":{"k":1}}`},
		{"include_fields keeps a flat member nested", `
[[processors]]
[processors.include_fields]
fields = ["log.level", "a.b.c"]
`, `{"log.level":"warn","a":{"b.c":1},"z":1}`, `{"log":{"level":"warn"},"a":{"b":{"c":1}}}`},
	})
}

// TestUndoKeepsMemberOrder checks that a processor that fails halfway
// leaves the event's members where they were, not only their values.
func TestUndoKeepsMemberOrder(t *testing.T) {
	for _, c := range []struct{ name, doc, in, want string }{
		{"rename", `
[[processors]]
[processors.rename]
fields = [{from = "b", to = "z.b"}, {from = "nope", to = "y"}]
`, `{"a":1,"b":2,"c":3}`, `{"a":1,"b":2,"c":3,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: nope, Error: key not found"}}`},
		{"convert in rename mode", `
[[processors]]
[processors.convert]
mode = "rename"
fields = [{from = "b", to = "z.b", type = "string"}, {from = "c", to = "a.x", type = "string"}]
`, `{"a":1,"b":2,"c":3}`, `{"a":1,"b":2,"c":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := runOne(t, c.doc, c.in); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

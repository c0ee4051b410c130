package processors

import (
	"errors"
	"strings"
	"testing"
)

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
		{"add_fields merges into a flat target", `
[[processors]]
[processors.add_fields]
target = "project.x"
fields = {name = "n"}
`, `{"project.x":{"y":1}}`, `{"project.x":{"y":1,"name":"n"}}`},
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
		{"rename, beside a repeated key", `
[[processors]]
[processors.rename]
fields = [{from = "b", to = "z"}, {from = "nope", to = "y"}]
`, `{"a":1,"b":2,"a":3}`, `{"a":1,"b":2,"a":3,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: nope, Error: key not found"}}`},
		{"rename, a key written with an escape", `
[[processors]]
[processors.rename]
fields = [{from = "é", to = "z"}, {from = "nope", to = "y"}]
`, `{"\u00e9":1,"b":2}`, `{"\u00e9":1,"b":2,"error":{"message":"Failed to rename fields in processor: could not fetch value for key: nope, Error: key not found"}}`},
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

// TestConvertWritesNoCycle: convert in rename mode, with two fields from
// one object, puts it inside its own copy rather than inside itself
// (which would make an event that cannot be written out).
func TestConvertWritesNoCycle(t *testing.T) {
	got := runOne(t, `
[[processors]]
[processors.convert]
mode = "rename"
fields = [{from = "b", to = "a"}, {from = "b", to = "a.c"}]
`, `{"b":{"x":1}}`)
	if want := `{"a":{"x":1,"c":{"x":1}}}`; !sameJSON(t, got, want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestFilebeatOrderAndErrors: rename and copy_fields check the target
// before the source, and only a missing part (not one that is not an
// object) counts as missing; their errors and dissect's read as
// Filebeat's. Each expected event and error is what Filebeat's own
// processors gave for the same event and settings.
func TestFilebeatOrderAndErrors(t *testing.T) {
	runCases(t, []processorCase{
		{"rename checks the target first", `
[[processors]]
[processors.rename]
ignore_missing = true
fields = [{from = "nope", to = "x"}]
`, `{"x":1}`, `{"x":1,"error":{"message":"Failed to rename fields in processor: target field x already exists, drop or rename this field first"}}`},
		{"a source through a string is not missing", `
[[processors]]
[processors.rename]
ignore_missing = true
fields = [{from = "a.b", to = "x"}]
`, `{"a":"s"}`, `{"a":"s","error":{"message":"Failed to rename fields in processor: could not fetch value for key: a.b, Error: expected map but type is string"}}`},
		{"rename to a target through a string", `
[[processors]]
[processors.rename]
fields = [{from = "m", to = "x.y"}]
`, `{"m":1,"x":"s"}`, `{"m":1,"x":"s","error":{"message":"Failed to rename fields in processor: could not put value: x.y: 1, expected map but type is string"}}`},
		{"copy to a target through a string", `
[[processors]]
[processors.copy_fields]
fields = [{from = "m", to = "x.y"}]
`, `{"m":"v","x":"s"}`, `{"m":"v","x":"s","error":{"message":"Failed to copy fields in copy_fields processor: could not copy value to x.y: v, expected map but type is string"}}`},
		{"truncate_fields flags each field it cuts", `
[[processors]]
[processors.truncate_fields]
fields = ["a", "b"]
max_bytes = 2
`, `{"a":"abcdef","b":"xyz"}`, `{"a":"ab","b":"xy","log":{"flags":["truncated","truncated"]}}`},
		{"replace: a field through a string is not missing", `
[[processors]]
[processors.replace]
ignore_missing = true
fields = [{field = "a.b", pattern = "x", replacement = "y"}]
`, `{"a":"s"}`, `{"a":"s","error":{"message":"Failed to replace fields in processor: could not fetch value for key: a.b, Error: expected map but type is string"}}`},
		// Filebeat's JSON decoding (jsontransform) makes 5 an int64.
		{"replace: a value that is not a string", `
[[processors]]
[processors.replace]
fields = [{field = "a", pattern = "x", replacement = "y"}]
`, `{"a":5}`, `{"a":5,"error":{"message":"Failed to replace fields in processor: key 'a' expected type string, but got int64 with value '5'"}}`},
		{"dissect with overwrite_keys leaves out a field it cannot write", `
[[processors]]
[processors.dissect]
tokenizer = "%{a} %{a.b}"
target_prefix = ""
overwrite_keys = true
`, `{"message":"x y","a":{"q":1}}`, `{"message":"x y","a":"x"}`},
	})
	for _, c := range []struct{ name, proc, opts, in, want string }{
		{"truncate_fields through a string", "truncate_fields", "fields = [\"a.b\"]\nmax_bytes = 2\nignore_missing = true\nfail_on_error = true",
			`{"a":"abcdef"}`, "could not fetch value for key 'a.b': expected map but type is string"},
		{"dissect through a string, one by one", "dissect", `tokenizer = "%{a.b}"` + "\n" + `target_prefix = ""`,
			`{"message":"v","a":"s"}`, "cannot override existing key with `a.b`: expected map but type is string"},
		{"dissect through a string, in one descent", "dissect", `tokenizer = "%{a.b} %{c}"` + "\n" + `target_prefix = ""`,
			`{"message":"v w","a":"s"}`, "cannot override existing key with `a.b`: expected map but type is string"},
	} {
		t.Run(c.name, func(t *testing.T) { wantFailure(t, c.proc, c.opts, c.in, c.want) })
	}
}

// wantFailure runs the processor proc with the TOML options opts on the
// event in, and fails the test unless it fails with want, word for word,
// and leaves the event as it was.
func wantFailure(t *testing.T, proc, opts, in, want string) {
	t.Helper()
	p, err := djCompile(t, proc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := djRun(t, p, in); err == nil || err.Error() != want || out != in {
		t.Fatalf("event %s, error %v;\nwant the event as it was and %s", out, err, want)
	}
}

// TestTimestampAndMetadataStay: @timestamp and @metadata cannot be
// deleted, as in Filebeat, which keeps them apart from the fields: an
// event that lost @timestamp would be refused by a data stream.
func TestTimestampAndMetadataStay(t *testing.T) {
	const ts = `"@timestamp":"2024-05-01T10:00:00.123Z","@metadata":{"beat":"filebeat"}`
	runCases(t, []processorCase{
		{"rename from @timestamp fails", `
[[processors]]
[processors.rename]
fields = [{from = "@timestamp", to = "ts"}]
`, `{` + ts + `}`, `{` + ts + `,"error":{"message":"Failed to rename fields in processor: could not delete key: @timestamp,  deleting \"@timestamp\" key is not supported"}}`},
		{"convert in rename mode copies @timestamp", `
[[processors]]
[processors.convert]
mode = "rename"
fields = [{from = "@timestamp", to = "event.created"}]
`, `{` + ts + `}`, `{` + ts + `,"event":{"created":"2024-05-01T10:00:00.123Z"}}`},
	})
	// Filebeat's message, word for word.
	wantFailure(t, "drop_fields", `fields = ["a.b", "@metadata", "@timestamp", "nope"]`+"\nignore_missing = true", `{`+ts+`,"a":"s","m":1}`,
		`failed to drop field [a.b], error: expected map but type is string; failed to drop field [@metadata], error: deleting/replacing "@metadata" key is not supported; failed to drop field [@timestamp], error: deleting "@timestamp" key is not supported`)
}

// TestFilebeatSettings: settings Filebeat takes, or refuses, the same.
func TestFilebeatSettings(t *testing.T) {
	runCases(t, []processorCase{
		{"dissect's trim_values = both is all", `
[[processors]]
[processors.dissect]
tokenizer = "%{a}|%{b}"
trim_values = "both"
`, `{"message":" x | y "}`, `{"message":" x | y ","dissect":{"a":"x","b":"y"}}`},
	})
	_, err := djCompile(t, "add_fields", "fields = {}")
	if want := "processors[0].add_fields.fields: empty: list at least one field to add"; err == nil || err.Error() != want {
		t.Fatalf("add_fields with empty fields: error %v, want %q", err, want)
	}
}

// TestTimestampWrittenOnlyByTimestamp: Filebeat holds @timestamp as a
// time, and refuses or ignores every write of it but the timestamp
// processor's. A setting that names it as the place to write is refused
// when the configuration loads; a key known only per event (dissect's
// indirect fields) is left out as Filebeat leaves it out, or fails as it
// fails.
func TestTimestampWrittenOnlyByTimestamp(t *testing.T) {
	for _, c := range []struct{ name, proc, opts, at string }{
		{"add_fields target", "add_fields", `target = "@timestamp"` + "\n" + `fields = {a = 1}`, "target"},
		{"add_fields at the root", "add_fields", `target = ""` + "\n" + `fields = {"@timestamp" = "2020-01-01T00:00:00Z"}`, "fields"},
		{"add_fields at the root, dotted", "add_fields", `target = ""` + "\n" + `fields = {"@timestamp.x" = 1}`, "fields"},
		{"convert to", "convert", `fields = [{from = "ts", to = "@timestamp", type = "string"}]`, "fields[0].to"},
		{"convert in place", "convert", `fields = [{from = "@timestamp", type = "string"}]`, "fields[0].from"},
		{"decode_json_fields target", "decode_json_fields", `fields = ["message"]` + "\n" + `target = "@timestamp"`, "target"},
		{"dissect key at the root", "dissect", `tokenizer = "%{@timestamp} %{msg}"` + "\n" + `target_prefix = ""` + "\n" + `overwrite_keys = true`, "tokenizer"},
		{"rename to", "rename", `fields = [{from = "ts", to = "@timestamp"}]`, "fields[0]"},
		{"copy_fields to", "copy_fields", `fields = [{from = "ts", to = "@timestamp"}]`, "fields[0]"},
		{"add_tags target", "add_tags", `tags = ["x"]` + "\n" + `target = "@timestamp"`, "target"},
		{"truncate_fields", "truncate_fields", `fields = ["message", "@timestamp"]` + "\n" + `max_bytes = 4`, "fields"},
		{"replace", "replace", `fields = [{field = "@timestamp", pattern = "2024", replacement = "1999"}]`, "fields[0].field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := djCompile(t, c.proc, c.opts)
			if err == nil || !strings.Contains(err.Error(), "processors[0]."+c.proc+"."+c.at+": ") || !errors.Is(err, errTimestampTarget) {
				t.Fatalf("error %v; want %s refused for writing @timestamp", err, c.at)
			}
		})
	}
	const ts = `"@timestamp":"2024-05-01T10:00:00.123Z"`
	runCases(t, []processorCase{
		{"the timestamp processor sets it", `
[[processors]]
[processors.timestamp]
field = "ts"
layouts = ["2006-01-02T15:04:05Z07:00"]
`, `{` + ts + `,"ts":"2020-01-01T00:00:00Z"}`, `{"@timestamp":"2020-01-01T00:00:00.000Z","ts":"2020-01-01T00:00:00Z"}`},
		{"a dissect key under a prefix is another field", `
[[processors]]
[processors.dissect]
tokenizer = "%{@timestamp} %{msg}"
`, `{` + ts + `,"message":"2020 x"}`, `{` + ts + `,"message":"2020 x","dissect":{"@timestamp":"2020","msg":"x"}}`},
		{"dissect leaves an indirect @timestamp out with overwrite_keys", `
[[processors]]
[processors.dissect]
tokenizer = "%{*k} %{&k} %{msg}"
target_prefix = ""
overwrite_keys = true
`, `{` + ts + `,"message":"@timestamp 2020 x"}`, `{` + ts + `,"message":"@timestamp 2020 x","msg":"x"}`},
	})
	wantFailure(t, "dissect", `tokenizer = "%{*k} %{&k} %{msg}"`+"\n"+`target_prefix = ""`, `{`+ts+`,"message":"@timestamp 2020 x"}`,
		"cannot override existing key with `@timestamp`")
}

package processors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/internal/jsontree"
)

// djProc compiles one processor, name, from the TOML text of its options.
func djProc(t testing.TB, name, opts string) processor {
	t.Helper()
	p, err := djCompile(t, name, opts)
	if err != nil {
		t.Fatalf("compile %s: %v\n%s", name, err, opts)
	}
	return p
}

func djCompile(t testing.TB, name, opts string) (processor, error) {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode(opts, &m); err != nil {
		t.Fatalf("TOML: %v\n%s", err, opts)
	}
	l, err := Compile("processors", []map[string]any{{name: m}})
	if err != nil {
		return nil, err
	}
	return l.steps[0].proc, nil
}

// djRun runs p on the JSON event in and returns the event after it.
func djRun(t testing.TB, p processor, in string) (string, error) {
	t.Helper()
	var parser jsontree.Parser
	root, err := parser.Parse(in)
	if err != nil || root.Type() != jsontree.TypeObject {
		t.Fatalf("test event is not a JSON object: %v\n%s", err, in)
	}
	e := &event{root: root, arena: &jsontree.Arena{}}
	drop, err := p.run(e)
	if drop {
		t.Fatal("the event was dropped")
	}
	out := root.String()
	if !json.Valid([]byte(out)) {
		t.Fatalf("output is not valid JSON: %.300s", out)
	}
	return out, err
}

// djSameJSON reports whether a and b hold the same JSON value, member
// order aside (numbers compared by their text).
func djSameJSON(t testing.TB, a, b string) bool {
	t.Helper()
	x, err := djDecode(a)
	if err != nil {
		t.Fatalf("not JSON: %v\n%.300s", err, a)
	}
	y, err := djDecode(b)
	if err != nil {
		t.Fatalf("expected value is not JSON: %v\n%.300s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// djDecode decodes s, numbers as their text.
func djDecode(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// djCase is a row of a processor table: options, an event, the event
// expected after the processor (the same JSON value, or with exact the
// same text), and the error expected ("" for none; a trailing "..."
// matches a prefix).
type djCase struct {
	name, opts, in, want, err string
	exact                     bool // compare the text, not the value
}

func djRunCases(t *testing.T, proc string, cases []djCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := djRun(t, djProc(t, proc, c.opts), c.in)
			switch {
			case c.err == "" && err != nil:
				t.Errorf("error %q, want none", err)
			case c.err != "" && err == nil:
				t.Errorf("no error, want %q", c.err)
			case c.err != "" && strings.HasSuffix(c.err, "...") && !strings.HasPrefix(err.Error(), strings.TrimSuffix(c.err, "...")):
				t.Errorf("error %q, want %q", err, c.err)
			case c.err != "" && !strings.HasSuffix(c.err, "...") && err.Error() != c.err:
				t.Errorf("error %q\nwant      %q", err, c.err)
			}
			if c.exact && got != c.want || !c.exact && !djSameJSON(t, got, c.want) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// djMsg is the JSON text of the string s (a message holding JSON).
func djMsg(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const djLogJSON = `{"log":"{\"level\":\"info\"}","stream":"stderr","count":3}`

// TestDecodeJSONFields follows Filebeat's own tests of the processor
// (decode_json_fields_test.go) and its documented options.
func TestDecodeJSONFields(t *testing.T) {
	notObject := `{
		"someDate": "2016-09-28T01:40:26.760+0000",
		"someNumberAsString": "1475026826760",
		"someNumber": 1475026826760,
		"someString": "foobar",
		"someString2": "2017 is awesome",
		"someMap": "{\"a\":\"b\"}",
		"someArray": "[1,2,3]"
	}`
	djRunCases(t, "decode_json_fields", []djCase{
		{name: "missing field", opts: `fields = ["msg"]`,
			in: `{"pipeline":"us1"}`, want: `{"pipeline":"us1"}`},
		{name: "field not a string", opts: `fields = ["msg"]`,
			in: `{"msg":123,"pipeline":"us1"}`, want: `{"msg":123,"pipeline":"us1"}`},
		{name: "field through a string", opts: `fields = ["a.b"]`,
			in: `{"a":"x"}`, want: `{"a":"x"}`, err: "expected map but type is string"},
		{name: "invalid JSON", opts: `fields = ["msg"]`,
			in:   `{"msg":` + djMsg(strings.TrimSuffix(djLogJSON, "}")) + `,"pipeline":"us1"}`,
			want: `{"msg":` + djMsg(strings.TrimSuffix(djLogJSON, "}")) + `,"pipeline":"us1"}`,
			err:  "unexpected EOF"},
		{name: "not JSON: a number then more", opts: `fields = ["msg"]`,
			in:   `{"msg":"11:38:04,323 |-INFO testing","pipeline":"us1"}`,
			want: `{"msg":"11:38:04,323 |-INFO testing","pipeline":"us1"}`,
			err:  "multiple json elements found"},
		{name: "not JSON: trailing garbage", opts: `fields = ["msg"]`,
			in: `{"msg":"{} x"}`, want: `{"msg":"{} x"}`, err: "multiple json elements found"},
		{name: "not JSON: closing bracket after", opts: `fields = ["msg"]`,
			in: `{"msg":"{}]"}`, want: `{"msg":"{}]"}`, err: "invalid character ']' looking for beginning of value"},
		{name: "empty text", opts: `fields = ["msg"]`,
			in: `{"msg":""}`, want: `{"msg":""}`, err: "EOF"},
		{name: "depth 1", opts: `fields = ["msg"]`,
			in:   `{"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`,
			want: `{"msg":{"log":"{\"level\":\"info\"}","stream":"stderr","count":3},"pipeline":"us1"}`},
		{name: "depth 2", opts: "fields = [\"msg\"]\nmax_depth = 2",
			in:   `{"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`,
			want: `{"msg":{"log":{"level":"info"},"stream":"stderr","count":3},"pipeline":"us1"}`},
		{name: "target", opts: "fields = [\"msg\"]\nmax_depth = 2\ntarget = \"doc\"",
			in:   `{"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`,
			want: `{"doc":{"log":{"level":"info"},"stream":"stderr","count":3},"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`},
		{name: "target root", opts: "fields = [\"msg\"]\nmax_depth = 2\ntarget = \"\"",
			in:   `{"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`,
			want: `{"log":{"level":"info"},"stream":"stderr","count":3,"msg":` + djMsg(djLogJSON) + `,"pipeline":"us1"}`},
		{name: "not object or array, depth 1", opts: "fields = [\"msg\"]\nprocess_array = true",
			in: `{"msg":` + djMsg(notObject) + `}`,
			want: `{"msg":{"someDate":"2016-09-28T01:40:26.760+0000","someNumberAsString":"1475026826760","someNumber":1475026826760,` +
				`"someString":"foobar","someString2":"2017 is awesome","someMap":"{\"a\":\"b\"}","someArray":"[1,2,3]"}}`},
		{name: "not object or array, depth 10", opts: "fields = [\"msg\"]\nprocess_array = true\nmax_depth = 10",
			in: `{"msg":` + djMsg(notObject) + `}`,
			want: `{"msg":{"someDate":"2016-09-28T01:40:26.760+0000","someNumberAsString":"1475026826760","someNumber":1475026826760,` +
				`"someString":"foobar","someString2":"2017 is awesome","someMap":{"a":"b"},"someArray":[1,2,3]}}`},
		{name: "array in a string, arrays off", opts: "fields = [\"msg\"]\nmax_depth = 10",
			in:   `{"msg":` + djMsg(`{"arrayOfMap": "[{\"a\":\"b\"}]"}`) + `}`,
			want: `{"msg":{"arrayOfMap":"[{\"a\":\"b\"}]"}}`},
		{name: "array in a string, arrays on", opts: "fields = [\"msg\"]\nmax_depth = 10\nprocess_array = true",
			in:   `{"msg":` + djMsg(`{"arrayOfMap": "[{\"a\":\"b\"}]"}`) + `}`,
			want: `{"msg":{"arrayOfMap":[{"a":"b"}]}}`},
		{name: "invalid array in a string", opts: "fields = [\"msg\"]\nmax_depth = 10\nprocess_array = true",
			in:   `{"msg":` + djMsg(`{"arrayOfMap": "[]]"}`) + `}`,
			want: `{"msg":{"arrayOfMap":"[]]"}}`},
		{name: "last level decodes arrays even with arrays off", opts: "fields = [\"msg\"]\nmax_depth = 2",
			in: `{"msg":` + djMsg(`{"a":"[1,2]"}`) + `}`, want: `{"msg":{"a":[1,2]}}`},
		{name: "strings of an array, depth 2", opts: "fields = [\"msg\"]\nmax_depth = 2\nprocess_array = true",
			in: `{"msg":` + djMsg(`["{\"a\":1}","x",3," [2] "]`) + `}`, want: `{"msg":[{"a":1},"x",3,[2]]}`},
		{name: "only the decoded value's own strings are decoded", opts: "fields = [\"msg\"]\nmax_depth = 3",
			in: `{"msg":` + djMsg(`{"o":{"s":"{\"x\":1}"}}`) + `}`, want: `{"msg":{"o":{"s":"{\"x\":1}"}}}`},
		{name: "array, depth 1", opts: `fields = ["msg"]`,
			in: `{"msg":"[1,2]"}`, want: `{"msg":[1,2]}`},
		{name: "array, depth 2 without process_array", opts: "fields = [\"msg\"]\nmax_depth = 2",
			in: `{"msg":"[1,2]"}`, want: `{"msg":"[1,2]"}`, err: "processing skipped"},
		{name: "scalar", opts: `fields = ["msg"]`,
			in: `{"msg":" 12.50 "}`, want: `{"msg":12.50}`},
		{name: "scalar to the root", opts: "fields = [\"msg\"]\ntarget = \"\"",
			in: `{"msg":"true"}`, want: `{"msg":"true"}`, err: "failed to add target to root"},
		{name: "target through a string", opts: "fields = [\"msg\"]\ntarget = \"a.b\"",
			in: `{"a":"x","msg":"{}"}`, want: `{"a":"x","msg":"{}"}`, err: "expected map but type is string"},
		{name: "errors of several fields", opts: `fields = ["a", "b", "c"]`,
			in:   `{"a":"x","b":"{\"k\":1}","c":"y"}`,
			want: `{"a":"x","b":{"k":1},"c":"y"}`,
			err:  "invalid character 'x' looking for beginning of value, invalid character 'y' looking for beginning of value"},
		{name: "a repeated key stays", opts: `fields = ["msg"]`,
			in: `{"msg":` + djMsg(`{"a":1,"b":2,"a":3}`) + `}`, want: `{"msg":{"a":1,"b":2,"a":3}}`, exact: true},
		{name: "a repeated key merged into the root: the last wins", opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true",
			in: `{"msg":` + djMsg(`{"a":1,"a":3}`) + `}`, want: `{"msg":` + djMsg(`{"a":1,"a":3}`) + `,"a":3}`, exact: true},
		{name: "a repeated key at a level max_depth decodes: the last wins", opts: "fields = [\"msg\"]\nmax_depth = 2",
			in: `{"msg":` + djMsg(`{"a":"x","b":1,"a":"{\"c\":1}"}`) + `}`, want: `{"msg":{"a":{"c":1},"b":1}}`, exact: true},
		{name: "document_id repeated: the last", opts: "fields = [\"msg\"]\ndocument_id = \"id\"",
			in: `{"msg":` + djMsg(`{"id":"a","x":1,"id":"b"}`) + `}`, want: `{"msg":{"x":1},"@metadata":{"_id":"b"}}`, exact: true},
		{name: "document_id empty: removed, not set", opts: "fields = [\"msg\"]\ndocument_id = \"id\"",
			in: `{"msg":` + djMsg(`{"id":"","a":1}`) + `}`, want: `{"msg":{"a":1}}`},
		{name: "escapes and control characters", opts: `fields = ["msg"]`,
			in:   `{"msg":` + djMsg(`{"s\n":"a\"b\\c\u00e9\ud83d\ude00\u001b[0m\u0000","lone":"\ud800"}`) + `}`,
			want: `{"msg":{"s\n":"a\"b\\c\u00e9\ud83d\ude00\u001b[0m\u0000","lone":"\ufffd"}}`},
		{name: "numbers keep their text", opts: `fields = ["msg"]`,
			in: `{"msg":` + djMsg(`{"a":1.0,"b":-0,"c":12345678901234567890123,"d":1e400}`) + `}`, want: `{"msg":{"a":1.0,"b":-0,"c":12345678901234567890123,"d":1e400}}`},
		{name: "document_id", opts: "fields = [\"msg\"]\ndocument_id = \"myid\"",
			in:   `{"msg":` + djMsg(`{"log": "message", "myid": "myDocumentID"}`) + `}`,
			want: `{"msg":{"log":"message"},"@metadata":{"_id":"myDocumentID"}}`},
		{name: "document_id nested, into the existing @metadata", opts: "fields = [\"msg\"]\ndocument_id = \"a.id\"",
			in:   `{"@metadata":{"beat":"filebeat"},"msg":` + djMsg(`{"a":{"id":"x","b":1}}`) + `}`,
			want: `{"@metadata":{"beat":"filebeat","_id":"x"},"msg":{"a":{"b":1}}}`},
		{name: "document_id with a dot in the key", opts: "fields = [\"msg\"]\ndocument_id = \"a.id\"",
			in:   `{"msg":` + djMsg(`{"a.id":"y","a":{"id":"x"}}`) + `}`,
			want: `{"msg":{"a":{"id":"x"}},"@metadata":{"_id":"y"}}`},
		{name: "document_id not a string", opts: "fields = [\"msg\"]\ndocument_id = \"myid\"",
			in: `{"msg":` + djMsg(`{"myid":5}`) + `}`, want: `{"msg":{"myid":5}}`},
		{name: "document_id with the root as target", opts: "fields = [\"msg\"]\ndocument_id = \"id\"\ntarget = \"\"",
			in: `{"msg":` + djMsg(`{"id":"i","a":1}`) + `}`, want: `{"msg":"{\"id\":\"i\",\"a\":1}","a":1,"@metadata":{"_id":"i"}}`},
		{name: "unmarshal error with add_error_key", opts: "fields = \"message\"\nadd_error_key = true",
			in: `{"message":"Broken JSON [[","error":{"code":1}}`,
			want: `{"message":"Broken JSON [[","error":{"message":"parsing input as JSON: invalid character 'B' looking for beginning of value",` +
				`"type":"json","data":"Broken JSON [[","field":"message"}}`,
			err: "invalid character 'B' looking for beginning of value"},
		{name: "unmarshal error of an empty text with add_error_key", opts: "fields = \"message\"\nadd_error_key = true",
			in:   `{"message":""}`,
			want: `{"message":"","error":{"message":"parsing input as JSON: EOF","type":"json","field":"message"}}`,
			err:  "EOF"},
		{name: "root: without overwrite_keys, the event's values stay; objects replace the rest",
			opts: "fields = [\"msg\"]\ntarget = \"\"",
			in: `{"@timestamp":"2020-01-01T00:00:00.000Z","a":0,"b":"str","d":{"f":2},"msg":` +
				djMsg(`{"a":1,"b":{"c":2},"d":{"e":1,"f":3},"@timestamp":"x","@metadata":{"m":1},"type":"t","n":null}`) + `}`,
			want: `{"@timestamp":"2020-01-01T00:00:00.000Z","a":0,"b":{"c":2},"d":{"f":2,"e":1},"type":"t","n":null,"msg":` +
				djMsg(`{"a":1,"b":{"c":2},"d":{"e":1,"f":3},"@timestamp":"x","@metadata":{"m":1},"type":"t","n":null}`) + `}`},
		{name: "root: overwrite_keys",
			opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true\nadd_error_key = true",
			in: `{"@timestamp":"2020-01-01T00:00:00.000Z","@metadata":{"beat":"filebeat"},"a":0,"d":{"f":2},"type":"old","msg":` +
				djMsg(`{"a":1,"d":{"e":1,"f":3},"@timestamp":"2024-05-06T07:08:09+02:00","@metadata":{"pipeline":"p"},"type":"_x"}`) + `}`,
			want: `{"@timestamp":"2024-05-06T05:08:09.000Z","@metadata":{"beat":"filebeat","pipeline":"p"},"a":1,"d":{"f":3,"e":1},"type":"old",` +
				`"error":{"message":"type not overwritten (invalid value [_x])","type":"json"},"msg":` +
				djMsg(`{"a":1,"d":{"e":1,"f":3},"@timestamp":"2024-05-06T07:08:09+02:00","@metadata":{"pipeline":"p"},"type":"_x"}`) + `}`},
		{name: "root: overwrite_keys with a valid type and an ISO 8601 @timestamp",
			opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true",
			in:   `{"msg":` + djMsg(`{"@timestamp":"2024-05-06T07:08:09.123+0200","type":"doc"}`) + `}`,
			want: `{"@timestamp":"2024-05-06T05:08:09.123Z","type":"doc","msg":` + djMsg(`{"@timestamp":"2024-05-06T07:08:09.123+0200","type":"doc"}`) + `}`},
		{name: "root: @timestamp that does not parse, add_error_key",
			opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true\nadd_error_key = true",
			in:   `{"msg":"{\"@timestamp\":\"{}\"}"}`,
			want: `{"msg":"{\"@timestamp\":\"{}\"}","error":{"message":"@timestamp not overwritten (parse error on {})","type":"json"}}`},
		{name: "root: @timestamp that does not parse, no add_error_key",
			opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true",
			in:   `{"msg":"{\"@timestamp\":\"{}\"}"}`,
			want: `{"msg":"{\"@timestamp\":\"{}\"}"}`},
		{name: "root: overwrite @metadata", opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true",
			in:   `{"msg":` + djMsg(`{"@metadata":{"beat":"libbeat"},"msg":"overwrite metadata test"}`) + `}`,
			want: `{"msg":"overwrite metadata test","@metadata":{"beat":"libbeat"}}`},
		{name: "root: @metadata not an object", opts: "fields = [\"msg\"]\ntarget = \"\"\noverwrite_keys = true\nadd_error_key = true",
			in:   `{"msg":` + djMsg(`{"@metadata":1}`) + `}`,
			want: `{"msg":"{\"@metadata\":1}","error":{"message":"failed to update @metadata","type":"json"}}`},
		{name: "expand_keys to the root", opts: "fields = [\"msg\"]\nexpand_keys = true\ntarget = \"\"",
			in:   `{"msg":` + djMsg(`{"a.b": {"c": "c"}, "a.b.d": "d"}`) + `}`,
			want: `{"msg":` + djMsg(`{"a.b": {"c": "c"}, "a.b.d": "d"}`) + `,"a":{"b":{"c":"c","d":"d"}}}`},
		{name: "expand_keys conflict", opts: "fields = [\"msg\"]\nexpand_keys = true\nadd_error_key = true\ntarget = \"\"",
			in: `{"msg":` + djMsg(`{"a.b": "c", "a.b.c": "d"}`) + `}`,
			want: `{"msg":` + djMsg(`{"a.b": "c", "a.b.c": "d"}`) + `,"error":{"message":` +
				`"cannot expand \"a.b.c\": found conflicting key: expected map but type is string","type":"json"}}`},
		{name: "expand_keys conflict without add_error_key", opts: "fields = [\"msg\"]\nexpand_keys = true\ntarget = \"\"",
			in:   `{"msg":` + djMsg(`{"a.b": "c", "a.b.c": "d"}`) + `}`,
			want: `{"msg":` + djMsg(`{"a.b": "c", "a.b.c": "d"}`) + `}`},
		{name: "expand_keys existing value", opts: "fields = [\"msg\"]\nexpand_keys = true\nadd_error_key = true\ntarget = \"t\"",
			in: `{"msg":` + djMsg(`{"a":{"b":1},"a.b":2}`) + `}`,
			want: `{"msg":` + djMsg(`{"a":{"b":1},"a.b":2}`) + `,"t":{"a":{"b":2}},"error":{"message":` +
				`"cannot expand \"a.b\": found existing (int64) value","type":"json"}}`},
		{name: "expand_keys merges objects, inside objects too", opts: "fields = [\"msg\"]\nexpand_keys = true\ntarget = \"t\"",
			in:   `{"msg":` + djMsg(`{"a":{"x":1},"a.y":{"z.w":2},"o":{"p.q":3}}`) + `}`,
			want: `{"msg":` + djMsg(`{"a":{"x":1},"a.y":{"z.w":2},"o":{"p.q":3}}`) + `,"t":{"a":{"x":1,"y":{"z":{"w":2}}},"o":{"p":{"q":3}}}}`},
		{name: "expand_keys of a value that is not an object", opts: "fields = [\"msg\"]\nexpand_keys = true\ntarget = \"t\"",
			in: `{"msg":"[1]"}`, want: `{"msg":"[1]","t":[1]}`, err: "failed to expand keys"},
	})
}

func TestDecodeJSONFieldsConfig(t *testing.T) {
	for _, c := range []struct{ opts, err string }{
		{`process_array = true`, "processors[0].decode_json_fields.fields: missing (required)"},
		{`fields = []`, "processors[0].decode_json_fields.fields: must name at least one field"},
		{`fields = ["a..b"]`, `processors[0].decode_json_fields.fields[0]: field name "a..b" has an empty part`},
		{`fields = [1]`, "processors[0].decode_json_fields.fields[0]: want a string, got the integer 1"},
		{"fields = [\"a\"]\nmax_depth = 0", "processors[0].decode_json_fields.max_depth: requires value >= 1, got 0"},
		{"fields = [\"a\"]\nmax_depth = \"2\"", `processors[0].decode_json_fields.max_depth: want an integer, got the string "2"`},
		{"fields = [\"a\"]\ntarget = \".x\"", `processors[0].decode_json_fields.target: field name ".x" has an empty part`},
		{"fields = [\"a\"]\nprocess_array = \"yes\"", `processors[0].decode_json_fields.process_array: want true or false, got the string "yes"`},
		{"fields = [\"a\"]\nmaxDepth = 2", "processors[0].decode_json_fields.maxDepth: unknown option..."},
	} {
		_, err := djCompile(t, "decode_json_fields", c.opts)
		var ce *ConfigError
		switch {
		case err == nil:
			t.Errorf("%q: no error, want %q", c.opts, c.err)
		case !errors.As(err, &ce):
			t.Errorf("%q: error %T %v is not a *ConfigError", c.opts, err, err)
		case strings.HasSuffix(c.err, "...") && !strings.HasPrefix(err.Error(), strings.TrimSuffix(c.err, "...")),
			!strings.HasSuffix(c.err, "...") && err.Error() != c.err:
			t.Errorf("%q: error %q\nwant %q", c.opts, err, c.err)
		}
	}
	for _, opts := range []string{
		`fields = "message"`,
		"fields = [\"a\", \"b.c\"]\nmax_depth = 3\nprocess_array = true\ntarget = \"\"\noverwrite_keys = true\nadd_error_key = true\nexpand_keys = true\ndocument_id = \"id\"",
		"fields = [\"a\"]\ntarget = \"json\"\nwhen.has_fields = [\"a\"]",
	} {
		if _, err := djCompile(t, "decode_json_fields", opts); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
}

// TestDecodeJSONFieldsSyntaxErrors checks that the processor fails where
// encoding/json (Filebeat's decoder) does, with its message.
func TestDecodeJSONFieldsSyntaxErrors(t *testing.T) {
	p := djProc(t, "decode_json_fields", `fields = ["m"]`)
	for _, text := range []string{"", " ", "{", "[1,]", `{"a":1,}`, "01", "1.", "-", "+1", "nan", "tru", `"\x"`, "\"\x01\"",
		`{"a" 1}`, "{}{}", "[] ]", "\ufeff{}", `"\ud800"`, "1e5", " [ 1 , {} ] ", strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 9000) + strings.Repeat("]", 9000)} {
		in := `{"m":` + djMsg(text) + `}`
		got, err := djRun(t, p, in)
		want, wantErr := djRefUnmarshal(1, text, false)
		if wantErr != nil {
			if err == nil || err.Error() != wantErr.Error() {
				t.Errorf("%.40q: error %v, want %v", text, err, wantErr)
			}
			if got != in {
				t.Errorf("%.40q: the event changed: %s", text, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%.40q: error %v, want none", text, err)
			continue
		}
		djCheckDecoded(t, got, want)
	}
}

// djRefUnmarshal is Filebeat's unmarshal of decode_json_fields, written
// with encoding/json as Filebeat's is: the reference of the tests.
func djRefUnmarshal(maxDepth int, text string, processArray bool) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("multiple json elements found")
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, err
	}
	maxDepth--
	if maxDepth == 0 {
		return v, nil
	}
	try := func(x any) (any, bool) {
		s, ok := x.(string)
		if !ok || !djStructured(s) {
			return x, false
		}
		d, err := djRefUnmarshal(maxDepth, s, processArray)
		if err != nil {
			return x, false
		}
		return d, true
	}
	switch o := v.(type) {
	case map[string]any:
		for k, x := range o {
			if d, ok := try(x); ok {
				o[k] = d
			}
		}
	case []any:
		if !processArray {
			return nil, djErrSkipped
		}
		for i, x := range o {
			if d, ok := try(x); ok {
				o[i] = d
			}
		}
	}
	return v, nil
}

// djCheckDecoded checks that the event got holds want at m (numbers
// compared by their text).
func djCheckDecoded(t *testing.T, got string, want any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(got))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("output: %v\n%s", err, got)
	}
	if !reflect.DeepEqual(ev["m"], want) {
		t.Errorf("decoded %#v\nwant    %#v", ev["m"], want)
	}
}

// FuzzDecodeJSON runs decode_json_fields (max_depth 2, process_array)
// through a chain on an event whose message is the fuzzed text: it must
// not fail the chain nor panic, its output must be valid JSON, and the
// message must become what Filebeat's decoder makes of it (or stay, with
// the decoder's error).
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{djLogJSON, `{"a":"[1,{\"b\":\"{}\"}]"}`, `["{\"a\":1}"]`, "11:38:04 x", `{"a.b":1,"a":{"c":2}}`,
		`{"s":"\u001b[31m\ud800"}`, `{"a":1,"a":2}`, `[]`, `""`, `1e400`, " {\"x\" : [ ] } "} {
		f.Add(s)
	}
	c := djChain(f, "fields = [\"message\"]\nmax_depth = 2\nprocess_array = true")
	r := c.NewRunner()
	f.Fuzz(func(t *testing.T, msg string) {
		ev, _ := json.Marshal(map[string]any{"@timestamp": "2026-12-02T10:57:41.210Z", "message": msg})
		out, keep, err := r.Run(ev)
		if err != nil || !keep {
			t.Fatalf("run: keep %v, err %v", keep, err)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q", out)
		}
		// The text the processor saw: the message as the event holds it.
		var in map[string]any
		_ = json.Unmarshal(ev, &in)
		text := in["message"].(string)
		dec := json.NewDecoder(strings.NewReader(string(out)))
		dec.UseNumber()
		var got map[string]any
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("output: %v", err)
		}
		want, wantErr := djRefUnmarshal(2, text, true)
		if wantErr != nil {
			if got["message"] != text {
				t.Fatalf("message %q changed to %#v on an error (%v)", text, got["message"], wantErr)
			}
			return
		}
		if !reflect.DeepEqual(got["message"], want) {
			t.Fatalf("message %q\ndecoded %#v\nwant    %#v", text, got["message"], want)
		}
	})
}

func djChain(t testing.TB, opts string) *Chain {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode(opts, &m); err != nil {
		t.Fatal(err)
	}
	l, err := Compile("processors", []map[string]any{{"decode_json_fields": m}})
	if err != nil {
		t.Fatal(err)
	}
	return NewChain(l)
}

// djBenchMessage is a 300 B JSON log line.
const djBenchMessage = `{"level":"error","ts":"2026-12-02T10:00:01.123Z","logger":"payments.gateway","msg":"payment failed","order_id":4211,` +
	`"user":{"id":"u-9921","name":"ada"},"amount":129.95,"currency":"EUR","attempt":3,"error":{"code":"card_declined",` +
	`"detail":"insufficient funds"},"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`

// djBenchEvent is a Filebeat event of about 1 KiB carrying message.
func djBenchEvent(message string) []byte {
	return []byte(`{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},` +
		`"log":{"offset":1048576,"file":{"path":"/var/log/payments/gateway.log","device_id":"65024","inode":"786442"}},` +
		`"message":` + djMsg(message) + `,"input":{"type":"filestream"},"ecs":{"version":"8.0.0"},` +
		`"host":{"name":"web-7","hostname":"web-7","architecture":"x86_64","os":{"kernel":"6.1.0-18-amd64","codename":"bookworm",` +
		`"type":"linux","platform":"debian","version":"12 (bookworm)","family":"debian","name":"Debian GNU/Linux"},` +
		`"id":"9f1c2d3e4b5a69788796a5b4c3d2e1f0","containerized":false,"ip":["10.20.30.40","fe80::5054:ff:fe12:3456"]},` +
		`"agent":{"type":"filebeat","version":"9.3.0","ephemeral_id":"760f60ca-369e-4721-9f7e-b6a6dd214af6","name":"web-7"}}`)
}

// BenchmarkDecodeJSONFields runs decode_json_fields through a chain on a
// 1 KiB event with a 300 B JSON message: parse, processor and
// serialization of the whole event. Run with GOMAXPROCS=1 for one core.
func BenchmarkDecodeJSONFields(b *testing.B) {
	ev := djBenchEvent(djBenchMessage)
	for _, c := range []struct{ name, opts string }{
		{"in_place", `fields = ["message"]`},
		{"target", "fields = [\"message\"]\ntarget = \"json\""},
		{"root", "fields = [\"message\"]\ntarget = \"\""},
		{"max_depth=2", "fields = [\"message\"]\nmax_depth = 2\nprocess_array = true"},
		{"not_json", `fields = ["message"]`},
	} {
		b.Run(c.name, func(b *testing.B) {
			ev := ev
			if c.name == "not_json" {
				ev = djBenchEvent(`203.0.113.195 - alice [02/Dec/2026:10:00:00 +0000] "GET /api/v1/orders/4211 HTTP/1.1" 200 5120`)
			}
			r := djChain(b, c.opts).NewRunner()
			out, keep, err := r.Run(ev)
			if err != nil || !keep {
				b.Fatalf("keep %v err %v", keep, err)
			}
			if c.name != "not_json" && strings.Contains(string(out), `"message":"{`) && c.name != "target" && c.name != "root" {
				b.Fatalf("not decoded: %s", out)
			}
			benchRunner(b, r, ev)
		})
	}
}

// TestDecodeJSONFieldsConcurrent runs one compiled chain of the three
// processors from several goroutines, each with its Runner, as outputs
// do: the processors must be safe for concurrent use (run with -race).
func TestDecodeJSONFieldsConcurrent(t *testing.T) {
	doc := `
[[processors]]
[processors.decode_json_fields]
fields = ["message"]
target = ""
max_depth = 2
process_array = true
document_id = "trace_id"
[[processors]]
[processors.convert]
fields = [{from = "order_id", to = "order.id", type = "string"}, {from = "amount", type = "long"}]
[[processors]]
[processors.timestamp]
field = "ts"
layouts = ["2006-01-02T15:04:05.999Z07:00"]
`
	var top map[string]any
	if _, err := toml.Decode(doc, &top); err != nil {
		t.Fatal(err)
	}
	list, err := asTables(top["processors"])
	if err != nil {
		t.Fatal(err)
	}
	l, err := Compile("processors", list)
	if err != nil {
		t.Fatal(err)
	}
	c := NewChain(l)
	ev := djBenchEvent(djBenchMessage)
	want, _, err := c.NewRunner().Run(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(want, &got); err != nil {
		t.Fatal(err)
	}
	meta, _ := got["@metadata"].(map[string]any)
	order, _ := got["order"].(map[string]any)
	if got["@timestamp"] != "2026-12-02T10:00:01.123Z" || got["amount"] != 129.0 || order["id"] != "4211" ||
		meta["_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || got["trace_id"] != nil {
		t.Fatalf("unexpected event: %s", want)
	}
	want = append([]byte(nil), want...)
	done := make(chan error)
	for range 4 {
		go func() {
			r := c.NewRunner()
			for range 200 {
				out, _, err := r.Run(ev)
				if err == nil && string(out) != string(want) {
					err = fmt.Errorf("got %s", out)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

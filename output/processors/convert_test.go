package processors

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

const convPrefix = "failed in processor.convert: "

// TestConvert follows Filebeat's own tests of the processor
// (convert_test.go) and its documented options.
func TestConvert(t *testing.T) {
	djRunCases(t, "convert", []djCase{
		{name: "missing field", opts: `fields = [{from = "src", to = "dst", type = "integer"}]`,
			in: `{}`, want: `{}`,
			err: convPrefix + "conversion of field [src] to type [integer] with target field [dst] failed: field [src] is missing: key not found"},
		{name: "missing field, ignore_missing", opts: "fields = [{from = \"src\", to = \"dst\", type = \"integer\"}]\nignore_missing = true",
			in: `{}`, want: `{}`},
		{name: "missing field, no fail_on_error", opts: "fields = [{from = \"src\", to = \"dst\", type = \"integer\"}]\nfail_on_error = false",
			in: `{}`, want: `{}`},
		{name: "field through a string, ignore_missing", opts: "fields = [{from = \"a.b\", type = \"integer\"}]\nignore_missing = true",
			in: `{"a":"x"}`, want: `{"a":"x"}`,
			err: convPrefix + "conversion of field [a.b] to type [integer] failed: field [a.b] is missing: expected map but type is string"},
		{name: "invalid IP", opts: `fields = [{from = "source.address", to = "source.ip", type = "ip"}]`,
			in: `{"source":{"address":"host.local"}}`, want: `{"source":{"address":"host.local"}}`,
			err: convPrefix + "conversion of field [source.address] to type [ip] with target field [source.ip] failed: unable to convert value [host.local]: value is not a valid IP address"},
		{name: "invalid IP, no fail_on_error", opts: "fields = [{from = \"source.address\", to = \"source.ip\", type = \"ip\"}]\nfail_on_error = false",
			in: `{"source":{"address":"host.local"}}`, want: `{"source":{"address":"host.local"}}`},
		{name: "copy (the default mode)", opts: `fields = [{from = "source.address", to = "source.ip", type = "ip"}]`,
			in: `{"source":{"address":"127.0.0.1"}}`, want: `{"source":{"address":"127.0.0.1","ip":"127.0.0.1"}}`},
		{name: "rename", opts: "fields = [{from = \"source.address\", to = \"source.ip\", type = \"ip\"}]\nmode = \"rename\"",
			in: `{"source":{"address":"127.0.0.1"}}`, want: `{"source":{"ip":"127.0.0.1"}}`},
		{name: "mode is case-insensitive", opts: "fields = [{from = \"a\", to = \"b\"}]\nmode = \"RENAME\"",
			in: `{"a":1}`, want: `{"b":1}`},
		{name: "tag names the processor in errors", opts: "fields = [{from = \"a\", type = \"long\"}]\ntag = \"convert_a\"",
			in: `{"a":"x"}`, want: `{"a":"x"}`,
			err: `failed in processor.convert with instance_id=convert_a: conversion of field [a] to type [long] failed: unable to convert value [x]: strconv.ParseInt: parsing "x": invalid syntax`},
		{name: "no field is written when one fails", opts: `fields = [{from = "port", type = "integer"}, {from = "address", to = "ip", type = "ip"}]`,
			in: `{"port":"80"}`, want: `{"port":"80"}`,
			err: convPrefix + "conversion of field [address] to type [ip] with target field [ip] failed: field [address] is missing: key not found"},
		{name: "the others are written without fail_on_error", opts: "fields = [{from = \"port\", type = \"integer\"}, {from = \"address\", to = \"ip\", type = \"ip\"}]\nfail_on_error = false",
			in: `{"port":"80"}`, want: `{"port":80}`},
		{name: "put error", opts: `fields = [{from = "port", to = "port.number", type = "integer"}]`,
			in: `{"port":"80"}`, want: `{"port":"80"}`,
			err: convPrefix + "conversion of field [port] to type [integer] with target field [port.number] failed: failed to put field [port.number]: expected map but type is string"},
		{name: "put error undoes the fields before", opts: `fields = [{from = "id", to = "event.id", type = "integer"}, {from = "port", to = "port.number", type = "integer"}]`,
			in: `{"id":"32","port":"80"}`, want: `{"id":"32","port":"80"}`,
			err: convPrefix + "conversion of field [port] to type [integer] with target field [port.number] failed: failed to put field [port.number]: expected map but type is string"},
		{name: "put error without fail_on_error: rename still removes from", opts: "fields = [{from = \"a\", to = \"b.c\"}]\nmode = \"rename\"\nfail_on_error = false",
			in: `{"a":1,"b":"s"}`, want: `{"b":"s"}`},
		{name: "copy without type copies objects", opts: `fields = [{from = "a", to = "b"}]`,
			in: `{"a":{"x":[1,{"y":2}]}}`, want: `{"a":{"x":[1,{"y":2}]},"b":{"x":[1,{"y":2}]}}`},
		{name: "null to a field", opts: `fields = [{from = "a", to = "b"}]`,
			in: `{"a":null}`, want: `{"a":null,"b":null}`},
		{name: "two renames of one field", opts: "fields = [{from = \"a\", to = \"b\"}, {from = \"a\", to = \"c\", type = \"string\"}]\nmode = \"rename\"",
			in: `{"a":1}`, want: `{"b":1,"c":"1"}`},
		// Values are read before any write; then each rename writes to
		// and removes from in turn: the second removes b, written first.
		{name: "values are read before writes, written in turn", opts: "fields = [{from = \"a\", to = \"b\", type = \"string\"}, {from = \"b\", to = \"a\", type = \"long\"}]\nmode = \"rename\"",
			in: `{"a":1,"b":"2"}`, want: `{"a":2}`},
	})
}

// TestConvertRestoresTheEvent checks that a failed write leaves the event
// as it was, member order included.
func TestConvertRestoresTheEvent(t *testing.T) {
	p := djProc(t, "convert", "fields = [{from = \"a\", to = \"x\", type = \"string\"}, {from = \"b\", to = \"n.new.deep\"}, {from = \"c\", to = \"z.c\", type = \"integer\"}]\nmode = \"rename\"")
	const in = `{"a":1,"b":"2","c":"3","n":{"k":true},"z":0}`
	got, err := djRun(t, p, in)
	if err == nil || !strings.HasSuffix(err.Error(), "failed to put field [z.c]: expected map but type is string") && !strings.HasSuffix(err.Error(), "expected map but type is int64") {
		t.Errorf("error %v", err)
	}
	if got != in {
		t.Errorf("got  %s\nwant %s", got, in)
	}
}

// TestConvertTypes follows Filebeat's table of conversions (TestDataTypes).
func TestConvertTypes(t *testing.T) {
	type row struct {
		typ, in, out string // out "": the conversion fails
	}
	rows := []row{
		{"string", `null`, ""}, {"string", `"x"`, `"x"`}, {"string", `1`, `"1"`}, {"string", `1.1`, `"1.1"`},
		{"string", `true`, `"true"`}, {"string", `1.0`, `"1"`}, {"string", `1e6`, `"1e+06"`}, {"string", `123456789.5`, `"1.234567895e+08"`},
		{"string", `[1,"a"]`, `"[1,\"a\"]"`}, {"string", `"\u001b"`, `"\u001b"`}, {"string", `1e400`, `"1e400"`},

		{"long", `null`, ""}, {"long", `"x"`, ""}, {"long", `"0x"`, ""}, {"long", `"0b1"`, ""}, {"long", `"1x2"`, ""},
		{"long", `true`, ""}, {"long", `{}`, ""}, {"long", `" 1"`, ""}, {"long", `"1.5"`, ""},
		{"long", `"1"`, `1`}, {"long", `"-1"`, `-1`}, {"long", `"+5"`, `5`}, {"long", `"017"`, `17`}, {"long", `"08"`, `8`},
		{"long", `"0X0A"`, `10`}, {"long", `"-0x12"`, `-18`}, {"long", `"0x1_0"`, `16`}, {"long", `1`, `1`}, {"long", `1.0`, `1`},
		{"long", `1.9`, `1`}, {"long", `-1.9`, `-1`}, {"long", `"9223372036854775808"`, ""}, {"long", `9223372036854775807`, `9223372036854775807`},

		{"integer", `null`, ""}, {"integer", `"x"`, ""}, {"integer", `true`, ""}, {"integer", `"1"`, `1`}, {"integer", `"-0x12"`, `-18`},
		{"integer", `1`, `1`}, {"integer", `"2147483648"`, ""}, {"integer", `2147483648`, `-2147483648`}, {"integer", `1.9`, `1`},

		{"float", `null`, ""}, {"float", `"x"`, ""}, {"float", `true`, ""}, {"float", `"1"`, `1`}, {"float", `"1.1"`, `1.1`},
		{"float", `1`, `1`}, {"float", `1.1`, `1.1`}, {"float", `16777217`, `1.6777216e+07`}, {"float", `"1e50"`, ""},
		{"float", `1e50`, ""}, {"float", `"NaN"`, ""}, {"float", `"inf"`, ""},

		{"double", `null`, ""}, {"double", `"x"`, ""}, {"double", `true`, ""}, {"double", `"1"`, `1`}, {"double", `"1.1"`, `1.1`},
		{"double", `1`, `1`}, {"double", `1.1`, `1.1`}, {"double", `"1e400"`, ""}, {"double", `"1e300"`, `1e+300`},
		{"double", `"NaN"`, ""}, {"double", `123456789012`, `1.23456789012e+11`},

		{"boolean", `null`, ""}, {"boolean", `"x"`, ""}, {"boolean", `1`, ""}, {"boolean", `0`, ""}, {"boolean", `"TrUe"`, ""},
		{"boolean", `true`, `true`}, {"boolean", `"1"`, `true`}, {"boolean", `"t"`, `true`}, {"boolean", `"T"`, `true`},
		{"boolean", `"TRUE"`, `true`}, {"boolean", `"true"`, `true`}, {"boolean", `"True"`, `true`},
		{"boolean", `false`, `false`}, {"boolean", `"0"`, `false`}, {"boolean", `"f"`, `false`}, {"boolean", `"F"`, `false`},
		{"boolean", `"FALSE"`, `false`}, {"boolean", `"false"`, `false`}, {"boolean", `"False"`, `false`},

		{"ip", `null`, ""}, {"ip", `"x"`, ""}, {"ip", `"365.0.0.0"`, ""}, {"ip", `1`, ""}, {"ip", `"010.0.0.1"`, ""}, {"ip", `"fe80::1%eth0"`, ""},
		{"ip", `"0.0.0.0"`, `"0.0.0.0"`}, {"ip", `"::1"`, `"::1"`}, {"ip", `"::ffff:10.0.0.1"`, `"::ffff:10.0.0.1"`},
	}
	for _, r := range rows {
		name := fmt.Sprintf("%s %s", r.typ, r.in)
		t.Run(name, func(t *testing.T) {
			p := djProc(t, "convert", `fields = [{from = "key", type = "`+r.typ+`"}]`)
			in := `{"key":` + r.in + `}`
			got, err := djRun(t, p, in)
			if r.out == "" {
				if err == nil {
					t.Fatalf("no error, got %s", got)
				}
				if got != in {
					t.Errorf("the event changed: %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"key":` + r.out + `}`; got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// TestConvertErrorTexts checks the causes Filebeat's errors carry.
func TestConvertErrorTexts(t *testing.T) {
	for _, c := range []struct{ typ, in, cause string }{
		{"string", `null`, "unable to convert value [<nil>]: invalid conversion of [null] to string"},
		{"long", `true`, "unable to convert value [true]: invalid conversion of [bool] to long"},
		{"long", `{"a":1}`, `unable to convert value [{"a":1}]: invalid conversion of [map[string]interface {}] to long`},
		{"integer", `[1]`, "unable to convert value [[1]]: invalid conversion of [[]interface {}] to integer"},
		{"integer", `"2147483648"`, `unable to convert value [2147483648]: strconv.ParseInt: parsing "2147483648": value out of range`},
		{"float", `null`, "unable to convert value [<nil>]: invalid conversion of [<nil>] to float"},
		{"double", `false`, "unable to convert value [false]: invalid conversion of [bool] to float"},
		{"double", `"x"`, `unable to convert value [x]: strconv.ParseFloat: parsing "x": invalid syntax`},
		{"boolean", `1.5`, "unable to convert value [1.5]: invalid conversion of [float64] to boolean"},
		{"boolean", `"yes"`, `unable to convert value [yes]: strconv.ParseBool: parsing "yes": invalid syntax`},
		{"ip", `7`, "unable to convert value [7]: invalid conversion of [int64] to IP"},
	} {
		p := djProc(t, "convert", `fields = [{from = "key", type = "`+c.typ+`"}]`)
		_, err := djRun(t, p, `{"key":`+c.in+`}`)
		want := convPrefix + "conversion of field [key] to type [" + c.typ + "] failed: " + c.cause
		if err == nil || err.Error() != want {
			t.Errorf("%s %s: error %v\nwant       %s", c.typ, c.in, err, want)
		}
		var ce *convError
		if !errors.As(err, &ce) || errors.Unwrap(err) == nil {
			t.Errorf("%s %s: error %T does not unwrap to its cause", c.typ, c.in, err)
		}
	}
}

// TestConvertFloatText checks that numbers are written as Filebeat's
// encoder writes them: Go's %v (shortest 'g'), with 32 bits for float.
func TestConvertFloatText(t *testing.T) {
	p := djProc(t, "convert", `fields = [{from = "a", to = "s", type = "string"}, {from = "a", to = "d", type = "double"}, {from = "a", to = "f", type = "float"}]`)
	for _, f := range []float64{0.1, 1.5, 1e6, 1e21, 1e-7, 123456.789, 3.4028234663852886e+38, 1.0 / 3} {
		text := strconv.FormatFloat(f, 'g', -1, 64)
		got, err := djRun(t, p, `{"a":`+text+`}`)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		want := fmt.Sprintf(`{"a":%s,"s":%q,"d":%v,"f":%s}`, text, fmt.Sprint(f), f, strconv.FormatFloat(float64(float32(f)), 'g', -1, 32))
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func TestConvertConfig(t *testing.T) {
	const at = "processors[0].convert."
	for _, c := range []struct{ opts, err string }{
		{`ignore_missing = true`, at + "fields: missing (required): a list of {from, to, type}"},
		{`fields = []`, at + "fields: missing (required): a list of {from, to, type}"},
		{`fields = [{to = "b", type = "long"}]`, at + "fields[0].from: missing (required)"},
		{`fields = [{from = "a", type = "x"}]`, at + `fields[0].type: unknown type "x"; known: boolean, double, float, integer, ip, long, string`},
		{`fields = [{from = "a"}]`, at + "fields[0]: each field must have a 'to' or a 'type'"},
		{`fields = [{from = "a", to = "b", typ = "long"}]`, at + "fields[0].typ: unknown option; known: from, to, type"},
		{`fields = [{from = "a..b", type = "long"}]`, at + `fields[0].from: field name "a..b" has an empty part`},
		{"fields = [{from = \"a\", to = \"b\"}]\nmode = \"move\"", at + `mode: unknown mode "move"; known: copy, rename`},
		{"fields = [{from = \"a\", to = \"b\"}]\nfail_on_error = 1", at + "fail_on_error: want true or false, got the integer 1"},
		{`fields = ["a"]`, at + "fields: element 0: want a table, got the string \"a\""},
	} {
		_, err := djCompile(t, "convert", c.opts)
		var ce *ConfigError
		if err == nil || !errors.As(err, &ce) || err.Error() != c.err {
			t.Errorf("%q: error %v\nwant %s", c.opts, err, c.err)
		}
	}
	for _, opts := range []string{
		"fields = [{from = \"a\", type = \"Integer\"}, {from = \"b\", to = \"c\", type = \"IP\"}]\ntag = \"t\"\nignore_missing = true\nfail_on_error = false\nmode = \"copy\"",
		"[[fields]]\nfrom = \"a\"\nto = \"b\"",
	} {
		if _, err := djCompile(t, "convert", opts); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
}

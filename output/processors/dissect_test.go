package processors

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// dissectTestAccessTok and dissectTestAccessLine are the access-log
// example of the benchmark.
const (
	dissectTestAccessTok  = `%{client_ip} - %{user} [%{ts}] "%{method} %{path} %{proto}" %{status} %{size}`
	dissectTestAccessLine = `10.1.2.3 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`
)

// dissectTestKV renders results as "key=value" strings, with the
// conversion when there is one, for compact expectations.
func dissectTestKV(fields []dissectField) []string {
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		s := f.Key + "=" + f.Value
		if f.Conv != dissectConvNone {
			s += "|" + f.Conv.String()
		}
		out = append(out, s)
	}
	return out
}

func TestDissectMatch(t *testing.T) {
	stack := "18-Apr-2018 06:53:20.411 INFO [http-nio-8080-exec-1] org.apache.coyote.http11.Http11Processor.service Error parsing HTTP request header\n Note: further occurrences of HTTP header parsing errors will be logged at DEBUG level.\n    at java.lang.Thread.run(Thread.java:748)"
	tests := []struct {
		name, tok, msg string
		want           []string
	}{
		// The cases of Filebeat's shared dissect_tests.json.
		{"remaining data after the last delimiter is ignored",
			`level=%{level} ts=%{timestamp} caller=%{caller} msg="%{message}"`,
			`level=info ts=2018-06-27T17:19:13.036579993Z caller=main.go:222 msg="Starting OK" version="(version=2.3.1, branch=HEAD)"}`,
			[]string{"level=info", "timestamp=2018-06-27T17:19:13.036579993Z", "caller=main.go:222", "message=Starting OK"}},
		{"complex stack trace",
			"%{day}-%{month}-%{year} %{hour} %{severity} [%{thread_id}] %{origin} %{message}", stack,
			[]string{"day=18", "month=Apr", "year=2018", "hour=06:53:20.411", "severity=INFO", "thread_id=http-nio-8080-exec-1",
				"origin=org.apache.coyote.http11.Http11Processor.service",
				"message=Error parsing HTTP request header\n Note: further occurrences of HTTP header parsing errors will be logged at DEBUG level.\n    at java.lang.Thread.run(Thread.java:748)"}},
		{"simple", "%{key}", "foobar", []string{"key=foobar"}},
		{"two fields", "%{key1} %{key2}", "foo bar", []string{"key1=foo", "key2=bar"}},
		{"one level not end of string", "/var/%{key}/log", "/var/foobar/log", []string{"key=foobar"}},
		{"one level takes the rest", "/var/%{key}", "/var/foobar/log", []string{"key=foobar/log"}},
		{"multiple keys end of string", "/var/%{key}/log/%{key1}", "/var/foobar/log/apache", []string{"key=foobar", "key1=apache"}},
		{"multiple keys not end of string", "/var/%{key}/log/%{key1}.log", "/var/foobar/log/apache.log", []string{"key=foobar", "key1=apache"}},
		{"simple ordered", "%{+key/3} %{+key/1} %{+key/2}", "1 2 3", []string{"key=2 3 1"}},
		{"simple append", "%{key}-%{+key}-%{+key}", "1-2-3", []string{"key=1-2-3"}},
		{"indirect field", "%{?key} %{&key}", "hello world", []string{"hello=world"}},
		{"skip field", "%{} %{key}", "hello world", []string{"key=world"}},
		{"pointer field with indirect", "%{*key} %{&key}", "hello world", []string{"hello=world"}},
		{"missing fields", "%{name},%{addr1},%{addr2},%{addr3},%{city},%{zip}", "Jane Doe,4321 Fifth Avenue,,,New York,87432",
			[]string{"name=Jane Doe", "addr1=4321 Fifth Avenue", "addr2=", "addr3=", "city=New York", "zip=87432"}},
		{"ignore right padding", "%{id} %{function->} %{server}", "00000043 ViewReceive     machine-321",
			[]string{"id=00000043", "function=ViewReceive", "server=machine-321"}},
		{"padding on the last key needs a delimiter", "%{id} %{function} %{server->} ", "00000043 ViewReceive machine-321    ",
			[]string{"id=00000043", "function=ViewReceive", "server=machine-321"}},
		{"ignore left padding", "%{id->} %{function} %{server}", "00000043    ViewReceive machine-321",
			[]string{"id=00000043", "function=ViewReceive", "server=machine-321"}},
		{"delimiters with braces", "{%{a}}{%{b}} %{rest}", "{c}{d} anything", []string{"a=c", "b=d", "rest=anything"}},
		// Filebeat's documented example.
		{"docs example", `"%{service.pid|integer} - %{service.name} - %{service.status}"`, `"321 - App01 - WebServer is starting"`,
			[]string{"service.pid=321|integer", "service.name=App01", "service.status=WebServer is starting"}},

		{"access log", dissectTestAccessTok, dissectTestAccessLine,
			[]string{"client_ip=10.1.2.3", "user=frank", "ts=10/Oct/2000:13:55:36 -0700", "method=GET", "path=/apache_pb.gif", "proto=HTTP/1.0", "status=200", "size=2326"}},

		// Skips.
		{"named skip", "%{?ignored} %{key}", "a b", []string{"key=b"}},
		{"empty named skip", "%{?} %{key}", "a b", []string{"key=b"}},
		{"skip with padding", "%{a} %{->} %{b}", "x y   z", []string{"a=x", "b=z"}},
		{"named skip with padding", "%{a} %{?s->} %{b}", "x y   z", []string{"a=x", "b=z"}},
		{"skip only", "%{}", "anything", []string{}},
		{"named skip key is dropped even if a plain field shares it", "%{?a} %{a}", "x y", []string{}},

		// Appends.
		{"append joins with the preceding delimiter", "%{+a}, %{+a}, %{+a}", "x, y, z", []string{"a=x, y, z"}},
		{"append without preceding delimiter joins with a space", "%{+a#1}%{+a}", "xy", []string{"a=x y"}},
		{"append ordered, unordered first", "%{+a/2} %{+a}", "x y", []string{"a=y x"}},
		{"append to a plain field", "%{a} %{b} %{+a}", "1 2 3", []string{"a=1 3", "b=2"}},
		{"append join uses each field's own delimiter", "%{+t}-%{+t}:%{+t}", "1-2:3", []string{"t=1-2:3"}},
		{"append two-digit ordinals", "%{+a/10} %{+a/9}", "x y", []string{"a=y x"}},
		{"append with empty parts", "%{+a},%{+a},%{+a}", ",,", []string{"a=,,"}},
		{"append conversion is ignored as in Filebeat", "%{+a|integer} %{+a}", "1 2", []string{"a=1 2"}},
		{"plain field after append overwrites", "%{+a} %{a/1}", "x y", []string{"a=y"}},
		{"duplicate plain key: last wins", "%{a} %{a}", "x y", []string{"a=y"}},
		{"ordinal on plain fields reorders application", "%{a/2} %{a/1}", "x y", []string{"a=x"}},

		// Indirect.
		{"indirect with conversion", "%{*k} %{&k|long}", "bytes 12", []string{"bytes=12|long"}},
		{"indirect keeps its place", "%{a} %{*k} %{&k} %{b}", "1 name val 2", []string{"a=1", "name=val", "b=2"}},
		{"indirect overwrites a static key", "%{a} %{?k} %{&k}", "1 a 2", []string{"a=2"}},
		{"static key after indirect overwrites it", "%{?k} %{&k} %{a}", "a 1 2", []string{"a=2"}},
		{"append after indirect joins", "%{?k} %{&k} %{+a}", "a 1 2", []string{"a=1 2"}},
		{"indirect with empty name is dropped", "%{?k},%{&k},%{b}", ",v,w", []string{"b=w"}},
		{"indirect before its reference does nothing", "%{&k} %{?k} %{b}", "v n w", []string{"b=w"}},
		{"indirect naming a reference key is dropped", "%{?k} %{&k}", "k v", []string{}},
		{"two indirect fields", "%{?a} %{&a} %{*b} %{&b}", "x 1 y 2", []string{"x=1", "y=2"}},
		{"two indirect fields naming the same key", "%{?a} %{&a} %{*b} %{&b}", "x 1 x 2", []string{"x=2"}},
		{"indirect named by an appended key", "%{*k} %{+k} %{&k}", "a b v", []string{"a b=v"}},

		// Padding follows Filebeat: step one byte while the delimiter matches.
		{"padding with a two-byte run delimiter", "%{a->}--%{b}", "x-----y", []string{"a=x", "b=y"}},
		{"padding does not skip non-overlapping repeats", "%{a->}ab%{b}", "xababy", []string{"a=x", "b=aby"}},
		{"padding without repeats", "%{a->} %{b}", "x y", []string{"a=x", "b=y"}},
		{"padding on the last field is ignored", "%{a} %{b->}", "x y  ", []string{"a=x", "b=y  "}},

		// Fixed length.
		{"fixed lengths back to back", "%{a#3}%{b#2}%{c}", "abcdefgh", []string{"a=abc", "b=de", "c=fgh"}},
		{"fixed length then delimiter", "%{a#2} %{b}", "ab cd", []string{"a=ab", "b=cd"}},
		{"fixed length last field", "%{a} %{b#3}", "x yyy", []string{"a=x", "b=yyy"}},
		{"fixed length may contain the delimiter", "%{a#3} %{b}", "a b c", []string{"a=a b", "b=c"}},
		{"fixed length with ordinal and conversion", "%{+a/2#2}%{+a/1#2|integer}", "1234", []string{"a=34 12"}},

		// Edges.
		{"delimiter at start and end", "[%{a}]", "[x]", []string{"a=x"}},
		{"empty value at start", ",%{a},%{b}", ",,y", []string{"a=", "b=y"}},
		{"empty last value", "%{a},%{b}", "x,", []string{"a=x", "b="}},
		{"empty value before trailing delimiter", "%{a}.", ".", []string{"a="}},
		{"first match of a delimiter wins", "%{a}=%{b}", "k=v=w", []string{"a=k", "b=v=w"}},
		{"unicode delimiters and values", "%{a}→%{b} «%{c}»", "日本→語 «ü»", []string{"a=日本", "b=語", "c=ü"}},
		{"newline delimiter", "%{a}\n%{b}", "x\ny\nz", []string{"a=x", "b=y\nz"}},
		{"unterminated brace inside a key is kept", "%{a%{b} %{c}", "x y", []string{"a%{b=x", "c=y"}},
		{"dotted keys", "%{http.method} %{url.path}", "GET /", []string{"http.method=GET", "url.path=/"}},
		{"conversions tagged", "%{a|integer} %{b|long} %{c|float} %{d|double} %{e|boolean} %{f|ip} %{g|string}", "1 2 3 4 true ::1 s",
			[]string{"a=1|integer", "b=2|long", "c=3|float", "d=4|double", "e=true|boolean", "f=::1|ip", "g=s|string"}},
		{"padding and conversion", "%{a->|integer} %{b}", "1   2", []string{"a=1|integer", "b=2"}},
		{"every modifier at once", "%{+a/1#2->|integer} %{+a/2}", "12   x", []string{"a=12 x"}},
		{"conversion on a named skip is ignored", "%{?k|integer} %{&k}", "n v", []string{"n=v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := compileDissect(tc.tok)
			if err != nil {
				t.Fatalf("compile %q: %v", tc.tok, err)
			}
			got, err := p.dissect(tc.msg, nil)
			if err != nil {
				t.Fatalf("dissect %q with %q: %v", tc.msg, tc.tok, err)
			}
			if kv := dissectTestKV(got); !reflect.DeepEqual(kv, tc.want) {
				t.Fatalf("dissect %q with %q:\n got %q\nwant %q", tc.msg, tc.tok, kv, tc.want)
			}
			// The general resolver agrees with the compiled plan.
			spans := make([]dissectSpan, len(p.toks))
			if err := p.extract(tc.msg, spans); err != nil {
				t.Fatal(err)
			}
			if gen := p.resolveGeneral(tc.msg, spans, nil); !reflect.DeepEqual(dissectTestKV(gen), tc.want) {
				t.Fatalf("general resolver: got %q, want %q", dissectTestKV(gen), tc.want)
			}
			dissectCheckAgainstMap(t, p, tc.msg, got)
		})
	}
}

// dissectCheckAgainstMap resolves the spans of msg the way Filebeat's
// resolve does, with a map, and checks that got holds the same keys and
// values.
func dissectCheckAgainstMap(t *testing.T, p *dissectPattern, msg string, got []dissectField) {
	t.Helper()
	spans := make([]dissectSpan, len(p.toks))
	if err := p.extract(msg, spans); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, i := range p.order {
		tk := p.toks[i]
		v := msg[spans[i].start:spans[i].end]
		switch tk.kind {
		case dissectKindNormal, dissectKindNamedSkip, dissectKindPointer:
			m[tk.key] = v
		case dissectKindAppend:
			if old, ok := m[tk.key]; ok {
				m[tk.key] = old + tk.join + v
			} else {
				m[tk.key] = v
			}
		case dissectKindIndirect:
			if name, ok := m[tk.key]; ok {
				m[name] = v
			}
		}
	}
	for _, tk := range p.toks {
		if tk.kind == dissectKindNamedSkip || tk.kind == dissectKindPointer {
			delete(m, tk.key)
		}
	}
	delete(m, "")
	gm := map[string]string{}
	for _, f := range got {
		if _, dup := gm[f.Key]; dup {
			t.Fatalf("key %q returned twice: %q", f.Key, dissectTestKV(got))
		}
		gm[f.Key] = f.Value
	}
	if !reflect.DeepEqual(gm, m) {
		t.Fatalf("tokenizer %q on %q: got %v, map resolution gives %v", p.raw, msg, gm, m)
	}
}

func TestDissectCompileErrors(t *testing.T) {
	tests := []struct{ tok, want string }{
		{"", "the tokenizer is empty"},
		{"hello", "no field"},
		{"%{a} %{b", "unterminated field at offset 5"},
		{"%{a}%{b}", "fields %{a} and %{b} are not separated by a delimiter"},
		{"x %{a} %{b}%{c}", "fields %{b} and %{c} are not separated"},
		{"%{a|int}", `unknown data type "int"`},
		{"%{a|Integer}", `unknown data type "Integer"`},
		{"%{a|int32}", `unknown data type "int32"`},
		{"%{a|}", "missing data type"},
		{"%{a->|}", "missing data type"},
		{"%{a|integer->}", "'->' must come before '|type'"},
		{"%{+&a}", "mixed prefix \"+&\""},
		{"%{&+a}", "mixed prefix \"&+\""},
		{"%{&a}", "indirect field %{&a} has no reference field %{?a} or %{*a}"},
		{"%{a} %{&a}", "indirect field %{&a} has no reference field"},
		{"%{+}", `empty key after the "+" prefix`},
		{"%{*} %{b}", `empty key after the "*" prefix`},
		{"%{&/2}", `empty key after the "&" prefix`},
		{"%{a\nb}", "newline"},
		{"%{a->b}", "misplaced modifier '->'"},
		{"%{a/x}", "invalid ordinal"},
		{"%{a/123}", "invalid ordinal"},
		{"%{a->/1}", "misplaced modifier '->'"},
		{"%{a#}", "invalid fixed length"},
		{"%{a#x1}", "invalid fixed length"},
		{"%{a->#2}", "misplaced modifier '->'"},
		{"%{a#2/1}", "invalid fixed length"},
	}
	for _, tc := range tests {
		p, err := compileDissect(tc.tok)
		if err == nil {
			t.Errorf("compile %q: no error, want %q (toks %+v)", tc.tok, tc.want, p.toks)
			continue
		}
		if !errors.Is(err, dissectErrInvalidTokenizer) {
			t.Errorf("compile %q: %v does not wrap dissectErrInvalidTokenizer", tc.tok, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compile %q: error %q, want it to contain %q", tc.tok, err, tc.want)
		}
		if tc.tok != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.tok)) {
			t.Errorf("compile %q: error %q does not name the tokenizer", tc.tok, err)
		}
	}
}

func TestDissectParseModifiers(t *testing.T) {
	tests := []struct {
		raw             string
		kind            uint8
		key             string
		ordinal, length int
		greedy          bool
		conv            dissectConv
	}{
		{"key", dissectKindNormal, "key", 0, 0, false, dissectConvNone},
		{"", dissectKindSkip, "", 0, 0, false, dissectConvNone},
		{"->", dissectKindSkip, "", 0, 0, true, dissectConvNone},
		{"?", dissectKindSkip, "", 0, 0, false, dissectConvNone},
		{"?k->", dissectKindNamedSkip, "k", 0, 0, true, dissectConvNone},
		{"*k", dissectKindPointer, "k", 0, 0, false, dissectConvNone},
		{"+k/12", dissectKindAppend, "k", 12, 0, false, dissectConvNone},
		{"+k/3|integer", dissectKindAppend, "k", 3, 0, false, dissectConvNone},
		{"&k|ip", dissectKindIndirect, "k", 0, 0, false, dissectConvIP},
		{"&k/2", dissectKindIndirect, "k", 0, 0, false, dissectConvNone},
		{"?k/2", dissectKindNamedSkip, "k", 0, 0, false, dissectConvNone},
		{"k/1#10->|double", dissectKindNormal, "k", 1, 10, true, dissectConvDouble},
		{"k#0", dissectKindNormal, "k", 0, 0, false, dissectConvNone},
		{"k|boolean", dissectKindNormal, "k", 0, 0, false, dissectConvBoolean},
		{"k|float", dissectKindNormal, "k", 0, 0, false, dissectConvFloat},
		{"k|long", dissectKindNormal, "k", 0, 0, false, dissectConvLong},
		{"k|string", dissectKindNormal, "k", 0, 0, false, dissectConvString},
		{"a/1/2", dissectKindNormal, "", 0, 0, false, 0}, // "/" left in the key: error
		{"a-->", dissectKindNormal, "a-", 0, 0, true, dissectConvNone},
		{"?+k", dissectKindNamedSkip, "+k", 0, 0, false, dissectConvNone},
		{"user-agent", dissectKindNormal, "user-agent", 0, 0, false, dissectConvNone},
	}
	for _, tc := range tests {
		got, err := dissectParseField(tc.raw)
		if tc.raw == "a/1/2" {
			if err == nil {
				t.Errorf("%q: no error", tc.raw)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
			continue
		}
		if got.kind != tc.kind || got.key != tc.key || got.ordinal != tc.ordinal || got.length != tc.length || got.greedy != tc.greedy || got.conv != tc.conv {
			t.Errorf("%q: got kind %d key %q ordinal %d length %d greedy %v conv %v, want %d %q %d %d %v %v",
				tc.raw, got.kind, got.key, got.ordinal, got.length, got.greedy, got.conv,
				tc.kind, tc.key, tc.ordinal, tc.length, tc.greedy, tc.conv)
		}
	}
}

func TestDissectNoMatch(t *testing.T) {
	tests := []struct{ tok, msg, want string }{
		{"/var/log/%{key}.log", "foobar", `could not find beginning delimiter "/var/log/" at the start of "foobar"`},
		{"/var/log/%{key}.log", "/var/log/foobar", `could not find delimiter ".log" after field %{key} in remaining "foobar" (offset 9)`},
		{"%{a}", "", "empty string provided"},
		{dissectTestAccessTok, `10.1.2.3 - frank [10/Oct/2000:13:55:36 -0700] "GET /x`, `could not find delimiter " " after field %{path} in remaining "/x"`},
		{"%{a} %{b} %{c}", "x y", `could not find delimiter " " after field %{b}`},
		{"%{a#5} %{b}", "abc", "fixed-length field %{a#5} needs 5 bytes, only 3 remain"},
		{"%{a#2}-%{b}", "abcd", `could not find delimiter "-" right after fixed-length field %{a#2} in remaining "cd" (offset 2)`},
		{"%{a} %{b#3}", "x yy", "last fixed-length field %{b#3} (length 3) does not fit the remaining \"yy\""},
		{"%{a} %{b#3}", "x yyyy", "does not fit"},
		{"[%{a}]", "x]", `could not find beginning delimiter "["`},
		{"%{a}→%{b}", "日本語", `could not find delimiter "→" after field %{a}`},
	}
	for _, tc := range tests {
		p, err := compileDissect(tc.tok)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.tok, err)
		}
		got, err := p.dissect(tc.msg, make([]dissectField, 3))
		if err == nil {
			t.Errorf("dissect %q with %q: no error, got %q", tc.msg, tc.tok, dissectTestKV(got))
			continue
		}
		if len(got) != 0 {
			t.Errorf("dissect %q with %q: results %q with the error", tc.msg, tc.tok, dissectTestKV(got))
		}
		if !errors.Is(err, dissectErrNoMatch) {
			t.Errorf("dissect %q with %q: %v does not wrap dissectErrNoMatch", tc.msg, tc.tok, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dissect %q with %q: error %q, want it to contain %q", tc.msg, tc.tok, err, tc.want)
		}
	}
	// A long remaining input is shortened in the message.
	p, _ := compileDissect("%{a}|%{b}")
	_, err := p.dissect(strings.Repeat("x", 10000), nil)
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("long input: error %v", err)
	}
}

func TestDissectConvert(t *testing.T) {
	tests := []struct {
		conv  dissectConv
		value string
		want  any
		err   string
	}{
		{dissectConvNone, " a ", " a ", ""},
		{dissectConvString, " a  ", " a", ""},
		{dissectConvInteger, "42", int64(42), ""},
		{dissectConvInteger, "-7  ", int64(-7), ""},
		{dissectConvInteger, "0x1F", int64(31), ""},
		{dissectConvInteger, "0X10", int64(16), ""},
		{dissectConvInteger, "2147483647", int64(2147483647), ""},
		{dissectConvInteger, "2147483648", nil, `cannot convert value "2147483648" of key "k" to integer: value out of range`},
		{dissectConvInteger, " 1", nil, "invalid syntax"},
		{dissectConvInteger, "1.5", nil, `value "1.5" of key "k" to integer`},
		{dissectConvInteger, "010", int64(10), ""},
		{dissectConvLong, "9223372036854775807", int64(9223372036854775807), ""},
		{dissectConvLong, "9223372036854775808", nil, "out of range"},
		{dissectConvLong, "-0x10", nil, "invalid syntax"},
		{dissectConvFloat, "3.14", 3.14, ""},
		{dissectConvFloat, "1e39", nil, "to float: value out of range"},
		{dissectConvDouble, "1e39", 1e39, ""},
		{dissectConvDouble, "-2.5 ", -2.5, ""},
		{dissectConvDouble, "abc", nil, `value "abc" of key "k" to double`},
		{dissectConvBoolean, "true", true, ""},
		{dissectConvBoolean, "F", false, ""},
		{dissectConvBoolean, "1", true, ""},
		{dissectConvBoolean, "yes", nil, `value "yes" of key "k" to boolean`},
		{dissectConvIP, "10.1.2.3", "10.1.2.3", ""},
		{dissectConvIP, "2001:db8::1 ", "2001:db8::1", ""},
		{dissectConvIP, "::ffff:1.2.3.4", "::ffff:1.2.3.4", ""},
		{dissectConvIP, "fe80::1%eth0", nil, "zone"},
		{dissectConvIP, "010.1.2.3", nil, `value "010.1.2.3" of key "k" to ip`},
		{dissectConvIP, "host", nil, "to ip"},
	}
	for _, tc := range tests {
		got, err := dissectField{Key: "k", Value: tc.value, Conv: tc.conv}.convert()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %q: got %v, %v; want error containing %q", tc.conv, tc.value, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v %q: got %#v, %v; want %#v", tc.conv, tc.value, got, err, tc.want)
		}
	}
}

func TestDissectKeys(t *testing.T) {
	tests := []struct {
		tok  string
		want []string
	}{
		{dissectTestAccessTok, []string{"client_ip", "user", "ts", "method", "path", "proto", "status", "size"}},
		{"%{a} %{} %{?b} %{*c} %{&c} %{+d} %{+d} %{a}", []string{"a", "d"}},
		{"%{?k} %{&k}", nil},
	}
	for _, tc := range tests {
		p, err := compileDissect(tc.tok)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.keys(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: keys %q, want %q", tc.tok, got, tc.want)
		}
		if k := p.keys(); len(k) > 0 {
			k[0] = "changed"
			if p.keys()[0] == "changed" {
				t.Errorf("keys returns the pattern's own slice")
			}
		}
	}
}

func TestDissectReusesDst(t *testing.T) {
	p, err := compileDissect(dissectTestAccessTok)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]dissectField, 0, 16)
	var out []dissectField
	allocs := testing.AllocsPerRun(100, func() {
		out, err = p.dissect(dissectTestAccessLine, dst)
	})
	if err != nil || allocs != 0 {
		t.Fatalf("allocs %v, err %v", allocs, err)
	}
	if &out[0] != &dst[:1][0] {
		t.Fatalf("results not in dst")
	}
	// Adjacent appends are substrings: no allocation either.
	p2, _ := compileDissect("%{+ts} %{+ts} %{msg}")
	allocs = testing.AllocsPerRun(100, func() {
		out, err = p2.dissect("2024-01-01 10:00:00 hello", dst)
	})
	if err != nil || allocs != 0 || out[0].Value != "2024-01-01 10:00:00" {
		t.Fatalf("appends: allocs %v, err %v, %q", allocs, err, dissectTestKV(out))
	}
	// Indirect fields resolve without allocating.
	p3, _ := compileDissect("%{*k}=%{&k} %{a}")
	allocs = testing.AllocsPerRun(100, func() {
		out, err = p3.dissect("user=bob rest", dst)
	})
	if err != nil || allocs != 0 || !reflect.DeepEqual(dissectTestKV(out), []string{"user=bob", "a=rest"}) {
		t.Fatalf("indirect: allocs %v, err %v, %q", allocs, err, dissectTestKV(out))
	}
}

func TestDissectManyFields(t *testing.T) {
	// More fields than the stack scratch space.
	var tok, msg strings.Builder
	var want []string
	for i := 0; i < 50; i++ {
		if i > 0 {
			tok.WriteString(",")
			msg.WriteString(",")
		}
		fmt.Fprintf(&tok, "%%{f%d}", i)
		fmt.Fprintf(&msg, "v%d", i)
		want = append(want, fmt.Sprintf("f%d=v%d", i, i))
	}
	p, err := compileDissect(tok.String())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.dissect(msg.String(), nil)
	if err != nil || !reflect.DeepEqual(dissectTestKV(got), want) {
		t.Fatalf("got %q, %v", dissectTestKV(got), err)
	}
	p, err = compileDissect("%{*k}:%{&k}," + tok.String())
	if err != nil {
		t.Fatal(err)
	}
	got, err = p.dissect("n:v,"+msg.String(), nil)
	if err != nil || !reflect.DeepEqual(dissectTestKV(got), append([]string{"n=v"}, want...)) {
		t.Fatalf("indirect: got %q, %v", dissectTestKV(got), err)
	}
}

func TestDissectConcurrent(t *testing.T) {
	p, err := compileDissect("%{?k} %{&k} %{+a} %{+a/1} " + dissectTestAccessTok)
	if err != nil {
		t.Fatal(err)
	}
	line := "name val x y " + dissectTestAccessLine
	want, err := p.dissect(line, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []dissectField
			for i := 0; i < 200; i++ {
				var err error
				dst, err = p.dissect(line, dst)
				if err != nil || !reflect.DeepEqual(dst, want) {
					t.Errorf("got %q, %v", dissectTestKV(dst), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkDissect(b *testing.B) {
	p, err := compileDissect(dissectTestAccessTok)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]dissectField, 0, 16)
	b.ReportAllocs()
	b.SetBytes(int64(len(dissectTestAccessLine)))
	for b.Loop() {
		dst, err = p.dissect(dissectTestAccessLine, dst)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// convert is converted with the value boxed, for comparing with the
// values Filebeat's conversions give.
func (f dissectField) convert() (any, error) {
	c, err := f.converted()
	if err != nil {
		return nil, err
	}
	switch c.kind {
	case convertedInt:
		return c.i, nil
	case convertedFloat:
		return c.f, nil
	case convertedBool:
		return c.b, nil
	}
	return c.s, nil
}

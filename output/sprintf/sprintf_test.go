package sprintf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// filebeatEvent is a typical Filebeat event of about 1 KiB.
const filebeatEvent = `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},` +
	`"log":{"offset":48213,"file":{"path":"/var/log/nginx/access.log","device_id":"64768","inode":"1835045","fingerprint":"5d2c1e9b4a7f"}},` +
	`"message":"10.0.0.12 - - [02/Dec/2026:10:57:41 +0000] \"GET /api/v1/items?page=2 HTTP/1.1\" 200 5123 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36\"",` +
	`"input":{"type":"filestream"},"ecs":{"version":"8.0.0"},` +
	`"host":{"name":"web-01","hostname":"web-01","architecture":"x86_64","containerized":false,"ip":["10.0.0.5","fe80::a00:27ff:fe4e:66a1"],"mac":["08-00-27-4E-66-A1"],` +
	`"os":{"type":"linux","platform":"ubuntu","version":"24.04.1 LTS (Noble Numbat)","family":"debian","name":"Ubuntu","kernel":"6.8.0-49-generic","codename":"noble"},"id":"8f2c0e7b1d3a4c5e9f6a7b8c9d0e1f2a"},` +
	`"agent":{"ephemeral_id":"3b9d3f1e-6c2a-4f7e-9b1d-2e4c6a8f0b1d","id":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","name":"web-01","type":"filebeat","version":"9.3.0"},` +
	`"tags":["prod","nginx"],"fields":{"env":"prod","team":"platform"}}`

var received = time.Date(2030, time.May, 6, 7, 8, 9, 0, time.UTC)

type renderCase struct {
	name     string
	template string
	event    string
	want     string
	ok       bool
}

func runRender(t *testing.T, cases []renderCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.template)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.template, err)
			}
			got, ok := f.Render([]byte(tc.event), received)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("Render(%q) on %s\n got %q, %v\nwant %q, %v", tc.template, tc.event, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRenderFilebeat(t *testing.T) {
	ev := filebeatEvent
	runRender(t, []renderCase{
		{"default", "%{[@metadata][beat]}-%{[@metadata][version]}", ev, "filebeat-9.3.0", true},
		{"daily", "filebeat-%{+yyyy.MM.dd}", ev, "filebeat-2026.12.02", true},
		{"beat-version-daily", "%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}", ev, "filebeat-9.3.0-2026.12.02", true},
		{"weekly", "%{[@metadata][beat]}-%{+xxxx.ww}", ev, "filebeat-2026.49", true},
		{"bare top-level", "%{message}", ev, `10.0.0.12 - - [02/Dec/2026:10:57:41 +0000] "GET /api/v1/items?page=2 HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"`, true},
		{"bracketed top-level", "%{[message]}", `{"message":"m"}`, "m", true},
		{"nested", "%{[host][os][family]}", ev, "debian", true},
		{"deep number", "%{[log][offset]}", ev, "48213", true},
		{"false", "%{[host][containerized]}", ev, "false", true},
		{"array joined", "%{tags}", ev, "prod,nginx", true},
		{"array index", "%{[tags][0]}", ev, "prod", true},
		{"array index last", "%{[tags][-1]}", ev, "nginx", true},
		{"array index plus", "%{[tags][+1]}", ev, "nginx", true},
		{"array index leading zero", "%{[tags][01]}", ev, "nginx", true},
		{"array index out of range", "%{[tags][2]}", ev, "", false},
		{"array index negative out of range", "%{[tags][-3]}", ev, "", false},
		{"array non-index", "%{[tags][x]}", ev, "", false},
		{"nested array", "%{[host][ip][1]}", ev, "fe80::a00:27ff:fe4e:66a1", true},
		{"object as JSON", "%{[@metadata]}", ev, `{"beat":"filebeat","type":"_doc","version":"9.3.0"}`, true},
		{"timestamp string", "%{@timestamp}", ev, "2026-12-02T10:57:41.210Z", true},
		{"dotted bare name is one key", "%{host.name}", ev, "", false},
		{"missing", "%{[@metadata][pipeline]}", ev, "", false},
		{"missing top", "%{nope}", ev, "", false},
		{"through scalar", "%{[message][x]}", ev, "", false},
		{"through array of objects", "%{[host][os][name][0]}", ev, "", false},
		{"literal percent and brace", "100%-%{[fields][env]}}", ev, "100%-prod}", true},
		{"adjacent", "%{[fields][env]}%{[fields][team]}", ev, "prodplatform", true},
		{"repeated", "%{[fields][env]}/%{[fields][env]}", ev, "prod/prod", true},
		{"static", "logs-generic-default", ev, "logs-generic-default", true},
		{"empty template", "", ev, "", true},
	})
}

func TestRenderValues(t *testing.T) {
	runRender(t, []renderCase{
		{"string", "%{a}", `{"a":"x"}`, "x", true},
		{"empty string", "<%{a}>", `{"a":""}`, "<>", true},
		{"escapes", "%{a}", `{"a":"q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00\b\f\r"}`, "q\"b\\s/n\nt\tué😀\b\f\r", true},
		{"lone high surrogate", "%{a}", `{"a":"x\ud800y"}`, "x\uFFFDy", true},
		{"lone low surrogate", "%{a}", `{"a":"x\udc00y"}`, "x\uFFFDy", true},
		{"high surrogate then escape", "%{a}", `{"a":"\ud800\u0041"}`, "\uFFFDA", true},
		{"invalid utf8", "%{a}", "{\"a\":\"x\xffy\"}", "x\uFFFDy", true},
		{"utf8 kept", "%{a}", `{"a":"日本語"}`, "日本語", true},
		{"bad escape", "%{a}", `{"a":"x\qy"}`, "", false},
		{"short unicode escape", "%{a}", `{"a":"x\u12"}`, "", false},
		{"raw control char", "%{a}", "{\"a\":\"x\ny\"}", "", false},
		{"null", "%{a}", `{"a":null}`, "", false},
		{"true", "%{a}", `{"a":true}`, "true", true},
		{"false", "%{a}", `{"a":false}`, "false", true},
		{"bad literal", "%{a}", `{"a":tru}`, "", false},
		{"literal with junk", "%{a}", `{"a":truex}`, "", false},
		{"integer", "%{a}", `{"a":42}`, "42", true},
		{"negative", "%{a}", `{"a":-7}`, "-7", true},
		{"number text kept", "%{a}", `{"a":1.50}`, "1.50", true},
		{"exponent", "%{a}", `{"a":1E+3}`, "1E+3", true},
		{"bad number", "%{a}", `{"a":01}`, "", false},
		{"bad number dot", "%{a}", `{"a":1.}`, "", false},
		{"object compact", "%{o}", `{"o": { "a" : [ 1 , "x y" ] , "b" : { } , "c":[ ] } }`, `{"a":[1,"x y"],"b":{},"c":[]}`, true},
		{"object keeps escapes", "%{o}", `{"o":{"k\u00e9":"\"v\""}}`, `{"k\u00e9":"\"v\""}`, true},
		{"object invalid", "%{o}", `{"o":{"a" 1}}`, "", false},
		{"object trailing comma", "%{o}", `{"o":{"a":1,}}`, "", false},
		{"array mixed", "%{a}", `{"a":[1,null,["x",["y"]],{"k": "v"},true,"s\"q",[]]}`, `1,,x,y,{"k":"v"},true,s"q,`, true},
		{"array empty", "<%{a}>", `{"a":[]}`, "<>", true},
		{"array of null", "<%{a}>", `{"a":[null]}`, "<>", true},
		{"array invalid element", "%{a}", `{"a":[1,x]}`, "", false},
		{"array element null", "%{[a][1]}", `{"a":[1,null]}`, "", false},
		{"array element object", "%{[a][0][b]}", `{"a":[{"b":"c"}]}`, "c", true},
		{"array in array", "%{[a][1][0]}", `{"a":[[1],[2,3]]}`, "2", true},
		{"whitespace everywhere", "%{[a][b]}", " \t\r\n{ \"a\" :\n{ \"z\" : [ 1 , { } ] , \"b\" : \"x\" } } ", "x", true},
		{"first duplicate wins", "%{a}", `{"a":"first","a":"second"}`, "first", true},
		{"key with escape", "%{[@metadata][beat]}", `{"\u0040metadata":{"be\u0061t":"x"}}`, "x", true},
		{"key escaped quote", `%{[a"b]}`, `{"a\"b":"x"}`, "x", true},
		{"key escaped backslash", `%{[a\b]}`, `{"a\\b":"x"}`, "x", true},
		{"key surrogate pair", "%{[😀]}", `{"\ud83d\ude00":"x"}`, "x", true},
		{"key prefix is not a match", "%{ab}", `{"a":"1","abc":"2","ab":"3"}`, "3", true},
		{"deep object", "%{o}", `{"o":` + strings.Repeat(`{"a":`, 50) + "1" + strings.Repeat("}", 50) + "}", strings.Repeat(`{"a":`, 50) + "1" + strings.Repeat("}", 50), true},
		{"too deep object", "%{o}", `{"o":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + "}", "", false},
	})
}

// TestSpecialFieldNames checks that characters special in gjson paths, or in
// field references, are plain characters in names.
func TestSpecialFieldNames(t *testing.T) {
	names := []string{
		"@timestamp", "@metadata", "a.b", "a*", "*", "a?b", "?", "#", "a#b", "a|b", "|",
		"!a", "a!", "\\", "a\\.b", " ", " a ", "a,b", "a:b", "a=b", "a(b)", "{a", "a{b",
		"%", "%{", "+a", "-1", "0", "..", "@this", "@reverse", "日本", "a\"b", "a'b", "$a",
		"a~b", "a&b", "a<b>", "a\tb",
	}
	for _, name := range names {
		key := jsonString(name)
		event := `{"x":{` + key + `:"decoy"},` + key + `:{` + key + `:` + jsonString("nested-"+name) + `},"other":"o"}`
		tmpl := "%{[" + name + "][" + name + "]}"
		f, err := Compile(tmpl)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tmpl, err)
		}
		got, ok := f.Render([]byte(event), received)
		if !ok || got != "nested-"+name {
			t.Errorf("name %q: got %q, %v; want %q", name, got, ok, "nested-"+name)
		}
		// The gjson form of the path must find the same value.
		checkGJSON(t, f, []byte(event))

		// A bare reference is the top-level name, unless the name could be
		// read as another kind of reference.
		if name == "" || name[0] == '+' || name[0] == '{' || strings.ContainsAny(name, "[]}") {
			continue
		}
		bare := "%{" + name + "}"
		fb, err := Compile(bare)
		if err != nil {
			t.Fatalf("Compile(%q): %v", bare, err)
		}
		got, ok = fb.Render([]byte(`{`+key+`:"top"}`), received)
		if !ok || got != "top" {
			t.Errorf("bare %q: got %q, %v; want \"top\"", bare, got, ok)
		}
	}
}

func TestInvalidEvents(t *testing.T) {
	tmpl := "%{[@metadata][beat]}"
	for _, ev := range []string{
		"", " ", "null", "[]", `["a"]`, `"str"`, "42", "not json", "{", `{"@metadata"`, `{"@metadata":`,
		`{"@metadata":{"beat":"file`, `{"@metadata":{"beat":}}`, `{"@metadata":{"beat" "x"}}`,
		`{"@metadata" {"beat":"x"}}`, `{"a":"\"}`, `{"a":1 "@metadata":{"beat":"x"}}`,
		`{"a":[1,2},"@metadata":{"beat":"x"}}`, `{@metadata:{beat:"x"}}`, "\x00\xff{",
	} {
		f := MustCompile(tmpl)
		if got, ok := f.Render([]byte(ev), received); ok {
			t.Errorf("event %q: got %q, want missing", ev, got)
		}
		// Date references fall back to the received time.
		d := MustCompile("%{+yyyy.MM.dd}")
		if got, ok := d.Render([]byte(ev), received); !ok || got != "2030.05.06" {
			t.Errorf("event %q: date got %q, %v", ev, got, ok)
		}
	}
	// The walker reads only what it needs: a value before the corruption
	// is still found.
	got, ok := MustCompile(tmpl).Render([]byte(`{"@metadata":{"beat":"x"},"b":garbage`), received)
	if !ok || got != "x" {
		t.Errorf("value before corruption: got %q, %v", got, ok)
	}
}

func TestAppendBuffer(t *testing.T) {
	f := MustCompile("%{[@metadata][beat]}-%{[@metadata][missing]}")
	dst := append(make([]byte, 0, 64), "prefix:"...)
	out, ok := f.Append(dst, []byte(filebeatEvent), received)
	if ok {
		t.Fatal("want failure")
	}
	if string(out) != "prefix:" {
		t.Fatalf("on failure out = %q, want the original dst", out)
	}
	if &out[0] != &dst[0] {
		t.Fatal("on failure out should reuse dst")
	}

	g := MustCompile("%{[@metadata][beat]}-%{+yyyy}")
	out, ok = g.Append(dst, []byte(filebeatEvent), received)
	if !ok || string(out) != "prefix:filebeat-2026" {
		t.Fatalf("got %q, %v", out, ok)
	}
	// A nil dst works, and growing keeps the prefix.
	small := []byte("p")
	out, ok = g.Append(small[:1:1], []byte(filebeatEvent), received)
	if !ok || string(out) != "pfilebeat-2026" {
		t.Fatalf("got %q, %v", out, ok)
	}
	out, ok = g.Append(nil, []byte(filebeatEvent), received)
	if !ok || string(out) != "filebeat-2026" {
		t.Fatalf("got %q, %v", out, ok)
	}
}

func TestAccessors(t *testing.T) {
	tmpl := "%{[@metadata][beat]}-%{host.name}-%{[a][0]}-%{+yyyy}-%{[@metadata][beat]}-%{[x*][y.z]}"
	f := MustCompile(tmpl)
	if f.String() != tmpl {
		t.Errorf("String() = %q", f.String())
	}
	if f.Static() {
		t.Error("Static() = true")
	}
	if !f.UsesTimestamp() {
		t.Error("UsesTimestamp() = false")
	}
	wantFields := []string{"[@metadata][beat]", "[host.name]", "[a][0]", "[x*][y.z]"}
	if got := f.Fields(); strings.Join(got, " ") != strings.Join(wantFields, " ") {
		t.Errorf("Fields() = %q, want %q", got, wantFields)
	}
	wantPaths := []string{`\@metadata.beat`, `host\.name`, `a.0`, `x\*.y\.z`}
	if got := f.GJSONPaths(); strings.Join(got, " ") != strings.Join(wantPaths, " ") {
		t.Errorf("GJSONPaths() = %q, want %q", got, wantPaths)
	}

	for _, tc := range []struct {
		tmpl          string
		static, usesT bool
	}{
		{"", true, false},
		{"logs", true, false},
		{"a%b}c{d", true, false},
		{"%{a}", false, false},
		{"%{+%s}", false, true},
		{"%{{yyyy}}", false, true},
	} {
		f := MustCompile(tc.tmpl)
		if f.Static() != tc.static || f.UsesTimestamp() != tc.usesT {
			t.Errorf("%q: Static %v UsesTimestamp %v", tc.tmpl, f.Static(), f.UsesTimestamp())
		}
		if tc.static {
			if got, ok := f.Render([]byte("junk"), received); !ok || got != tc.tmpl {
				t.Errorf("%q: static render %q, %v", tc.tmpl, got, ok)
			}
		}
		if len(f.Fields()) != len(f.GJSONPaths()) {
			t.Errorf("%q: Fields and GJSONPaths differ in length", tc.tmpl)
		}
	}
}

func TestFieldRefParsing(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"a", []string{"a"}},
		{"[a]", []string{"a"}},
		{"[a][b][c]", []string{"a", "b", "c"}},
		{"[@metadata][beat]", []string{"@metadata", "beat"}},
		{"[a][[b][c]]", []string{"a", "b", "c"}},
		{"[[a]]", []string{"a"}},
		{"[a b][ c ]", []string{"a b", " c "}},
		{" a ", []string{" a "}},
		{"a.b.c", []string{"a.b.c"}},
		{"[a.b][c]", []string{"a.b", "c"}},
		{"[{][%{][+]", []string{"{", "%{", "+"}},
	} {
		got, err := parseFieldRef(tc.ref, 0)
		if err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("parseFieldRef(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		tmpl string
		want string
	}{
		{"%{", `unclosed "%{" at offset 0`},
		{"abc-%{foo", `unclosed "%{" at offset 4: "%{foo"`},
		{"%{a}-%{b", `unclosed "%{" at offset 5`},
		{"x%{}", `empty field reference "%{}" at offset 1`},
		{"%{+}", `empty date format "%{+}" at offset 0`},
		{"%{+yyyy.qq}", `date format "yyyy.qq" at offset 8: unknown pattern letter 'q'`},
		{"%{+yyyy.MM.ddTHH}", `at offset 13: unknown pattern letter 'T'`},
		{"%{+yyyy'T}", `date format "yyyy'T" at offset 7: unterminated quote`},
		{"%{[a]b}", `invalid field reference "[a]b" at offset 5: text after ']'`},
		{"%{a[b]}", `invalid field reference "a[b]" at offset 3: '[' must follow`},
		{"%{[a}", `invalid field reference "[a" at offset 4: unclosed '['`},
		{"%{a]}", `invalid field reference "a]" at offset 3: ']' without a matching '['`},
		{"%{[]}", `invalid field reference "[]" at offset 3: empty path element`},
		{"%{[a][]}", `at offset 6: empty path element`},
		{"%{[a]]}", `']' without a matching '['`},
		{"%{{yyyy}", `unclosed "%{{" at offset 0`},
		{"%{{yyyy}x}", `unclosed "%{{" at offset 0`},
		{"%{{}}", `empty java time format "%{{}}" at offset 0`},
		{"%{{TIME_NOW}}", `%{{TIME_NOW}} at offset 0 is not supported`},
		{"%{{YYYY.ww}}", `java time format "YYYY.ww" at offset 3: pattern letter 'Y' depends on the JVM's locale`},
		{"%{{yyyy.ww}}", `at offset 8: pattern letter 'w' depends on the JVM's locale`},
		{"%{{yyyy.QQ}}", `at offset 8: pattern letter 'Q' is not supported`},
		{"%{{ddd}}", `too many pattern letters 'd' (at most 2)`},
		{"%{{SSSSSSSSSS}}", `too many pattern letters 'S' (at most 9)`},
		{"%{{aa}}", `too many pattern letters 'a' (at most 1)`},
		{"%{{yyyy]}}", `']' without a previous '['`},
		{"%{{yyyy#}}", `'#' is reserved`},
		{"%{{'x}}", `unterminated quote`},
	} {
		_, err := Compile(tc.tmpl)
		if err == nil {
			t.Errorf("Compile(%q): no error, want %q", tc.tmpl, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "sprintf: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%q) = %q, want it to contain %q", tc.tmpl, err, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile("%{")
}

// TestConcurrent shares one Format between goroutines; run with -race.
func TestConcurrent(t *testing.T) {
	f := MustCompile("%{[@metadata][beat]}-%{[@metadata][version]}-%{+xxxx.ww}-%{tags}")
	want := "filebeat-9.3.0-2026.49-prod,nginx"
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := 0; i < 200; i++ {
				var ok bool
				buf, ok = f.Append(buf[:0], []byte(filebeatEvent), received)
				if !ok || string(buf) != want {
					errs <- string(buf)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("got %q, want %q", e, want)
	}
}

func TestAllocs(t *testing.T) {
	event := []byte(filebeatEvent)
	for _, tmpl := range []string{
		"%{[@metadata][beat]}-%{[@metadata][version]}",
		"filebeat-%{+yyyy.MM.dd}",
		"%{[@metadata][beat]}-%{[@metadata][version]}-%{+xxxx.ww}",
		"%{{yyyy-MM-dd'T'HH:mm:ss.SSSX}}-%{+%s}",
		"%{[host][os][version]}-%{[tags][-1]}-%{[log][offset]}-%{[agent][version]}",
		"%{tags}",
	} {
		f := MustCompile(tmpl)
		dst := make([]byte, 0, 256)
		n := testing.AllocsPerRun(100, func() {
			if _, ok := f.Append(dst[:0], event, received); !ok {
				t.Fatalf("%q failed", tmpl)
			}
		})
		if n != 0 {
			t.Errorf("%q: %v allocs per Append, want 0", tmpl, n)
		}
	}
	// Received-time fallback, escaped strings and numeric timestamps too.
	for _, ev := range []string{
		`{"@metadata":{"beat":"x\u00e9"}}`,
		`{"@timestamp":1764672000123,"@metadata":{"beat":"x"}}`,
		`{"@timestamp":"2026\u002d12-02T10:57:41+02:00","@metadata":{"beat":"x"}}`,
		`{"@timestamp":"garbage","@metadata":{"beat":"x"}}`,
	} {
		f := MustCompile("%{[@metadata][beat]}-%{+yyyy.MM.dd}")
		dst := make([]byte, 0, 256)
		evb := []byte(ev)
		n := testing.AllocsPerRun(100, func() { f.Append(dst[:0], evb, received) })
		if strings.Contains(ev, "garbage") {
			// Unreadable by the fast parser, so time.Parse has a go.
			continue
		}
		if n != 0 {
			t.Errorf("%s: %v allocs per Append, want 0", ev, n)
		}
	}
}

func jsonString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestSkipValueBrackets(t *testing.T) {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	for _, tc := range []struct {
		skipped string
		ok      bool
	}{
		{`[1,{"a":"]}"},[]]`, true},
		{`[1,2}`, false},
		{`{"a":[1}]`, false},
		{`[` + deep("[", "]", 200) + `,` + deep("{", "}", 100) + `]`, true},
		{`{"a":` + deep("[", "]", 130) + `}`, true},
		{`[` + deep("{\"a\":", "}", 70) + `1` + `]`, true}, // not JSON, but brackets pair
		{`{"a":` + deep("[", "]", 30) + `]`, false},
		// Past 64 levels, the outer levels are matched by count only.
		{`{"a":` + deep("[", "]", 130) + `]`, true},
	} {
		event := `{"x":` + tc.skipped + `,"k":"v"}`
		got, ok := MustCompile("%{k}").Render([]byte(event), received)
		if ok != tc.ok || (ok && got != "v") {
			t.Errorf("skipping %.40q...: got %q, %v; want ok=%v", tc.skipped, got, ok, tc.ok)
		}
	}
}

func TestParseIndex(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"+7", 7, true}, {"-7", -7, true}, {"007", 7, true},
		{"2147483647", 2147483647, true}, {"-2147483648", -2147483648, true},
		{"2147483648", 0, false}, {"-2147483649", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+", 0, false}, {"1a", 0, false}, {" 1", 0, false}, {"1.0", 0, false},
	} {
		got, ok := parseIndex(tc.s)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseIndex(%q) = %d, %v; want %d, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMalformedArraysAndObjects(t *testing.T) {
	runRender(t, []renderCase{
		{"negative index in unterminated array", "%{[a][-1]}", `{"a":[1,2`, "", false},
		{"negative index missing comma", "%{[a][-1]}", `{"a":[1 2]}`, "", false},
		{"negative index empty", "%{[a][-1]}", `{"a":[]}`, "", false},
		{"negative index nested", "%{[a][-1][-1]}", `{"a":[[1],[2, 3 ]]}`, "3", true},
		{"index past trailing comma", "%{[a][1]}", `{"a":[1,]}`, "", false},
		{"object bad escape in key", "%{o}", `{"o":{"\x":1}}`, "", false},
		{"object bad escape in value", "%{o}", `{"o":{"a":"\x"}}`, "", false},
		{"object control char", "%{o}", "{\"o\":{\"a\":\"\x01\"}}", "", false},
		{"object missing colon", "%{o}", `{"o":{"a"}}`, "", false},
		{"object non-string key", "%{o}", `{"o":{1:2}}`, "", false},
		{"object bad literal", "%{o}", `{"o":{"a":nul}}`, "", false},
		{"object null member", "%{o}", `{"o":{"a":null,"b":false}}`, `{"a":null,"b":false}`, true},
		{"array bad string", "%{a}", `{"a":["\x"]}`, "", false},
		{"array bad null", "%{a}", `{"a":[nul]}`, "", false},
		{"array missing comma", "%{a}", `{"a":[1 2]}`, "", false},
		{"array unterminated", "%{a}", `{"a":[1,`, "", false},
		{"unicode escape upper hex", "%{a}", `{"a":"\u00C9\u00e9"}`, "Éé", true},
		{"unicode escape bad hex", "%{a}", `{"a":"\u00g9"}`, "", false},
		{"trailing backslash", "%{a}", `{"a":"x\`, "", false},
	})
}

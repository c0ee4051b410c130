package processors

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/logpond/logpond/internal/jsontree"
)

// condEvent parses js into an event.
func condEvent(t testing.TB, js string) *event {
	t.Helper()
	v, err := jsontree.Parse(js)
	if err != nil {
		t.Fatalf("event %s: %v", js, err)
	}
	return &event{root: v, arena: &jsontree.Arena{}}
}

// condTouch expands every object and array of v (which is parsed
// lazily) and decodes its strings, as reading them does, so that
// marshalling v before and after a match compares the same form.
func condTouch(v *jsontree.Value) {
	switch v.Type() {
	case jsontree.TypeObject:
		o, _ := v.Object()
		o.Visit(func(_ []byte, m *jsontree.Value) { condTouch(m) })
	case jsontree.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			condTouch(it)
		}
	case jsontree.TypeString:
		v.Str()
	}
}

// condCompileTOML decodes doc and compiles its `when`.
func condCompileTOML(t testing.TB, doc string) (condition, error) {
	t.Helper()
	var top map[string]any
	if _, err := toml.Decode(doc, &top); err != nil {
		t.Fatalf("TOML: %v\n%s", err, doc)
	}
	return compileCondition("when", top["when"])
}

type condCase struct {
	name  string
	when  string // TOML
	event string // JSON
	want  bool
}

func condRun(t *testing.T, cases []condCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cond, err := condCompileTOML(t, c.when)
			if err != nil {
				t.Fatalf("compile: %v\n%s", err, c.when)
			}
			e := condEvent(t, c.event)
			condTouch(e.root)
			before := e.root.String()
			if got := cond.match(e); got != c.want {
				t.Fatalf("match = %v, want %v\nwhen: %s\nevent: %s", got, c.want, c.when, c.event)
			}
			if after := e.root.String(); after != before {
				t.Fatalf("match changed the event:\n%s\n%s", before, after)
			}
		})
	}
}

func TestCondEquals(t *testing.T) {
	condRun(t, []condCase{
		{"string", `when.equals.method = "GET"`, `{"method":"GET"}`, true},
		{"string differs", `when.equals.method = "GET"`, `{"method":"POST"}`, false},
		{"string case", `when.equals.method = "GET"`, `{"method":"get"}`, false},
		{"string escaped", `when.equals.s = "a\"b"`, `{"s":"a\u0022b"}`, true},
		{"empty string", `when.equals.s = ""`, `{"s":""}`, true},
		{"missing", `when.equals.method = "GET"`, `{"other":"GET"}`, false},
		{"string vs number", `when.equals.code = "200"`, `{"code":200}`, false},
		{"string vs array", `when.equals.tag = "a"`, `{"tag":["a"]}`, false},
		{"string vs null", `when.equals.tag = "a"`, `{"tag":null}`, false},
		{"int", `when.equals.code = 200`, `{"code":200}`, true},
		{"int differs", `when.equals.code = 200`, `{"code":404}`, false},
		{"int negative", `when.equals.n = -5`, `{"n":-5}`, true},
		{"int vs float literal", `when.equals.code = 200`, `{"code":200.0}`, false},
		{"int vs exponent", `when.equals.code = 200`, `{"code":2e2}`, false},
		{"int vs string", `when.equals.code = 200`, `{"code":"200"}`, false},
		{"int vs bool", `when.equals.code = 1`, `{"code":true}`, false},
		{"int max", `when.equals.n = 9223372036854775807`, `{"n":9223372036854775807}`, true},
		{"int min", `when.equals.n = -9223372036854775808`, `{"n":-9223372036854775808}`, true},
		{"int near max", `when.equals.n = 9223372036854775806`, `{"n":9223372036854775807}`, false},
		{"int 2^53+1", `when.equals.n = 9007199254740993`, `{"n":9007199254740992}`, false},
		{"int 2^53+1 same", `when.equals.n = 9007199254740993`, `{"n":9007199254740993}`, true},
		{"int negative zero", `when.equals.n = 0`, `{"n":-0}`, true},
		{"int overflow is a float", `when.equals.n = 9223372036854775807`, `{"n":9223372036854775808}`, false},
		{"bool true", `when.equals.ok = true`, `{"ok":true}`, true},
		{"bool false", `when.equals.ok = false`, `{"ok":false}`, true},
		{"bool differs", `when.equals.ok = true`, `{"ok":false}`, false},
		{"bool vs string", `when.equals.ok = true`, `{"ok":"true"}`, false},
		{"nested dotted key", `when.equals.http.response.code = 200`, `{"http":{"response":{"code":200}}}`, true},
		{"nested quoted key", `when.equals."http.response.code" = 200`, `{"http":{"response":{"code":200}}}`, true},
		{"nested table", "[when.equals.http.response]\ncode = 200", `{"http":{"response":{"code":200}}}`, true},
		{"nested missing part", `when.equals."http.response.code" = 200`, `{"http":{"request":{}}}`, false},
		{"path through a string", `when.equals."a.b" = "x"`, `{"a":"x"}`, false},
		{"path through an array", `when.equals."a.0" = "x"`, `{"a":["x"]}`, false},
		{"a dotted key found whole", `when.equals."a.b" = "x"`, `{"a.b":"x"}`, true},
		{"the whole key before the nested one", `when.equals."a.b" = "x"`, `{"a":{"b":"y"},"a.b":"x"}`, true},
		{"a dotted key whole one level down", `when.equals."a.b.c" = "x"`, `{"a":{"b.c":"x"}}`, true},
		{"a dotted key whole in an object not split", `when.equals."a.b.c" = "x"`, `{"a":{"z":1,"b.c":"x","q":{"r":2}}}`, true},
		{"only the rest is tried whole", `when.equals."a.b.c" = "x"`, `{"a.b":{"c":"x"}}`, false},
		{"all fields hold", "[when.equals]\nmethod = \"GET\"\ncode = 200", `{"method":"GET","code":200}`, true},
		{"one field fails", "[when.equals]\nmethod = \"GET\"\ncode = 200", `{"method":"GET","code":500}`, false},
		{"one field missing", "[when.equals]\nmethod = \"GET\"\ncode = 200", `{"method":"GET"}`, false},
	})
}

func TestCondContains(t *testing.T) {
	condRun(t, []condCase{
		{"substring", `when.contains.message = "error"`, `{"message":"an error here"}`, true},
		{"whole", `when.contains.message = "error"`, `{"message":"error"}`, true},
		{"absent substring", `when.contains.message = "error"`, `{"message":"all fine"}`, false},
		{"case matters", `when.contains.message = "error"`, `{"message":"ERROR"}`, false},
		{"missing", `when.contains.message = "error"`, `{}`, false},
		{"number", `when.contains.code = "20"`, `{"code":200}`, false},
		{"object", `when.contains.m = "a"`, `{"m":{"a":"a"}}`, false},
		{"array any", `when.contains.tags = "prod"`, `{"tags":["dev","production"]}`, true},
		{"array none", `when.contains.tags = "prod"`, `{"tags":["dev","test"]}`, false},
		{"array skips non-strings", `when.contains.tags = "1"`, `{"tags":[1,{"a":"1"},["1"],"x1"]}`, true},
		{"array only non-strings", `when.contains.tags = "1"`, `{"tags":[1,{"a":"1"},["1"]]}`, false},
		{"empty array", `when.contains.tags = "a"`, `{"tags":[]}`, false},
		{"empty substring matches only empty", `when.contains.s = ""`, `{"s":""}`, true},
		{"empty substring vs text", `when.contains.s = ""`, `{"s":"x"}`, false},
		{"unicode escape", `when.contains.s = "é"`, `{"s":"caf\u00e9"}`, true},
		{"nested", `when.contains.log.file.path = "/var/log"`, `{"log":{"file":{"path":"/var/log/syslog"}}}`, true},
		{"and of fields", "[when.contains]\na = \"x\"\nb = \"y\"", `{"a":"-x-","b":"-z-"}`, false},
	})
}

func TestCondRegexp(t *testing.T) {
	condRun(t, []condCase{
		{"unanchored", `when.regexp.message = "err(or)?"`, `{"message":"some error"}`, true},
		{"anchored", `when.regexp.message = "^err"`, `{"message":"some error"}`, false},
		{"anchored match", `when.regexp.message = "^some"`, `{"message":"some error"}`, true},
		{"no match", `when.regexp.message = "^[0-9]+$"`, `{"message":"12a"}`, false},
		{"missing", `when.regexp.message = "."`, `{}`, false},
		{"number", `when.regexp.n = "^2"`, `{"n":200}`, false},
		{"bool", `when.regexp.n = "true"`, `{"n":true}`, false},
		{"array any", `when.regexp.hosts = "^web-[0-9]+$"`, `{"hosts":["db-1","web-12"]}`, true},
		{"array none", `when.regexp.hosts = "^web-[0-9]+$"`, `{"hosts":["db-1","web-x"]}`, false},
		{"empty regexp matches all strings", `when.regexp.s = ""`, `{"s":"x"}`, true},
		{"flags", `when.regexp.s = "(?i)^error"`, `{"s":"ERROR: x"}`, true},
		{"nested", `when.regexp."a.b" = "x"`, `{"a":{"b":"yxy"}}`, true},
	})
}

func TestCondRange(t *testing.T) {
	condRun(t, []condCase{
		{"gte int", `when.range."http.status.gte" = 400`, `{"http":{"status":404}}`, true},
		{"gte equal", `when.range."http.status.gte" = 400`, `{"http":{"status":400}}`, true},
		{"gte below", `when.range."http.status.gte" = 400`, `{"http":{"status":399}}`, false},
		{"gt equal", `when.range."n.gt" = 5`, `{"n":5}`, false},
		{"gt above", `when.range."n.gt" = 5`, `{"n":5.01}`, true},
		{"lt", `when.range."n.lt" = 5`, `{"n":4.99}`, true},
		{"lt equal", `when.range."n.lt" = 5`, `{"n":5}`, false},
		{"lte equal", `when.range."n.lte" = 5`, `{"n":5.0}`, true},
		{"lte above", `when.range."n.lte" = 5`, `{"n":6}`, false},
		{"closed in", "[when.range]\n\"code.gte\" = 200\n\"code.lt\" = 300", `{"code":204}`, true},
		{"closed out", "[when.range]\n\"code.gte\" = 200\n\"code.lt\" = 300", `{"code":300}`, false},
		{"dotted keys", "[when.range]\ncode.gte = 200\ncode.lt = 300", `{"code":250}`, true},
		{"float bound", `when.range."cpu.pct.gte" = 0.5`, `{"cpu":{"pct":0.6}}`, true},
		{"float bound below", `when.range."cpu.pct.gte" = 0.5`, `{"cpu":{"pct":0.4}}`, false},
		{"float field int bound", `when.range."n.gt" = 1`, `{"n":1.5}`, true},
		{"exponent field", `when.range."n.gte" = 100`, `{"n":1e3}`, true},
		{"negative", `when.range."n.lt" = 0`, `{"n":-1}`, true},
		{"numeric string bound", `when.range."n.gte" = "10"`, `{"n":10}`, true},
		{"a string that reads as a number, as in Filebeat", `when.range."n.gte" = 10`, `{"n":"11"}`, true},
		{"a string that does not", `when.range."n.gte" = 10`, `{"n":"eleven"}`, false},
		{"a float in a string", `when.range."lat.lt" = 1`, `{"lat":"0.5"}`, true},
		{"NaN in a string", `when.range."n.gte" = 10`, `{"n":"NaN"}`, false},
		{"bool field", `when.range."n.gte" = 0`, `{"n":true}`, false},
		{"array field", `when.range."n.gte" = 0`, `{"n":[1]}`, false},
		{"null field", `when.range."n.gte" = 0`, `{"n":null}`, false},
		{"missing", `when.range."n.gte" = 0`, `{}`, false},
		{"inf bound", `when.range."n.lt" = inf`, `{"n":1e300}`, true},
		{"several fields all", "[when.range]\n\"a.gte\" = 1\n\"b.lte\" = 1", `{"a":2,"b":0}`, true},
		{"several fields one fails", "[when.range]\n\"a.gte\" = 1\n\"b.lte\" = 1", `{"a":2,"b":2}`, false},
		{"several fields one missing", "[when.range]\n\"a.gte\" = 1\n\"b.lte\" = 1", `{"a":2}`, false},
	})
}

func TestCondHasFields(t *testing.T) {
	condRun(t, []condCase{
		{"present", `when.has_fields = ["a", "b.c"]`, `{"a":1,"b":{"c":"x"}}`, true},
		{"one missing", `when.has_fields = ["a", "b.c"]`, `{"a":1,"b":{}}`, false},
		{"null is present", `when.has_fields = ["a"]`, `{"a":null}`, true},
		{"empty object is present", `when.has_fields = ["a"]`, `{"a":{}}`, true},
		{"path through scalar", `when.has_fields = ["a.b"]`, `{"a":"b"}`, false},
		{"single string", `when.has_fields = "a"`, `{"a":false}`, true},
		{"single string missing", `when.has_fields = "a"`, `{"b":false}`, false},
	})
}

func TestCondNetwork(t *testing.T) {
	condRun(t, []condCase{
		{"private v4", `when.network.ip = "private"`, `{"ip":"192.168.1.2"}`, true},
		{"private 172.16/12", `when.network.ip = "private"`, `{"ip":"172.31.255.1"}`, true},
		{"not private 172.32", `when.network.ip = "private"`, `{"ip":"172.32.0.1"}`, false},
		{"private fd00::/8", `when.network.ip = "private"`, `{"ip":"fd12::1"}`, true},
		{"fc00::/8 is not private in Filebeat", `when.network.ip = "private"`, `{"ip":"fc12::1"}`, false},
		{"public", `when.network.ip = "public"`, `{"ip":"8.8.8.8"}`, true},
		{"public not loopback", `when.network.ip = "public"`, `{"ip":"127.0.0.1"}`, false},
		{"public not broadcast", `when.network.ip = "public"`, `{"ip":"255.255.255.255"}`, false},
		{"public v6", `when.network.ip = "public"`, `{"ip":"2001:4860::8888"}`, true},
		{"loopback v6", `when.network.ip = "loopback"`, `{"ip":"::1"}`, true},
		{"mapped v4 loopback", `when.network.ip = "loopback"`, `{"ip":"::ffff:127.0.0.1"}`, true},
		{"cidr", `when.network.ip = "10.0.0.0/8"`, `{"ip":"10.1.2.3"}`, true},
		{"cidr out", `when.network.ip = "10.0.0.0/8"`, `{"ip":"11.1.2.3"}`, false},
		{"cidr mapped address", `when.network.ip = "10.0.0.0/8"`, `{"ip":"::ffff:10.1.2.3"}`, true},
		{"cidr v6", `when.network.ip = "2001:db8::/32"`, `{"ip":"2001:db8:1::1"}`, true},
		{"cidr v6 vs v4", `when.network.ip = "::/0"`, `{"ip":"1.2.3.4"}`, false},
		{"mapped cidr contains v4", `when.network.ip = "::ffff:10.0.0.0/104"`, `{"ip":"10.9.9.9"}`, true},
		{"cidr with host bits", `when.network.ip = "10.1.2.3/8"`, `{"ip":"10.200.0.1"}`, true},
		{"list any", `when.network.ip = ["loopback", "10.0.0.0/8"]`, `{"ip":"10.0.0.1"}`, true},
		{"list none", `when.network.ip = ["loopback", "10.0.0.0/8"]`, `{"ip":"192.168.0.1"}`, false},
		{"field array any", `when.network.ips = "private"`, `{"ips":["8.8.8.8","10.0.0.1"]}`, true},
		{"field array none", `when.network.ips = "private"`, `{"ips":["8.8.8.8","junk",5]}`, false},
		{"not an ip", `when.network.ip = "public"`, `{"ip":"not-an-ip"}`, false},
		{"zone refused as net.ParseIP does", `when.network.ip = "link_local_unicast"`, `{"ip":"fe80::1%eth0"}`, false},
		{"number", `when.network.ip = "public"`, `{"ip":8}`, false},
		{"missing", `when.network.ip = "public"`, `{}`, false},
		{"nested field", `when.network.source.ip = "private"`, `{"source":{"ip":"10.0.0.1"}}`, true},
		{"two fields and", "[when.network]\n\"source.ip\" = \"private\"\n\"destination.ip\" = \"public\"", `{"source":{"ip":"10.0.0.1"},"destination":{"ip":"10.0.0.2"}}`, false},
		{"two fields both", "[when.network]\n\"source.ip\" = \"private\"\n\"destination.ip\" = \"public\"", `{"source":{"ip":"10.0.0.1"},"destination":{"ip":"1.1.1.1"}}`, true},
		{"multicast", `when.network.ip = "multicast"`, `{"ip":"224.0.0.1"}`, true},
		{"link_local_multicast", `when.network.ip = "link_local_multicast"`, `{"ip":"ff02::1"}`, true},
		{"interface_local_multicast", `when.network.ip = "interface_local_multicast"`, `{"ip":"ff01::1"}`, true},
		{"unspecified", `when.network.ip = "unspecified"`, `{"ip":"::"}`, true},
		{"unicast", `when.network.ip = "unicast"`, `{"ip":"10.0.0.1"}`, true},
		{"global_unicast", `when.network.ip = "global_unicast"`, `{"ip":"255.255.255.255"}`, false},
	})
}

func TestCondLogic(t *testing.T) {
	condRun(t, []condCase{
		{"and", "[[when.and]]\nequals.a = 1\n[[when.and]]\nequals.b = 2", `{"a":1,"b":2}`, true},
		{"and fails", "[[when.and]]\nequals.a = 1\n[[when.and]]\nequals.b = 2", `{"a":1,"b":3}`, false},
		{"or", "[[when.or]]\nequals.a = 1\n[[when.or]]\nequals.b = 2", `{"a":0,"b":2}`, true},
		{"or fails", "[[when.or]]\nequals.a = 1\n[[when.or]]\nequals.b = 2", `{"a":0,"b":0}`, false},
		{"or inline", `when.or = [{equals = {a = 1}}, {has_fields = ["c"]}]`, `{"c":null}`, true},
		{"not", `when.not.equals.a = 1`, `{"a":2}`, true},
		{"not holds", `when.not.equals.a = 1`, `{"a":1}`, false},
		{"not missing", `when.not.has_fields = ["a"]`, `{}`, true},
		{"nested", "[[when.or]]\nnot.range.\"n.lt\" = 10\n[[when.or]]\n[[when.or.and]]\ncontains.m = \"x\"\n[[when.or.and]]\nregexp.m = \"^y\"",
			`{"n":5,"m":"yx"}`, true},
		{"nested fails", "[[when.or]]\nnot.range.\"n.lt\" = 10\n[[when.or]]\n[[when.or.and]]\ncontains.m = \"x\"\n[[when.or.and]]\nregexp.m = \"^y\"",
			`{"n":5,"m":"xy"}`, false},
	})
}

// TestCondFromTOML compiles conditions from whole TOML documents, as a
// processor's configuration writes them.
func TestCondFromTOML(t *testing.T) {
	doc := `
[when.range]
"http.status.gte" = 400
`
	c, err := condCompileTOML(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	for js, want := range map[string]bool{
		`{"http":{"status":500}}`: true,
		`{"http":{"status":200}}`: false,
		`{"http":{}}`:             false,
	} {
		if got := c.match(condEvent(t, js)); got != want {
			t.Errorf("%s: match = %v, want %v", js, got, want)
		}
	}

	doc = `
[[when.or]]
[when.or.equals]
"event.dataset" = "nginx.access"
[[when.or]]
[when.or.network]
source.ip = ["private", "192.0.2.0/24"]
[[when.or]]
[when.or.not]
has_fields = ["user.name"]
`
	c, err = condCompileTOML(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	for js, want := range map[string]bool{
		`{"event":{"dataset":"nginx.access"},"user":{"name":"x"}}`: true,
		`{"source":{"ip":"192.0.2.7"},"user":{"name":"x"}}`:        true,
		`{"source":{"ip":"8.8.8.8"},"user":{"name":"x"}}`:          false,
		`{"source":{"ip":"8.8.8.8"}}`:                              true,
	} {
		if got := c.match(condEvent(t, js)); got != want {
			t.Errorf("%s: match = %v, want %v", js, got, want)
		}
	}
}

// TestCondInChain runs conditions where a chain uses them: a processor's
// when and an if/then/else.
func TestCondInChain(t *testing.T) {
	if _, ok := builders["drop_event"]; !ok {
		t.Skip("drop_event is not registered")
	}
	doc := `
[[processors]]
[processors.drop_event.when.range]
"http.status.lt" = 400
`
	c := mustChain(t, doc)
	for js, keep := range map[string]bool{
		`{"http":{"status":200}}`: false,
		`{"http":{"status":404}}`: true,
		`{"http":{}}`:             true,
	} {
		_, k, err := c.NewRunner().Run([]byte(js))
		if err != nil || k != keep {
			t.Errorf("%s: keep = %v, %v; want %v", js, k, err, keep)
		}
	}

	doc = `
[[processors]]
if.equals.drop = true
[[processors.then]]
drop_event = {}
`
	c = mustChain(t, doc)
	for js, keep := range map[string]bool{
		`{"drop":true}`:  false,
		`{"drop":false}`: true,
		`{}`:             true,
	} {
		_, k, err := c.NewRunner().Run([]byte(js))
		if err != nil || k != keep {
			t.Errorf("%s: keep = %v, %v; want %v", js, k, err, keep)
		}
	}

	doc = `
[[processors]]
[processors.drop_event.when]
equal.a = 1
`
	_, err := compileTOML(t, doc)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.At != "processors[0].drop_event.when.equal" {
		t.Fatalf("err = %v, want a ConfigError at processors[0].drop_event.when.equal", err)
	}
}

func TestCondConfigErrors(t *testing.T) {
	cases := []struct {
		name, when string // TOML, the table "when" (or none)
		at, msg    string
	}{
		{"not a table", `when = "x"`, "when", `want a table naming one condition (and, contains, equals, has_fields, network, not, or, range, regexp), got the string "x"`},
		{"empty", `when = {}`, "when", "empty: name one condition; known: and, contains, equals"},
		{"unknown", `when.equal.a = 1`, "when.equal", "unknown condition; known: and, contains, equals, has_fields, network, not, or, range, regexp"},
		{"several", "[when]\nrange.\"a.gt\" = 1\nequals.b = 2", "when", "names 2 conditions (equals, range) but holds one (Filebeat would use only equals and ignore the rest): combine them with and"},
		{"equals not a table", `when.equals = "a"`, "when.equals", `want a table of field = value, got the string "a"`},
		{"equals empty", `when.equals = {}`, "when.equals", "empty: name at least one field"},
		{"equals empty subtable", `when.equals.a = {}`, "when.equals.a", "an empty table names no field"},
		{"equals float", `when.equals.a = 1.5`, "when.equals.a", "want a string, an integer or a boolean, got the number 1.5"},
		{"equals list", `when.equals.a = [1]`, "when.equals.a", "want a string, an integer or a boolean, got a list"},
		{"equals date", `when.equals.a = 2024-01-02`, "when.equals.a", "want a string, an integer or a boolean, got a date or time"},
		{"equals dotted field", `when.equals."http.code" = 1.5`, `when.equals."http.code"`, "got the number 1.5"},
		{"equals nested field", `when.equals.http.code = 1.5`, `when.equals.http.code`, "got the number 1.5"},
		{"equals bad field", `when.equals."a..b" = 1`, `when.equals."a..b"`, `field name "a..b" has an empty part`},
		{"equals twice", "[when.equals]\n\"a.b\" = 1\na.b = 2", `when.equals."a.b"`, `names the field "a.b" again (also at when.equals.a.b)`},
		{"contains not a string", `when.contains.a = 1`, "when.contains.a", "want a string, got the integer 1"},
		{"contains empty", `when.contains = {}`, "when.contains", "empty"},
		{"regexp not a string", `when.regexp.a = true`, "when.regexp.a", "want a string (a regexp), got true"},
		{"regexp bad", `when.regexp.message = "a(b"`, "when.regexp.message", "bad regexp \"a(b\": error parsing regexp: missing closing )"},
		{"range op", `when.range."a.gtr" = 1`, `when.range."a.gtr"`, `unknown range operator "gtr"; known: gt, gte, lt, lte`},
		{"range no field", `when.range.gte = 1`, "when.range.gte", "want <field>.<op>"},
		{"range empty field part", `when.range."a..gte" = 1`, `when.range."a..gte"`, "has an empty part"},
		{"range not a number", `when.range."a.gte" = "x"`, `when.range."a.gte"`, `want a number, got the string "x"`},
		{"range bool", `when.range."a.gte" = true`, `when.range."a.gte"`, "want a number, got true"},
		{"range nan", `when.range."a.gte" = nan`, `when.range."a.gte"`, "want a number, got NaN"},
		{"range empty", `when.range = {}`, "when.range", "empty"},
		{"range not a table", `when.range = 3`, "when.range", "want a table of field = value, got the integer 3"},
		{"has_fields empty", `when.has_fields = []`, "when.has_fields", "empty: list at least one field"},
		{"has_fields not strings", `when.has_fields = ["a", 1]`, "when.has_fields[1]", "want a field name, got the integer 1"},
		{"has_fields table", `when.has_fields = {a = 1}`, "when.has_fields", "want a list of field names, got a table"},
		{"has_fields bad name", `when.has_fields = ["a", ""]`, "when.has_fields[1]", "a field name is empty"},
		{"network bad name", `when.network.ip = "privat"`, "when.network.ip", `"privat" is neither a named network (global_unicast, interface_local_multicast, link_local_multicast, link_local_unicast, loopback, multicast, private, public, unicast, unspecified) nor a CIDR`},
		{"network bad cidr", `when.network.ip = "10.0.0.0/33"`, "when.network.ip", `"10.0.0.0/33" is neither a named network`},
		{"network bare ip", `when.network.ip = "10.0.0.1"`, "when.network.ip", `"10.0.0.1" is neither a named network`},
		{"network bad in list", `when.network.ip = ["private", "x"]`, "when.network.ip[1]", `"x" is neither`},
		{"network non-string in list", `when.network.ip = ["private", 1]`, "when.network.ip[1]", "want a network (a CIDR or a name), got the integer 1"},
		{"network empty list", `when.network.ip = []`, "when.network.ip", "empty: list at least one network"},
		{"network int", `when.network.ip = 1`, "when.network.ip", "want a network or a list of networks, got the integer 1"},
		{"network empty", `when.network = {}`, "when.network", "empty"},
		{"and empty", `when.and = []`, "when.and", "empty: list at least one condition"},
		{"and table", `when.and.equals.a = 1`, "when.and", "want a list of conditions (a list of tables), got a table"},
		{"or not tables", `when.or = [1]`, "when.or[0]", "want a table naming one condition"},
		{"or inner", "[[when.or]]\nequals.a = 1\n[[when.or]]\nequals.b = 1.5", "when.or[1].equals.b", "got the number 1.5"},
		{"or inner empty", "[[when.or]]\nequals.a = 1\n[[when.or]]", "when.or[1]", "empty: name one condition"},
		{"not empty", `when.not = {}`, "when.not", "empty: name one condition"},
		{"not inner", `when.not.range."a.b" = 1`, `when.not.range."a.b"`, `unknown range operator "b"`},
		{"not not a table", `when.not = [1]`, "when.not", "want a table naming one condition"},
		{"missing when", `x = 1`, "when", "got nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cond, err := condCompileTOML(t, c.when)
			if err == nil {
				t.Fatalf("compiled %T, want an error", cond)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *ConfigError", err, err)
			}
			if ce.At != c.at {
				t.Errorf("At = %q, want %q (%v)", ce.At, c.at, err)
			}
			if !strings.Contains(ce.Err.Error(), c.msg) {
				t.Errorf("message %q\ndoes not hold %q", ce.Err.Error(), c.msg)
			}
		})
	}
}

// TestCondGoValues compiles values as Go code may build them (int rather
// than TOML's int64).
func TestCondGoValues(t *testing.T) {
	c, err := compileCondition("when", map[string]any{
		"and": []any{
			map[string]any{"equals": map[string]any{"a": 1, "b": uint8(2)}},
			map[string]any{"range": map[string]any{"c.gte": 3, "c.lt": uint64(10)}},
			map[string]any{"has_fields": []string{"a"}},
			map[string]any{"network": map[string]any{"ip": []string{"loopback", "private"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.match(condEvent(t, `{"a":1,"b":2,"c":3,"ip":"10.0.0.1"}`)) {
		t.Error("no match")
	}
	if c.match(condEvent(t, `{"a":1,"b":2,"c":10,"ip":"10.0.0.1"}`)) {
		t.Error("match")
	}
}

// TestCondNamedNetworks checks the named networks, on netip addresses,
// against Filebeat's definitions on net.IP.
func TestCondNamedNetworks(t *testing.T) {
	privateV4 := []net.IPNet{
		{IP: net.IPv4(10, 0, 0, 0), Mask: net.IPv4Mask(255, 0, 0, 0)},
		{IP: net.IPv4(172, 16, 0, 0), Mask: net.IPv4Mask(255, 240, 0, 0)},
		{IP: net.IPv4(192, 168, 0, 0), Mask: net.IPv4Mask(255, 255, 0, 0)},
	}
	privateV6 := net.IPNet{IP: net.IP{0xfd, 15: 0}, Mask: net.IPMask{0xff, 15: 0}}
	isPrivate := func(ip net.IP) bool {
		for _, n := range privateV4 {
			if n.Contains(ip) {
				return true
			}
		}
		return privateV6.Contains(ip)
	}
	filebeat := map[string]func(net.IP) bool{
		"loopback":                  net.IP.IsLoopback,
		"global_unicast":            net.IP.IsGlobalUnicast,
		"unicast":                   net.IP.IsGlobalUnicast,
		"link_local_unicast":        net.IP.IsLinkLocalUnicast,
		"interface_local_multicast": net.IP.IsInterfaceLocalMulticast,
		"link_local_multicast":      net.IP.IsLinkLocalMulticast,
		"multicast":                 net.IP.IsMulticast,
		"unspecified":               net.IP.IsUnspecified,
		"private":                   isPrivate,
		"public": func(ip net.IP) bool {
			return !(isPrivate(ip) || ip.IsLoopback() || ip.IsUnspecified() || ip.Equal(net.IPv4bcast) ||
				ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast())
		},
	}
	if len(filebeat) != len(condNamedNetworks) {
		t.Fatalf("%d named networks, Filebeat has %d", len(condNamedNetworks), len(filebeat))
	}
	addrs := []string{
		"0.0.0.0", "::", "127.0.0.1", "127.255.0.9", "::1", "::2", "10.0.0.1", "10.255.255.255", "11.0.0.0",
		"172.15.255.255", "172.16.0.0", "172.31.255.255", "172.32.0.0", "192.168.0.1", "192.169.0.1",
		"169.254.1.1", "169.255.0.1", "224.0.0.1", "224.0.1.1", "239.1.1.1", "255.255.255.255", "255.255.255.254",
		"8.8.8.8", "1.1.1.1", "fe80::1", "febf::1", "fec0::1", "ff01::1", "ff11::1", "ff02::1", "ff12::2", "ff05::1",
		"fc00::1", "fd00::1", "fdff::1", "2001:db8::1", "2606:4700::1111", "::ffff:10.0.0.1", "::ffff:127.0.0.1",
		"::ffff:0.0.0.0", "::ffff:255.255.255.255", "::ffff:8.8.8.8", "::ffff:169.254.0.1", "::ffff:224.0.0.5",
		"64:ff9b::8.8.8.8", "::8.8.8.8",
	}
	for _, s := range addrs {
		ip := net.ParseIP(s)
		a, err := netip.ParseAddr(s)
		if ip == nil || err != nil {
			t.Fatalf("bad test address %q", s)
		}
		a = a.Unmap()
		for name, f := range filebeat {
			if got, want := condNamedNetworks[name](a), f(ip); got != want {
				t.Errorf("%s in %s = %v, Filebeat says %v", s, name, got, want)
			}
		}
	}
}

// TestCondCIDR checks CIDRs, on netip addresses, against net.IPNet.
func TestCondCIDR(t *testing.T) {
	cidrs := []string{"10.0.0.0/8", "10.1.2.3/8", "0.0.0.0/0", "::/0", "192.0.2.0/24", "192.0.2.1/32",
		"2001:db8::/32", "fd00::/8", "::ffff:0:0/96", "::ffff:10.0.0.0/104", "::ffff:10.0.0.0/128", "::/96", "::ffff:0:0/80"}
	addrs := []string{"10.0.0.1", "10.255.255.255", "11.0.0.1", "0.0.0.0", "192.0.2.1", "192.0.2.2", "::",
		"::1", "2001:db8::1", "2001:db9::1", "fd00::1", "::ffff:10.0.0.1", "::ffff:192.0.2.1", "::10.0.0.1", "::ffff:0:1"}
	for _, cs := range cidrs {
		_, n, err := net.ParseCIDR(cs)
		if err != nil {
			t.Fatal(err)
		}
		cn, err := condParseNet(cs)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range addrs {
			ip := net.ParseIP(s)
			a := netip.MustParseAddr(s).Unmap()
			if got, want := cn.contains(a), n.Contains(ip); got != want {
				t.Errorf("%s in %s = %v, net says %v", s, cs, got, want)
			}
		}
	}
}

// TestCondAllocs checks that matching does not allocate in the common
// cases. regexp is left out: its matchers come from a sync.Pool, which
// the race detector empties at random (BenchmarkCondition shows it).
func TestCondAllocs(t *testing.T) {
	js := `{"http":{"request":{"method":"GET"},"response":{"status_code":404}},"message":"GET /x failed",` +
		`"tags":["a","prod"],"cpu":0.75,"source":{"ip":"10.1.2.3"},"ips":["8.8.8.8","192.168.1.1"]}`
	cases := map[string]string{
		"equals string": `when.equals."http.request.method" = "GET"`,
		"equals int":    `when.equals."http.response.status_code" = 404`,
		"equals float":  `when.equals.cpu = 1`,
		"contains":      `when.contains.message = "failed"`,
		"contains any":  `when.contains.tags = "prod"`,
		"has_fields":    `when.has_fields = ["http.request.method", "source.ip"]`,
		"range int":     `when.range."http.response.status_code.gte" = 400`,
		"range float":   "[when.range]\n\"cpu.gt\" = 0.5\n\"cpu.lte\" = 1",
		"network":       `when.network."source.ip" = ["public", "10.0.0.0/8"]`,
		"network array": `when.network.ips = "private"`,
		"or not":        "[[when.or]]\nnot.equals.message = \"x\"\n[[when.or]]\nequals.message = \"x\"",
	}
	for name, when := range cases {
		c, err := condCompileTOML(t, when)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		e := condEvent(t, js)
		c.match(e) // unescape once
		if n := testing.AllocsPerRun(100, func() { c.match(e) }); n != 0 {
			t.Errorf("%s: %v allocations per match", name, n)
		}
	}
}

func BenchmarkCondition(b *testing.B) {
	js := `{"@timestamp":"2024-01-02T03:04:05Z","http":{"request":{"method":"GET"},"response":{"status_code":404,"bytes":512}},` +
		`"message":"GET /index.html 404","source":{"ip":"10.1.2.3"},"tags":["web","prod"]}`
	for _, bc := range []struct{ name, when string }{
		{"equals-string", `when.equals."http.request.method" = "GET"`},
		{"equals-int", `when.equals."http.response.status_code" = 404`},
		{"range-int", "[when.range]\n\"http.response.status_code.gte\" = 400\n\"http.response.status_code.lt\" = 500"},
		{"contains", `when.contains.message = "404"`},
		{"regexp", `when.regexp.message = "^GET .* 404$"`},
		{"has_fields", `when.has_fields = ["http.request.method", "source.ip"]`},
		{"network", `when.network."source.ip" = "private"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := condCompileTOML(b, bc.when)
			if err != nil {
				b.Fatal(err)
			}
			e := condEvent(b, js)
			if !c.match(e) {
				b.Fatal("no match")
			}
			b.ReportAllocs()
			for b.Loop() {
				c.match(e)
			}
		})
	}
}

package processors

import (
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	grok "github.com/elastic/go-grok"
	grokpatterns "github.com/elastic/go-grok/patterns"
)

const grokTestCombinedLine = `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36"`

// grokTestLines are log lines of several formats, odd ones among them.
var grokTestLines = []string{
	grokTestCombinedLine,
	`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`,
	`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
	`2001:db8::ff00:42:8329 - - [01/Jan/2024:00:00:01 +0100] "POST /api/v1/items?id=7&x=%20 HTTP/2.0" 201 17 "-" "curl/8.5.0"`,
	`::1 - - [01/Jan/2024:00:00:01 +0000] "GET / HTTP/1.1" 304 - "-" "-"`,
	`fe80::1%eth0 - - [01/Jan/2024:00:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`,
	`::ffff:192.0.2.128 ident user@example.com [31/Dec/1999:23:59:59 +0000] "HEAD /x HTTP/1.1" 200 0 "-" "-"`,
	`www.example.com - - [02/Feb/2022:12:00:00 +0000] "GET /index.html" 404 512 "-" "Wget/1.21"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "-" 408 - "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "\x16\x03\x01\x00\xa5\x01" 400 226 "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /a b c HTTP/1.1" 400 226 "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" - - "-" "Mozilla/5.0 (\"quoted\") é ü 日本"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "http://a/\xff\xfe" "bad \xc3\x28 utf8"`,
	`prefix garbage: 10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-" trailing`,
	`10.0.0.1 - - [2/Feb/2022:2:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`,
	`10.0.0.1 - - [32/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`,
	`10.0.0.1 - - [02/Mai/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 99999999999999999999999 "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" +200 -12 "-" "-"`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-`,
	`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12`,
	`10.0.0.1\t-\t-\t[02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`,
	`999.999.999.999 - - [02/Feb/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`,
	`Mar 12 12:27:00 server3 named[32172]: lame server resolving 'jakarta5.wasantara.net.id' (in 'wasantara.net.id'?): 202.159.65.171#53`,
	`Jan  1 00:00:00 host1 sshd[1234]: Accepted publickey for root from 10.1.2.3 port 22 ssh2`,
	`2024-03-04T05:06:07.891+02:00 myhost kernel: [12345.678] eth0: link up`,
	`2024-03-04 05:06:07,891 ERROR [main] com.example.App - something failed: java.lang.NullPointerException`,
	`2024-03-04T05:06:07Z INFO started in 12.5 ms`,
	`Feb 30 25:61:61 bad-host prog: not a valid time`,
	`Oct 11 22:14:15 <34.1> mymachine su: 'su root' failed for lonvick on /dev/pts/8`,
	`<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application"] An application event log entry...`,
	`<34>1 2003-10-11T22:14:15.003Z - - - - - no structured data`,
	`[Wed Oct 11 14:32:52 2000] [error] [client 127.0.0.1] client denied by server configuration: /export/home/live/ap/htdocs/test`,
	`[Thu Jun 27 06:58:09.169510 2019] [proxy:error] [pid 8:tid 140312] (111)Connection refused: AH00957: HTTP: attempt to connect to 127.0.0.1:8080 (*) failed`,
	`[Mon Dec 05 10:00:00.123456 2022] [core:notice] [pid 42] AH00094: Command line: '/usr/sbin/apache2'`,
	`http://user:pass@example.com:8080/path/to/x.html?a=1&b=2 visited`,
	`value 3.14 word true "a quoted \"string\"" 'single'`,
	`-12.5e3 .5 +7 0x1F`,
	``,
	` `,
	`-`,
	`"`,
	`é`,
	"\xff",
	`a b c d e f g h i j k l m n o p q r s t u v w x y z`,
	strings.Repeat("x ", 100),
	strings.Repeat(`1.2.3.4 - - [`, 20),
}

// grokTestPatterns are compared against go-grok on every line.
var grokTestPatterns = []string{
	"%{COMBINEDAPACHELOG}",
	"%{COMMONAPACHELOG}",
	"%{HTTPD_ERRORLOG}",
	"%{SYSLOGLINE}",
	"%{SYSLOG5424LINE}",
	"%{SYSLOGBASE} %{GREEDYDATA:rest}",
	"%{TIMESTAMP_ISO8601:ts} %{LOGLEVEL:level} %{GREEDYDATA:msg}",
	"%{IP:ip}",
	"%{URI:uri}",
	"%{NUMBER:n:float} %{WORD:w}",
	"%{QS:q}",
	"%{IPORHOST:client} %{DATA:mid} %{INT:code:int}",
}

// grokTestMutate returns variants of line with random edits: odd lines.
func grokTestMutate(r *rand.Rand, line string, n int) []string {
	ins := []string{" ", "\"", "-", "é", "\xff", ":", "[", "]", "/", "0", "a", "::", "\t", "\n"}
	var out []string
	for range n {
		b := []byte(line)
		for k := 1 + r.Intn(3); k > 0; k-- {
			if len(b) == 0 {
				b = append(b, ins[r.Intn(len(ins))]...)
				continue
			}
			i := r.Intn(len(b))
			switch r.Intn(4) {
			case 0: // delete a byte
				b = append(b[:i:i], b[i+1:]...)
			case 1: // insert
				b = append(b[:i:i], append([]byte(ins[r.Intn(len(ins))]), b[i:]...)...)
			case 2: // truncate
				b = b[:i]
			default: // replace a byte
				b[i] = ins[r.Intn(len(ins))][0]
			}
		}
		out = append(out, string(b))
	}
	return out
}

// grokTestTyped converts captures as go-grok's ParseTyped converts them.
func grokTestTyped(caps []grokCapture) (map[string]any, error) {
	m := map[string]any{}
	for _, c := range caps {
		var v any
		var err error
		switch c.Type {
		case "int", "long":
			v, err = strconv.Atoi(c.Value)
		case "float", "double":
			v, err = strconv.ParseFloat(c.Value, 64)
		case "bool", "boolean":
			v, err = strconv.ParseBool(c.Value)
		default:
			v = c.Value
		}
		if err != nil {
			return nil, err
		}
		m[c.Field] = v
	}
	return m, nil
}

// grokTestCompare checks m (one pattern) against go-grok's g on line.
func grokTestCompare(t *testing.T, pat string, m *grokMatcher, g *grok.Grok, sc *grokScratch, line string) {
	t.Helper()
	caps, ok := m.match(line, sc, nil, false)
	if want := g.MatchString(line); ok != want {
		t.Fatalf("%s on %q: matched %v, go-grok %v", pat, line, ok, want)
	}
	got := map[string]string{}
	for _, c := range caps {
		if _, dup := got[c.Field]; dup {
			t.Fatalf("%s on %q: field %s captured twice", pat, line, c.Field)
		}
		if c.Value == "" {
			t.Fatalf("%s on %q: empty capture %s", pat, line, c.Field)
		}
		got[c.Field] = c.Value
	}
	want, err := g.ParseString(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || len(want) != 0 {
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s on %q:\n got %q\nwant %q", pat, line, got, want)
		}
	}
	wantTyped, werr := g.ParseTypedString(line)
	gotTyped, gerr := grokTestTyped(caps)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s on %q: typed error %v, go-grok %v", pat, line, gerr, werr)
	}
	if werr == nil && (len(gotTyped) != 0 || len(wantTyped) != 0) && !reflect.DeepEqual(gotTyped, wantTyped) {
		t.Fatalf("%s on %q: typed\n got %v\nwant %v", pat, line, gotTyped, wantTyped)
	}
}

func TestGrokEngineSameAsGoGrok(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	lines := slices.Clone(grokTestLines)
	for _, l := range grokTestLines[:36] {
		lines = append(lines, grokTestMutate(r, l, 8)...)
	}
	// Lines spliced from pieces of others.
	var words []string
	for _, l := range grokTestLines {
		words = append(words, strings.SplitAfter(l, " ")...)
	}
	for range 100 {
		var sb strings.Builder
		for k := 2 + r.Intn(20); k > 0; k-- {
			sb.WriteString(words[r.Intn(len(words))])
		}
		lines = append(lines, sb.String())
	}
	var sc grokScratch
	for _, pat := range grokTestPatterns {
		m, g := grokTestPair(t, pat, nil, nil)
		for _, line := range lines {
			grokTestCompare(t, pat, m, g, &sc, line)
		}
	}
}

func TestGrokEngineSameAsGoGrokDefinitions(t *testing.T) {
	defs := map[string]string{
		"WORD":       `[a-z]+`, // overrides patterns.Default
		"HTTPDUSER":  `[a-z]+`, // overrides patterns.Httpd
		"MYID":       `(?<id_part>[A-Z]{2})-%{INT:id.num:int}`,
		"MYLINE":     `%{MYID} %{WORD:word} %{GREEDYDATA:rest}`,
		"UNUSED_BAD": `(`, // only an error when used
	}
	lines := []string{"AB-12 hello world", "AB-12 Hello world", "xx AB-99 abc d", "AB-x y z", "",
		`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
		`127.0.0.1 - Frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`}
	var sc grokScratch
	for _, pat := range []string{"%{MYLINE}", "%{COMMONAPACHELOG}", "%{MYID:whole}"} {
		m, g := grokTestPair(t, pat, defs, defs)
		for _, line := range lines {
			grokTestCompare(t, pat, m, g, &sc, line)
		}
	}
}

// TestGrokEngineStandardSet compiles every pattern of go-grok's standard
// set, as go-grok does, and matches the lines as go-grok does.
func TestGrokEngineStandardSet(t *testing.T) {
	g, err := grok.NewComplete()
	if err != nil {
		t.Fatal(err)
	}
	var sc grokScratch
	sets := append([]map[string]string{grokpatterns.Default}, grokCompleteSets...)
	for _, set := range sets {
		for name := range set {
			pat := "%{" + name + ":x}"
			m, err := compileGrok([]string{pat}, nil)
			gerr := g.Compile(pat, true)
			if (err == nil) != (gerr == nil) {
				t.Errorf("%s: error %v, go-grok's %v", name, err, gerr)
			}
			if err != nil || gerr != nil {
				continue
			}
			for _, line := range grokTestLines {
				grokTestCompare(t, pat, m, g, &sc, line)
			}
		}
	}
}

func grokTestMatch(t *testing.T, m *grokMatcher, line string) ([]grokCapture, bool) {
	t.Helper()
	var sc grokScratch
	return m.match(line, &sc, nil, false)
}

func TestGrokEngineCaptures(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		line    string
		want    []grokCapture // nil: no match
	}{
		{"combined", "%{COMBINEDAPACHELOG}", grokTestCombinedLine, []grokCapture{
			{"source.address", "83.149.9.216", "", false},
			{"timestamp", "17/May/2015:10:05:03 +0000", "", false},
			{"http.request.method", "GET", "", false},
			{"url.original", "/presentations/logstash-monitorama-2013/images/kibana-search.png", "", false},
			{"http.version", "1.1", "", false},
			{"http.response.status_code", "200", "int", false},
			{"http.response.body.size", "203023", "long", false},
			{"http.request.referrer", "http://semicomplete.com/presentations/logstash-monitorama-2013/", "", false},
			{"user_agent.original", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36", "", false},
		}},
		{"combined ipv6, dashes", "%{COMBINEDAPACHELOG}",
			`::1 - - [01/Jan/2024:00:00:01 +0000] "GET / HTTP/1.1" 304 - "-" "-"`, []grokCapture{
				{"source.address", "::1", "", false},
				{"timestamp", "01/Jan/2024:00:00:01 +0000", "", false},
				{"http.request.method", "GET", "", false},
				{"url.original", "/", "", false},
				{"http.version", "1.1", "", false},
				{"http.response.status_code", "304", "int", false},
			}},
		{"combined users, no version", "%{COMBINEDAPACHELOG}",
			`www.example.com ident frank@example.com [02/Feb/2022:12:00:00 +0000] "GET /index.html" 404 512 "-" "Wget/1.21"`, []grokCapture{
				{"source.address", "www.example.com", "", false},
				{"apache.access.user.identity", "ident", "", false},
				{"user.name", "frank@example.com", "", false},
				{"timestamp", "02/Feb/2022:12:00:00 +0000", "", false},
				{"http.request.method", "GET", "", false},
				{"url.original", "/index.html", "", false},
				{"http.response.status_code", "404", "int", false},
				{"http.response.body.size", "512", "long", false},
				{"user_agent.original", "Wget/1.21", "", false},
			}},
		{"combined garbage request", "%{COMBINEDAPACHELOG}",
			`10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "\x16\x03\x01" 400 226 "-" "-"`, []grokCapture{
				{"source.address", "10.0.0.1", "", false},
				{"timestamp", "02/Feb/2022:12:00:00 +0000", "", false},
				{"http.response.status_code", "400", "int", false},
				{"http.response.body.size", "226", "long", false},
			}},
		{"combined later start", "%{COMBINEDAPACHELOG}",
			`junk: 10.0.0.1 - - [02/Feb/2022:12:00:00 +0000] "-" 408 - "-" "-"`, []grokCapture{
				{"source.address", "10.0.0.1", "", false},
				{"timestamp", "02/Feb/2022:12:00:00 +0000", "", false},
				{"http.response.status_code", "408", "int", false},
			}},
		{"combined bad month", "%{COMBINEDAPACHELOG}",
			`10.0.0.1 - - [02/Mai/2022:12:00:00 +0000] "GET /x HTTP/1.1" 200 12 "-" "-"`, nil},
		{"combined truncated", "%{COMBINEDAPACHELOG}", grokTestCombinedLine[:len(grokTestCombinedLine)-1], nil},
		{"common", "%{COMMONAPACHELOG}",
			`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`, []grokCapture{
				{"source.address", "127.0.0.1", "", false},
				{"user.name", "frank", "", false},
				{"timestamp", "10/Oct/2000:13:55:36 -0700", "", false},
				{"http.request.method", "GET", "", false},
				{"url.original", "/apache_pb.gif", "", false},
				{"http.version", "1.0", "", false},
				{"http.response.status_code", "200", "int", false},
				{"http.response.body.size", "2326", "long", false},
			}},
		{"syslogline", "%{SYSLOGLINE}",
			`Mar 12 12:27:00 server3 named[32172]: lame server resolving`, []grokCapture{
				{"timestamp", "Mar 12 12:27:00", "", false},
				{"host.name", "server3", "", false},
				{"message", "lame server resolving", "", false},
			}},
		{"syslogline iso8601", "%{SYSLOGLINE}",
			`2024-03-04T05:06:07.891+02:00 myhost kernel: link up`, []grokCapture{
				{"timestamp", "2024-03-04T05:06:07.891+02:00", "", false},
				{"host.name", "myhost", "", false},
				{"message", "link up", "", false},
			}},
		{"type hints", "%{INT:a:int} %{NUMBER:b:float} %{WORD:c:bool} %{WORD:d:string} %{INT:e:long} %{NUMBER:f:double} %{WORD:g:boolean} %{WORD:h}",
			`1 2.5 true x 3 4 false y`, []grokCapture{
				{"a", "1", "int", false}, {"b", "2.5", "float", false}, {"c", "true", "bool", false}, {"d", "x", "string", false},
				{"e", "3", "long", false}, {"f", "4", "double", false}, {"g", "false", "boolean", false}, {"h", "y", "", false},
			}},
		{"named group of its own", `(?<user>\w+)@(?P<domain>[\w.]+) %{NUMBER}`, `mail bob@example.org 12`, []grokCapture{
			{"user", "bob", "", false}, {"domain", "example.org", "", false},
		}},
		{"empty capture dropped", `a%{DATA:x}b%{GREEDYDATA:y}`, `ab`, []grokCapture{}},
		{"no match", "%{IP:ip}", "no address here", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := compileGrok([]string{tt.pattern}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := grokTestMatch(t, m, tt.line)
			if tt.want == nil {
				if ok || len(got) != 0 {
					t.Fatalf("matched: %v", got)
				}
				return
			}
			if !ok {
				t.Fatal("no match")
			}
			if len(got) != len(tt.want) || (len(got) > 0 && !reflect.DeepEqual(got, tt.want)) {
				t.Fatalf("\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestGrokEnginePatternOrder(t *testing.T) {
	m, err := compileGrok([]string{
		`%{INT:num:int} %{WORD:word}`,
		`%{WORD:word} %{INT:num:long}`,
		`%{GREEDYDATA:all}`,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.fields(), []string{"num", "word", "all"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	var sc grokScratch
	var dst []grokCapture
	for _, tt := range []struct {
		line string
		want []grokCapture
	}{
		{"12 abc", []grokCapture{{"num", "12", "int", false}, {"word", "abc", "", false}}},
		{"abc 12", []grokCapture{{"word", "abc", "", false}, {"num", "12", "long", false}}},
		{"!!", []grokCapture{{"all", "!!", "", false}}},
	} {
		var ok bool
		dst, ok = m.match(tt.line, &sc, dst, false)
		if !ok {
			t.Fatalf("%q: no match", tt.line)
		}
		if !reflect.DeepEqual(dst, tt.want) {
			t.Fatalf("%v: got %v, want %v", tt.line, dst, tt.want)
		}
	}
	// The first pattern that matches wins, even when a later one captures more.
	m2, err := compileGrok([]string{`%{WORD:a}`, `%{WORD:a} %{WORD:b}`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.match("x y", &sc, nil, false); !reflect.DeepEqual(got, []grokCapture{{Field: "a", Value: "x"}}) {
		t.Fatalf("got %v", got)
	}
	// No pattern matches: ok false, dst emptied.
	if got, ok := m2.match("!!!", &sc, []grokCapture{{Field: "stale", Value: "v"}}, false); ok || len(got) != 0 {
		t.Fatalf("got %v %v", got, ok)
	}
}

func TestGrokEngineErrors(t *testing.T) {
	tests := []struct {
		patterns []string
		defs     map[string]string
		want     []string // substrings of the error
	}{
		{nil, nil, []string{"no pattern"}},
		{[]string{"%{IP:ip}", "%{NOSUCHPATTERN:x}"}, nil, []string{"pattern 1", "NOSUCHPATTERN", "unknown pattern name"}},
		{[]string{"%{WORD:w} (unclosed"}, nil, []string{"pattern 0", "bad regexp", "missing closing )"}},
		{[]string{"%{BAD}"}, map[string]string{"BAD": "[z-a]"}, []string{"pattern 0", "bad regexp", "invalid character class range"}},
		{[]string{"%{WORD:w:integer}"}, nil, []string{"pattern 0", `unknown type "integer"`}},
		{[]string{"%{LOOP}"}, map[string]string{"LOOP": "a%{LOOP}"}, []string{"pattern 0", "recursive"}},
		{[]string{"%{A}"}, map[string]string{"A": "%{B}%{B}", "B": "%{A}"}, []string{"recursive"}},
		{[]string{"%{WORD}"}, map[string]string{"BAD:NAME": "x"}, []string{"pattern_definitions", grok.ErrUnsupportedName.Error()}},
		{[]string{`(?=lookahead)`}, nil, []string{"pattern 0", "bad regexp"}},
		{[]string{`%{WORD:[nested][field]}`}, nil, []string{"pattern 0", "bad pattern reference %{WORD:[nested][field]}"}},
		{[]string{`%{WORD:a:int:extra}`}, nil, []string{"bad pattern reference"}},
		{[]string{`%{X}`}, map[string]string{"X": "%{WORD:a b}"}, []string{"pattern_definitions X", "bad pattern reference %{WORD:a b}"}},
	}
	for _, tt := range tests {
		_, err := compileGrok(tt.patterns, tt.defs)
		if err == nil {
			t.Errorf("%q %v: no error", tt.patterns, tt.defs)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not say %q", tt.patterns, err, w)
			}
		}
	}
}

func TestGrokEngineLongInputFallback(t *testing.T) {
	m, err := compileGrok([]string{"%{COMBINEDAPACHELOG}"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(grokTestCombinedLine, "Mozilla/5.0", strings.Repeat("Mozilla/5.0 ", 50), 1)
	var sc grokScratch
	want, ok := m.match(long, &sc, nil, false)
	if !ok {
		t.Fatal("no match")
	}
	for _, p := range m.pats {
		p.prog.maxLen = 10 // this matcher only: force regexp
	}
	got, ok := m.match(long, &sc, nil, false)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("fallback: %v %v, want %v", got, ok, want)
	}
	if _, ok := m.match(long[:len(long)-1], &sc, nil, false); ok {
		t.Fatal("fallback matched a truncated line")
	}
}

// grokTestGen builds random regexps for TestGrokEngineSameAsRegexp.
type grokTestGen struct {
	r    *rand.Rand
	ncap int
}

func (g *grokTestGen) atom(depth int) string {
	atoms := []string{"a", "b", "-", " ", ".", "[ab]", "[^a]", `\w`, `\S`, `\s`, `\d`, "é", `\b`, `\B`, "^", "$", "(?i:a)", "[a-c]", "x", `(?s:.)`, `\pL`}
	if depth > 3 || g.r.Intn(3) > 0 {
		return atoms[g.r.Intn(len(atoms))]
	}
	inner := g.expr(depth + 1)
	switch g.r.Intn(4) {
	case 0:
		g.ncap++
		return fmt.Sprintf("(?P<g%d>%s)", g.ncap, inner)
	case 1:
		return "(" + inner + ")"
	case 2:
		g.ncap++
		return fmt.Sprintf("(?<g%d>%s)", g.ncap%3, inner) // names repeat
	default:
		return "(?:" + inner + ")"
	}
}

func (g *grokTestGen) piece(depth int) string {
	a := g.atom(depth)
	switch a {
	case "^", "$", `\b`, `\B`:
		return a
	}
	qs := []string{"", "", "", "*", "+", "?", "*?", "+?", "??", "{0,2}", "{1,3}", "{2}"}
	return a + qs[g.r.Intn(len(qs))]
}

func (g *grokTestGen) expr(depth int) string {
	var alts []string
	for n := 1 + g.r.Intn(2); n > 0; n-- {
		var sb strings.Builder
		for k := 1 + g.r.Intn(4); k > 0; k-- {
			sb.WriteString(g.piece(depth))
		}
		alts = append(alts, sb.String())
	}
	if g.r.Intn(4) == 0 {
		alts = append(alts, "")
	}
	return strings.Join(alts, "|")
}

func grokTestInput(r *rand.Rand) string {
	parts := []string{"a", "b", "-", " ", ".", "x", "1", "é", "\xff", "\n", "A", "_", "aa", "ab"}
	var sb strings.Builder
	for n := r.Intn(14); n > 0; n-- {
		sb.WriteString(parts[r.Intn(len(parts))])
	}
	return sb.String()
}

// TestGrokEngineSameAsRegexp checks the engine against Go's regexp on random
// expressions and inputs: whether it matches, where, and every named group.
func TestGrokEngineSameAsRegexp(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var sc grokScratch
	n := 2000
	if testing.Short() {
		n = 500
	}
	for range n {
		g := &grokTestGen{r: r}
		expr := g.expr(0)
		std, p, ok := grokTestCompileRegexp(t, expr)
		if !ok {
			continue
		}
		for range 25 {
			grokTestSameAsRegexp(t, expr, std, p, &sc, grokTestInput(r))
		}
	}
}

// grokTestCompileRegexp compiles expr, a regexp without grok references,
// with Go's regexp and as a grok pattern; ok is false when regexp refuses
// it, and grok must accept whatever regexp does.
func grokTestCompileRegexp(t *testing.T, expr string) (std *regexp.Regexp, p *grokCompiled, ok bool) {
	t.Helper()
	std, err := regexp.Compile(expr)
	if err != nil {
		return nil, nil, false
	}
	p, err = grokCompilePattern(expr, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%q: regexp compiles it, grok refuses it: %v", expr, err)
	}
	return std, p, true
}

// grokTestSameAsRegexp checks p, compiled from expr, against std, Go's
// regexp of the same expr, on in: whether it matches, where, and every
// named group.
func grokTestSameAsRegexp(t *testing.T, expr string, std *regexp.Regexp, p *grokCompiled, sc *grokScratch, in string) {
	t.Helper()
	want := std.FindStringSubmatchIndex(in)
	slots, ok := p.exec(in, sc)
	if ok != (want != nil) {
		t.Fatalf("%q on %q: matched %v, regexp %v", expr, in, ok, want)
	}
	if !ok {
		return
	}
	if slots[0] != want[0] || slots[1] != want[1] {
		t.Fatalf("%q on %q: match %v, regexp %v", expr, in, slots[:2], want[:2])
	}
	for gi, si := range p.stdIdx {
		if a, b := slots[2*gi+2], slots[2*gi+3]; a != want[2*si] || b != want[2*si+1] {
			t.Fatalf("%q on %q: group %d [%d,%d], regexp [%d,%d]", expr, in, gi+1, a, b, want[2*si], want[2*si+1])
		}
	}
}

func TestGrokEngineConcurrent(t *testing.T) {
	m, err := compileGrok([]string{"%{COMBINEDAPACHELOG}", "%{SYSLOGLINE}", "%{GREEDYDATA:other}"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]grokCapture, len(grokTestLines))
	var sc grokScratch
	for i, l := range grokTestLines {
		caps, _ := m.match(l, &sc, nil, false)
		want[i] = caps
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc grokScratch
			var dst []grokCapture
			for k := range 3 * len(grokTestLines) {
				i := (k + w) % len(grokTestLines)
				dst, _ = m.match(grokTestLines[i], &sc, dst, false)
				if len(dst) != len(want[i]) || len(dst) > 0 && !reflect.DeepEqual(dst, want[i]) {
					t.Errorf("line %d: got %v want %v", i, dst, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkGrokCombined(b *testing.B) {
	m, err := compileGrok([]string{"%{COMBINEDAPACHELOG}"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var sc grokScratch
	var dst []grokCapture
	b.ReportAllocs()
	b.SetBytes(int64(len(grokTestCombinedLine)))
	for b.Loop() {
		var ok bool
		if dst, ok = m.match(grokTestCombinedLine, &sc, dst, false); !ok {
			b.Fatal("no match")
		}
	}
}

// BenchmarkGrokCombinedNoMatch is a line that only fails late (a bad month).
func BenchmarkGrokCombinedNoMatch(b *testing.B) {
	m, err := compileGrok([]string{"%{COMBINEDAPACHELOG}"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	line := strings.Replace(grokTestCombinedLine, "May", "Mai", 1)
	var sc grokScratch
	var dst []grokCapture
	b.ReportAllocs()
	for b.Loop() {
		var ok bool
		if dst, ok = m.match(line, &sc, dst, false); ok {
			b.Fatal("match")
		}
	}
}

// BenchmarkGrokGoGrokCombined is go-grok itself on the same line, for
// comparison.
func BenchmarkGrokGoGrokCombined(b *testing.B) {
	g, err := grok.NewComplete()
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Compile("%{COMBINEDAPACHELOG}", true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(grokTestCombinedLine)))
	for b.Loop() {
		if m, _ := g.ParseString(grokTestCombinedLine); len(m) == 0 {
			b.Fatal("no match")
		}
	}
}

// grokTestPair compiles pat with definitions defs both here and with
// go-grok's complete set (gdefs added to it), for comparing the two.
func grokTestPair(t testing.TB, pat string, defs, gdefs map[string]string) (*grokMatcher, *grok.Grok) {
	t.Helper()
	m, err := compileGrok([]string{pat}, defs)
	if err != nil {
		t.Fatalf("%s: %v", pat, err)
	}
	var g *grok.Grok
	if gdefs == nil {
		g, err = grok.NewComplete()
	} else {
		g, err = grok.NewComplete(gdefs)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Compile(pat, true); err != nil {
		t.Fatal(err)
	}
	return m, g
}

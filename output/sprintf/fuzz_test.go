package sprintf

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fuzzTemplates are compiled once; FuzzAppend renders each of them on every
// fuzzed event.
var fuzzTemplates = []string{
	"%{[@metadata][beat]}-%{[@metadata][version]}",
	"filebeat-%{+yyyy.MM.dd}",
	"%{[@metadata][beat]}-%{+xxxx.ww}-%{+%s}",
	"%{{yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSSX}}",
	"%{message}|%{tags}|%{[tags][1]}|%{[tags][-1]}",
	"%{[a][b][c]}/%{[a][0][b]}/%{a}",
	"%{[@timestamp]}",
	"%{[x.y][*][#]}",
	"static-index",
}

var fuzzFormats = func() []*Format {
	fs := make([]*Format, len(fuzzTemplates))
	for i, t := range fuzzTemplates {
		fs[i] = MustCompile(t)
	}
	return fs
}()

var fuzzReceived = time.Date(2031, 2, 3, 4, 5, 6, 7, time.UTC)

func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		filebeatEvent,
		`{"@timestamp":"2026-12-31T23:59:59.999+01:00","a":{"b":{"c":"\u00e9\ud83d\ude00"}},"tags":["x",null,[1,2]]}`,
		`{"@timestamp":1764672000123,"a":[{"b":1.5e3}],"message":{"k":[true,false]}}`,
		`{"x.y":{"*":{"#":"special"}},"@metadata":{"beat":"b","version":null}}`,
		`{"a":"\ud800","tags":[],"@timestamp":"2026-02-29T00:00:00Z"}`,
		`[1,2,3]`, `{"a":`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, event []byte) {
		orig := bytes.Clone(event)
		prefix := []byte("prefix|")
		for _, fm := range fuzzFormats {
			dst := append(make([]byte, 0, 8), prefix...)
			out, ok := fm.Append(dst, event, fuzzReceived)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("%q: prefix lost: %q", fm, out)
			}
			if !ok && len(out) != len(prefix) {
				t.Fatalf("%q: failed but appended %q", fm, out)
			}
			if fm.Static() && (!ok || string(out[len(prefix):]) != fm.String()) {
				t.Fatalf("%q: static template rendered %q, %v", fm, out, ok)
			}
			if fm.UsesTimestamp() && len(fm.Fields()) == 0 && !ok {
				t.Fatalf("%q: date-only template failed", fm)
			}
			again, ok2 := fm.Append(nil, event, fuzzReceived)
			if ok2 != ok || (ok && !bytes.Equal(again, out[len(prefix):])) {
				t.Fatalf("%q: not deterministic: %q vs %q", fm, again, out)
			}
			want, wantOK, judged := oracleRender(fm, event, fuzzReceived)
			if judged && (ok != wantOK || (ok && string(again) != want)) {
				t.Fatalf("%q on %q:\n got %q, %v\nwant %q, %v (oracle)", fm, event, again, ok, want, wantOK)
			}
		}
		if !bytes.Equal(event, orig) {
			t.Fatal("Append modified the event")
		}
	})
}

func FuzzCompile(f *testing.F) {
	for _, s := range fuzzTemplates {
		f.Add(s)
	}
	for _, s := range []string{
		"", "%{", "%{}", "%{+}", "%{{}}", "%{[a][[b][c]]}", "%{+'x''y'yyyy}", "%{{[yyyy]}}",
		"100%}%{a}}", "%{+ddd DDD e EEEE a k K h C G z Z ZZ ZZZ}", "%{{uuuu GGGG n X x Z}}",
	} {
		f.Add(s)
	}
	events := [][]byte{[]byte(filebeatEvent), []byte(`{"a":[1,{"b":null}],"@timestamp":-5}`), []byte("junk")}
	f.Fuzz(func(t *testing.T, template string) {
		fm, err := Compile(template)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sprintf: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if fm.String() != template {
			t.Fatalf("String() = %q", fm.String())
		}
		if len(fm.Fields()) != len(fm.GJSONPaths()) {
			t.Fatal("Fields and GJSONPaths differ")
		}
		for _, ev := range events {
			out, ok := fm.Append(nil, ev, fuzzReceived)
			if fm.Static() && (!ok || string(out) != template) {
				t.Fatalf("static %q rendered %q, %v", template, out, ok)
			}
			if !ok && len(out) != 0 {
				t.Fatalf("failed but appended %q", out)
			}
		}
	})
}

var valueFormats = []*Format{
	MustCompile("%{a}"),
	MustCompile("%{[a][0]}|%{[a][b]}|%{[a][-1]}"),
	MustCompile("%{+yyyy-MM-dd'T'HH:mm:ss.SSS}|%{+%s}"),
	MustCompile("%{{uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS}}"),
}

// FuzzValue embeds the fuzzed bytes as the value of both "a" and
// "@timestamp", so that far more inputs make valid events for the oracle.
func FuzzValue(f *testing.F) {
	for _, s := range []string{
		`"x"`, `"\u00e9\ud83d\ude00\ud800"`, `1.5e3`, `-0`, `true`, `null`, `[1,[2,null],{"b":"c"}]`,
		`{"b" : [ "d" ] }`, `"2026-12-02T10:57:41.210Z"`, `"2026-12-02T12:57:41+02:00"`, `1764672000123`,
		`"2026-12-02 10:57:41"`, `"\u0032026-12-02T10:57:41Z"`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		event := []byte(`{"@timestamp":` + string(value) + `,"a":` + string(value) + `}`)
		for _, fm := range valueFormats {
			out, ok := fm.Append(nil, event, fuzzReceived)
			if !ok && len(out) != 0 {
				t.Fatalf("%q: failed but appended %q", fm, out)
			}
			want, wantOK, judged := oracleRender(fm, event, fuzzReceived)
			if judged && (ok != wantOK || (ok && string(out) != want)) {
				t.Fatalf("%q on %q:\n got %q, %v\nwant %q, %v (oracle)", fm, event, out, ok, want, wantOK)
			}
		}
	})
}

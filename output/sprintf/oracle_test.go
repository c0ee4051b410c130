package sprintf

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// This file holds a slow reference renderer built on gjson (to find values,
// through Format.GJSONPaths) and encoding/json (to decode them). It only
// judges events that are valid JSON objects; for those, Append must agree
// with it exactly.

// oracleRender returns the expected output and ok of f on event, and judged
// = false when the oracle cannot tell.
func oracleRender(f *Format, event []byte, recv time.Time) (want string, ok, judged bool) {
	if !json.Valid(event) {
		return "", false, false
	}
	top := bytes.TrimLeft(event, " \t\r\n")
	isObject := len(top) > 0 && top[0] == '{'
	js := string(event)
	paths := f.GJSONPaths()
	var out []byte
	var tsKnown bool
	var ts time.Time
	for _, p := range f.parts {
		switch p.kind {
		case partLiteral:
			out = append(out, p.lit...)
		case partField:
			for _, c := range p.path {
				if c != "" && (c[0] == '+' || c[0] == '-') {
					return "", false, false // gjson has no signed indexes
				}
			}
			if !isObject {
				return "", false, true
			}
			r := gjson.Get(js, paths[indexOfPath(f.fields, p.path)])
			if !r.Exists() || r.Type == gjson.Null {
				return "", false, true
			}
			if maxNesting(r.Raw) >= maxDepth {
				return "", false, false
			}
			s, good := oracleValue(r)
			if !good {
				return "", false, false
			}
			out = append(out, s...)
		case partDate, partEpoch:
			if !tsKnown {
				var known bool
				ts, known = oracleTime(js, isObject, recv)
				if !known {
					return "", false, false
				}
				tsKnown = true
			}
			if p.kind == partEpoch {
				out = appendNum(out, ts.Unix(), 1, false)
			} else {
				fields := breakDown(ts, true)
				out = appendDate(out, p.ops, &fields)
			}
		}
	}
	return string(out), true, true
}

func indexOfPath(paths [][]string, p []string) int {
	for i, q := range paths {
		if equalPath(p, q) {
			return i
		}
	}
	panic("path not listed")
}

func oracleValue(r gjson.Result) (string, bool) {
	switch r.Type {
	case gjson.String:
		var s string
		if err := json.Unmarshal([]byte(r.Raw), &s); err != nil {
			return "", false
		}
		return s, true
	case gjson.Number, gjson.True, gjson.False:
		return r.Raw, true
	case gjson.Null:
		return "", true
	}
	if r.IsArray() {
		var parts []string
		good := true
		r.ForEach(func(_, v gjson.Result) bool {
			s, ok := oracleValue(v)
			good = good && ok
			parts = append(parts, s)
			return true
		})
		return strings.Join(parts, ","), good
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(r.Raw)); err != nil {
		return "", false
	}
	return b.String(), true
}

func maxNesting(raw string) int {
	depth, max := 0, 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}

// oracleTime finds the expected event time; known is false for forms only
// this package's own parser reads.
func oracleTime(js string, isObject bool, recv time.Time) (t time.Time, known bool) {
	if !isObject {
		return recv.UTC(), true
	}
	r := gjson.Get(js, `\@timestamp`)
	switch r.Type {
	case gjson.String:
		var s string
		if err := json.Unmarshal([]byte(r.Raw), &s); err != nil {
			return time.Time{}, false
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), true
		}
		if _, ok := parseRFC3339([]byte(s)); ok {
			return time.Time{}, false // an extension; see TestTimestampForms
		}
		return recv.UTC(), true
	case gjson.Number:
		if strings.ContainsAny(r.Raw, ".eE") || len(r.Raw) > 18 {
			return time.Time{}, false
		}
		return time.UnixMilli(r.Int()).UTC(), true
	}
	return recv.UTC(), true
}

// checkGJSON compares Render with the oracle on one event.
func checkGJSON(t *testing.T, f *Format, event []byte) {
	t.Helper()
	want, wantOK, judged := oracleRender(f, event, received)
	if !judged {
		return
	}
	got, ok := f.Render(event, received)
	if ok != wantOK || (ok && got != want) {
		t.Errorf("template %q on %q:\n got %q, %v\nwant %q, %v (oracle)", f.String(), event, got, ok, want, wantOK)
	}
}

func TestOracleAgrees(t *testing.T) {
	templates := []string{
		"%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}",
		"%{message}|%{tags}|%{[host][ip][1]}|%{[@metadata]}|%{[log][offset]}",
		"%{[host][os]}", "%{host}", "%{[tags][0]}", "%{+%s}", "%{{yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS}}",
	}
	events := []string{
		filebeatEvent,
		`{"@timestamp":"2026-12-02T12:57:41.210123+02:00","tags":[[1,[2]],null,{"a" : [ ]},"x\u00e9"],"message":"\ud83d\ude00\ud800"}`,
		`{"@timestamp":1764672000123,"@metadata":{"beat":"b","version":null}}`,
		`{"@timestamp":null,"host":{"os":{"a":[1,2,{"b":"c"}]}},"tags":[]}`,
		`[{"@metadata":{"beat":"x"}}]`,
		`"string"`,
	}
	for _, tmpl := range templates {
		f := MustCompile(tmpl)
		for _, ev := range events {
			checkGJSON(t, f, []byte(ev))
		}
	}
}

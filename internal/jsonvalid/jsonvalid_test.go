package jsonvalid

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x", {}] } `,
	`{"a":"\u00e9\n\"\\\/\b\f\r\t"}`, `"just a string"`, `12`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E+9`, `-0.0e0`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `[]]`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\x1f\"}", "{\"a\":\"\x7f\xff\"}",
	`tru`, `true`, `truex`, `nul`, `null `, `"unterminated`, `"ends with backslash\`, `{"a":"12345678\"12345678"}`,
	`"0123456789abcdef0123456789abcdef"`, "\"0123456789abcde\x00\"", strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500),
	`{"errors":false,"items":[{"create":{"status":201}},{"create":{"status":201}}]}`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.80q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

// FuzzValid holds Valid to encoding/json.Valid on any input.
func FuzzValid(f *testing.F) {
	for _, c := range jsonCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

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

// TestValidStopByteAtEveryOffset puts each byte that ends or breaks a run
// of plain string bytes (and some that do not: DEL, UTF-8 bytes) at every
// offset of a string across several eight-byte steps and past the switch
// to the vectorized search, and holds Valid to encoding/json there.
func TestValidStopByteAtEveryOffset(t *testing.T) {
	stops := []string{`"`, `\"`, `\\`, `\u00e9`, `\x`, `\`, "\x00", "\x1f", "\n", " ", "\x7f", "\x80", "\xff", "\x20\x1f"}
	for off := 0; off < 2*shortRun+17; off++ {
		for _, stop := range stops {
			for _, tail := range []string{`"`, `abc"`, strings.Repeat("y", 40) + `"`, ``} {
				c := `{"k":"` + strings.Repeat("x", off) + stop + tail + `}`
				if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
					t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
				}
			}
		}
	}
}

package processors

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// compileTOML compiles the [[processors]] list of a TOML document, as
// the configuration writes it.
func compileTOML(t testing.TB, doc string) (*List, error) {
	t.Helper()
	var top map[string]any
	if _, err := toml.Decode(doc, &top); err != nil {
		t.Fatalf("TOML: %v\n%s", err, doc)
	}
	list, err := asTables(top["processors"])
	if err != nil {
		t.Fatalf("processors: %v", err)
	}
	return Compile("processors", list)
}

// mustChain compiles doc into a chain, failing the test on an error.
func mustChain(t testing.TB, doc string) *Chain {
	t.Helper()
	l, err := compileTOML(t, doc)
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, doc)
	}
	return NewChain(l)
}

// runOne runs doc's chain on the JSON event in and returns the event
// after it ("" when dropped).
func runOne(t testing.TB, doc, in string) string {
	t.Helper()
	out, keep, err := mustChain(t, doc).NewRunner().Run([]byte(in))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !keep {
		return ""
	}
	return string(out)
}

// sameJSON reports whether a and b hold the same JSON value (member
// order aside).
func sameJSON(t testing.TB, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("expected value is not JSON: %v\n%s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// processorCase is one row of a table test: a chain, an event, and the
// event expected after the chain ("" for dropped).
type processorCase struct {
	name, doc, in, want string
}

func runCases(t *testing.T, cases []processorCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runOne(t, c.doc, c.in)
			if c.want == "" || got == "" {
				if got != c.want {
					t.Fatalf("got %q, want %q", got, c.want)
				}
				return
			}
			if !sameJSON(t, got, c.want) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

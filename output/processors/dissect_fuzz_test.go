package processors

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDissect compiles fuzzed tokenizers and matches fuzzed inputs:
// neither may panic; compile errors wrap dissectErrInvalidTokenizer and
// match errors dissectErrNoMatch; keys are non-empty and unique; a value
// is a substring of the input unless an append field may have built it;
// the compiled plan, the general resolver and a map-based resolution as
// Filebeat's agree; every key of keys() is returned, and nothing else by
// a pattern without indirect fields.
func FuzzDissect(f *testing.F) {
	f.Add(dissectTestAccessTok, dissectTestAccessLine)
	f.Add("%{a} %{b}", "x y")
	f.Add("%{+a/2} %{+a/1} %{?k} %{&k}", "1 2 name value")
	f.Add("%{a->} %{b|integer}", "x     12")
	f.Add("%{a#2}%{b#1}-%{*p}:%{&p}", "abc-k:v")
	f.Add("[%{}] %{a}", "[x] y")
	f.Fuzz(func(t *testing.T, tok, in string) {
		p, err := compileDissect(tok)
		if err != nil {
			if !errors.Is(err, dissectErrInvalidTokenizer) {
				t.Fatalf("compile %q: %v does not wrap dissectErrInvalidTokenizer", tok, err)
			}
			return
		}
		got, err := p.dissect(in, nil)
		if err != nil {
			if !errors.Is(err, dissectErrNoMatch) {
				t.Fatalf("dissect %q with %q: %v does not wrap dissectErrNoMatch", in, tok, err)
			}
			_ = err.Error()
			return
		}
		appendKeys := map[string]bool{}
		for _, tk := range p.toks {
			if tk.kind == dissectKindAppend {
				appendKeys[tk.key] = true
			}
		}
		seen := map[string]bool{}
		for _, fd := range got {
			if fd.Key == "" {
				t.Fatalf("dissect %q with %q: empty key in %q", in, tok, dissectTestKV(got))
			}
			if seen[fd.Key] {
				t.Fatalf("dissect %q with %q: key %q twice", in, tok, fd.Key)
			}
			seen[fd.Key] = true
			if !appendKeys[fd.Key] && !strings.Contains(in, fd.Value) {
				t.Fatalf("dissect %q with %q: value %q of %q is not in the input", in, tok, fd.Value, fd.Key)
			}
			if _, err := fd.convert(); err != nil && !strings.Contains(err.Error(), "cannot convert") {
				t.Fatalf("convert %+v: %v", fd, err)
			}
			// What dissect writes into the event is valid JSON,
			// whatever the value and its conversion.
			if txt := appendDissectValue(nil, fd); !json.Valid(txt) {
				t.Fatalf("field %+v is written as %q, not JSON", fd, txt)
			}
		}
		for _, k := range p.keys() {
			if !seen[k] {
				t.Fatalf("dissect %q with %q: key %q of keys() missing from %q", in, tok, k, dissectTestKV(got))
			}
		}
		if !p.indirect && len(got) != len(p.keys()) {
			t.Fatalf("dissect %q with %q: %d results, keys() %q", in, tok, len(got), p.keys())
		}
		spans := make([]dissectSpan, len(p.toks))
		if err := p.extract(in, spans); err != nil {
			t.Fatal(err)
		}
		if gen := p.resolveGeneral(in, spans, nil); !reflect.DeepEqual(dissectTestKV(gen), dissectTestKV(got)) {
			t.Fatalf("dissect %q with %q: general resolver %q, plan %q", in, tok, dissectTestKV(gen), dissectTestKV(got))
		}
		dissectCheckAgainstMap(t, p, in, got)
	})
}

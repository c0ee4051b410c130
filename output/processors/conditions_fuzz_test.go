package processors

import (
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/logpond/logpond/internal/jsontree"
)

// FuzzCondition compiles a `when` from TOML text and matches it against
// a JSON event: compiling must not panic and must fail only with a
// *ConfigError under the key "when"; matching must not panic, must not
// change the event, and must give the same answer twice.
func FuzzCondition(f *testing.F) {
	f.Add(`when.equals.a = 1`, `{"a":1}`)
	f.Add(`when.range."http.status.gte" = 400`, `{"http":{"status":404}}`)
	f.Add(`when.network.ip = ["private", "fd00::/8"]`, `{"ip":["8.8.8.8","fd00::1"]}`)
	f.Fuzz(func(t *testing.T, doc, js string) {
		if len(doc) > 2048 || len(js) > 2048 {
			// Large inputs find nothing small ones do not, and Go spends
			// up to a minute minimizing each one found interesting.
			return
		}
		var top map[string]any
		if _, err := toml.Decode(doc, &top); err != nil {
			return
		}
		v, ok := top["when"]
		if !ok {
			v = top
		}
		c, err := compileCondition("when", v)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.At, "when") {
				t.Fatalf("error %T %v is not a ConfigError under when", err, err)
			}
			return
		}
		var p jsontree.Parser
		root, err := p.Parse(js)
		if err != nil || root.Type() != jsontree.TypeObject {
			return
		}
		e := &event{root: root, arena: &jsontree.Arena{}}
		condTouch(root)
		before := root.String()
		got := c.match(e)
		if again := c.match(e); again != got {
			t.Fatalf("match = %v then %v", got, again)
		}
		if after := root.String(); after != before {
			t.Fatalf("match changed the event:\n%s\n%s", before, after)
		}
	})
}

package lumberload

import (
	"encoding/json"
	"testing"
)

// TestEventIsValidJSONOfTheAskedSize: every event is one JSON object of
// exactly the asked size (beyond its header), and events differ.
func TestEventIsValidJSONOfTheAskedSize(t *testing.T) {
	seen := map[string]bool{}
	for _, size := range []int{10, 120, 256, 1024, 90 << 10} {
		for n := range 200 {
			ev := Event(size, n)
			var v struct {
				Message string `json:"message"`
				N       int    `json:"n"`
			}
			if err := json.Unmarshal(ev, &v); err != nil {
				t.Fatalf("Event(%d, %d) = %q: %v", size, n, ev, err)
			}
			if v.N != n {
				t.Fatalf("Event(%d, %d): n = %d", size, n, v.N)
			}
			if size >= 120 && len(ev) != size {
				t.Fatalf("Event(%d, %d) has %d bytes", size, n, len(ev))
			}
			seen[v.Message] = true
		}
	}
	if len(seen) < 800 {
		t.Fatalf("only %d distinct messages in 1000 events", len(seen))
	}
}

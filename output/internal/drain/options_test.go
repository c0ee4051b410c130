package drain

import "testing"

// TestUnsetNamesTheFailedChecksInOrder: only the checks that fail are
// named, in the order they were made.
func TestUnsetNamesTheFailedChecksInOrder(t *testing.T) {
	var u Unset
	u.Check("A", true)
	u.Check("B", false)
	u.Check("C", true)
	u.Check("D", false)
	if len(u) != 2 || u[0] != "B" || u[1] != "D" {
		t.Fatalf("unset %v, want [B D]", u)
	}
}

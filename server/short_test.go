package server

import "testing"

// skipLong skips a long end-to-end run (crashes, power cuts, a whole
// device failing, the demo) under -short: make test-quick, a first check
// that leaves them to make test.
func skipLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long end-to-end run: make test runs it (-short skips it)")
	}
}

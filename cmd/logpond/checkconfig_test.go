package main

import (
	"strings"
	"testing"
)

// TestCheckConfigHidesEnvironmentValues: values taken from environment
// variables do not appear in -check-config's output, whichever key took
// them; the output shows their references.
func TestCheckConfigHidesEnvironmentValues(t *testing.T) {
	t.Setenv("LP_TEST_USER", "writer-9f3a")
	t.Setenv("LP_TEST_PASS", "hunter2-x")
	t.Setenv("LP_TEST_HOST", "es-7d1c.internal")
	_, stdout, stderr, code := checkConfigText(t, `[output.elasticsearch]
hosts = ["https://${LP_TEST_HOST}:9200"]
username = "${LP_TEST_USER}"
password = "${LP_TEST_PASS}"
`)
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, stderr)
	}
	for _, v := range []string{"writer-9f3a", "hunter2-x", "es-7d1c"} {
		if strings.Contains(stdout+stderr, v) {
			t.Errorf("the output shows %q:\n%s\n%s", v, stdout, stderr)
		}
	}
	for _, want := range []string{`username = "${LP_TEST_USER}"`, `hosts = ["https://${LP_TEST_HOST}:9200"]`, `password = "<redacted>"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output does not say %s:\n%s", want, stdout)
		}
	}
}

// TestCheckConfigUnsetVariable: an unset variable is a problem naming the
// key and the variable.
func TestCheckConfigUnsetVariable(t *testing.T) {
	path, _, stderr, code := checkConfigText(t, "[output.elasticsearch]\napi_key = \"${LP_TEST_UNSET_KEY}\"\n")
	if code != 1 || !strings.Contains(stderr, path+":2: output.elasticsearch.api_key: environment variable LP_TEST_UNSET_KEY is not set") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

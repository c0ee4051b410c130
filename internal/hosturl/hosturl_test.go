package hosturl

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in, host, user, pass string
		hasUser              bool
	}{
		{"https://es1:9200", "https://es1:9200", "", "", false},
		{"es1:9200", "es1:9200", "", "", false},
		{"https://elastic:hunter2@es1:9200/base", "https://es1:9200/base", "elastic", "hunter2", true},
		{"elastic:hunter2@es1:9200", "es1:9200", "elastic", "hunter2", true},
		{"https://elastic:p%40ss%2Fw@es1", "https://es1", "elastic", "p@ss/w", true},
		{"https://elastic:p@ss@es1", "https://es1", "elastic", "p@ss", true},
		{"http://u:p@[::1]:9200", "http://[::1]:9200", "u", "p", true},
	} {
		host, ui, err := Split(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		pass, _ := ui.Password()
		if host != tc.host || (ui != nil) != tc.hasUser || ui.Username() != tc.user || pass != tc.pass {
			t.Errorf("Split(%q) = %q, %v; want %q, user %q, password %q", tc.in, host, ui, tc.host, tc.user, tc.pass)
		}
	}
}

// TestErrorsHideThePassword: a host that does not parse, or whose password
// holds an unencoded special character, is refused with a message that
// shows no part of the password.
func TestErrorsHideThePassword(t *testing.T) {
	for _, h := range []string{
		"https://elastic:se/cret@es1:9200",   // "/" ends the authority: host "elastic:se"
		"https://elastic:12/cret@es1:9200",   // ... which parses, with port 12
		"https://elastic:12#cret@es1:9200",   // "#" starts a fragment
		"https://elastic:12?cret@es1:9200",   // "?" starts a query
		"https://elastic:secret@es1:port",    // bad port
		"https://elastic:sec ret@es1:9200",   // space
		"https://elastic:%zzsecret@es1:9200", // bad escape
	} {
		_, _, err := Split(h)
		if err == nil {
			t.Errorf("%s: accepted", h)
			continue
		}
		for _, part := range []string{"cret", "secret", "12"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("%s: the error shows %q: %v", h, part, err)
			}
		}
	}
	for _, h := range []string{"es1:port", "https://u:secret@es1:port"} {
		if _, err := Parse(h); err == nil || !strings.Contains(err.Error(), `invalid port ":port"`) {
			t.Errorf("%s: the parser's detail is not shown: %v", h, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://es1:9200":                   "https://es1:9200",
		"https://elastic:hunter2@es1:9200":   "https://elastic:xxxxx@es1:9200",
		"elastic:hunter2@es1:9200":           "elastic:xxxxx@es1:9200",
		"https://elastic:hu/n@ter2@es1:9200": "https://elastic:xxxxx@es1:9200",
		"https://TOKEN@es1":                  "https://xxxxx@es1",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://es1:9200", "http://es1:9200", true},
		{"es1:9200", "http://ES1:9200/", true},
		{"https://es1", "https://es1:443", true},
		{"http://es1", "http://es1:80", true},
		{"https://u:p@es1:9200", "https://es1:9200", true},
		{"http://es1:9200", "https://es1:9200", false},
		{"http://es1:9200", "http://es1:9201", false},
		{"http://es1:9200", "http://es2:9200", false},
		{"http://es1:9200/a", "http://es1:9200/b", false},
		{"http://es1:9200", "http://es1:9200.evil.example", false},
		{"http://es1:port", "http://es1:port", false},
	} {
		if got := Same(tc.a, tc.b); got != tc.same {
			t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

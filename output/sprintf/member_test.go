package sprintf

import (
	"strings"
	"testing"
)

func TestMember(t *testing.T) {
	for _, tc := range []struct {
		obj, key string
		ok       bool
		keyAt    int
		value    string
	}{
		{`{"a":1,"@metadata":{"b":[1,"}"]},"c":2}`, "@metadata", true, 7, `{"b":[1,"}"]}`},
		{` { "@metadata" : "x" } `, "@metadata", true, 3, `"x"`},
		{`{"\u0040metadata":true}`, "@metadata", true, 1, `true`},
		{`{"a":{"@metadata":1}}`, "@metadata", false, 0, ""},
		{`{"a":1}`, "@metadata", false, 0, ""},
		{`["@metadata"]`, "@metadata", false, 0, ""},
		{`{"a":1 "@metadata":2}`, "@metadata", false, 0, ""},
		{`{"@metadata":`, "@metadata", false, 0, ""},
	} {
		ks, vs, ve, ok := Member([]byte(tc.obj), tc.key)
		if ok != tc.ok || (ok && (ks != tc.keyAt || tc.obj[vs:ve] != tc.value)) {
			t.Errorf("Member(%s, %q) = %d %d %d %v, want key at %d value %s, %v", tc.obj, tc.key, ks, vs, ve, ok, tc.keyAt, tc.value, tc.ok)
		}
	}
	if s, ok := AppendString(nil, []byte(`"a\"b\u00e9"`)); !ok || string(s) != `a"bé` {
		t.Errorf("AppendString: %q %v", s, ok)
	}
	if _, ok := AppendString(nil, []byte(`"a`)); ok {
		t.Error("AppendString accepted an unterminated string")
	}
}

func TestMembers(t *testing.T) {
	var got []string
	Members([]byte(` {"a" : 1, "b":{"c":[1,"}"]}, "\u0064":"x"} `), func(k, v []byte) bool {
		got = append(got, string(k)+"="+string(v))
		return true
	})
	want := []string{`"a"=1`, `"b"={"c":[1,"}"]}`, `"\u0064"="x"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
	n := 0
	Members([]byte(`{"a":1,"b":2}`), func(k, v []byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("fn called %d times after returning false", n)
	}
	Members([]byte(`{"a":1,"b":`), func(k, v []byte) bool { n++; return true })
	if n != 2 {
		t.Fatalf("malformed tail: fn called %d times in all, want 2", n)
	}
}

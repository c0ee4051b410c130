package sprintf

import (
	"testing"
	"time"
)

// TestMissingField: the first reference Append cannot render, as written
// in Logstash's bracketed form, or "" when Append succeeds.
func TestMissingField(t *testing.T) {
	cases := []struct {
		template, event, want string
	}{
		{"%{[data_stream][dataset]}-x", `{"message":"m"}`, "[data_stream][dataset]"},
		{"%{[data_stream][dataset]}-x", `{"data_stream":{"dataset":null}}`, "[data_stream][dataset]"},
		{"%{[data_stream][dataset]}-x", `{"data_stream":{"dataset":"d"}}`, ""},
		{"%{[@metadata][beat]}-%{[@metadata][version]}", `{"@metadata":{"beat":"filebeat"}}`, "[@metadata][version]"},
		{"%{host}-%{+yyyy}", `{"host":{"name":"h"}}`, ""},
		{"%{host}", `{"host":`, "[host]"},
		{"static", `not json`, ""},
	}
	for _, c := range cases {
		f := MustCompile(c.template)
		if got := f.MissingField([]byte(c.event)); got != c.want {
			t.Errorf("%s on %s: %q, want %q", c.template, c.event, got, c.want)
		}
		_, ok := f.Append(nil, []byte(c.event), time.Time{})
		if ok != (c.want == "") {
			t.Errorf("%s on %s: Append ok %v, MissingField %q", c.template, c.event, ok, c.want)
		}
	}
}

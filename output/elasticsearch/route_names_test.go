package elasticsearch

import (
	"log/slog"
	"strings"
	"testing"
)

// TestRouteNames: the data stream name rules on decoded values: escapes
// count as what they decode to, limits are in bytes, upper case in any
// script is refused.
func TestRouteNames(t *testing.T) {
	cases := []struct {
		ds     string // the data_stream object
		name   string
		reason string // "" when it is valid
	}{
		{`{"dataset":"nginx\u002daccess"}`, "logs-nginx-access-default", `data_stream.dataset "nginx-access" must not contain "-"`},
		{`{"d\u0061taset":"x","namespace":"\u0041"}`, "logs-x-A", `data_stream.namespace "A" must be lowercase`},
		{`{"type":"l\u006fgs","dataset":"x"}`, "logs-x-default", ""},
		{`{"namespace":"` + strings.Repeat("ä", 50) + `"}`, "logs-generic-" + strings.Repeat("ä", 50), ""},
		{`{"namespace":"` + strings.Repeat("ä", 51) + `"}`, "logs-generic-" + strings.Repeat("ä", 51),
			`data_stream.namespace "` + strings.Repeat("ä", 51) + `" is longer than 100 bytes`},
		{`{"namespace":"` + strings.Repeat(`\u00e4`, 51) + `"}`, "logs-generic-" + strings.Repeat("ä", 51),
			`data_stream.namespace "` + strings.Repeat("ä", 51) + `" is longer than 100 bytes`},
		{`{"namespace":"\u0130"}`, "logs-generic-İ", `data_stream.namespace "İ" must be lowercase`},
		{`{"namespace":"ǅ"}`, "logs-generic-ǅ", `data_stream.namespace "ǅ" must be lowercase`},
		{`{"namespace":"\u212a"}`, "logs-generic-\u212a", "data_stream.namespace \"\u212a\" must be lowercase"},
		{`{"namespace":""}`, "logs-generic-", `data_stream.namespace must not be empty`},
		{`{"type":""}`, "-generic-default", `data_stream.type "" must be one of logs, metrics, traces, synthetics`},
		{`{"namespace":"a\/b"}`, "logs-generic-a/b", `data_stream.namespace "a/b" must not contain "/"`},
		{`{"namespace":"a\u0020b"}`, "logs-generic-a b", `data_stream.namespace "a b" must not contain " "`},
		{`{"dataset":"a\"b"}`, `logs-a"b-default`, `data_stream.dataset "a\"b" must not contain "\""`},
		{`{"dataset":"a\\b"}`, `logs-a\b-default`, `data_stream.dataset "a\\b" must not contain "\\"`},
	}
	o := &Output{opts: routeOptions(DataStreamAuto, true), log: slog.New(slog.DiscardHandler)}
	for _, c := range cases {
		ev := []byte(`{"data_stream":` + c.ds + `}`)
		var rt routing
		_, reason := o.route(&rt, ev, routeReceived)
		if string(rt.name) != c.name || reason != c.reason || rt.dataStream != (c.reason == "") {
			t.Errorf("%s: name %q, reason %q, data stream %v; want %q, %q", ev, rt.name, reason, rt.dataStream, c.name, c.reason)
		}
	}
}

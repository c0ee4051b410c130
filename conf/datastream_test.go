package conf

import (
	"strings"
	"testing"
)

// TestDataStreamValues: data_stream takes a boolean or the strings
// "auto", "true" and "false", and refuses anything else naming them.
func TestDataStreamValues(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  DataStreamMode
	}{
		{`"auto"`, DataStreamAuto},
		{`true`, DataStreamOn},
		{`"true"`, DataStreamOn},
		{`false`, DataStreamOff},
		{`"false"`, DataStreamOff},
	} {
		cfg, err := Parse("x.toml", []byte("[output.elasticsearch]\ndata_stream = "+tc.value+"\n"))
		if err != nil {
			t.Errorf("data_stream = %s: %v", tc.value, err)
			continue
		}
		if got := cfg.Output.Elasticsearch.DataStream; got != tc.want {
			t.Errorf("data_stream = %s: got %q, want %q", tc.value, got, tc.want)
		}
	}
	if cfg, err := Parse("x.toml", nil); err != nil || cfg.Output.Elasticsearch.DataStream != DataStreamAuto {
		t.Errorf("default: %v, %v; want auto", cfg.Output.Elasticsearch.DataStream, err)
	}
	for _, tc := range []struct{ value, want string }{
		{`"yes"`, `"yes" is not a data_stream mode: use "auto"`},
		{`"Auto"`, `is not a data_stream mode`},
		{`1`, `is an integer: use "auto", true or false`},
	} {
		_, err := Parse("x.toml", []byte("[output.elasticsearch.siem]\ndata_stream = "+tc.value+"\n"))
		p := problemOf(err, "output.elasticsearch.siem.data_stream")
		if p == nil || !strings.Contains(p.Msg, tc.want) || p.Line != 2 {
			t.Errorf("data_stream = %s: got %v, want a problem at line 2 saying %q", tc.value, err, tc.want)
		}
	}
}

// TestDataStreamNames: data_stream_type, data_stream_dataset and
// data_stream_namespace follow Elasticsearch's naming rules, each problem
// naming the key and the rule.
func TestDataStreamNames(t *testing.T) {
	long := strings.Repeat("a", 101)
	for _, tc := range []struct{ key, value, want string }{
		{"data_stream_type", "log", "is not a data stream type: use logs, metrics, traces, synthetics"},
		{"data_stream_type", "Logs", "is not a data stream type"},
		{"data_stream_dataset", "", "is empty"},
		{"data_stream_dataset", long, "longer than 100 bytes"},
		{"data_stream_dataset", "Nginx", "upper-case"},
		{"data_stream_dataset", "nginx-access", `contains "-"`},
		{"data_stream_dataset", "a b", "none of"},
		{"data_stream_namespace", "", "is empty"},
		{"data_stream_namespace", long, "longer than 100 bytes"},
		{"data_stream_namespace", "Prod", "upper-case"},
		{"data_stream_namespace", "a:b", "none of"},
		{"data_stream_namespace", "a#b", "none of"},
		{"data_stream_namespace", `a\b`, "none of"},
	} {
		text := "[output.elasticsearch]\n" + tc.key + " = '" + tc.value + "'\n"
		_, err := Parse("x.toml", []byte(text))
		p := problemOf(err, "output.elasticsearch."+tc.key)
		if p == nil || !strings.Contains(p.Msg, tc.want) {
			t.Errorf("%s = %q: got %v, want a problem saying %q", tc.key, tc.value, err, tc.want)
		}
	}
	for _, ok := range []string{
		"data_stream_type = 'metrics'\ndata_stream_dataset = 'nginx.access'\ndata_stream_namespace = 'prod-eu'\n",
		"data_stream_type = 'synthetics'\ndata_stream_dataset = 'a_b'\ndata_stream_namespace = '" + strings.Repeat("n", 100) + "'\n",
		"data_stream_type = 'traces'\n",
	} {
		if _, err := Parse("x.toml", []byte("[output.elasticsearch]\n"+ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestDataStreamTrueRefusesIndex: with data_stream = true, index and
// fallback_index set in the file are refused (they would be unused);
// their defaults, and both keys with data_stream "auto" or false, are not.
func TestDataStreamTrueRefusesIndex(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		keys       []string
	}{
		{"true with index", "[output.elasticsearch]\ndata_stream = true\nindex = 'logs-x'\n", []string{"output.elasticsearch.index"}},
		{"true with both, named", "[output.elasticsearch.siem]\ndata_stream = 'true'\nindex = 'logs-x'\nfallback_index = 'lost'\n",
			[]string{"output.elasticsearch.siem.index", "output.elasticsearch.siem.fallback_index"}},
		{"true alone", "[output.elasticsearch]\ndata_stream = true\n", nil},
		{"auto with both", "[output.elasticsearch]\ndata_stream = 'auto'\nindex = 'logs-x'\nfallback_index = 'lost'\n", nil},
		{"false with index", "[output.elasticsearch]\ndata_stream = false\nindex = 'logs-x'\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.text))
			if len(tc.keys) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, key := range tc.keys {
				p := problemOf(err, key)
				if p == nil || !strings.Contains(p.Msg, "is not used when data_stream = true") || !strings.Contains(p.Msg, `set data_stream = "auto"`) {
					t.Errorf("got %v, want a problem with %s saying it is not used", err, key)
				}
			}
		})
	}
}

// TestDataStreamProblemWaitsForDataStream: a data_stream that did not
// decode does not also report index as unused.
func TestDataStreamProblemWaitsForDataStream(t *testing.T) {
	_, err := Parse("x.toml", []byte("[output.elasticsearch]\ndata_stream = 'always'\nindex = 'logs-x'\n"))
	if problemOf(err, "output.elasticsearch.data_stream") == nil || problemOf(err, "output.elasticsearch.index") != nil {
		t.Errorf("got %v, want only the data_stream problem", err)
	}
}

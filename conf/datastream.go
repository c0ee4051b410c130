package conf

import (
	"fmt"
	"strings"
)

// DataStreamMode is an Elasticsearch output's data_stream: which events it
// sends to a data stream. In TOML it is a boolean or one of the strings
// "auto", "true" and "false": Logstash users write both.
type DataStreamMode string

// The values of DataStreamMode.
const (
	// DataStreamAuto sends an event that carries a data_stream object to
	// its data stream, any other to index.
	DataStreamAuto DataStreamMode = "auto"
	// DataStreamOn sends every event to a data stream.
	DataStreamOn DataStreamMode = "true"
	// DataStreamOff sends every event to index.
	DataStreamOff DataStreamMode = "false"
)

// UnmarshalTOML accepts true, false, "auto", "true" and "false".
func (m *DataStreamMode) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case bool:
		*m = DataStreamOff
		if v {
			*m = DataStreamOn
		}
		return nil
	case string:
		switch s := DataStreamMode(v); s {
		case DataStreamAuto, DataStreamOn, DataStreamOff:
			*m = s
			return nil
		}
		return fmt.Errorf("%q is not a data_stream mode: use \"auto\" (events that carry a data_stream object go to their data stream, others to index), true (every event to a data stream) or false (every event to index)", shorten(v))
	}
	return fmt.Errorf("is %s: use \"auto\", true or false", aTOMLType(v))
}

// MarshalTOML writes "auto", true or false: what UnmarshalTOML reads.
func (m DataStreamMode) MarshalTOML() ([]byte, error) {
	switch m {
	case DataStreamOn, DataStreamOff:
		return []byte(m), nil
	}
	return fmt.Appendf(nil, "%q", string(m)), nil
}

// dataStreamTypes are the types Elasticsearch's data stream naming scheme
// allows ({type}-{dataset}-{namespace}).
var dataStreamTypes = []string{"logs", "metrics", "traces", "synthetics"}

// maxDataStreamPart is Elasticsearch's limit on a dataset or namespace,
// in bytes.
const maxDataStreamPart = 100

// validDataStreamPart applies Elasticsearch's rules for a data stream's
// dataset or namespace (part names which) to s: the same rules the output
// applies to the values events carry.
func validDataStreamPart(part, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty: a data stream's %s names it; e.g. %q", part, map[string]string{"dataset": "generic", "namespace": "default"}[part])
	case len(s) > maxDataStreamPart:
		return fmt.Errorf("%q is longer than %d bytes, Elasticsearch's limit for a data stream's %s", shorten(s), maxDataStreamPart, part)
	case strings.ToLower(s) != s:
		return fmt.Errorf("%q has upper-case letters: a data stream's %s is lowercase", s, part)
	case strings.ContainsAny(s, "\\/*?\"<>|,#: "):
		return fmt.Errorf("%q: a data stream's %s contains none of \\ / * ? \" < > | , # : or space", s, part)
	case part == "dataset" && strings.Contains(s, "-"):
		return fmt.Errorf("%q contains \"-\": it separates type, dataset and namespace in a data stream's name, so a dataset has none (use _ or .)", s)
	}
	return nil
}

// validateDataStream checks the data_stream keys of one Elasticsearch
// output; k is its key with a trailing dot. The values are checked
// whatever data_stream says: a wrong one is wrong also while unused.
func validateDataStream(bad badFunc, k string, es *Elasticsearch) {
	switch es.DataStream {
	case DataStreamAuto, DataStreamOn, DataStreamOff:
	default:
		bad(k+"data_stream", "%q: use \"auto\", true or false", es.DataStream)
	}
	ok := false
	for _, t := range dataStreamTypes {
		ok = ok || es.DataStreamType == t
	}
	if !ok {
		bad(k+"data_stream_type", "%q is not a data stream type: use %s", es.DataStreamType, strings.Join(dataStreamTypes, ", "))
	}
	if err := validDataStreamPart("dataset", es.DataStreamDataset); err != nil {
		bad(k+"data_stream_dataset", "%v", err)
	}
	if err := validDataStreamPart("namespace", es.DataStreamNamespace); err != nil {
		bad(k+"data_stream_namespace", "%v", err)
	}
}

// checkDataStreamIndex refuses index and fallback_index set in a file
// beside data_stream = true: every event then goes to a data stream, so
// they would be silently unused. defined holds the keys the file sets.
func (c *Config) checkDataStreamIndex(defined map[string]bool) []*KeyError {
	var ps []*KeyError
	for _, o := range c.elasticsearchOutputs() {
		if o.Elasticsearch.DataStream != DataStreamOn {
			continue
		}
		for _, key := range []string{"index", "fallback_index"} {
			if defined[o.Key+"."+key] {
				ps = append(ps, &KeyError{Key: o.Key + "." + key,
					Msg: fmt.Sprintf("%s is not used when data_stream = true (every event goes to a data stream): remove it, or set data_stream = \"auto\" to send events without a data_stream object to it", key)})
			}
		}
	}
	return ps
}

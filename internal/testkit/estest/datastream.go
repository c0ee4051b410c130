package estest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Data streams as Elasticsearch 7.9+ runs them with its built-in index
// templates: a bulk item whose target matches a data stream pattern (or
// names an existing data stream) may only be a create with a top-level
// @timestamp, and its document is stored in the stream's backing index.

// BuiltinDataStreamPatterns returns the index patterns of Elasticsearch's
// built-in data stream templates, used when Options.DataStreamPatterns is
// nil: logs-*-*, metrics-*-*, synthetics-*-* and traces-*-*. The slice is
// the caller's.
func BuiltinDataStreamPatterns() []string {
	return []string{"logs-*-*", "metrics-*-*", "synthetics-*-*", "traces-*-*"}
}

// backingPrefix starts every backing index name, and no data stream name
// may start with it.
const backingPrefix = ".ds-"

// dataStream is one data stream: its single backing index (the server
// never rolls over).
type dataStream struct {
	backing string
}

// checkPatterns validates Options.DataStreamPatterns: non-empty, and `*`
// is the only wildcard (index names may contain '?' nowhere, so nothing
// else could be meant).
func checkPatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return fmt.Errorf("empty data stream pattern")
		}
		if strings.ContainsAny(p, "?[]\\") {
			return fmt.Errorf("data stream pattern %q: only `*` wildcards are supported", p)
		}
	}
	return nil
}

// matchPattern reports whether name matches pattern, where `*` matches any
// run of characters (none included) and every other byte itself.
func matchPattern(pattern, name string) bool {
	for {
		star := strings.IndexByte(pattern, '*')
		if star < 0 {
			return pattern == name
		}
		if !strings.HasPrefix(name, pattern[:star]) {
			return false
		}
		name, pattern = name[star:], pattern[star+1:]
		if pattern == "" {
			return true
		}
		// Try every position for the rest; patterns are short.
		for i := 0; i <= len(name); i++ {
			if matchPattern(pattern, name[i:]) {
				return true
			}
		}
		return false
	}
}

// isDataStreamName reports whether name is, or would become, a data
// stream. Callers hold s.mu.
func (s *Server) isDataStreamName(name string) bool {
	if !s.ver.hasDataStreams() {
		return false
	}
	if s.dataStreams[name] != nil {
		return true
	}
	for _, p := range s.dsPatterns {
		if matchPattern(p, name) {
			return true
		}
	}
	return false
}

// backingIndexName is the first backing index of stream created at t.
func (s *Server) backingIndexName(stream string, t time.Time) string {
	if !s.ver.datedBackingIndices() {
		return backingPrefix + stream + "-000001"
	}
	return backingPrefix + stream + "-" + t.UTC().Format("2006.01.02") + "-000001"
}

// dataStreamNameError returns why Elasticsearch refuses to create a data
// stream called name (the text after "data_stream [name] "), or "".
func dataStreamNameError(name string) string {
	if reason := indexNameError(name); reason != "" {
		return reason
	}
	if strings.HasPrefix(name, backingPrefix) {
		return "must not start with '" + backingPrefix + "'"
	}
	return ""
}

// timestampError checks a data stream document's @timestamp (src is valid
// JSON, an object). It returns the error type and reason Elasticsearch
// answers, or "" when the document may be stored. The field must be at the
// top level, not null, and a date string or a number (epoch millis);
// an array of one such value counts as that value.
func (s *Server) timestampError(src []byte, id string) (errType, reason, cause string) {
	parseType := "document_parsing_exception"
	if s.ver.major < 8 {
		parseType = "mapper_parsing_exception"
	}
	// Elasticsearch 8+ prefixes the reason with the [line:column] of the
	// token the parser stood on: the value, or the closing brace when the
	// field is missing. 7.x reports no position.
	at := func(pos int) string {
		if s.ver.major < 8 {
			return ""
		}
		return "[1:" + strconv.Itoa(pos+1) + "] "
	}
	end := bytes.LastIndexByte(src, '}')
	v := gjson.GetBytes(src, `\@timestamp`)
	if v.IsArray() {
		arr := v.Array()
		switch len(arr) {
		case 0:
			v = gjson.Result{}
		case 1:
			v = arr[0]
		default:
			return parseType, at(end) + "failed to parse: data stream timestamp field [@timestamp] encountered multiple values",
				"data stream timestamp field [@timestamp] encountered multiple values"
		}
	}
	const missing = "data stream timestamp field [@timestamp] is missing"
	if !v.Exists() || v.Type == gjson.Null {
		if s.ver.major < 8 {
			return parseType, "failed to parse", missing
		}
		return parseType, at(end) + "failed to parse: " + missing, missing
	}
	ok := false
	switch v.Type {
	case gjson.Number:
		ok = !strings.ContainsAny(v.Raw, "eE")
	case gjson.String:
		ok = validDate(v.Str)
	}
	if ok {
		return "", "", ""
	}
	preview := v.Raw
	if v.Type == gjson.String {
		preview = v.Str
	}
	return parseType, at(v.Index) + "failed to parse field [@timestamp] of type [date] in document with id '" +
		truncate(id, 512) + "'. Preview of field's value: '" + truncate(preview, 64) + "'", ""
}

// dateLayouts approximate strict_date_optional_time, the default date
// format of a data stream's @timestamp.
var dateLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02T15", "2006-01-02", "2006-01", "2006",
}

// validDate reports whether s parses as strict_date_optional_time or as
// epoch_millis (digits).
func validDate(s string) bool {
	if s == "" {
		return false
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return true
	}
	for _, l := range dateLayouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

package elasticsearch

import (
	"bytes"
	"strings"
	"testing"
)

// TestNeedleIndexAgreesWithBytesIndex places each of restNeedles at every
// offset of texts made of the bytes that trip its search (its anchor, the
// anchor followed by the wrong byte, the text cut short), so that the
// anchored search and the windows, window edges included, answer as
// bytes.Index does.
func TestNeedleIndexAgreesWithBytesIndex(t *testing.T) {
	fillers := []string{"x", `\"`, "@", "_", "@metadata", "data_", "data_strea", `\`, "metadata\"", "ab@timestamp"}
	for _, n := range restNeedles {
		for _, fill := range fillers {
			for size := 0; size <= 150; size += 7 {
				base := []byte(strings.Repeat(fill, size/len(fill)+1)[:size])
				check := func(s []byte) {
					t.Helper()
					if got, want := n.index(s), bytes.Index(s, n.text); got != want {
						t.Fatalf("needle %q in %q: index %d, bytes.Index %d", n.text, s, got, want)
					}
				}
				check(base)
				for at := 0; at <= size; at++ {
					s := append(append(append([]byte(nil), base[:at]...), n.text...), base[at:]...)
					check(s)
					check(s[:len(s)-1]) // cut inside the text, when it ends s
				}
			}
		}
	}
}

// FuzzNeedleIndex checks each of restNeedles against bytes.Index on any
// text.
func FuzzNeedleIndex(f *testing.F) {
	f.Add([]byte(`{"@metadata":{"beat":"x"},"message":"a \"b\" \u00e9 data_stream"}`))
	f.Add([]byte(`data_stream" @timestamp" @metadata" \u`))
	f.Fuzz(func(t *testing.T, s []byte) {
		for _, n := range restNeedles {
			if got, want := n.index(s), bytes.Index(s, n.text); got != want {
				t.Fatalf("needle %q in %q: index %d, bytes.Index %d", n.text, s, got, want)
			}
		}
	})
}

// TestReadMetaFindsEveryKeySpelling: @metadata's _id and pipeline are read
// wherever their keys are (spaced, among other members), as Beats writes
// them (a key spelled with escapes is not theirs), and an @metadata
// without them is read as holding neither, so that skipping the walk of
// an @metadata that cannot hold them loses nothing.
func TestReadMetaFindsEveryKeySpelling(t *testing.T) {
	for _, tc := range []struct {
		event, id, pipeline string
	}{
		{`{"@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"message":"x"}`, "", ""},
		{`{"@metadata":{"beat":"filebeat","_id":"abc"},"message":"x"}`, "abc", ""},
		{`{"@metadata":{"pipeline":"p1","beat":"filebeat"}}`, "", "p1"},
		{`{"@metadata":{ "_id" : "abc" , "pipeline" : "p1" }}`, "abc", "p1"},
		{`{"@metadata":{"\u005fid":"abc","pipe\u006cine":"p1"}}`, "", ""},
		{`{"@metadata":{"a":{"_id":"x"},"pipeline":"p1"}}`, "", "p1"},
		{`{"@metadata":{"beat":"_id\"","x":"pipeline"}}`, "", ""},
		{`{"@metadata":{"_idx":"abc","pipelines":"p1"}}`, "", ""},
	} {
		m := readMeta([]byte(tc.event))
		if string(m.id) != tc.id || string(m.pipeline) != tc.pipeline {
			t.Errorf("%s: _id %q pipeline %q, want %q %q", tc.event, m.id, m.pipeline, tc.id, tc.pipeline)
		}
	}
}

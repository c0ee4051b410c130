package elasticsearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/sprintf"
)

// eventMeta is what the output reads from an event's @metadata. Its
// slices alias the event.
type eventMeta struct {
	raw      []byte // the @metadata value, nil when absent
	id       []byte // @metadata._id, nil when absent
	pipeline []byte // @metadata.pipeline, nil when absent
	// cut is the span [cut[0], cut[1]) of the event to leave out of the
	// indexed source: the @metadata member and one comma next to it.
	// cut[1] == 0 when there is nothing to cut, or when the event holds
	// a second top-level @metadata (see eventMeta.read).
	cut [2]int
}

// readMeta finds the top-level @metadata member of a raw JSON event. Beats
// put it there for the output (index name parts, _id, pipeline); like
// Logstash, logpond does not index it. The output reads it as part of
// its one walk over the event's top-level members (scanTop); this is
// that walk's @metadata alone.
func readMeta(event []byte) eventMeta { return scanTop(event, scanMeta).meta }

// read sets m from the @metadata member of event whose key starts at
// keyStart and whose value is event[vs:ve]. second says the event holds
// another top-level @metadata member: Elasticsearch refuses an object
// with duplicate keys; cutting the first @metadata would hide that and
// index the second, so such an event is sent whole (nothing is cut), for
// the cluster to refuse and the event to be dead-lettered as stored.
func (m *eventMeta) read(event []byte, keyStart, vs, ve int, second bool) {
	*m = eventMeta{raw: event[vs:ve]}
	if event[vs] == '{' && holdsMetaKey(m.raw) {
		// One pass over @metadata's members for both keys.
		sprintf.Members(event[vs:ve], func(key, value []byte) bool {
			switch string(key) {
			case `"_id"`:
				m.id = stringValue(value)
			case `"pipeline"`:
				m.pipeline = stringValue(value)
			}
			return true
		})
	}
	if !second {
		m.cut = memberSpan(event, keyStart, ve)
	}
}

// metaKeys are the keys eventMeta.read looks for in @metadata, as it
// compares them: raw, quotes included.
var metaKeys = [...][]byte{[]byte(`"_id"`), []byte(`"pipeline"`)}

// holdsMetaKey reports whether the @metadata text obj holds one of
// metaKeys as written. When it does not, a walk of its members would find
// none of them: Beats' @metadata (beat, type, version) is ruled out by
// two searches of its short text, which cost a fraction of walking its
// members.
func holdsMetaKey(obj []byte) bool {
	for _, k := range metaKeys {
		if bytes.Contains(obj, k) {
			return true
		}
	}
	return false
}

// stringValue returns the decoded JSON string raw (quotes included), or
// nil when it is empty or not a string.
func stringValue(raw []byte) []byte {
	if len(raw) < 3 || raw[0] != '"' {
		return nil
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	s, ok := sprintf.AppendString(nil, raw)
	if !ok || len(s) == 0 {
		return nil
	}
	return s
}

// memberSpan returns the span to remove so that the object member whose
// key starts at keyStart and whose value ends at valEnd disappears and the
// object stays valid JSON: the member and one adjacent comma.
func memberSpan(event []byte, keyStart, valEnd int) [2]int {
	p := keyStart - 1
	for p >= 0 && isSpace(event[p]) {
		p--
	}
	if p < 0 {
		return [2]int{}
	}
	switch event[p] {
	case ',':
		// A member before it: drop ",<ws>"key":value".
		return [2]int{p, valEnd}
	case '{':
		// The first member: drop "key":value<ws>, and the comma after it,
		// if another member follows.
		e := valEnd
		for e < len(event) && isSpace(event[e]) {
			e++
		}
		if e < len(event) && event[e] == ',' {
			return [2]int{keyStart, e + 1}
		}
		return [2]int{keyStart, valEnd}
	}
	return [2]int{}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// appendSource appends the event as it is indexed: without the span cut
// (the @metadata member), on one line (appendEditedSource).
func appendSource(dst, event []byte, cut [2]int) ([]byte, error) {
	var one [1]edit
	return appendEditedSource(dst, event, cutEdits(one[:0], cut))
}

// cutEdits appends the edit that removes the span cut (none when
// cut[1] == 0) to edits.
func cutEdits(edits []edit, cut [2]int) []edit {
	if cut[1] > 0 {
		edits = append(edits, edit{at: cut[0], n: cut[1] - cut[0]})
	}
	return edits
}

// appendEditedSource appends the event as it is indexed: with edits
// (sorted, not overlapping: the @metadata cut and, for a data stream
// event, its additions) applied, on one line. NDJSON forbids raw
// newlines, and a pretty-printed event (valid JSON) has them between
// tokens: such an event is compacted after the edits. Inside valid JSON
// strings a newline is always escaped, so compaction changes no value.
// An event that is not valid JSON and holds a newline cannot be sent at
// all: errNotOneLine.
func appendEditedSource(dst, event []byte, edits []edit) ([]byte, error) {
	start := len(dst)
	dst = appendEdited(dst, event, edits)
	if bytes.IndexByte(dst[start:], '\n') < 0 && bytes.IndexByte(dst[start:], '\r') < 0 {
		return dst, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("%w: %v", errNotOneLine, err)
	}
	return append(dst[:start], buf.Bytes()...), nil
}

// Source returns event as the output indexes it into an index: without
// its top-level @metadata member, on one line (compacted only when it
// holds raw newlines).
func Source(event []byte) ([]byte, error) {
	return appendSource(nil, event, readMeta(event).cut)
}

// RedriveSource returns a dead letter's event as the output sends it to
// index, the dead letter's target, so that `ledgerctl dlq redrive` stores
// it as the output would have. When index is a data stream name
// ({type}-{dataset}-{namespace} with a known type and no "-" in the
// dataset), the event is routed to it as with data_stream = true and
// sync fields, the name's parts standing for the settings: a missing
// @timestamp becomes received, and the data_stream object is completed.
// An event that names another data stream than index, or an invalid one,
// is refused with the reason. Any other index gets Source.
func RedriveSource(event []byte, index string, received time.Time) ([]byte, error) {
	typ, rest, ok := strings.Cut(index, "-")
	dataset, namespace, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 || !slices.Contains(dsTypes, typ) {
		return Source(event)
	}
	o := &Output{opts: Options{DataStream: DataStreamAlways, DataStreamType: typ, DataStreamDataset: dataset,
		DataStreamNamespace: namespace, DataStreamSyncFields: true}}
	var rt routing
	if _, reason := o.route(&rt, event, received); reason != "" {
		return nil, errors.New(reason)
	}
	if string(rt.name) != index {
		return nil, fmt.Errorf("the event names the data stream %q, not %q", rt.name, index)
	}
	return appendEditedSource(nil, event, rt.edits)
}

// idPrefix is the stream id as it starts every derived document id
// (eventid.Prefix). The derivation lives in package eventid so that the
// Lumberjack output forwards exactly the ids this output would derive.
func idPrefix(streamID string) (string, error) {
	p, err := eventid.Prefix(streamID)
	if err != nil {
		return "", fmt.Errorf("elasticsearch: %w", err)
	}
	return p, nil
}

// appendDocID appends the document id of the event at position pos of the
// record at lsn (eventid.Append).
func appendDocID(dst []byte, prefix string, lsn uint64, pos int) []byte {
	return eventid.Append(dst, prefix, lsn, pos)
}

// appendJSONString appends s as a JSON string literal. The runs between
// the bytes it escapes, usually all of s, are copied whole.
func appendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < 0x20 {
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		} else {
			dst = append(dst, '\\', c)
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

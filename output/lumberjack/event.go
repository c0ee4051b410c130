package lumberjack

import (
	"bytes"
	"encoding/json"

	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/sprintf"
)

// appendWithID appends event to dst with the document id the
// Elasticsearch output would derive for it (position pos of record lsn)
// in @metadata._id, unless the event carries one already. Every other
// byte of the event is kept as it is: the id goes in as the last member
// of @metadata, or a new "@metadata":{"_id":…} member goes first in the
// event. An event that is not a JSON object, or whose @metadata is not
// one, is appended unchanged with ok = false: it has nowhere to carry an
// id.
func appendWithID(dst, event []byte, prefix string, lsn uint64, pos int) (out []byte, ok bool) {
	open := bytes.IndexByte(event, '{')
	if open < 0 || !isSpaces(event[:open]) || !json.Valid(event) {
		return append(dst, event...), false
	}
	_, vs, ve, found := sprintf.Member(event, "@metadata")
	if !found {
		// {"@metadata":{"_id":"…"} then, when the event has members, a
		// comma.
		dst = append(dst, event[:open+1]...)
		dst = append(dst, `"@metadata":{"_id":"`...)
		dst = eventid.Append(dst, prefix, lsn, pos)
		dst = append(dst, `"}`...)
		if !emptyObject(event[open:]) {
			dst = append(dst, ',')
		}
		return append(dst, event[open+1:]...), true
	}
	meta := event[vs:ve]
	if meta[0] != '{' {
		return append(dst, event...), false
	}
	if hasID(meta) {
		return append(dst, event...), true
	}
	// Last in @metadata: where keys repeat, the Elasticsearch output
	// reads the last _id, so an unusable _id before it (empty, not a
	// string) does not hide the derived one.
	dst = append(dst, event[:ve-1]...)
	if !emptyObject(meta) {
		dst = append(dst, ',')
	}
	dst = append(dst, `"_id":"`...)
	dst = eventid.Append(dst, prefix, lsn, pos)
	dst = append(dst, '"')
	return append(dst, event[ve-1:]...), true
}

// hasID reports whether the @metadata object meta holds an id the
// Elasticsearch output would use as is: an "_id" member (keys as Beats
// spell them, without escapes) whose value is a non-empty string. The
// rule must stay the Elasticsearch output's (its readMeta): an event
// whose _id that output would ignore gets a derived one here too, so that
// both derive the same.
func hasID(meta []byte) bool {
	has := false
	sprintf.Members(meta, func(key, value []byte) bool {
		if string(key) == `"_id"` { // the last one counts, as there
			has = false
			if len(value) >= 3 && value[0] == '"' {
				s, ok := sprintf.AppendString(nil, value)
				has = ok && len(s) > 0
			}
		}
		return true
	})
	return has
}

// emptyObject reports whether the JSON object starting at obj[0] has no
// member.
func emptyObject(obj []byte) bool {
	i := 1
	for i < len(obj) && isSpace(obj[i]) {
		i++
	}
	return i < len(obj) && obj[i] == '}'
}

func isSpaces(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

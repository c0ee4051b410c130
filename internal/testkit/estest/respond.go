package estest

import (
	"bytes"
	"github.com/logpond/logpond/internal/jsontree"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// setHeaders sets the headers every response carries. X-Elastic-Product,
// which go-elasticsearch 8 requires from a 7.14+ node, is set by handle
// according to the version.
func setHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
}

// writeJSON answers status with body, which must be JSON (or empty).
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	setHeaders(w)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client that went away is not our error
}

// errorBody is Elasticsearch's error envelope:
// {"error":{"root_cause":[{"type":T,"reason":R}],"type":T,"reason":R},"status":S}.
func errorBody(status int, errType, reason string) []byte {
	b := make([]byte, 0, 128+2*len(reason))
	b = append(b, `{"error":{"root_cause":[`...)
	b = appendCause(b, errType, reason)
	b = append(b, `],"type":`...)
	b = appendString(b, errType)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	b = append(b, `},"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, '}')
}

// errorBodyCause is errorBody with a caused_by object inside "error".
func errorBodyCause(status int, errType, reason, causeType, causeReason string) []byte {
	b := errorBody(status, errType, reason)
	// Insert before the `},"status":` that closes "error".
	i := bytes.LastIndex(b, []byte(`},"status":`))
	tail := append([]byte(nil), b[i:]...)
	b = append(b[:i], `,"caused_by":`...)
	b = appendCause(b, causeType, causeReason)
	return append(b, tail...)
}

func appendCause(b []byte, errType, reason string) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, errType)
	b = append(b, `,"reason":`...)
	b = appendString(b, reason)
	return append(b, '}')
}

// writeError answers status with an Elasticsearch error envelope.
func writeError(w http.ResponseWriter, status int, errType, reason string) {
	writeJSON(w, status, errorBody(status, errType, reason))
}

// writeSimpleError answers the flat form Elasticsearch uses for REST-layer
// failures (406, 405): {"error":"...","status":S}.
func writeSimpleError(w http.ResponseWriter, status int, reason string) {
	b := append([]byte(`{"error":`), appendString(nil, reason)...)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	writeJSON(w, status, append(b, '}'))
}

// validStatus maps a hook's status to one net/http can send.
func validStatus(status int) int {
	if status < 100 || status > 599 {
		return http.StatusInternalServerError
	}
	return status
}

// appendString appends s as a JSON string (jsontree's encoding: invalid
// UTF-8 becomes U+FFFD, as encoding/json does).
func appendString(b []byte, s string) []byte { return jsontree.AppendString(b, s) }

// truncate shortens s for use in an error reason.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// infoBody is GET / for the node's version.
// licenseBody is GET /_license's answer: an active basic license, the one
// a cluster runs without a subscription. x-pack Beats and Elastic Agent
// read it when they connect, and refuse a cluster that has no answer.
func (s *Server) licenseBody() []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"license":{"status":"active","uid":`...)
	b = appendString(b, s.clusterID)
	b = append(b, `,"type":"basic","issue_date":"2024-12-11T12:08:05.663Z","issue_date_in_millis":1733918885663,`...)
	b = append(b, `"max_nodes":1000,"max_resource_units":null,"issued_to":"estest","issuer":"elasticsearch","start_date_in_millis":-1}}`...)
	return b
}

func (s *Server) infoBody() []byte {
	b := make([]byte, 0, 512)
	b = append(b, `{"name":"estest","cluster_name":"estest","cluster_uuid":`...)
	b = appendString(b, s.clusterID)
	b = append(b, `,"version":{"number":`...)
	b = appendString(b, s.version)
	b = append(b, `,"build_flavor":"default","build_type":"tar","build_hash":"0000000000000000000000000000000000000000",`...)
	b = append(b, `"build_date":"2024-12-11T12:08:05.663969764Z","build_snapshot":false,"lucene_version":`...)
	b = appendString(b, s.ver.luceneVersion())
	b = append(b, `,"minimum_wire_compatibility_version":`...)
	b = appendString(b, s.ver.wireCompat())
	b = append(b, `,"minimum_index_compatibility_version":`...)
	b = appendString(b, s.ver.indexCompat())
	b = append(b, `},"tagline":"You Know, for Search"}`...)
	return b
}

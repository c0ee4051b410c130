package estest

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// The node answers as the version Options.Version names: what a client
// sees differs between majors and minors, and logpond's version checks are
// tested against these differences.

// esVersion is a parsed "X.Y.Z".
type esVersion struct{ major, minor, patch int }

// parseVersion parses "X.Y.Z" (three decimal numbers). Majors below 7 are
// refused: their bulk API (mapping types) is not what this server speaks.
func parseVersion(s string) (esVersion, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return esVersion{}, fmt.Errorf("want X.Y.Z, got %q", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || p[0] == '+' || p[0] == '-' || len(p) > 4 {
			return esVersion{}, fmt.Errorf("want X.Y.Z with decimal numbers, got %q", s)
		}
		n[i] = v
	}
	v := esVersion{n[0], n[1], n[2]}
	if v.major < 7 {
		return esVersion{}, fmt.Errorf("%q: versions before 7.0.0 are not supported", s)
	}
	return v, nil
}

// atLeast reports whether v is major.minor or later.
func (v esVersion) atLeast(major, minor int) bool {
	return v.major > major || v.major == major && v.minor >= minor
}

// hasDataStreams: data streams and their built-in index templates came
// with 7.9.
func (v esVersion) hasDataStreams() bool { return v.atLeast(7, 9) }

// sendsProductHeader: Elasticsearch sets X-Elastic-Product on every
// response from 7.14 on; go-elasticsearch 8 refuses a 7.14+ node without
// it, and older clients check the GET / body instead.
func (v esVersion) sendsProductHeader() bool { return v.atLeast(7, 14) }

// hasMappingTypes: 7.x answers carry "_type":"_doc".
func (v esVersion) hasMappingTypes() bool { return v.major < 8 }

// datedBackingIndices: from 7.11 a backing index name carries its creation
// date (.ds-NAME-yyyy.MM.dd-000001); 7.9 and 7.10 used .ds-NAME-000001.
func (v esVersion) datedBackingIndices() bool { return v.atLeast(7, 11) }

// minCompatibleMajor is the oldest compatible-with value the node accepts:
// the previous major from 8 on, and only 7 on a 7.x node. (A 7.x node has
// no compatibility layer; refusing other values with the 8.x error, "either
// version 7 or 7", approximates it.)
func (v esVersion) minCompatibleMajor() int {
	if v.major >= 8 {
		return v.major - 1
	}
	return v.major
}

// luceneVersions are the Lucene releases minors shipped with, for GET /;
// a minor beyond a table reports its last entry.
var luceneVersions = map[int][]string{
	7: {"8.0.0", "8.0.0", "8.0.0", "8.1.0", "8.2.0", "8.3.0", "8.4.0", "8.5.1", "8.5.1", "8.6.0",
		"8.7.0", "8.7.0", "8.8.0", "8.8.2", "8.9.0", "8.9.0", "8.10.1", "8.11.3"},
	8: {"9.0.0", "9.0.0", "9.1.0", "9.2.0", "9.3.0", "9.4.1", "9.4.2", "9.5.0", "9.6.0", "9.7.0",
		"9.7.0", "9.8.0", "9.9.1", "9.10.0", "9.10.0", "9.11.1", "9.12.0", "9.12.0", "9.12.1", "9.12.2"},
	9: {"10.1.0", "10.2.2", "10.2.2", "10.3.1"},
}

// luceneVersion is the Lucene release the version shipped with, for GET /.
func (v esVersion) luceneVersion() string {
	t, ok := luceneVersions[v.major]
	if !ok {
		t = luceneVersions[9]
	}
	return t[min(v.minor, len(t)-1)]
}

// wireCompat and indexCompat are minimum_wire_compatibility_version and
// minimum_index_compatibility_version: the last minor of the previous
// major, and the first release of the previous major.
func (v esVersion) wireCompat() string {
	switch v.major {
	case 7:
		return "6.8.0"
	case 8:
		return "7.17.0"
	default:
		return strconv.Itoa(v.major-1) + ".18.0"
	}
}

func (v esVersion) indexCompat() string {
	if v.major == 7 {
		return "6.0.0-beta1"
	}
	return strconv.Itoa(v.major-1) + ".0.0"
}

// compatError checks the Accept and Content-Type headers the way
// Elasticsearch's REST layer does for every request, and returns the
// reason of the status_exception that makes it answer 400
// media_type_header_exception, or "". Only the vendor media types
// (application/vnd.elasticsearch+json, +x-ndjson, ...) carry a
// compatible-with version; plain types mean "the node's own major". The
// Content-Type counts only when the request has a body.
func (v esVersion) compatError(r *http.Request, hasBody bool) string {
	acceptRaw, accept := compatVersion(r.Header.Values("Accept"))
	ctRaw, ct := compatVersion(r.Header.Values("Content-Type"))
	if accept == "" {
		acceptRaw = "null"
	}
	if ct == "" {
		ctRaw = "null"
	}
	lo, hi := v.minCompatibleMajor(), v.major
	acceptV, ctV := hi, hi
	if accept != "" {
		n, err := strconv.Atoi(accept)
		if err != nil {
			n = -1
		}
		acceptV = n
	}
	if ct != "" {
		n, err := strconv.Atoi(ct)
		if err != nil {
			n = -1
		}
		ctV = n
	}
	either := fmt.Sprintf("must be either version %d or %d, but found ", hi, lo)
	if acceptV < lo || acceptV > hi {
		return "Accept version " + either + accept + ". Accept=" + acceptRaw
	}
	if !hasBody {
		return ""
	}
	if ctV < lo || ctV > hi {
		return "Content-Type version " + either + ct + ". Content-Type=" + ctRaw
	}
	const both = "A compatible version is required on both Content-Type and Accept headers if either one has requested a compatible version"
	if ctV != acceptV {
		return both + " and the compatible versions must match. Accept=" + acceptRaw + ", Content-Type=" + ctRaw
	}
	if (accept == "") != (ct == "") {
		return both + ". Accept=" + acceptRaw + ", Content-Type=" + ctRaw
	}
	return ""
}

// compatVersion returns the first header value and its compatible-with
// parameter ("" if it has none or is not a vendor media type).
func compatVersion(values []string) (raw, version string) {
	if len(values) == 0 {
		return "", ""
	}
	raw = values[0]
	mt, params, err := mime.ParseMediaType(raw)
	if err != nil || !strings.Contains(mt, "/vnd.elasticsearch+") {
		return raw, ""
	}
	return raw, params["compatible-with"]
}

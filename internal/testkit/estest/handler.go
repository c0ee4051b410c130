package estest

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// handle routes one request.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	if s.ver.sendsProductHeader() {
		// Set first, so that every answer below carries it.
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
	}
	// Elasticsearch checks the compatible-with versions when it parses a
	// request, before routing it: every endpoint, even an unknown one,
	// refuses a bad combination.
	if why := s.ver.compatError(r, r.ContentLength != 0); why != "" {
		s.mu.Lock()
		s.stats.CompatRefused++
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, errorBodyCause(http.StatusBadRequest, "media_type_header_exception",
			"Invalid media-type value on headers [Content-Type, Accept]", "status_exception", truncate(why, 1024)))
		return
	}

	segs, ok := pathSegments(r.URL)
	if !ok {
		writeError(w, http.StatusBadRequest, "illegal_argument_exception",
			"invalid percent-encoding in uri ["+truncate(r.URL.EscapedPath(), 512)+"]")
		return
	}
	switch {
	case len(segs) == 0:
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, s.infoBody())
		case http.MethodHead:
			setHeaders(w)
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
		default:
			methodNotAllowed(w, r, "GET, HEAD")
		}
	case len(segs) == 1 && segs[0] == "_license":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, "GET")
			return
		}
		writeJSON(w, http.StatusOK, s.licenseBody())
	case len(segs) == 1 && segs[0] == "_bulk":
		s.bulkRoute(w, r, "")
	case len(segs) == 2 && segs[1] == "_bulk":
		s.bulkRoute(w, r, segs[0])
	case len(segs) == 1 && segs[0] == "_refresh", len(segs) == 2 && segs[1] == "_refresh":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			methodNotAllowed(w, r, "GET, POST")
			return
		}
		s.handleRefresh(w, segs)
	case len(segs) == 1 && segs[0] == "_count", len(segs) == 2 && segs[1] == "_count":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			methodNotAllowed(w, r, "GET, POST")
			return
		}
		s.handleCount(w, segs)
	case len(segs) >= 2 && len(segs) <= 3 && segs[0] == "_cat" && segs[1] == "indices":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, "GET")
			return
		}
		s.handleCatIndices(w, r, segs)
	case len(segs) == 1 && segs[0] == "_search", len(segs) == 2 && segs[1] == "_search":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			methodNotAllowed(w, r, "GET, POST")
			return
		}
		s.handleSearch(w, r, segs)
	case len(segs) == 3 && segs[1] == "_doc" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.handleGetDoc(w, r, segs[0], segs[2])
	default:
		writeError(w, http.StatusNotFound, "resource_not_found_exception",
			"no handler found for uri ["+truncate(r.URL.EscapedPath(), 512)+"] and method ["+r.Method+"]")
	}
}

// pathSegments splits the URL path into unescaped segments, ignoring empty
// ones (so "/" and "//_bulk/" work as Elasticsearch's router allows).
func pathSegments(u *url.URL) ([]string, bool) {
	var segs []string
	for _, raw := range strings.Split(u.EscapedPath(), "/") {
		if raw == "" {
			continue
		}
		seg, err := url.PathUnescape(raw)
		if err != nil {
			return nil, false
		}
		segs = append(segs, seg)
	}
	return segs, true
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allowed string) {
	w.Header().Set("Allow", allowed)
	writeSimpleError(w, http.StatusMethodNotAllowed, "Incorrect HTTP method for uri ["+
		truncate(r.URL.RequestURI(), 512)+"] and method ["+r.Method+"], allowed: ["+allowed+"]")
}

// selectIndices resolves an index expression (comma-separated names,
// wildcards, _all) against the stored indices; a data stream's name, or a
// wildcard matching it, selects its backing index. It reports the first
// concrete name that does not exist. Callers hold s.mu.
func (s *Server) selectIndices(segs []string) ([]*index, string) {
	if len(segs) < 2 || segs[0] == "_all" || segs[0] == "*" {
		out := make([]*index, 0, len(s.indices))
		for _, ix := range s.indices {
			out = append(out, ix)
		}
		return out, ""
	}
	seen := make(map[*index]bool)
	var out []*index
	for _, expr := range strings.Split(segs[0], ",") {
		if strings.Contains(expr, "*") {
			for name, ix := range s.indices {
				if ok, _ := path.Match(expr, name); ok && !seen[ix] {
					seen[ix] = true
					out = append(out, ix)
				}
			}
			for name, ds := range s.dataStreams {
				if ok, _ := path.Match(expr, name); ok && !seen[s.indices[ds.backing]] {
					seen[s.indices[ds.backing]] = true
					out = append(out, s.indices[ds.backing])
				}
			}
			continue
		}
		ix := s.indices[expr]
		if ds := s.dataStreams[expr]; ds != nil {
			ix = s.indices[ds.backing]
		}
		if ix == nil {
			return nil, expr
		}
		if !seen[ix] {
			seen[ix] = true
			out = append(out, ix)
		}
	}
	return out, ""
}

func indexNotFound(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, "index_not_found_exception", "no such index ["+truncate(name, 512)+"]")
}

// handleRefresh answers _refresh; stored documents are always visible.
func (s *Server) handleRefresh(w http.ResponseWriter, segs []string) {
	s.mu.Lock()
	ixs, missing := s.selectIndices(segs)
	s.mu.Unlock()
	if missing != "" {
		indexNotFound(w, missing)
		return
	}
	n := strconv.Itoa(len(ixs))
	writeJSON(w, http.StatusOK, []byte(`{"_shards":{"total":`+n+`,"successful":`+n+`,"failed":0}}`))
}

// handleCount answers _count with the number of stored documents; any
// query is ignored.
func (s *Server) handleCount(w http.ResponseWriter, segs []string) {
	s.mu.Lock()
	ixs, missing := s.selectIndices(segs)
	total := 0
	for _, ix := range ixs {
		total += len(ix.docs)
	}
	s.mu.Unlock()
	if missing != "" {
		indexNotFound(w, missing)
		return
	}
	n := strconv.Itoa(len(ixs))
	writeJSON(w, http.StatusOK, []byte(`{"count":`+strconv.Itoa(total)+
		`,"_shards":{"total":`+n+`,"successful":`+n+`,"skipped":0,"failed":0}}`))
}

// handleGetDoc answers GET /{index}/_doc/{id}.
func (s *Server) handleGetDoc(w http.ResponseWriter, r *http.Request, name, id string) {
	s.mu.Lock()
	ix := s.indices[name]
	var d storedDoc
	found := false
	if ix != nil {
		if p := ix.docs[id]; p != nil {
			d, found = *p, true // source is never mutated in place, sharing it is safe
		}
	}
	s.mu.Unlock()
	if ix == nil {
		indexNotFound(w, name)
		return
	}
	b := appendString([]byte(`{"_index":`), name)
	if s.ver.hasMappingTypes() {
		b = append(b, `,"_type":"_doc"`...)
	}
	b = append(b, `,"_id":`...)
	b = appendString(b, id)
	status := http.StatusNotFound
	if found {
		status = http.StatusOK
		b = append(b, `,"_version":`...)
		b = strconv.AppendInt(b, d.version, 10)
		b = append(b, `,"_seq_no":`...)
		b = strconv.AppendInt(b, d.seqNo, 10)
		b = append(b, `,"_primary_term":1,"found":true,"_source":`...)
		b = append(b, d.source...)
		b = append(b, '}')
	} else {
		b = append(b, `,"found":false}`...)
	}
	if r.Method == http.MethodHead {
		setHeaders(w)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, b)
}

// bulkParams are the query parameters the bulk endpoint accepts, as in
// Elasticsearch 8 (plus the global ones every endpoint accepts).
var bulkParams = map[string]bool{
	"pipeline": true, "refresh": true, "routing": true, "timeout": true, "wait_for_active_shards": true,
	"_source": true, "_source_includes": true, "_source_excludes": true, "require_alias": true,
	"require_data_stream": true, "list_executed_pipelines": true, "include_source_on_error": true,
	"filter_path": true, "pretty": true, "human": true, "error_trace": true,
}

// supportedContentType reports whether Elasticsearch accepts ct for a bulk
// body: NDJSON or JSON, plain or in the vendor "compatible-with" form.
func supportedContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/x-ndjson", "application/json",
		"application/vnd.elasticsearch+x-ndjson", "application/vnd.elasticsearch+json":
		return true
	}
	return false
}

// bulkRoute checks the method and then serves a bulk request, counting it.
func (s *Server) bulkRoute(w http.ResponseWriter, r *http.Request, pathIndex string) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		methodNotAllowed(w, r, "POST, PUT")
		return
	}
	s.mu.Lock()
	s.stats.BulkRequests++
	s.mu.Unlock()
	s.handleBulk(w, r, pathIndex)
}

// requestError answers a bulk request as a whole with a 4xx and counts it.
func (s *Server) requestError(w http.ResponseWriter, status int, errType, reason string) {
	s.mu.Lock()
	s.stats.RequestErrors++
	if status == http.StatusRequestEntityTooLarge {
		s.stats.TooLarge413++
	}
	s.mu.Unlock()
	writeError(w, status, errType, reason)
}

// countingReader counts the bytes read from the wire and remembers the
// wire's error, to tell a client that went away from a corrupt encoding.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// errTooLarge marks a body over the limit.
var errTooLarge = errors.New("estest: request body too large")

// readLimited reads r to EOF into a buffer that never grows beyond
// limit+1 bytes; a longer stream yields errTooLarge. sizeHint, if positive,
// sizes the first allocation.
func readLimited(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	capacity := int64(64 << 10)
	if sizeHint > 0 {
		capacity = sizeHint + 1 // +1 so EOF is seen without growing
	}
	capacity = min(capacity, limit+1)
	buf := make([]byte, 0, capacity)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, errTooLarge
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, errTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// statusGone is readBody's status when the client went away mid-body and
// no answer is possible.
const statusGone = -1

// readBody reads and decodes a request body within s.maxContent. On
// failure it returns the status to answer (413 with no error type, 400 for
// a corrupt encoding) or statusGone.
func (s *Server) readBody(r *http.Request) (body []byte, status int, errType, reason string) {
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	cr := &countingReader{r: r.Body}
	var src io.Reader = cr
	var hint int64
	compressed := false
	defer func() {
		s.mu.Lock()
		s.stats.BytesReceived += cr.n
		s.stats.BytesDecoded += int64(len(body))
		if compressed {
			s.stats.GzipRequests++
		}
		if r.ContentLength < 0 {
			s.stats.ChunkedRequests++
		}
		s.mu.Unlock()
	}()
	switch enc {
	case "gzip", "x-gzip", "deflate":
		compressed = true
		var zr io.ReadCloser
		var err error
		if enc == "deflate" {
			zr, err = zlib.NewReader(cr)
		} else {
			zr, err = gzip.NewReader(cr)
		}
		if err == io.EOF {
			return nil, 0, "", "" // empty body: the caller answers "request body is required"
		}
		if err != nil {
			if cr.err != nil {
				return nil, statusGone, "", ""
			}
			return nil, http.StatusBadRequest, "parse_exception", "failed to decode " + enc + " request body: " + err.Error()
		}
		defer zr.Close()
		src = zr
	default:
		// identity; Elasticsearch (Netty) passes unknown encodings through
		// undecoded too, so they fail to parse later.
		if r.ContentLength > s.maxContent {
			return nil, http.StatusRequestEntityTooLarge, "", ""
		}
		hint = r.ContentLength
	}
	b, err := readLimited(src, s.maxContent, hint)
	switch {
	case err == nil:
		return b, 0, "", ""
	case errors.Is(err, errTooLarge):
		return nil, http.StatusRequestEntityTooLarge, "", ""
	case cr.err != nil:
		return nil, statusGone, "", "" // the wire failed: nobody to answer
	default:
		return nil, http.StatusBadRequest, "parse_exception", "failed to decode " + enc + " request body: " + err.Error()
	}
}

// sortedKeys is used for stable error messages.
func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

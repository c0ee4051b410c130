package estest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The read endpoints that show what the server holds, beyond _count:
// GET _cat/indices (text or JSON) and a simple _search (match_all, size,
// from, sort by _id or _index). They answer in Elasticsearch's shapes so
// that curl habits and scripts written for a cluster work here; what they
// do not support they refuse with a 400 naming it, never by ignoring it.

// catIndexColumn is one column of _cat/indices, in Elasticsearch 8's
// default order.
type catIndexColumn struct {
	name  string
	right bool // numbers and sizes are right-aligned in the text form
}

var catIndexColumns = []catIndexColumn{
	{"health", false}, {"status", false}, {"index", false}, {"uuid", false},
	{"pri", true}, {"rep", true}, {"docs.count", true}, {"docs.deleted", true},
	{"store.size", true}, {"pri.store.size", true}, {"dataset.size", true},
}

// catParams are the query parameters _cat/indices accepts here.
var catParams = map[string]bool{"format": true, "v": true, "h": true, "bytes": true, "pretty": true}

// handleCatIndices answers GET /_cat/indices[/{expr}]: one row per index,
// sorted by name. An index here is one green, open primary shard without
// replicas; its sizes are the bytes of the stored sources, and a deleted
// document is gone at once (docs.deleted is always 0).
func (s *Server) handleCatIndices(w http.ResponseWriter, r *http.Request, segs []string) {
	q, ok := parseParams(w, r, catParams)
	if !ok {
		return
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "text" && format != "txt" {
		writeError(w, http.StatusBadRequest, "illegal_argument_exception",
			"estest: _cat format ["+truncate(format, 64)+"] is not supported (json or text)")
		return
	}
	unit := q.Get("bytes")
	if _, ok := byteUnits[unit]; !ok && unit != "" {
		writeError(w, http.StatusBadRequest, "illegal_argument_exception",
			"failed to parse setting [bytes] with value ["+truncate(unit, 64)+"] as a size in bytes")
		return
	}
	cols := catIndexColumns
	if h := q.Get("h"); h != "" {
		cols = nil
		for _, name := range strings.Split(h, ",") {
			i := slices.IndexFunc(catIndexColumns, func(c catIndexColumn) bool { return c.name == name })
			if i < 0 {
				writeError(w, http.StatusBadRequest, "illegal_argument_exception",
					"estest: _cat/indices has no column ["+truncate(name, 64)+"] (columns: health, status, index, uuid, pri, rep, docs.count, docs.deleted, store.size, pri.store.size, dataset.size)")
				return
			}
			cols = append(cols, catIndexColumns[i])
		}
	}
	// segs is ["_cat", "indices"] or ["_cat", "indices", expr];
	// selectIndices wants the expression first.
	expr := []string{"_all"}
	if len(segs) == 3 {
		expr = []string{segs[2], "_cat"}
	}
	s.mu.Lock()
	ixs, missing := s.selectIndices(expr)
	rows := make([]map[string]string, 0, len(ixs))
	for name, ix := range s.selected(ixs) {
		var size int64
		for _, d := range ix.docs {
			size += int64(len(d.source))
		}
		sz := formatBytes(size, unit)
		rows = append(rows, map[string]string{
			"health": "green", "status": "open", "index": name, "uuid": ix.uuid,
			"pri": "1", "rep": "0", "docs.count": strconv.Itoa(len(ix.docs)), "docs.deleted": "0",
			"store.size": sz, "pri.store.size": sz, "dataset.size": sz,
		})
	}
	s.mu.Unlock()
	if missing != "" {
		indexNotFound(w, missing)
		return
	}
	slices.SortFunc(rows, func(a, b map[string]string) int { return strings.Compare(a["index"], b["index"]) })

	if format == "json" {
		b := []byte{'['}
		for i, row := range rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			for j, c := range cols {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, c.name)
				b = append(b, ':')
				b = appendString(b, row[c.name])
			}
			b = append(b, '}')
		}
		b = append(b, ']')
		writeJSON(w, http.StatusOK, maybePretty(q, b))
		return
	}
	verbose := q.Has("v") && q.Get("v") != "false"
	width := make([]int, len(cols))
	for i, c := range cols {
		if verbose {
			width[i] = utf8.RuneCountInString(c.name)
		}
		for _, row := range rows {
			width[i] = max(width[i], utf8.RuneCountInString(row[c.name]))
		}
	}
	var b bytes.Buffer
	line := func(cell func(int) string) {
		for i, c := range cols {
			v := cell(i)
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(v))
			last := i == len(cols)-1
			switch {
			case c.right:
				b.WriteString(pad + v)
			case last:
				b.WriteString(v)
			default:
				b.WriteString(v + pad)
			}
			if !last {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	if verbose {
		line(func(i int) string { return cols[i].name })
	}
	for _, row := range rows {
		line(func(i int) string { return row[cols[i].name] })
	}
	setHeaders(w)
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// byteUnits are the units of _cat's bytes parameter.
var byteUnits = map[string]int64{"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}

// formatBytes formats a size as _cat does: in unit (whole units, rounded
// down) when given, else in the largest unit it reaches, with one decimal
// that is cut, not rounded, and left out when it is 0 ("5.4kb", "88kb",
// "208b").
func formatBytes(n int64, unit string) string {
	if unit != "" {
		return strconv.FormatInt(n/byteUnits[unit], 10)
	}
	for _, u := range []string{"pb", "tb", "gb", "mb", "kb"} {
		if d := byteUnits[u]; n >= d {
			tenths := n * 10 / d
			if tenths%10 == 0 {
				return strconv.FormatInt(tenths/10, 10) + u
			}
			return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10) + u
		}
	}
	return strconv.FormatInt(n, 10) + "b"
}

// searchParams are the query parameters _search accepts here.
var searchParams = map[string]bool{"size": true, "from": true, "sort": true, "pretty": true}

// maxResultWindow is Elasticsearch's index.max_result_window default: from
// + size may not exceed it.
const maxResultWindow = 10000

// trackTotalHits is Elasticsearch's default track_total_hits: totals above
// it are reported as that many, with relation "gte".
const trackTotalHits = 10000

// searchBodyLimit bounds a _search body: a few sort keys and a match_all.
const searchBodyLimit = 64 << 10

// sortKey is one sort criterion: a field (_id or _index) and a direction.
type sortKey struct {
	field string
	desc  bool
}

// searchRequest is what a _search asks for.
type searchRequest struct {
	size, from int
	sort       []sortKey
}

// handleSearch answers GET or POST /_search and /{expr}/_search: every
// document of the selected indices matches (match_all), sorted by the sort
// keys (_id, _index; asc or desc), else by index and id with a _score of
// 1.0; from and size page through them (size 10 by default). Parameters
// in the URL win over the body's, as in Elasticsearch.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, segs []string) {
	start := time.Now()
	q, ok := parseParams(w, r, searchParams)
	if !ok {
		return
	}
	req := searchRequest{size: 10}
	if !s.searchBody(w, r, &req) {
		return
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"size", &req.size}, {"from", &req.from}} {
		if !q.Has(p.name) {
			continue
		}
		n, err := strconv.Atoi(q.Get(p.name))
		if err != nil {
			writeError(w, http.StatusBadRequest, "illegal_argument_exception",
				"Failed to parse int parameter ["+p.name+"] with value ["+truncate(q.Get(p.name), 64)+"]")
			return
		}
		*p.dst = n
	}
	if q.Has("sort") {
		req.sort = nil
		for _, spec := range strings.Split(q.Get("sort"), ",") {
			field, dir, _ := strings.Cut(spec, ":")
			k, ok := newSortKey(w, field, dir)
			if !ok {
				return
			}
			req.sort = append(req.sort, k)
		}
	}
	switch {
	case req.size < 0:
		writeError(w, http.StatusBadRequest, "illegal_argument_exception", "[size] parameter cannot be negative, found ["+strconv.Itoa(req.size)+"]")
		return
	case req.from < 0:
		writeError(w, http.StatusBadRequest, "illegal_argument_exception", "[from] parameter cannot be negative, found ["+strconv.Itoa(req.from)+"]")
		return
	case req.from+req.size > maxResultWindow:
		writeError(w, http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf(
			"Result window is too large, from + size must be less than or equal to: [%d] but was [%d].", maxResultWindow, req.from+req.size))
		return
	}

	type hit struct {
		index, id string
		source    []byte
	}
	s.mu.Lock()
	ixs, missing := s.selectIndices(segs) // ["_search"] or [expr, "_search"]
	var hits []hit
	for name, ix := range s.selected(ixs) {
		for id, d := range ix.docs {
			hits = append(hits, hit{name, id, d.source}) // sources are never changed in place: sharing them is safe
		}
	}
	s.mu.Unlock()
	if missing != "" {
		indexNotFound(w, missing)
		return
	}
	keys := req.sort
	if len(keys) == 0 {
		keys = []sortKey{{field: "_index"}, {field: "_id"}}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		for _, k := range keys {
			c := strings.Compare(a.id, b.id)
			if k.field == "_index" {
				c = strings.Compare(a.index, b.index)
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	total, relation := len(hits), "eq"
	if total > trackTotalHits {
		total, relation = trackTotalHits, "gte"
	}
	page := hits[min(req.from, len(hits)):min(req.from+req.size, len(hits))]

	n := strconv.Itoa(len(ixs))
	b := []byte(`{"took":`)
	b = strconv.AppendInt(b, time.Since(start).Milliseconds(), 10)
	b = append(b, `,"timed_out":false,"_shards":{"total":`+n+`,"successful":`+n+`,"skipped":0,"failed":0},"hits":{"total":{"value":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, `,"relation":"`+relation+`"},"max_score":`...)
	switch {
	case len(req.sort) > 0 || len(hits) == 0:
		b = append(b, "null"...)
	default:
		b = append(b, "1.0"...)
	}
	b = append(b, `,"hits":[`...)
	for i, h := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"_index":`...)
		b = appendString(b, h.index)
		if s.ver.hasMappingTypes() {
			b = append(b, `,"_type":"_doc"`...)
		}
		b = append(b, `,"_id":`...)
		b = appendString(b, h.id)
		if len(req.sort) > 0 {
			b = append(b, `,"_score":null`...)
		} else {
			b = append(b, `,"_score":1.0`...)
		}
		b = append(b, `,"_source":`...)
		b = append(b, h.source...)
		if len(req.sort) > 0 {
			b = append(b, `,"sort":[`...)
			for j, k := range req.sort {
				if j > 0 {
					b = append(b, ',')
				}
				if k.field == "_index" {
					b = appendString(b, h.index)
				} else {
					b = appendString(b, h.id)
				}
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, "]}}"...)
	writeJSON(w, http.StatusOK, maybePretty(q, b))
}

// searchBody reads a _search body into req: size, from, sort and a
// match_all query; anything else is answered 400. An empty body asks for
// the defaults. It returns false when it answered.
func (s *Server) searchBody(w http.ResponseWriter, r *http.Request, req *searchRequest) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, searchBodyLimit+1))
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "parse_exception", "estest: reading the request body: "+err.Error())
		return false
	case len(body) > searchBodyLimit:
		writeError(w, http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("estest: a _search body is at most %d bytes", searchBodyLimit))
		return false
	case len(bytes.TrimSpace(body)) == 0:
		return true
	}
	if ct := r.Header.Get("Content-Type"); !supportedContentType(ct) {
		writeSimpleError(w, http.StatusNotAcceptable, "Content-Type header ["+truncate(ct, 256)+"] is not supported")
		return false
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		writeError(w, http.StatusBadRequest, "parse_exception", "failed to parse the request body: "+err.Error())
		return false
	}
	for _, key := range sortedRawKeys(doc) {
		raw := doc[key]
		switch key {
		case "size", "from":
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				writeError(w, http.StatusBadRequest, "parsing_exception", "["+key+"] must be an integer, found ["+truncate(string(raw), 64)+"]")
				return false
			}
			if key == "size" {
				req.size = n
			} else {
				req.from = n
			}
		case "sort":
			keys, ok := parseSortBody(w, raw)
			if !ok {
				return false
			}
			req.sort = keys
		case "query":
			var query map[string]json.RawMessage
			if err := json.Unmarshal(raw, &query); err != nil || len(query) != 1 || query["match_all"] == nil {
				writeError(w, http.StatusBadRequest, "illegal_argument_exception",
					"estest: _search supports only the query {\"match_all\":{}}, got "+truncate(string(raw), 256))
				return false
			}
		default:
			writeError(w, http.StatusBadRequest, "illegal_argument_exception",
				"estest: _search supports only size, from, sort (_id, _index) and a match_all query, not ["+truncate(key, 64)+"]")
			return false
		}
	}
	return true
}

// parseSortBody reads a body's sort: a key or a list of keys, each a field
// name ("_id"), {"_id":"desc"} or {"_id":{"order":"desc"}}.
func parseSortBody(w http.ResponseWriter, raw json.RawMessage) ([]sortKey, bool) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		list = []json.RawMessage{raw}
	}
	var keys []sortKey
	for _, item := range list {
		var field string
		if json.Unmarshal(item, &field) == nil {
			k, ok := newSortKey(w, field, "")
			if !ok {
				return nil, false
			}
			keys = append(keys, k)
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || len(obj) != 1 {
			writeError(w, http.StatusBadRequest, "parsing_exception", "estest: a sort key is a field name or {\"FIELD\":\"asc\"|\"desc\"}, got "+truncate(string(item), 256))
			return nil, false
		}
		for field, v := range obj {
			var dir string
			if json.Unmarshal(v, &dir) != nil {
				var opts struct {
					Order string `json:"order"`
				}
				if err := json.Unmarshal(v, &opts); err != nil || opts.Order == "" {
					writeError(w, http.StatusBadRequest, "parsing_exception", "estest: the sort of ["+truncate(field, 64)+"] takes \"asc\", \"desc\" or {\"order\":...}, got "+truncate(string(v), 256))
					return nil, false
				}
				dir = opts.Order
			}
			k, ok := newSortKey(w, field, dir)
			if !ok {
				return nil, false
			}
			keys = append(keys, k)
		}
	}
	return keys, true
}

// newSortKey checks a sort field and direction ("" is asc).
func newSortKey(w http.ResponseWriter, field, dir string) (sortKey, bool) {
	if field != "_id" && field != "_index" {
		writeError(w, http.StatusBadRequest, "illegal_argument_exception",
			"estest: _search sorts only by _id or _index, not ["+truncate(field, 64)+"]")
		return sortKey{}, false
	}
	switch dir {
	case "", "asc":
		return sortKey{field: field}, true
	case "desc":
		return sortKey{field: field, desc: true}, true
	}
	writeError(w, http.StatusBadRequest, "illegal_argument_exception",
		"Unknown SortOrder ["+truncate(dir, 64)+"]; use asc or desc")
	return sortKey{}, false
}

// selected yields the name and index of each index in ixs. Callers hold
// s.mu.
func (s *Server) selected(ixs []*index) iter.Seq2[string, *index] {
	return func(yield func(string, *index) bool) {
		for name, ix := range s.indices {
			if slices.Contains(ixs, ix) && !yield(name, ix) {
				return
			}
		}
	}
}

// parseParams parses the query string and refuses a parameter not in
// allowed, as Elasticsearch does; ok is false when it answered.
func parseParams(w http.ResponseWriter, r *http.Request, allowed map[string]bool) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "illegal_argument_exception", "invalid query string: "+err.Error())
		return nil, false
	}
	for _, k := range sortedKeys(q) {
		if !allowed[k] {
			writeError(w, http.StatusBadRequest, "illegal_argument_exception",
				"request ["+truncate(r.URL.Path, 512)+"] contains unrecognized parameter: ["+truncate(k, 256)+"]")
			return nil, false
		}
	}
	return q, true
}

// maybePretty indents a JSON answer when ?pretty asks for it.
func maybePretty(q url.Values, b []byte) []byte {
	if !q.Has("pretty") || q.Get("pretty") == "false" {
		return b
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return b
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

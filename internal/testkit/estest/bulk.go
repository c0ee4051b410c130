package estest

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// bulkItem is one parsed action of a bulk request.
type bulkItem struct {
	action   string // "create", "index", "delete" or "update" (index with op_type create becomes create)
	index    string
	id       string
	hasID    bool
	routing  string
	pipeline string
	source   []byte // the source line, sliced from the request body; nil for delete
	line     int    // 1-based line number of the action
	// ifSeqNo is set when the item carries if_seq_no or if_primary_term:
	// Elasticsearch lets such an index op write to a backing index.
	ifSeqNo bool
}

// itemResult is the answer to one item.
type itemResult struct {
	key     string // the key of the item in the response: the action, or "index" for create under AnswerCreateAsIndex
	index   string
	id      string
	idNull  bool
	status  int
	result  string // success: "created", "updated", "deleted", "not_found"
	version int64
	seqNo   int64
	// failure
	errType   string
	reason    string
	indexUUID string // with shard and index in the error object when non-empty
	causeType string // caused_by in the error object when non-empty
	cause     string
	// docType adds "_type":"_doc", as 7.x nodes answer.
	docType bool
	// dsRefused marks an item refused by a data stream rule.
	dsRefused bool
}

// handleBulk serves a bulk request after the method check. The order of
// work is: Content-Type and query checks, body read (413), RequestHook,
// Latency, parsing (whole-request 400s), Drop, Request503, then each item.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request, pathIndex string) {
	start := time.Now()
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		s.requestError(w, http.StatusBadRequest, "parse_exception", "request body is required")
		return
	}
	if !supportedContentType(ct) {
		s.mu.Lock()
		s.stats.RequestErrors++
		s.mu.Unlock()
		writeSimpleError(w, http.StatusNotAcceptable, "Content-Type header ["+truncate(ct, 256)+"] is not supported")
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.requestError(w, http.StatusBadRequest, "illegal_argument_exception", "invalid query string: "+err.Error())
		return
	}
	for _, k := range sortedKeys(q) {
		if !bulkParams[k] {
			s.requestError(w, http.StatusBadRequest, "illegal_argument_exception",
				"request ["+truncate(r.URL.Path, 512)+"] contains unrecognized parameter: ["+truncate(k, 256)+"]")
			return
		}
	}
	switch q.Get("refresh") {
	case "", "true", "false", "wait_for":
	default:
		s.requestError(w, http.StatusBadRequest, "illegal_argument_exception",
			"Unknown value for refresh: ["+truncate(q.Get("refresh"), 256)+"].")
		return
	}
	defaultPipeline := q.Get("pipeline")
	defaultRouting := q.Get("routing")

	body, status, errType, reason := s.readBody(r)
	switch {
	case status == http.StatusRequestEntityTooLarge:
		// Elasticsearch answers an over-long body from its HTTP layer with
		// an empty 413.
		s.mu.Lock()
		s.stats.RequestErrors++
		s.stats.TooLarge413++
		s.mu.Unlock()
		writeJSON(w, http.StatusRequestEntityTooLarge, nil)
		return
	case status == statusGone:
		abort(w)
		return
	case status != 0:
		s.requestError(w, status, errType, reason)
		return
	case len(body) == 0:
		s.requestError(w, http.StatusBadRequest, "parse_exception", "request body is required")
		return
	}

	f := s.faultsSnapshot()
	if f.RequestHook != nil {
		if st, typ, why, ok := f.RequestHook(body); ok {
			st = validStatus(st)
			s.mu.Lock()
			if st == http.StatusServiceUnavailable {
				s.stats.Failed503Requests++
			} else {
				s.stats.RequestErrors++
			}
			s.mu.Unlock()
			writeError(w, st, typ, why)
			return
		}
	}
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			abort(w) // paused, closed, or the client left: no answer, nothing stored
			return
		}
	}
	if r.Context().Err() != nil {
		abort(w)
		return
	}

	items, perr := parseBulk(body, pathIndex, defaultPipeline, defaultRouting)
	if perr != nil {
		s.requestError(w, http.StatusBadRequest, perr.errType, perr.reason)
		return
	}

	if s.chance(f.Drop) {
		s.drop(w)
		return
	}
	if s.chance(f.Request503) {
		s.mu.Lock()
		s.stats.Failed503Requests++
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "cluster_block_exception",
			"blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];")
		return
	}

	results := make([]itemResult, len(items))
	anyError := false
	for i := range items {
		results[i] = s.execute(&items[i], f)
		if results[i].errType != "" {
			anyError = true
		}
	}
	s.countItems(results)

	b := make([]byte, 0, 64+200*len(results))
	b = appendBulkResponse(b, parseFilterPath(q.Get("filter_path")), time.Since(start).Milliseconds(), anyError, results)
	writeJSON(w, http.StatusOK, b)
}

// drop closes the connection without answering (the Drop fault).
func (s *Server) drop(w http.ResponseWriter) {
	s.mu.Lock()
	s.stats.Dropped++
	s.mu.Unlock()
	if !abort(w) {
		// Not reachable over HTTP/1.1, which is all this server speaks.
		// Without a hijackable connection the closest thing is a 503.
		writeError(w, http.StatusServiceUnavailable, "estest_drop", "estest: could not drop the connection")
	}
}

// abort closes the request's connection so that nothing is answered:
// returning from a handler without writing would send an empty 200.
func abort(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// countItems adds a request's item outcomes to the counters.
func (s *Server) countItems(results []itemResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.stats
	st.Items += int64(len(results))
	for i := range results {
		r := &results[i]
		st.ItemsByStatus[r.status]++
		switch r.status {
		case http.StatusCreated:
			st.Created++
		case http.StatusConflict:
			st.Conflicts409++
		case http.StatusTooManyRequests:
			st.Rejected429++
		}
		if r.dsRefused {
			st.DataStreamRefused++
		}
		switch r.result {
		case "updated":
			st.Updated++
		case "deleted":
			st.Deleted++
		}
	}
}

// parseError fails a whole bulk request with 400.
type parseError struct {
	errType string
	reason  string
}

func illegalArgument(reason string) *parseError {
	return &parseError{errType: "illegal_argument_exception", reason: reason}
}

// parseBulk splits an NDJSON bulk body into items and validates them as a
// whole the way Elasticsearch's BulkRequest does: any malformed line or
// failed request-level validation fails the whole request.
func parseBulk(body []byte, pathIndex, defaultPipeline, defaultRouting string) ([]bulkItem, *parseError) {
	var items []bulkItem
	pos, line := 0, 0
	nextLine := func() ([]byte, bool) {
		nl := bytes.IndexByte(body[pos:], '\n')
		if nl < 0 {
			return nil, false
		}
		l := body[pos : pos+nl]
		pos += nl + 1
		line++
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		return l, true
	}
	const unterminated = "The bulk request must be terminated by a newline [\\n]"
	for pos < len(body) {
		raw, ok := nextLine()
		if !ok {
			return nil, illegalArgument(unterminated)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue // Elasticsearch skips empty action lines
		}
		it, perr := parseAction(raw, line, pathIndex, defaultPipeline, defaultRouting)
		if perr != nil {
			return nil, perr
		}
		if it.action != "delete" {
			if pos >= len(body) {
				return nil, illegalArgument("Malformed action/metadata line [" + strconv.Itoa(it.line) +
					"], action [" + it.action + "] has no source line")
			}
			src, ok := nextLine()
			if !ok {
				return nil, illegalArgument(unterminated)
			}
			it.source = src
		}
		items = append(items, it)
	}
	// Request-level validation (BulkRequest.validate): every problem is
	// listed, and any fails the whole request.
	var errs []string
	if len(items) == 0 {
		errs = append(errs, "no requests added")
	}
	for i := range items {
		it := &items[i]
		if it.index == "" {
			errs = append(errs, "index is missing")
		}
		switch {
		case it.id == "" && (it.action == "delete" || it.action == "update"):
			errs = append(errs, "id is missing")
		case it.hasID && it.id == "":
			errs = append(errs, "if _id is specified it must not be empty")
		case len(it.id) > 512:
			errs = append(errs, "id ["+truncate(it.id, 64)+"] is too long, must be no longer than 512 bytes but was: "+
				strconv.Itoa(len(it.id)))
		}
	}
	if len(errs) > 0 {
		var sb strings.Builder
		sb.WriteString("Validation Failed: ")
		for i, e := range errs {
			if i == 50 {
				sb.WriteString("...;")
				break
			}
			sb.WriteString(strconv.Itoa(i + 1))
			sb.WriteString(": ")
			sb.WriteString(e)
			sb.WriteString(";")
		}
		return nil, &parseError{errType: "action_request_validation_exception", reason: sb.String()}
	}
	return items, nil
}

// parseAction parses one action/metadata line.
func parseAction(raw []byte, line int, pathIndex, defaultPipeline, defaultRouting string) (bulkItem, *parseError) {
	it := bulkItem{index: pathIndex, pipeline: defaultPipeline, routing: defaultRouting, line: line}
	ln := strconv.Itoa(line)
	if msg := nestingError(raw); msg != "" {
		return it, &parseError{errType: "x_content_parse_exception", reason: "[" + ln + ":1] " + msg}
	}
	if !gjson.ValidBytes(raw) {
		return it, &parseError{errType: "x_content_parse_exception",
			reason: "[" + ln + ":1] Unexpected character in action/metadata line [" + ln + "]: " + truncate(string(raw), 128)}
	}
	v := gjson.ParseBytes(raw)
	if !v.IsObject() {
		return it, illegalArgument("Malformed action/metadata line [" + ln + "], expected START_OBJECT but found [" + tokenName(v) + "]")
	}
	var actionKey, params gjson.Result
	found := false
	v.ForEach(func(k, val gjson.Result) bool {
		actionKey, params, found = k, val, true
		return false
	})
	if !found {
		return it, illegalArgument("Malformed action/metadata line [" + ln + "], expected FIELD_NAME but found [END_OBJECT]")
	}
	it.action = actionKey.String()
	switch it.action {
	case "create", "index", "delete", "update":
	default:
		return it, illegalArgument("Malformed action/metadata line [" + ln +
			"], expected field [create], [delete], [index] or [update] but found [" + truncate(it.action, 128) + "]")
	}
	if !params.IsObject() {
		return it, illegalArgument("Malformed action/metadata line [" + ln + "], expected START_OBJECT or END_OBJECT but found [" +
			tokenName(params) + "]")
	}
	var perr *parseError
	params.ForEach(func(k, val gjson.Result) bool {
		name := k.String()
		switch {
		case val.IsArray():
			perr = illegalArgument("Malformed action/metadata line [" + ln + "], expected a simple value for field [" +
				truncate(name, 128) + "] but found [START_ARRAY]")
			return false
		case val.IsObject():
			if name == "_source" || name == "dynamic_templates" {
				return true
			}
			perr = illegalArgument("Malformed action/metadata line [" + ln + "], expected a simple value for field [" +
				truncate(name, 128) + "] but found [START_OBJECT]")
			return false
		case val.Type == gjson.Null:
			return true // Elasticsearch ignores null metadata
		}
		text := val.Raw
		if val.Type == gjson.String {
			text = val.Str
		}
		switch name {
		case "_index":
			it.index = text
		case "_id":
			it.id, it.hasID = text, true
		case "routing":
			it.routing = text
		case "pipeline":
			it.pipeline = text
		case "op_type":
			switch text {
			case "create":
				if it.action == "index" {
					it.action = "create"
				}
			case "index":
			default:
				perr = illegalArgument("opType must be 'create' or 'index', found: [" + truncate(text, 128) + "]")
				return false
			}
		case "if_seq_no", "if_primary_term":
			it.ifSeqNo = true // otherwise ignored: the test server does no concurrency control
		case "version", "version_type", "retry_on_conflict",
			"require_alias", "require_data_stream", "list_executed_pipelines", "_source", "dynamic_templates":
			// accepted and ignored: the test server does no concurrency control
		default:
			perr = illegalArgument("Action/metadata line [" + ln + "] contains an unknown parameter [" + truncate(name, 128) + "]")
			return false
		}
		return true
	})
	if perr != nil {
		return it, perr
	}
	return it, nil
}

// execute answers one item, storing it if nothing fails.
func (s *Server) execute(it *bulkItem, f Faults) itemResult {
	res := itemResult{key: it.action, index: it.index, id: it.id, docType: s.ver.hasMappingTypes()}
	if it.action == "create" && f.AnswerCreateAsIndex {
		res.key = "index"
	}
	// refuse fails the item before any id is generated, as Elasticsearch's
	// coordinating node does (so "_id" is null when the item had none).
	refuse := func(errType, reason string) itemResult {
		res.idNull = !it.hasID
		res.status = http.StatusBadRequest
		res.errType = errType
		res.reason = reason
		return res
	}
	// target is the index the item is stored in: the backing index for a
	// data stream item.
	target := it.index
	s.mu.Lock()
	isStream := s.isDataStreamName(it.index)
	stream := s.dataStreams[it.index]
	backingOf := ""
	if ix := s.indices[it.index]; ix != nil {
		backingOf = ix.dataStream
	}
	s.mu.Unlock()
	switch {
	case isStream && (stream != nil || it.action != "delete"):
		// A delete of a stream that does not exist yet is answered 404
		// below, as Elasticsearch does not create one for it.
		if reason := dataStreamNameError(it.index); reason != "" {
			res.dsRefused = true
			return refuse("illegal_argument_exception", "data_stream ["+truncate(it.index, 512)+"] "+reason)
		}
		if it.action != "create" {
			res.dsRefused = true
			return refuse("illegal_argument_exception", "only write ops with an op_type of create are allowed in data streams")
		}
		if stream != nil {
			target = stream.backing
		} else {
			target = s.backingIndexName(it.index, time.Now())
		}
		res.index = target
	case indexNameError(it.index) != "":
		res.indexUUID = "_na_"
		return refuse("invalid_index_name_exception", "Invalid index name ["+truncate(it.index, 512)+"], "+indexNameError(it.index))
	case backingOf != "" && it.action == "create":
		res.dsRefused = true
		return refuse("illegal_argument_exception", "index request with op_type=create targeting backing indices is disallowed, "+
			"target corresponding data stream ["+backingOf+"] instead")
	case backingOf != "" && it.action == "index" && !it.ifSeqNo:
		res.dsRefused = true
		return refuse("illegal_argument_exception", "index request with op_type=index and no if_primary_term and if_seq_no set "+
			"targeting backing indices is disallowed, target corresponding data stream ["+backingOf+"] instead")
	}
	if it.action == "update" {
		res.status = http.StatusBadRequest
		res.errType = "illegal_argument_exception"
		res.reason = "estest: the update action is not supported by the test server"
		return res
	}
	if !it.hasID && it.action != "delete" {
		it.id = s.newID()
		res.id = it.id
	}
	if s.chance(f.ItemReject429) || !s.take(f.AcceptRate) {
		res.status = http.StatusTooManyRequests
		res.errType = "es_rejected_execution_exception"
		res.reason = "rejected execution of primary operation [shard_detail=[" + truncate(target, 512) +
			"][0][P], shard_primary_operation_bytes=" + strconv.Itoa(len(it.source)) + "] (estest fault injection)"
		return res
	}
	if it.action != "delete" {
		if reason := sourceError(it.source); reason != "" {
			res.status = http.StatusBadRequest
			res.errType = "document_parsing_exception"
			res.reason = reason
			res.indexUUID = s.indexUUID(target)
			return res
		}
	}
	if isStream && it.action == "create" {
		if typ, why, cause := s.timestampError(it.source, it.id); typ != "" {
			res.status = http.StatusBadRequest
			res.errType, res.reason = typ, why
			if cause != "" {
				res.causeType, res.cause = "illegal_argument_exception", cause
			}
			res.dsRefused = true
			return res
		}
	}
	if f.ItemHook != nil {
		if st, typ, why, ok := f.ItemHook(it.action, it.index, it.id, it.source); ok {
			res.status = validStatus(st)
			res.errType = typ
			res.reason = why
			return res
		}
	}
	pipeline := it.pipeline
	if pipeline == "_none" {
		pipeline = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if isStream && it.action == "create" {
		// The stream may have been created since the check above, by
		// another request: its backing index wins.
		if ds := s.dataStreams[it.index]; ds != nil {
			target = ds.backing
		} else {
			s.dataStreams[it.index] = &dataStream{backing: target}
			s.indices[target] = &index{uuid: randomUUID(), dataStream: it.index, docs: make(map[string]*storedDoc)}
		}
		res.index = target
	}
	ix := s.indices[target]
	if it.action == "delete" {
		if ix == nil {
			res.status = http.StatusNotFound
			res.errType = "index_not_found_exception"
			res.reason = "no such index [" + truncate(it.index, 512) + "]"
			res.indexUUID = "_na_"
			return res
		}
		res.seqNo = ix.seqNo
		ix.seqNo++
		d := ix.docs[it.id]
		if d == nil {
			res.status, res.result, res.version = http.StatusNotFound, "not_found", 1
			return res
		}
		delete(ix.docs, it.id)
		s.count--
		res.status, res.result, res.version = http.StatusOK, "deleted", d.version+1
		return res
	}
	if ix == nil {
		ix = &index{uuid: randomUUID(), docs: make(map[string]*storedDoc)}
		s.indices[target] = ix
	}
	if d := ix.docs[it.id]; d != nil {
		if it.action == "create" {
			res.status = http.StatusConflict
			res.errType = "version_conflict_engine_exception"
			res.reason = "[" + truncate(it.id, 512) + "]: version conflict, document already exists (current version [" +
				strconv.FormatInt(d.version, 10) + "])"
			res.indexUUID = ix.uuid
			return res
		}
		d.version++
		d.seqNo = ix.seqNo
		ix.seqNo++
		d.source = bytes.Clone(it.source)
		d.pipeline, d.routing = pipeline, it.routing
		res.status, res.result, res.version, res.seqNo = http.StatusOK, "updated", d.version, d.seqNo
		return res
	}
	d := &storedDoc{source: bytes.Clone(it.source), version: 1, seqNo: ix.seqNo, pipeline: pipeline, routing: it.routing}
	if d.source == nil {
		d.source = []byte{}
	}
	ix.seqNo++
	ix.docs[it.id] = d
	s.count++
	res.status, res.result, res.version, res.seqNo = http.StatusCreated, "created", 1, d.seqNo
	return res
}

// indexUUID returns the uuid of an existing index, or "_na_".
func (s *Server) indexUUID(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indices[name]; ix != nil {
		return ix.uuid
	}
	return "_na_"
}

// appendItem appends one entry of the items array, with the members f
// keeps.
func appendItem(b []byte, f filterPath, r *itemResult) []byte {
	all, _ := f.keeps("items", r.key)
	m := itemMembers{b: b, f: f, key: r.key, all: all}
	b = append(b, '{')
	b = appendString(b, r.key)
	b = append(b, `:{`...)
	m.b = b
	m.str("_index", r.index)
	if r.docType {
		m.str("_type", "_doc")
	}
	if r.idNull {
		m.raw("_id", "null")
	} else {
		m.str("_id", r.id)
	}
	if r.errType == "" {
		m.raw("_version", strconv.FormatInt(r.version, 10))
		m.str("result", r.result)
		m.raw("_shards", `{"total":2,"successful":1,"failed":0}`)
		m.raw("_seq_no", strconv.FormatInt(r.seqNo, 10))
		m.raw("_primary_term", "1")
		m.raw("status", strconv.Itoa(r.status))
		return append(m.b, "}}"...)
	}
	m.raw("status", strconv.Itoa(r.status))
	errAll, errSome := m.all, m.all
	if !m.all {
		errAll, errSome = f.keeps("items", r.key, "error")
	}
	if errSome {
		e := itemMembers{f: f, key: r.key, all: errAll, sub: "error"}
		m.b = append(m.b, m.sep()...)
		m.b = append(m.b, `"error":{`...)
		e.b = m.b
		e.str("type", r.errType)
		e.str("reason", r.reason)
		if r.causeType != "" {
			e.raw("caused_by", string(appendCause(nil, r.causeType, r.cause)))
		}
		if r.indexUUID != "" {
			e.str("index_uuid", r.indexUUID)
			if r.indexUUID != "_na_" {
				e.str("shard", "0")
			}
			e.str("index", r.index)
		}
		m.b = append(e.b, '}')
	}
	return append(m.b, "}}"...)
}

// itemMembers writes the members of one object of an item that a filter
// keeps, with the commas between them.
type itemMembers struct {
	b        []byte
	f        filterPath
	key, sub string // the item's action key, and "error" inside its error
	all      bool   // every member is kept
	n        int    // members written
}

func (m *itemMembers) kept(name string) bool {
	if m.all {
		return true
	}
	path := []string{"items", m.key, name}
	if m.sub != "" {
		path = []string{"items", m.key, m.sub, name}
	}
	all, _ := m.f.keeps(path...)
	return all
}

func (m *itemMembers) sep() string {
	m.n++
	if m.n > 1 {
		return ","
	}
	return ""
}

// str writes member name with the string v, when kept.
func (m *itemMembers) str(name, v string) {
	if m.kept(name) {
		m.b = append(m.b, m.sep()...)
		m.b = appendString(m.b, name)
		m.b = append(m.b, ':')
		m.b = appendString(m.b, v)
	}
}

// raw writes member name with the JSON text v, when kept.
func (m *itemMembers) raw(name, v string) {
	if m.kept(name) {
		m.b = append(m.b, m.sep()...)
		m.b = appendString(m.b, name)
		m.b = append(m.b, ':')
		m.b = append(m.b, v...)
	}
}

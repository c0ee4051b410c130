package elasticsearch

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/logpond/logpond/output/sprintf"
)

// Routing to data streams follows Logstash's data_stream setting, with
// one difference: Logstash decides once per output, from its settings,
// whether the output writes data streams; logpond decides per event. One
// logpond often serves a mixed fleet (Elastic Agents, whose events name
// their data stream, and classic Beats, whose events go to an index), and
// a per-event decision lets one output, one cursor and one copy of the
// ledger serve both (DataStreamAuto).
//
// A data stream name that Elasticsearch would refuse is dead-lettered
// here, without a round trip: the cluster's answer (400, or an index
// created under a name nobody meant) is known in advance, and a request
// is not held back or split for an event that cannot succeed.

// dsTypes are the data stream types Elasticsearch's index templates for
// data streams (and Fleet) know.
var dsTypes = []string{"logs", "metrics", "traces", "synthetics"}

const (
	// dsPartMax is the most bytes of a dataset or namespace, and
	// dsNameMax of a whole data stream name (Elasticsearch's limit on
	// index names is 255 bytes). Within the parts' limits a name has at
	// most 212 bytes; the whole-name check states the rule in case they
	// change.
	dsPartMax = 100
	dsNameMax = 255
	// dsForbidden are the characters Elasticsearch refuses in index
	// names (and so in every part of a data stream name).
	dsForbidden = "\\/*?\"<>|,#: "
)

// routing is where an event goes, the edits that make its source line,
// and the per-worker buffers to build them in (so that routing allocates
// nothing once they have grown).
type routing struct {
	dataStream bool       // to the data stream name, else to the index
	name       []byte     // the data stream's name, when dataStream
	edits      []edit     // the edits of the source line, sorted
	ins        []byte     // the bytes the edits insert
	building   []editSpan // the edits while route builds them

	// The events of a batch name a few data streams over and over (one
	// Agent's integrations side by side) and share their record's receive
	// time: the last dsKnown data_stream values that gave a valid name,
	// with what routing read from them, and the last receive time as text
	// are kept, so that such events' data_stream is neither read nor
	// validated again, nor their time formatted.
	known     [dsKnown]dsRead
	nextKnown int // the entry of known to replace next
	tsAt      time.Time
	tsText    []byte
}

const (
	// dsKnown is how many data_stream values a worker keeps
	// (routing.known).
	dsKnown = 16
	// dsKnownBytes is the largest data_stream value kept: a larger one
	// (never Agent's) is read again each time rather than held.
	dsKnownBytes = 256
)

// dsRead is what routing reads from a data_stream value: an object, or
// null or absent (then it names nothing and the options name the stream).
type dsRead struct {
	raw     []byte    // the value as in the event (a copy), when known
	known   bool      // it gave a valid name: the entry serves events with the same raw
	mem     [3][2]int // the name members' value spans in raw, -1 when absent
	members int       // its members
	parts   [3][]byte // type, dataset, namespace, decoded
	name    []byte    // the data stream name: the parts joined by '-'
	// fill is what sync fields insert, when the name is valid and the
	// output syncs them: for an object, the name members it lacks (and a
	// comma when it has other members), which go right after its '{';
	// for null or absent, a whole object of the three.
	fill []byte
}

// topScan is what the output reads from an event's top-level members:
// offsets into the event, -1 when absent, and its @metadata (whose slices
// alias the event).
type topScan struct {
	open int // the '{' of the event, -1 when it is not an object
	// members counts its members; when the walk stopped early, the
	// members it walked plus one when more follow.
	members int
	tsVal   [2]int
	dsVal   [2]int
	meta    eventMeta
}

// jsonType names the JSON type of the value starting with c, for
// messages.
func jsonType(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// keyIs reports whether the raw JSON key (quotes included) decodes to
// name.
func keyIs(raw []byte, name string) bool {
	if len(raw) < 2 {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == name
	}
	s, ok := sprintf.AppendString(nil, raw)
	return ok && string(s) == name
}

// offsetIn returns where sub, a subslice of b, starts in b.
func offsetIn(b, sub []byte) int { return cap(b) - cap(sub) }

// topMember names the top-level members the output reads.
type topMember int

const (
	otherMember topMember = iota
	metadataMember
	timestampMember
	dataStreamMember
)

// topKey says which of the members the output reads the raw JSON key
// (quotes included) names, as decoded: Beats never escapes its keys, so
// the plain spellings are compared first, and only a key holding an
// escape is decoded.
func topKey(raw []byte) topMember {
	switch string(raw) {
	case `"@metadata"`:
		return metadataMember
	case `"@timestamp"`:
		return timestampMember
	case `"data_stream"`:
		return dataStreamMember
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return otherMember
	}
	switch {
	case keyIs(raw, "@metadata"):
		return metadataMember
	case keyIs(raw, "@timestamp"):
		return timestampMember
	case keyIs(raw, "data_stream"):
		return dataStreamMember
	}
	return otherMember
}

// scanTop walks the top-level members of ev once and returns all that
// the output reads from them: @metadata (readMeta), and @timestamp and
// data_stream for routing. The first of duplicate keys wins, as for
// every other reader of events; a second @metadata is counted, as it
// leaves the first in the source (eventMeta.read). The walk stops
// silently at malformed input, with what it found before.
//
// The walk stops as soon as the rest of the event cannot change what it
// found: the rest of an event is mostly its message and the objects
// Beats adds (host, agent), and two or three substring searches over it
// cost a fraction of walking it. What the caller needs (scanNeed) says
// when that is:
//   - scanMeta, for an output that routes nothing to data streams: after
//     the first @metadata, when the rest cannot hold a second one;
//   - scanAuto (data_stream = "auto"): as scanMeta, and when data_stream
//     was found, once @timestamp was too or the rest cannot hold one;
//     when it was not, once the rest cannot hold one;
//   - scanAll: never; every member is walked.
//
// After a stop, members is partial (see topScan), and so are tsVal and
// dsVal under scanMeta.
func scanTop(ev []byte, need scanNeed) topScan {
	var s topScan
	s.read(ev, need)
	return s
}

// scanNeed says which of its top-level members a caller of scanTop reads.
type scanNeed int

const (
	scanMeta scanNeed = iota // @metadata only
	scanAuto                 // @metadata; data_stream, and @timestamp when there is one
	scanAll                  // every member
)

// read is scanTop into s, which it overwrites: route reads into its
// result rather than copying one in.
func (s *topScan) read(ev []byte, need scanNeed) {
	*s = topScan{open: -1, tsVal: [2]int{-1, -1}, dsVal: [2]int{-1, -1}}
	i := 0
	for i < len(ev) && isSpace(ev[i]) {
		i++
	}
	if i >= len(ev) || ev[i] != '{' {
		return
	}
	s.open = i
	metas, metaKey, metaVal := 0, -1, [2]int{-1, -1}
	marks := restMarks{at: [len(restNeedles)]int{-2, -2, -2, -2}}
	sprintf.Members(ev, func(key, value []byte) bool {
		s.members++
		switch topKey(key) {
		case metadataMember:
			if metas++; metas > 1 {
				return true // counted; the walk goes on
			}
			at := offsetIn(ev, value)
			metaKey, metaVal = offsetIn(ev, key), [2]int{at, at + len(value)}
		case timestampMember:
			if s.tsVal[0] >= 0 {
				return true
			}
			at := offsetIn(ev, value)
			s.tsVal = [2]int{at, at + len(value)}
		case dataStreamMember:
			if s.dsVal[0] >= 0 {
				return true
			}
			at := offsetIn(ev, value)
			s.dsVal = [2]int{at, at + len(value)}
		default:
			return true
		}
		// A member the output reads: the rest may hold nothing more
		// that it needs.
		from := offsetIn(ev, value) + len(value)
		if need != scanAll && restIsIdle(ev, from, need, s, &marks) {
			if moreMembers(ev[from:]) {
				s.members++
			}
			return false
		}
		return true
	})
	if metas > 0 {
		s.meta.read(ev, metaKey, metaVal[0], metaVal[1], metas > 1)
	}
}

// restNeedles are the texts whose absence from the rest of an event
// lets the walk stop (restIsIdle): a key with a \u escape can spell any
// name, so a rest holding one is walked.
var restNeedles = [...]needle{
	// '\\' is common in messages (\"): after a few, the windows.
	{text: []byte(`\u`), anchor: 0, misses: 8},
	{text: []byte(`@metadata"`), anchor: 0},
	{text: []byte(`data_stream"`), anchor: 4}, // '_': 'd', 'a' and 't' fill log text
	{text: []byte(`@timestamp"`), anchor: 0},
}

// needle is a text to search for, and how: through one of its bytes,
// the anchor, chosen to be rare in log text. The search skips from one
// anchor to the next with bytes.IndexByte, which runs many bytes an
// instruction, where bytes.Index stops at each occurrence of the text's
// first byte. A text whose anchor turns out to be common in an event
// goes on in windows (windowIndex). These were chosen by counting
// instructions with callgrind (BenchmarkEncode, BenchmarkEncodeFilebeat).
type needle struct {
	text   []byte
	anchor int // index in text of the byte searched for
	// misses is after how many anchors not followed by the text the
	// search goes on in windows; 0: never.
	misses int
}

// index returns the index of the first occurrence of n's text in s, or
// -1.
func (n needle) index(s []byte) int {
	c := n.text[n.anchor]
	missed := 0
	for at := n.anchor; at < len(s); at++ {
		if missed == n.misses && n.misses > 0 {
			if i := windowIndex(s[at-n.anchor:], n.text); i >= 0 {
				return at - n.anchor + i
			}
			return -1
		}
		i := bytes.IndexByte(s[at:], c)
		if i < 0 {
			return -1
		}
		at += i
		start := at - n.anchor
		if start+len(n.text) > len(s) {
			return -1
		}
		// Every text here has a byte after its anchor: that byte alone
		// rules out most occurrences of the anchor before the whole
		// text is compared.
		if s[at+1] == n.text[n.anchor+1] && bytes.Equal(s[start:start+len(n.text)], n.text) {
			return start
		}
		missed++
	}
	return -1
}

// windowIndex is bytes.Index(s, text) run on windows of 64 bytes, which
// bytes.Index searches with its vectorized comparison at every offset;
// on a longer text it stops at every byte equal to text's first.
func windowIndex(s, text []byte) int {
	const window = 64
	for off := 0; off+len(text) <= len(s); {
		end := min(off+window, len(s))
		if i := bytes.Index(s[off:end], text); i >= 0 {
			return off + i
		}
		off = end - len(text) + 1 // a text across the window's end
	}
	return -1
}

const (
	needleEscape = iota
	needleMeta
	needleDataStream
	needleTimestamp
)

// restMarks remembers, for each of restNeedles, where the text holds it
// next: the walk asks again as it moves on, and each needle is searched
// for again only once the walk has passed where it was found.
type restMarks struct {
	// at is the index of the needle's next occurrence at or after the
	// last search's start, -1 when there is none, -2 before a search.
	at [len(restNeedles)]int
}

// holds reports whether ev holds needle k at or after from.
func (m *restMarks) holds(ev []byte, from, k int) bool {
	switch at := m.at[k]; {
	case at == -1:
		return false // none after an earlier start, so none after from
	case at >= from:
		return true
	}
	i := restNeedles[k].index(ev[from:])
	if i < 0 {
		m.at[k] = -1
		return false
	}
	m.at[k] = from + i
	return true
}

// restIsIdle reports whether ev after from, the text after the member
// just read, can hold nothing more that a caller with need reads (see
// scanTop). The needle that most often answers no is asked first.
func restIsIdle(ev []byte, from int, need scanNeed, s *topScan, m *restMarks) bool {
	switch {
	case need == scanAuto && s.dsVal[0] < 0:
		if m.holds(ev, from, needleDataStream) {
			return false
		}
	case need == scanAuto && s.tsVal[0] < 0:
		if m.holds(ev, from, needleTimestamp) {
			return false
		}
	}
	return !m.holds(ev, from, needleMeta) && !m.holds(ev, from, needleEscape)
}

// moreMembers reports whether another member follows in rest, the text
// after a member's value.
func moreMembers(rest []byte) bool {
	for _, c := range rest {
		if !isSpace(c) {
			return c == ','
		}
	}
	return false
}

var dsFields = [3]string{"type", "dataset", "namespace"}

// dsField returns the index in dsFields of the name the raw JSON key
// (quotes included) decodes to, or -1. As in topKey, only a key holding
// an escape is decoded.
func dsField(raw []byte) int {
	switch string(raw) {
	case `"type"`:
		return 0
	case `"dataset"`:
		return 1
	case `"namespace"`:
		return 2
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		for k, f := range dsFields {
			if keyIs(raw, f) {
				return k
			}
		}
	}
	return -1
}

// route reads the event ev's top-level members, in one walk, into top
// (its @metadata among them), and decides where the event goes
// (o.opts.DataStream), and, for a data stream, its name and the edits of
// its source line, into rt. The @metadata cut is always among the edits.
// reason is set when the event cannot go anywhere: it is dead-lettered
// with it, and rt.name then holds the data stream name it would have had.
// top's slices alias ev: it is returned, not kept in rt, which a worker
// keeps from event to event and through which it would keep the event's
// chunk buffer alive.
func (o *Output) route(rt *routing, ev []byte, received time.Time) (top topScan, reason string) {
	rt.dataStream, rt.name, rt.edits, rt.ins, rt.building = false, rt.name[:0], rt.edits[:0], rt.ins[:0], rt.building[:0]
	mode := o.opts.DataStream
	if mode == DataStreamAuto && o.cluster != nil && o.cluster.noDataStreams.Load() {
		// The cluster predates data streams (7.9): every event goes
		// where it would without them.
		mode = DataStreamOff
	}
	need := scanAll
	switch mode {
	case DataStreamOff:
		need = scanMeta
	case DataStreamAuto:
		need = scanAuto
	}
	top.read(ev, need)
	cut := top.meta.cut
	if mode == DataStreamOff {
		rt.edits = cutEdits(rt.edits, cut)
		return top, ""
	}
	var dsVal []byte
	if top.dsVal[0] >= 0 {
		dsVal = ev[top.dsVal[0]:top.dsVal[1]]
	}
	isObj := len(dsVal) > 0 && dsVal[0] == '{'
	isNull := len(dsVal) > 0 && dsVal[0] == 'n'
	switch {
	case isObj:
	case mode == DataStreamAuto:
		rt.edits = cutEdits(rt.edits, cut)
		return top, ""
	case dsVal != nil && !isNull:
		rt.name = o.defaultDSName(rt.name)
		return top, "data_stream is " + jsonType(dsVal[0]) + ", not an object"
	}
	if top.open < 0 {
		rt.name = o.defaultDSName(rt.name)
		return top, "the event is not a JSON object, which a data stream event must be"
	}

	d, reason := o.readDataStream(rt, dsVal)
	rt.name = append(rt.name, d.name...)
	if reason != "" {
		return top, reason
	}
	rt.dataStream = true

	// The source line's edits. Data streams require @timestamp: an event
	// without one gets the record's receive time, as Logstash gives it
	// the time it received the event.
	cutting := 0
	if cut[1] > 0 {
		cutting = 1
	}
	var topIns [][2]int // spans of rt.ins to insert after the event's '{'
	if top.tsVal[0] < 0 || ev[top.tsVal[0]] == 'n' {
		s := len(rt.ins)
		if top.tsVal[0] < 0 {
			rt.ins = append(rt.ins, `"@timestamp":`...)
		}
		t := received
		if t.IsZero() {
			t = time.Now()
		}
		if !t.Equal(rt.tsAt) || len(rt.tsText) == 0 {
			rt.tsAt = t
			rt.tsText = append(rt.tsText[:0], '"')
			rt.tsText = t.UTC().AppendFormat(rt.tsText, "2006-01-02T15:04:05.000Z")
			rt.tsText = append(rt.tsText, '"')
		}
		rt.ins = append(rt.ins, rt.tsText...)
		if top.tsVal[0] < 0 {
			topIns = append(topIns, [2]int{s, len(rt.ins)})
		} else {
			rt.addEdit(top.tsVal[0], top.tsVal[1]-top.tsVal[0], s)
		}
	}
	// Sync fields: the values the event was routed by go inside its
	// data_stream object, never as dotted top-level keys: integration
	// ingest pipelines and index templates read ctx.data_stream.dataset,
	// which a top-level "data_stream.dataset" key is not.
	if o.opts.DataStreamSyncFields {
		s := len(rt.ins)
		switch {
		case dsVal == nil:
			rt.ins = append(rt.ins, `"data_stream":`...)
			rt.ins = append(rt.ins, d.fill...)
			topIns = append(topIns, [2]int{s, len(rt.ins)})
		case !isObj:
			rt.ins = append(rt.ins, d.fill...)
			rt.addEdit(top.dsVal[0], top.dsVal[1]-top.dsVal[0], s)
		default:
			if len(d.fill) > 0 {
				// Inserted members go first in the object: right after
				// its '{', a place that exists in any object.
				rt.ins = append(rt.ins, d.fill...)
				rt.addEdit(top.dsVal[0]+1, 0, s)
			}
			for k := range dsFields {
				if v := d.mem[k]; v[0] >= 0 && dsVal[v[0]] == 'n' {
					vs := len(rt.ins)
					rt.ins = appendJSONString(rt.ins, d.parts[k])
					rt.addEdit(top.dsVal[0]+v[0], v[1]-v[0], vs)
				}
			}
		}
	}
	if len(topIns) > 0 {
		// After the event's '{'. A comma follows when a member stays
		// after the @metadata cut.
		s := len(rt.ins)
		for i, sp := range topIns {
			if i > 0 {
				rt.ins = append(rt.ins, ',')
			}
			rt.ins = append(rt.ins, rt.ins[sp[0]:sp[1]]...)
		}
		if top.members-cutting > 0 {
			rt.ins = append(rt.ins, ',')
		}
		rt.addEdit(top.open+1, 0, s)
	}
	if cut[1] > 0 {
		rt.building = append(rt.building, editSpan{at: cut[0], n: cut[1] - cut[0]})
	}
	sortEdits(rt.building)
	// The insertions are spans of rt.ins, now complete: resolve them.
	for _, e := range rt.building {
		rt.edits = append(rt.edits, edit{at: e.at, n: e.n, ins: rt.ins[e.from:e.to]})
	}
	if !editsApply(ev, rt.edits) {
		// The spans come from one walk over the event and never
		// overlap: this guards against a bug in building them.
		rt.dataStream = false
		return top, "the event is not valid JSON; its data stream fields cannot be added"
	}
	return top, ""
}

// readDataStream returns what the data_stream value ds (an object, null,
// or nil when absent) gives: its name members and, with the options'
// defaults for those it lacks, the data stream name and what sync fields
// insert, and reason when the name is not a valid one. The result is an entry of rt.known, good until the
// next call: one that gave a valid name serves again for the same bytes,
// which give the same name (the options are the output's, and fixed).
func (o *Output) readDataStream(rt *routing, ds []byte) (d *dsRead, reason string) {
	for i := range rt.known {
		if e := &rt.known[i]; e.known && bytes.Equal(e.raw, ds) {
			return e, ""
		}
	}
	// Read into the oldest entry.
	d = &rt.known[rt.nextKnown]
	d.raw, d.known, d.members = d.raw[:0], false, 0
	d.mem = [3][2]int{{-1, -1}, {-1, -1}, {-1, -1}}
	if len(ds) > 0 && ds[0] == '{' {
		sprintf.Members(ds, func(key, value []byte) bool {
			d.members++
			if k := dsField(key); k >= 0 && d.mem[k][0] < 0 {
				at := offsetIn(ds, value)
				d.mem[k] = [2]int{at, at + len(value)}
			}
			return true
		})
	}
	// The name's parts: the object's string members, else the options.
	defaults := [3]string{o.opts.DataStreamType, o.opts.DataStreamDataset, o.opts.DataStreamNamespace}
	for k, v := range d.mem {
		d.parts[k] = append(d.parts[k][:0], defaults[k]...)
		if v[0] < 0 {
			continue
		}
		switch c := ds[v[0]]; c {
		case 'n':
		case '"':
			s, ok := sprintf.AppendString(d.parts[k][:0], ds[v[0]:v[1]])
			if !ok && reason == "" {
				reason = fmt.Sprintf("data_stream.%s is not a readable JSON string", dsFields[k])
			}
			d.parts[k] = s
		default:
			if reason == "" {
				reason = fmt.Sprintf("data_stream.%s is %s, not a string", dsFields[k], jsonType(c))
			}
		}
	}
	d.name = append(d.name[:0], d.parts[0]...)
	d.name = append(d.name, '-')
	d.name = append(d.name, d.parts[1]...)
	d.name = append(d.name, '-')
	d.name = append(d.name, d.parts[2]...)
	if reason == "" {
		reason = validateDSName(d.parts, d.name)
	}
	if reason != "" {
		return d, reason
	}
	if o.opts.DataStreamSyncFields {
		d.fill = d.appendFill(d.fill[:0], len(ds) > 0 && ds[0] == '{')
	}
	if len(ds) > dsKnownBytes {
		return d, ""
	}
	d.raw, d.known = append(d.raw, ds...), true
	rt.nextKnown = (rt.nextKnown + 1) % len(rt.known)
	return d, ""
}

// appendFill appends dsRead.fill for the data_stream value d was read
// from, an object when isObj.
func (d *dsRead) appendFill(dst []byte, isObj bool) []byte {
	if !isObj {
		dst = append(dst, '{')
	}
	start := len(dst)
	for k, f := range dsFields {
		if isObj && d.mem[k][0] >= 0 {
			continue
		}
		if len(dst) > start {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, f...)
		dst = append(dst, `":`...)
		dst = appendJSONString(dst, d.parts[k])
	}
	switch {
	case !isObj:
		dst = append(dst, '}')
	case len(dst) > start && d.members > 0:
		dst = append(dst, ',')
	}
	return dst
}

// addEdit adds the edit replacing ev[at:at+n] with rt.ins[from:] (as it
// is when addEdit is called).
func (rt *routing) addEdit(at, n, from int) {
	rt.building = append(rt.building, editSpan{at: at, n: n, from: from, to: len(rt.ins)})
}

// defaultDSName appends the data stream name of the options.
func (o *Output) defaultDSName(dst []byte) []byte {
	return fmt.Appendf(dst, "%s-%s-%s", o.opts.DataStreamType, o.opts.DataStreamDataset, o.opts.DataStreamNamespace)
}

// validateDSName checks a data stream name against Elasticsearch's rules
// for data stream names (as Logstash checks them), and returns what is
// wrong, or "". It allocates only to say what is wrong.
func validateDSName(parts [3][]byte, name []byte) string {
	known := false
	for _, t := range dsTypes {
		known = known || string(parts[0]) == t
	}
	if !known {
		return fmt.Sprintf("data_stream.type %q must be one of %s", parts[0], strings.Join(dsTypes, ", "))
	}
	for k := 1; k < 3; k++ {
		p, f := parts[k], dsFields[k]
		switch {
		case len(p) == 0:
			return fmt.Sprintf("data_stream.%s must not be empty", f)
		case len(p) > dsPartMax:
			return fmt.Sprintf("data_stream.%s %q is longer than %d bytes", f, p, dsPartMax)
		case hasUpper(p):
			return fmt.Sprintf("data_stream.%s %q must be lowercase", f, p)
		case bytes.ContainsAny(p, dsForbidden):
			c := p[bytes.IndexAny(p, dsForbidden)]
			return fmt.Sprintf("data_stream.%s %q must not contain %q", f, p, string(c))
		case k == 1 && bytes.IndexByte(p, '-') >= 0:
			// The name's parts are joined by '-': a dataset holding one
			// would make the name ambiguous.
			return fmt.Sprintf("data_stream.%s %q must not contain \"-\"", f, p)
		}
	}
	if len(name) > dsNameMax {
		return fmt.Sprintf("data stream name %q is longer than %d bytes", name, dsNameMax)
	}
	return ""
}

// hasUpper reports whether p changes when lowercased (strings.ToLower):
// Elasticsearch refuses index names with uppercase letters, in any
// script.
func hasUpper(p []byte) bool {
	for _, c := range p {
		if c >= 0x80 {
			return !bytes.Equal(bytes.ToLower(p), p)
		}
		if 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

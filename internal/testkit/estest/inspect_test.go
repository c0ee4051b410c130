package estest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// storeDocs stores n documents in index, with ids id-000 … and sources
// {"n":i}.
func storeDocs(h *harness, index string, n int) {
	h.t.Helper()
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"create":{"_index":%q,"_id":"id-%03d"}}`, index, i), fmt.Sprintf(`{"n":%d}`, i))
	}
	h.bulkOK("/_bulk", nd(lines...), n)
}

// TestCatIndices: _cat/indices lists each index with its document count
// and size, as text (with a header under ?v, columns aligned as
// Elasticsearch aligns them) or as JSON.
func TestCatIndices(t *testing.T) {
	h := start(t, Options{})
	r := h.must(http.MethodGet, "/_cat/indices?format=json", nil)
	if r.status != http.StatusOK || string(r.body) != "[]" {
		t.Fatalf("no index: %d %s", r.status, r.body)
	}
	storeDocs(h, "logs-b", 3)
	storeDocs(h, "logs-a", 12)

	r = h.must(http.MethodGet, "/_cat/indices?format=json", nil)
	if r.status != http.StatusOK || r.get("#").Int() != 2 {
		t.Fatalf("format=json: %d %s", r.status, r.body)
	}
	size := func(n int) int { // bytes of the sources {"n":0} … {"n":n-1}
		total := 0
		for i := range n {
			total += len(fmt.Sprintf(`{"n":%d}`, i))
		}
		return total
	}
	for i, want := range []struct {
		index, count string
		bytes        int
	}{{"logs-a", "12", size(12)}, {"logs-b", "3", size(3)}} {
		row := r.get(fmt.Sprint(i))
		for col, v := range map[string]string{"index": want.index, "docs.count": want.count, "docs.deleted": "0",
			"health": "green", "status": "open", "pri": "1", "rep": "0", "store.size": fmt.Sprintf("%db", want.bytes)} {
			if got := row.Get(strings.ReplaceAll(col, ".", `\.`)).String(); got != v {
				t.Errorf("row %d %s = %q, want %q: %s", i, col, got, v, row.Raw)
			}
		}
		if len(row.Get("uuid").String()) != 22 {
			t.Errorf("row %d: uuid %q", i, row.Get("uuid").String())
		}
	}
	r = h.must(http.MethodGet, "/_cat/indices/logs-b?format=json&h=index,docs.count", nil)
	if string(r.body) != `[{"index":"logs-b","docs.count":"3"}]` {
		t.Errorf("one index, two columns: %s", r.body)
	}

	text, err := h.do(http.MethodGet, "/_cat/indices?v&h=health,index,docs.count,store.size&bytes=b", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(""+
		"health index  docs.count store.size\n"+
		"green  logs-a         12 %10d\n"+
		"green  logs-b          3 %10d\n", size(12), size(3))
	if text.status != http.StatusOK || string(text.body) != want || !strings.HasPrefix(text.header.Get("Content-Type"), "text/plain") ||
		text.header.Get("X-Elastic-Product") != "Elasticsearch" {
		t.Errorf("?v text: %d %q\n%s\nwant\n%s", text.status, text.header.Get("Content-Type"), text.body, want)
	}
	text, _ = h.do(http.MethodGet, "/_cat/indices", nil)
	lines := strings.Split(strings.TrimSuffix(string(text.body), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "green open logs-a ") || len(strings.Fields(lines[0])) != 11 {
		t.Errorf("text without v: %q", text.body)
	}

	for _, tc := range []struct {
		path   string
		status int
		reason string
	}{
		{"/_cat/indices/nope?format=json", 404, "no such index [nope]"},
		{"/_cat/indices?s=index", 400, "unrecognized parameter: [s]"},
		{"/_cat/indices?h=index,bogus", 400, "no column [bogus]"},
		{"/_cat/indices?format=yaml", 400, "format [yaml]"},
	} {
		r := h.must(http.MethodGet, tc.path, nil)
		if r.status != tc.status || !strings.Contains(r.get("error.reason").String(), tc.reason) {
			t.Errorf("%s: %d %s, want %d with %q", tc.path, r.status, r.body, tc.status, tc.reason)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		unit string
		want string
	}{
		{0, "", "0b"}, {208, "", "208b"}, {1024, "", "1kb"}, {5580, "", "5.4kb"}, {1126, "", "1kb"},
		{90214, "", "88kb"}, {90215, "", "88.1kb"}, {3 << 20, "", "3mb"}, {5580, "b", "5580"}, {5580, "kb", "5"},
	} {
		if got := formatBytes(tc.n, tc.unit); got != tc.want {
			t.Errorf("formatBytes(%d, %q) = %q, want %q", tc.n, tc.unit, got, tc.want)
		}
	}
}

// TestSearch: _search answers in Elasticsearch's shape (hits.total.value,
// hits.hits[]._index/_id/_source), with size, from and a sort by _id or
// _index from the URL or the body, over all indices or some.
func TestSearch(t *testing.T) {
	h := start(t, Options{})
	r := h.must(http.MethodGet, "/_search", nil)
	if r.status != http.StatusOK || r.get("hits.total.value").Int() != 0 || r.get("hits.hits.#").Int() != 0 {
		t.Fatalf("empty: %d %s", r.status, r.body)
	}
	storeDocs(h, "logs-a", 15)
	storeDocs(h, "logs-b", 2)

	ids := func(r resp) string {
		var out []string
		for _, hit := range r.get("hits.hits").Array() {
			out = append(out, hit.Get("_index").String()+"/"+hit.Get("_id").String()+"="+hit.Get("_source").Raw)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name, method, path, body string
		total                    int64
		want                     string
	}{
		{"defaults: 10 hits, by index and id", "GET", "/_search", "", 17,
			"logs-a/id-000={\"n\":0} logs-a/id-001={\"n\":1} logs-a/id-002={\"n\":2} logs-a/id-003={\"n\":3} logs-a/id-004={\"n\":4} " +
				"logs-a/id-005={\"n\":5} logs-a/id-006={\"n\":6} logs-a/id-007={\"n\":7} logs-a/id-008={\"n\":8} logs-a/id-009={\"n\":9}"},
		{"size and sort in the URL", "GET", "/_search?size=3&sort=_id:desc", "", 17,
			"logs-a/id-014={\"n\":14} logs-a/id-013={\"n\":13} logs-a/id-012={\"n\":12}"},
		{"one index, from", "GET", "/logs-b/_search?from=1", "", 2, "logs-b/id-001={\"n\":1}"},
		{"wildcard", "GET", "/logs-*/_search?size=0", "", 17, ""},
		{"body", "POST", "/_search", `{"size":2,"sort":[{"_id":"asc"},{"_index":{"order":"desc"}}],"query":{"match_all":{}}}`, 17,
			"logs-b/id-000={\"n\":0} logs-a/id-000={\"n\":0}"},
		{"the URL wins over the body", "POST", "/logs-a/_search?size=1", `{"size":5,"sort":"_id"}`, 15, "logs-a/id-000={\"n\":0}"},
	} {
		var body []byte
		var hdr []string
		if tc.body != "" {
			body, hdr = []byte(tc.body), []string{"Content-Type", "application/json"}
		}
		r := h.must(tc.method, tc.path, body, hdr...)
		if r.status != http.StatusOK || r.get("hits.total.value").Int() != tc.total || r.get("hits.total.relation").String() != "eq" || ids(r) != tc.want {
			t.Errorf("%s: %d, total %d, hits %s; want total %d, hits %s\n%s", tc.name, r.status, r.get("hits.total.value").Int(), ids(r), tc.total, tc.want, r.body)
		}
	}
	r = h.must(http.MethodGet, "/_search?size=1&sort=_id:asc", nil)
	if r.get("hits.hits.0._score").Type.String() != "Null" || r.get("hits.hits.0.sort.0").String() != "id-000" || r.get("hits.max_score").Type.String() != "Null" {
		t.Errorf("sorted hits carry their sort values and no score: %s", r.body)
	}
	r = h.must(http.MethodGet, "/_search?size=1", nil)
	if r.get("hits.hits.0._score").Float() != 1 || r.get("hits.hits.0.sort").Exists() || r.get("_shards.total").Int() != 2 || r.get("timed_out").Bool() {
		t.Errorf("unsorted: %s", r.body)
	}

	for _, tc := range []struct {
		method, path, body, ct string
		status                 int
		reason                 string
	}{
		{"GET", "/nope/_search", "", "", 404, "no such index [nope]"},
		{"GET", "/_search?q=x", "", "", 400, "unrecognized parameter: [q]"},
		{"GET", "/_search?size=x", "", "", 400, "parameter [size]"},
		{"GET", "/_search?size=-1", "", "", 400, "[size] parameter cannot be negative"},
		{"GET", "/_search?from=9999&size=2", "", "", 400, "Result window is too large"},
		{"GET", "/_search?sort=n:asc", "", "", 400, "sorts only by _id or _index"},
		{"GET", "/_search?sort=_id:up", "", "", 400, "Unknown SortOrder [up]"},
		{"POST", "/_search", `{"query":{"term":{"n":1}}}`, "application/json", 400, "only the query"},
		{"POST", "/_search", `{"aggs":{}}`, "application/json", 400, "not [aggs]"},
		{"POST", "/_search", `{"size":2`, "application/json", 400, "failed to parse"},
		{"POST", "/_search", `{"size":2}`, "application/x-www-form-urlencoded", 406, ""},
	} {
		var hdr []string
		if tc.ct != "" {
			hdr = []string{"Content-Type", tc.ct}
		}
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := h.must(tc.method, tc.path, body, hdr...)
		if r.status != tc.status || (tc.reason != "" && !strings.Contains(r.get("error.reason").String(), tc.reason)) {
			t.Errorf("%s %s %s: %d %s, want %d with %q", tc.method, tc.path, tc.body, r.status, r.body, tc.status, tc.reason)
		}
	}
}

// TestSearchTotalIsCappedAsElasticsearch: above 10,000 hits the total is
// reported as 10,000 with relation "gte", as track_total_hits does by
// default.
func TestSearchTotalIsCappedAsElasticsearch(t *testing.T) {
	h := start(t, Options{})
	for range 3 {
		var lines []string
		for range 3400 {
			lines = append(lines, `{"index":{"_index":"big"}}`, `{}`)
		}
		h.bulkOK("/_bulk", nd(lines...), 3400)
	}
	r := h.must(http.MethodGet, "/big/_search?size=1", nil)
	if r.get("hits.total.value").Int() != 10000 || r.get("hits.total.relation").String() != "gte" {
		t.Errorf("10200 documents: total %s", r.get("hits.total").Raw)
	}
}

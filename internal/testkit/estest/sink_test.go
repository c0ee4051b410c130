package estest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSinkCountsActions: the sink answers a bulk request with one created
// item per action, plain or gzip-compressed, and counts them.
func TestSinkCountsActions(t *testing.T) {
	s, err := StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := strings.Repeat(`{"create":{"_index":"a"}}`+"\n"+`{"m":1}`+"\n", 3)
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	zw.Write([]byte(body))
	zw.Close()
	for _, c := range []struct {
		name, encoding string
		body           []byte
	}{{"plain", "", []byte(body)}, {"gzip", "gzip", zbuf.Bytes()}} {
		req, _ := http.NewRequest("POST", s.URL()+"/_bulk", bytes.NewReader(c.body))
		if c.encoding != "" {
			req.Header.Set("Content-Encoding", c.encoding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				Status int `json:"status"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, raw)
		}
		if got.Errors || len(got.Items) != 3 || got.Items[2]["create"].Status != 201 {
			t.Fatalf("%s: answer %s, want 3 created items", c.name, raw)
		}
		if resp.Header.Get("X-Elastic-Product") != "Elasticsearch" {
			t.Fatalf("%s: no product header", c.name)
		}
	}
	if n := s.Items(); n != 6 {
		t.Fatalf("Items() = %d, want 6", n)
	}
	s.Reset()
	if n := s.Items(); n != 0 {
		t.Fatalf("Items() after Reset = %d", n)
	}
}

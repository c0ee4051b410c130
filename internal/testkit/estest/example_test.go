package estest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/logpond/logpond/internal/testkit/estest"
)

// A test starts a server, points its client at URL, injects faults and
// inspects what was stored.
func Example() {
	srv, err := estest.Start(estest.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	srv.SetFaults(estest.Faults{ItemHook: func(action, index, id string, source []byte) (int, string, string, bool) {
		if id == "2" {
			return 400, "mapper_parsing_exception", "failed to parse field [n]", true
		}
		return 0, "", "", false
	}})
	body := `{"create":{"_index":"logs","_id":"1"}}` + "\n" + `{"n":1}` + "\n" +
		`{"create":{"_index":"logs","_id":"2"}}` + "\n" + `{"n":"two"}` + "\n"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Post(srv.URL()+"/_bulk", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	src, _ := srv.Doc("logs", "1")
	st := srv.Stats()
	fmt.Println(res.Status, srv.Count(), string(src), st.ItemsByStatus[201], st.ItemsByStatus[400])
	// Output: 200 OK 1 {"n":1} 1 1
}

// Data streams: a name matching a data stream pattern takes only create
// items with an @timestamp, and stores them in its backing index.
func ExampleServer_DocsIn() {
	srv, err := estest.Start(estest.Options{Seed: 1, Version: "8.17.0"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"create":{"_index":"logs-app-default","_id":"1"}}` + "\n" + `{"@timestamp":"2026-12-05T00:00:00Z"}` + "\n" +
		`{"create":{"_index":"logs-app-default","_id":"2"}}` + "\n" + `{"message":"no timestamp"}` + "\n" +
		`{"index":{"_index":"logs-app-default","_id":"3"}}` + "\n" + `{"@timestamp":1}` + "\n"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Post(srv.URL()+"/_bulk", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	for _, d := range srv.DocsIn("logs-app-default") {
		fmt.Println(d.DataStream, d.ID, strings.HasPrefix(d.Index, ".ds-logs-app-default-"))
	}
	fmt.Println(srv.DataStreams(), srv.Stats().DataStreamRefused)
	// Output:
	// logs-app-default 1 true
	// [logs-app-default] 2
}

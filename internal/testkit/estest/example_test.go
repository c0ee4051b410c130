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

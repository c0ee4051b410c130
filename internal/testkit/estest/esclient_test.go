package estest_test

// This test drives the server with the official client, so it proves the
// product check and response formats against real client code. It is kept
// in its own file because it is the package's only import of
// go-elasticsearch.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"

	"github.com/logpond/logpond/internal/testkit/estest"
)

func TestGoElasticsearchClient(t *testing.T) {
	const seed = 11
	t.Logf("estest seed %d", seed)
	srv, err := estest.Start(estest.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		tr.CloseIdleConnections()
	}()
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:           []string{srv.URL()},
		Transport:           tr,
		CompressRequestBody: true,
	})
	if err != nil {
		t.Fatal(err)
	}

	// The product check runs on the first request.
	info, err := es.Info()
	if err != nil {
		t.Fatalf("Info (product check): %v", err)
	}
	info.Body.Close()
	if info.IsError() {
		t.Fatalf("Info: %s", info.Status())
	}

	srv.SetFaults(estest.Faults{ItemHook: func(_, _, id string, _ []byte) (int, string, string, bool) {
		if id == "13" {
			return 400, "mapper_parsing_exception", "failed to parse field [n]", true
		}
		return 0, "", "", false
	}})
	var mu sync.Mutex
	var created, failed []string
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client: es, Index: "logs", NumWorkers: 2, FlushBytes: 2048, Pipeline: "p1",
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		err := bi.Add(context.Background(), esutil.BulkIndexerItem{
			Action:     "create",
			DocumentID: fmt.Sprint(i),
			Body:       bytes.NewReader([]byte(fmt.Sprintf(`{"n":%d}`, i))),
			OnSuccess: func(_ context.Context, item esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem) {
				mu.Lock()
				defer mu.Unlock()
				if res.Status == 201 && res.Result == "created" {
					created = append(created, item.DocumentID)
				}
			},
			OnFailure: func(_ context.Context, item esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, fmt.Sprintf("%s %d %s %v", item.DocumentID, res.Status, res.Error.Type, err))
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(created) != n-1 || len(failed) != 1 || !strings.HasPrefix(failed[0], "13 400 mapper_parsing_exception") {
		t.Fatalf("created %d, failed %q", len(created), failed)
	}
	if st := bi.Stats(); st.NumCreated != n-1 || st.NumFailed != 1 {
		t.Errorf("indexer stats %+v", st)
	}
	if srv.Count() != n-1 || srv.Stats().GzipRequests == 0 {
		t.Errorf("server has %d docs, stats %+v", srv.Count(), srv.Stats())
	}
	if docs := srv.Docs(); docs[0].Pipeline != "p1" {
		t.Errorf("pipeline %q", docs[0].Pipeline)
	}

	// A whole-request 503 reaches the client as an error response after
	// its own retries.
	srv.SetFaults(estest.Faults{Request503: 1})
	res, err := es.Bulk(strings.NewReader(`{"create":{"_index":"logs","_id":"x"}}`+"\n{}\n"), es.Bulk.WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Errorf("status %d, want 503", res.StatusCode)
	}
	t.Logf("503 requests seen by the server: %d (the client retries)", srv.Stats().Failed503Requests)
}

// TestGoElasticsearchClientVersions drives data stream writes through the
// official client against nodes of each supported major, with and without
// its compatibility mode (compatible-with=8 on both headers).
func TestGoElasticsearchClientVersions(t *testing.T) {
	for _, tc := range []struct {
		version   string
		parseType string // the @timestamp failure's error type
		compatOK  bool   // accepts compatible-with=8
	}{
		{"7.17.25", "mapper_parsing_exception", false},
		{"8.17.0", "document_parsing_exception", true},
		{"9.1.0", "document_parsing_exception", true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			srv, err := estest.Start(estest.Options{Seed: 12, Version: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer func() {
				if err := srv.Close(); err != nil {
					t.Error(err)
				}
				tr.CloseIdleConnections()
			}()
			for _, compat := range []bool{false, true} {
				srv.Reset()
				es, err := elasticsearch.NewClient(elasticsearch.Config{
					Addresses: []string{srv.URL()}, Transport: tr, EnableCompatibilityMode: compat,
				})
				if err != nil {
					t.Fatal(err)
				}
				info, err := es.Info()
				if err != nil {
					t.Fatalf("compat %v: Info: %v", compat, err)
				}
				var body bytes.Buffer
				_, _ = body.ReadFrom(info.Body)
				info.Body.Close()
				if compat && !tc.compatOK {
					if info.StatusCode != 400 || !strings.Contains(body.String(), `"media_type_header_exception"`) ||
						!strings.Contains(body.String(), "Accept version must be either version 7 or 7, but found 8.") {
						t.Errorf("compat Info: %d %s, want 400 media_type_header_exception", info.StatusCode, body.String())
					}
					continue
				}
				if info.IsError() || !strings.Contains(body.String(), `"number":"`+tc.version+`"`) {
					t.Fatalf("compat %v: Info: %d %s", compat, info.StatusCode, body.String())
				}
				var mu sync.Mutex
				var failed []string
				placed := map[string]int{}
				bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: es, Index: "logs-app-default", NumWorkers: 1})
				if err != nil {
					t.Fatal(err)
				}
				const n = 20
				for i := 0; i < n+2; i++ {
					action, doc := "create", fmt.Sprintf(`{"@timestamp":"2026-12-05T00:%02d:00Z","n":%d}`, i, i)
					switch i {
					case n:
						doc = `{"n":"no timestamp"}`
					case n + 1:
						action = "index"
					}
					err := bi.Add(context.Background(), esutil.BulkIndexerItem{
						Action: action, Body: strings.NewReader(doc),
						OnSuccess: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem) {
							mu.Lock()
							defer mu.Unlock()
							placed[res.Index]++
						},
						OnFailure: func(_ context.Context, item esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
							mu.Lock()
							defer mu.Unlock()
							failed = append(failed, fmt.Sprintf("%s %d %s", item.Action, res.Status, res.Error.Type))
						},
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := bi.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				wantFailed := []string{"create 400 " + tc.parseType, "index 400 illegal_argument_exception"}
				if fmt.Sprint(failed) != fmt.Sprint(wantFailed) {
					t.Errorf("compat %v: failed %q, want %q", compat, failed, wantFailed)
				}
				docs := srv.DocsIn("logs-app-default")
				if len(docs) != n || len(placed) != 1 || placed[docs[0].Index] != n || docs[0].DataStream != "logs-app-default" {
					t.Errorf("compat %v: %d docs, placed %v", compat, len(docs), placed)
				}
				if st := srv.Stats(); st.DataStreamRefused != 2 {
					t.Errorf("compat %v: DataStreamRefused %d", compat, st.DataStreamRefused)
				}
			}
		})
	}
}

// go-elasticsearch 8 checks X-Elastic-Product, which a node before 7.14
// does not send: the client refuses it.
func TestGoElasticsearchClientRefusesOldNode(t *testing.T) {
	srv, err := estest.Start(estest.Options{Version: "7.13.4"})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer func() {
		srv.Close()
		tr.CloseIdleConnections()
	}()
	es, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{srv.URL()}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	res, err := es.Info()
	if err == nil {
		res.Body.Close()
		t.Fatalf("Info against 7.13.4: no error (status %d)", res.StatusCode)
	}
	if !strings.Contains(err.Error(), "not Elasticsearch") {
		t.Errorf("Info against 7.13.4: %v", err)
	}
}

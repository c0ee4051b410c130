package server

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/testkit/estest"
)

// waitLog waits until the server's log holds want.
func waitLog(t *testing.T, r *running, want string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		log := r.log.String()
		if strings.Contains(log, want) {
			return log
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartupSaysElasticsearchAnswered: at start logpond logs that
// Elasticsearch answered, with its version, before any batch.
func TestStartupSaysElasticsearchAnswered(t *testing.T) {
	srv := startES(t, estest.Options{Seed: 1, Version: "8.17.0"})
	r := start(t, lagConfig(t, srv.URL()))
	defer r.shutdown(t)
	log := waitLog(t, r, `msg="elasticsearch answered"`)
	if !strings.Contains(log, "version=8.17.0") || !strings.Contains(log, "cluster_name=estest") {
		t.Errorf("the line does not name the cluster and its version:\n%s", log)
	}
}

// TestStartupWarnsWhenElasticsearchDoesNotAnswer: a WARN at start names
// the host and why, before any batch is sent.
func TestStartupWarnsWhenElasticsearchDoesNotAnswer(t *testing.T) {
	addr := closedAddr(t)
	r := start(t, lagConfig(t, "http://"+addr))
	defer r.shutdown(t)
	log := waitLog(t, r, `msg="elasticsearch did not answer at start`)
	var line string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="elasticsearch did not answer at start`) {
			line = l
		}
	}
	if !strings.Contains(line, "level=WARN") {
		t.Errorf("not a WARN: %s", line)
	}
	if !strings.Contains(line, addr) || !strings.Contains(line, "connection refused") {
		t.Errorf("the warning does not name the host and the error: %s", line)
	}
}

// TestStartupCheckHoldsNothingUp: an Elasticsearch that accepts
// connections and never answers holds up neither acknowledgements nor
// the stop.
func TestStartupCheckHoldsNothingUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, unanswered, until the listener closes
		}
	}()
	cfg := lagConfig(t, "http://"+ln.Addr().String())
	cfg.Output.Elasticsearch.Timeout = conf.Duration(time.Hour)
	r := start(t, cfg)
	c, err := lj.SyncDial(r.s.BeatsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Send([]interface{}{json.RawMessage(`{"message":"x"}`)}); err != nil || n != 1 {
		t.Fatalf("acked %d: %v", n, err)
	}
	c.Close()
	r.shutdown(t) // returns: the check gives up when logpond stops
	if strings.Contains(r.log.String(), "elasticsearch answered") {
		t.Error("a silent Elasticsearch was reported as answering")
	}
}

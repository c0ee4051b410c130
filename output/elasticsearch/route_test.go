package elasticsearch

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	_ "github.com/logpond/logpond/internal/testkit/estest"
	_ "github.com/logpond/logpond/internal/testkit/syncbuf"
	_ "github.com/logpond/logpond/output/dlq"
	_ "github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/output/sprintf"
)

var routeReceived = time.Date(2026, 12, 5, 0, 0, 0, 123456789, time.UTC)

const (
	rts  = `"@timestamp":"2026-12-05T00:00:00.123Z"`                               // the receive time, as added
	dsDf = `"data_stream":{"type":"logs","dataset":"generic","namespace":"default"}` // the options, as added
	meta = `"@metadata":{"beat":"filebeat","version":"9.3.0"}`
	ts   = `"@timestamp":"2026-12-02T10:57:41.210Z"`
)

// routeOptions are the data stream options of the routing tests.
func routeOptions(mode DataStreamMode, sync bool) Options {
	return Options{
		Index:         sprintfMust("%{[@metadata][beat]}-%{[@metadata][version]}"),
		FallbackIndex: "logpond-fallback", MaxRequestBytes: 1 << 20,
		DataStream: mode, DataStreamSyncFields: sync,
		DataStreamType: "logs", DataStreamDataset: "generic", DataStreamNamespace: "default",
	}
}

type routeCase struct {
	name   string
	mode   DataStreamMode
	sync   bool
	ev     string
	index  string // where it goes (a dead letter: the name it would have had)
	source string // the source line; "" for a dead letter
	reason string // the dead letter's reason; "" when sent
}

var routeCases = []routeCase{
	{name: "agent logs, whole data_stream", mode: DataStreamAuto, sync: true,
		ev:     `{` + ts + `,` + meta + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"m"}`,
		index:  "logs-nginx.access-prod",
		source: `{` + ts + `,"data_stream":{"type":"logs","dataset":"nginx.access","namespace":"prod"},"message":"m"}`},
	{name: "agent metrics, whole data_stream, no @metadata", mode: DataStreamAlways, sync: true,
		ev:     `{` + ts + `,"data_stream":{"type":"metrics","dataset":"system.cpu","namespace":"default"},"v":1}`,
		index:  "metrics-system.cpu-default",
		source: `{` + ts + `,"data_stream":{"type":"metrics","dataset":"system.cpu","namespace":"default"},"v":1}`},
	{name: "partial, synced", mode: DataStreamAuto, sync: true,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`,
		index:  "logs-nginx.error-default",
		source: `{` + ts + `,"data_stream":{"type":"logs","namespace":"default","dataset":"nginx.error"}}`},
	{name: "partial, not synced", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`,
		index:  "logs-nginx.error-default",
		source: `{` + ts + `,"data_stream":{"dataset":"nginx.error"}}`},
	{name: "auto, none: the index", mode: DataStreamAuto, sync: true,
		ev:     `{` + meta + `,"message":"m"}`,
		index:  "filebeat-9.3.0",
		source: `{"message":"m"}`},
	{name: "auto, string: the index", mode: DataStreamAuto, sync: true,
		ev:     `{` + meta + `,"data_stream":"x"}`,
		index:  "filebeat-9.3.0",
		source: `{"data_stream":"x"}`},
	{name: "off, object: the index", mode: DataStreamOff, sync: true,
		ev:     `{` + meta + `,"data_stream":{"dataset":"x"}}`,
		index:  "filebeat-9.3.0",
		source: `{"data_stream":{"dataset":"x"}}`},
	{name: "always, none, synced", mode: DataStreamAlways, sync: true,
		ev:     `{` + meta + `,"message":"m"}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `,"message":"m"}`},
	{name: "always, none, not synced", mode: DataStreamAlways,
		ev:     `{"message":"m",` + meta + `}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,"message":"m"}`},
	{name: "always, data_stream null, synced", mode: DataStreamAlways, sync: true,
		ev:     `{"data_stream":null,"a":1}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `,"a":1}`},
	{name: "always, string", mode: DataStreamAlways, sync: true,
		ev: `{"data_stream":"logs"}`, index: "logs-generic-default", reason: "data_stream is a string, not an object"},
	{name: "always, array", mode: DataStreamAlways,
		ev: `{"data_stream":[1]}`, index: "logs-generic-default", reason: "data_stream is an array, not an object"},
	{name: "always, not an object", mode: DataStreamAlways,
		ev: `[1,2]`, index: "logs-generic-default", reason: "the event is not a JSON object, which a data stream event must be"},
	{name: "null members and @timestamp, synced", mode: DataStreamAuto, sync: true,
		ev:     `{"@timestamp":null,"data_stream":{"type":null,"dataset":"x","namespace":null}}`,
		index:  "logs-x-default",
		source: `{` + rts + `,"data_stream":{"type":"logs","dataset":"x","namespace":"default"}}`},
	{name: "null members, not synced", mode: DataStreamAuto,
		ev:     `{"@timestamp":null,"data_stream":{"type":null,"dataset":"x","namespace":null}}`,
		index:  "logs-x-default",
		source: `{` + rts + `,"data_stream":{"type":null,"dataset":"x","namespace":null}}`},
	{name: "number member", mode: DataStreamAuto, sync: true,
		ev: `{"data_stream":{"dataset":5}}`, index: "logs-generic-default", reason: "data_stream.dataset is a number, not a string"},
	{name: "boolean member", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":true}}`, index: "logs-generic-default", reason: "data_stream.namespace is a boolean, not a string"},
	{name: "escaped member", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"dataset":"nginx\u002eaccess"}}`,
		index:  "logs-nginx.access-default",
		source: `{` + ts + `,"data_stream":{"dataset":"nginx\u002eaccess"}}`},
	{name: "namespace may hold '-'", mode: DataStreamAuto,
		ev:     `{` + ts + `,"data_stream":{"namespace":"eu-west"}}`,
		index:  "logs-generic-eu-west",
		source: `{` + ts + `,"data_stream":{"namespace":"eu-west"}}`},
	{name: "invalid type", mode: DataStreamAuto,
		ev: `{"data_stream":{"type":"events"}}`, index: "events-generic-default",
		reason: `data_stream.type "events" must be one of logs, metrics, traces, synthetics`},
	{name: "uppercase dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"Nginx-Access"}}`, index: "logs-Nginx-Access-default",
		reason: `data_stream.dataset "Nginx-Access" must be lowercase`},
	{name: "'-' in dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"nginx-access"}}`, index: "logs-nginx-access-default",
		reason: `data_stream.dataset "nginx-access" must not contain "-"`},
	{name: "empty dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":""}}`, index: "logs--default", reason: `data_stream.dataset must not be empty`},
	{name: "long namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"` + strings.Repeat("n", 101) + `"}}`, index: "logs-generic-" + strings.Repeat("n", 101),
		reason: `data_stream.namespace "` + strings.Repeat("n", 101) + `" is longer than 100 bytes`},
	{name: "space in namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"a b"}}`, index: "logs-generic-a b", reason: `data_stream.namespace "a b" must not contain " "`},
	{name: "'*' in dataset", mode: DataStreamAuto,
		ev: `{"data_stream":{"dataset":"a*"}}`, index: "logs-a*-default", reason: `data_stream.dataset "a*" must not contain "*"`},
	{name: "':' in namespace", mode: DataStreamAuto,
		ev: `{"data_stream":{"namespace":"a:b"}}`, index: "logs-generic-a:b", reason: `data_stream.namespace "a:b" must not contain ":"`},
	{name: "@timestamp present: kept", mode: DataStreamAlways,
		ev:     `{"a":1,` + ts + `}`,
		index:  "logs-generic-default",
		source: `{"a":1,` + ts + `}`},
	{name: "empty event", mode: DataStreamAlways, sync: true,
		ev:     `{}`,
		index:  "logs-generic-default",
		source: `{` + rts + `,` + dsDf + `}`},
	{name: "only @metadata", mode: DataStreamAlways,
		ev:     `{` + meta + `}`,
		index:  "logs-generic-default",
		source: `{` + rts + `}`},
	{name: "whitespace", mode: DataStreamAlways, sync: true,
		ev:     `{ "@metadata" : {} , "a" : 1 , "data_stream" : { } }`,
		index:  "logs-generic-default",
		source: `{` + rts + `,  "a" : 1 , "data_stream" : {"type":"logs","dataset":"generic","namespace":"default" } }`},
	{name: "pretty-printed: compacted", mode: DataStreamAlways, sync: true,
		ev:     "{\n  \"@metadata\": {\"beat\": \"x\"},\n  \"data_stream\": {\"dataset\": \"d\"}\n}",
		index:  "logs-d-default",
		source: `{` + rts + `,"data_stream":{"type":"logs","namespace":"default","dataset":"d"}}`},
}

func sprintfMust(s string) *sprintf.Format { return sprintf.MustCompile(s) }

// routeOne routes ev as add does, in a batch of its own, and returns its
// target, source line and the original restored from the batch (or the
// dead letter's reason).
func routeOne(t *testing.T, opts Options, ev []byte) (index, source, reason string, original []byte) {
	t.Helper()
	o := &Output{opts: opts, log: slog.New(slog.DiscardHandler)}
	var rt routing
	if reason := o.route(&rt, ev, readMeta(ev).cut, routeReceived); reason != "" {
		return string(rt.name), "", reason, nil
	}
	b := newBatch(newBufPool(1, 1<<20), 1024, 1)
	var scratch []byte
	var nc nameCache
	if dead := o.add(b, 1, 0, routeReceived, ev, &scratch, &nc); dead != nil {
		t.Fatalf("add: dead letter %q, route said nothing", dead.Reason)
	}
	lines := b.buf[b.items[0].start:b.items[0].end]
	nl := bytes.IndexByte(lines, '\n')
	index, _ = actionTarget(lines)
	orig, rcv, err := b.original(b.items[0])
	if err != nil {
		t.Fatal(err)
	}
	if !rcv.Equal(routeReceived) {
		t.Errorf("kept receive time %v", rcv)
	}
	return index, string(lines[nl+1 : len(lines)-1]), "", orig
}

func TestRoutingTable(t *testing.T) {
	for _, c := range routeCases {
		t.Run(c.name, func(t *testing.T) {
			if c.source != "" && !json.Valid([]byte(c.source)) {
				t.Fatalf("the case's source is not JSON: %s", c.source)
			}
			index, source, reason, orig := routeOne(t, routeOptions(c.mode, c.sync), []byte(c.ev))
			if index != c.index || source != c.source || reason != c.reason {
				t.Errorf("got index %q, source %s, reason %q\nwant index %q, source %s, reason %q", index, source, reason, c.index, c.source, c.reason)
			}
			if reason == "" && string(orig) != c.ev {
				t.Errorf("original %q, want the event %q", orig, c.ev)
			}
		})
	}
}

func TestRoutingAutoWithoutDataStreams(t *testing.T) {
	o := &Output{opts: routeOptions(DataStreamAuto, true), cluster: &clusterCheck{}}
	o.cluster.noDataStreams.Store(true)
	var rt routing
	ev := []byte(`{` + meta + `,"data_stream":{"dataset":"x"}}`)
	if reason := o.route(&rt, ev, readMeta(ev).cut, routeReceived); reason != "" || rt.dataStream {
		t.Fatalf("auto on a cluster without data streams: data stream %v, reason %q; want the index", rt.dataStream, reason)
	}
}

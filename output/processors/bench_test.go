package processors

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// benchEvent is a Filebeat event of about 1 KiB, shaped as Filebeat 9
// sends it from a host with a few addresses, carrying message.
func benchEvent(message string) []byte {
	ev := fmt.Sprintf(`{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},`+
		`"log":{"offset":1048576,"file":{"path":"/var/log/nginx/access.log","device_id":"65024","inode":"786442"}},`+
		`"message":%s,"input":{"type":"filestream"},"ecs":{"version":"8.0.0"},`+
		`"host":{"name":"web-7","hostname":"web-7","architecture":"x86_64","os":{"kernel":"6.1.0-18-amd64","codename":"bookworm","type":"linux","platform":"debian","version":"12 (bookworm)","family":"debian","name":"Debian GNU/Linux"},"id":"9f1c2d3e4b5a69788796a5b4c3d2e1f0","containerized":false,"ip":["10.20.30.40","fe80::5054:ff:fe12:3456"],"mac":["52-54-00-12-34-56"]},`+
		`"agent":{"type":"filebeat","version":"9.3.0","ephemeral_id":"760f60ca-369e-4721-9f7e-b6a6dd214af6","id":"4fd84cab-20a6-4a65-a1ac-08c338a28968","name":"web-7"}}`,
		quoteJSON(message))
	return []byte(ev)
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// accessLine is a 200 B combined access-log line.
const accessLine = `203.0.113.195 - alice [02/Dec/2026:10:00:00 +0000] "GET /api/v1/orders/4211?expand=items HTTP/1.1" 200 5120 "https://shop.example.com/cart" "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0"`

// jsonMessage is a 300 B JSON log line.
const jsonMessage = `{"level":"error","ts":"2026-12-02T10:00:01.123Z","logger":"payments.gateway","msg":"payment failed","order_id":4211,"user":{"id":"u-9921","name":"ada"},"amount":129.95,"currency":"EUR","attempt":3,"error":{"code":"card_declined","detail":"insufficient funds"},"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`

// The chains the benchmark report measures.
const (
	benchDissectChain = `
[[processors]]
[processors.dissect]
tokenizer = '%{source.ip} %{?ident} %{user.name} [%{ts}] "%{http.request.method} %{url.original} HTTP/%{http.version}" %{http.response.status_code|integer} %{http.response.body.bytes|long} "%{http.request.referrer}" "%{user_agent.original}"'
target_prefix = ""
[[processors]]
[processors.rename]
fields = [{from = "ts", to = "apache.access.time"}]
[[processors]]
[processors.drop_fields]
fields = ["agent.ephemeral_id", "host.mac", "ecs"]
[[processors]]
[processors.add_fields]
target = "labels"
fields = {pipeline = "logpond", env = "production"}
`
	benchGrokChain = `
[[processors]]
[processors.grok.match]
message = "%{COMBINEDAPACHELOG}"
`
	benchDecodeJSONChain = `
[[processors]]
[processors.decode_json_fields]
fields = ["message"]
target = "json"
`
)

func benchChain(b *testing.B, doc string, ev []byte) {
	c := mustChain(b, doc)
	r := c.NewRunner()
	if out, keep, err := r.Run(ev); err != nil || !keep {
		b.Fatalf("keep %v err %v", keep, err)
	} else if gjson.GetBytes(out, "error").Exists() || gjson.GetBytes(out, "log.flags").Exists() || strings.Contains(string(out), "_grokparsefailure") {
		b.Fatalf("the chain failed on the event: %s", out)
	}
	benchRunner(b, r, ev)
}

// benchRunner runs r on ev b.N times, reporting bytes, allocations and
// events/s.
func benchRunner(b *testing.B, r *Runner, ev []byte) {
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := r.Run(ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkProcessing measures the report's chains on one 1 KiB Filebeat
// event each; run with GOMAXPROCS=1 for the one-core figures.
func BenchmarkProcessing(b *testing.B) {
	b.Run("parse+serialize", func(b *testing.B) {
		benchChain(b, `
[[processors]]
[processors.add_tags]
tags = ["x"]
when.has_fields = ["no.such.field"]
`, benchEvent(accessLine))
	})
	b.Run("dissect+rename+drop_fields+add_fields", func(b *testing.B) {
		benchChain(b, benchDissectChain, benchEvent(accessLine))
	})
	b.Run("grok-COMBINEDAPACHELOG", func(b *testing.B) {
		benchChain(b, benchGrokChain, benchEvent(accessLine))
	})
	b.Run("decode_json_fields", func(b *testing.B) {
		benchChain(b, benchDecodeJSONChain, benchEvent(jsonMessage))
	})
}

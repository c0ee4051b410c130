package jsontree

import (
	"strings"
	"testing"
)

// benchDoc is a Filebeat event of about 1 KiB.
const benchDoc = `{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"log":{"offset":1048576,"file":{"path":"/var/log/nginx/access.log","device_id":"65024","inode":"786442"}},"message":"203.0.113.195 - alice [02/Dec/2026:10:00:00 +0000] \"GET /api/v1/orders/4211?expand=items HTTP/1.1\" 200 5120 \"https://shop.example.com/cart\" \"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0\"","input":{"type":"filestream"},"ecs":{"version":"8.0.0"},"host":{"name":"web-7","hostname":"web-7","architecture":"x86_64","os":{"kernel":"6.1.0-18-amd64","codename":"bookworm","type":"linux","platform":"debian","version":"12 (bookworm)","family":"debian","name":"Debian GNU/Linux"},"id":"9f1c2d3e4b5a69788796a5b4c3d2e1f0","containerized":false,"ip":["10.20.30.40","fe80::5054:ff:fe12:3456"],"mac":["52-54-00-12-34-56"]},"agent":{"type":"filebeat","version":"9.3.0","ephemeral_id":"760f60ca-369e-4721-9f7e-b6a6dd214af6","id":"4fd84cab-20a6-4a65-a1ac-08c338a28968","name":"web-7"}}`

// BenchmarkExpandMarshal: a lazy parse that splits the top level only,
// and the serialization of the result.
func BenchmarkExpandMarshal(b *testing.B) {
	var p Parser
	var out []byte
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for range b.N {
		v := p.ParseValid(benchDoc)
		v.Get("no")
		out = v.MarshalTo(out[:0])
	}
}

// BenchmarkEndOfContainer: skipping the containers of a Filebeat event
// (host and agent, about 650 bytes of short strings), the scan every
// untouched container costs.
func BenchmarkEndOfContainer(b *testing.B) {
	var starts []int
	for _, k := range []string{`"host":`, `"agent":`} {
		starts = append(starts, strings.Index(benchDoc, k)+len(k))
	}
	n := 0
	for _, i := range starts {
		n += endOfContainer(benchDoc, i) - i
	}
	b.SetBytes(int64(n))
	for range b.N {
		for _, i := range starts {
			if endOfContainer(benchDoc, i) < 0 {
				b.Fatal("no end")
			}
		}
	}
}

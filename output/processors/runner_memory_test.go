package processors

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
)

// A Runner that has run a chain on events of a few KiB holds no more
// than the memory formula counts for it (conf.ChainRunnerBytes; its grok
// DFAs apart, which conf.GrokPatternBytes counts and
// TestGrokDFAMemoryBound bounds).
func TestRunnerMemoryWithinFormula(t *testing.T) {
	// Events of 1 to 4 KiB: the access line of the report's chain,
	// its user agent and referrer stretched.
	events := make([][]byte, 0, 400)
	for i := range cap(events) {
		pad := strings.Repeat("x", (i*37)%3000)
		line := fmt.Sprintf(`203.0.113.%d - user%d [02/Dec/2026:10:00:%02d +0000] "GET /api/v1/orders/%d?q=%s HTTP/1.1" %d %d "https://shop.example.com/%s" "Mozilla/5.0 (X11; Linux x86_64) %s"`,
			i%256, i, i%60, i, pad[:len(pad)/3], 200+i%5, i*17, pad[:len(pad)/3], pad[:len(pad)/3])
		events = append(events, benchEvent(line))
	}
	jsonEvents := make([][]byte, 0, 100)
	for i := range cap(jsonEvents) {
		msg := fmt.Sprintf(`{"level":"error","n":%d,"msg":%q,"user":{"id":"u-%d","tags":["a","b"]},"detail":%q}`, i, strings.Repeat("m", i*20), i, strings.Repeat("d", i*10))
		jsonEvents = append(jsonEvents, benchEvent(msg))
	}
	for _, tc := range []struct {
		name   string
		chain  string
		events [][]byte
	}{
		{"dissect chain", benchDissectChain, events},
		{"grok", benchGrokChain, events},
		{"decode_json_fields", benchDecodeJSONChain, jsonEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustChain(t, tc.chain)
			var before, after runtime.MemStats
			settle := func(ms *runtime.MemStats) {
				runtime.GC()
				runtime.GC() // a sync.Pool's contents survive one
				runtime.ReadMemStats(ms)
			}
			settle(&before)
			r := c.NewRunner()
			for range 3 {
				for _, ev := range tc.events {
					if _, _, err := r.Run(ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			settle(&after)
			dfas := 0
			for _, d := range r.ev.grok.dfas {
				if d != nil {
					dfas += d.bytes
				}
			}
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(dfas)
			t.Logf("runner holds %d KiB beside %d KiB of grok DFAs (formula: %d KiB)", held>>10, dfas>>10, conf.ChainRunnerBytes>>10)
			if held > conf.ChainRunnerBytes {
				t.Errorf("a runner holds %d bytes after events of a few KiB; the memory formula counts %d", held, conf.ChainRunnerBytes)
			}
			runtime.KeepAlive(r)
		})
	}
}

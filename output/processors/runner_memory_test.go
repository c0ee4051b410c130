package processors

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
)

// A Runner holds no more than the memory formula counts for it
// (conf.ChainRunnerBytes, and conf.GrokRunBytes with grok; its grok DFAs
// apart, which conf.GrokPatternBytes counts and TestGrokDFAMemoryBound
// bounds) after events of any size up to runnerKeepEventBytes, and again
// after an outsized event has passed.
func TestRunnerMemoryWithinFormula(t *testing.T) {
	// The access line of the report's chain, its path, referrer and user
	// agent stretched so that events run from 1 KiB to just under
	// runnerKeepEventBytes.
	accessEvent := func(i, size int) []byte {
		line := fmt.Sprintf(`203.0.113.%d - user%d [02/Dec/2026:10:00:%02d +0000] "GET /api/v1/orders/%d?q=%%s HTTP/1.1" %d %d "https://shop.example.com/%%s" "Mozilla/5.0 (X11; Linux x86_64) %%s"`,
			i%256, i, i%60, i, 200+i%5, i*17)
		pad := strings.Repeat("x", max(0, size-len(benchEvent(line))-6)/3)
		return benchEvent(fmt.Sprintf(line, pad, pad, pad))
	}
	jsonEvent := func(i, size int) []byte {
		msg := fmt.Sprintf(`{"level":"error","n":%d,"msg":"%%s","user":{"id":"u-%d","tags":["a","b"]},"detail":"%%s"}`, i, i)
		pad := strings.Repeat("m", max(0, size-len(benchEvent(msg))-8)/2)
		return benchEvent(fmt.Sprintf(msg, pad, pad))
	}
	for _, tc := range []struct {
		name    string
		chain   string
		event   func(i, size int) []byte
		formula int64
	}{
		{"dissect chain", benchDissectChain, accessEvent, conf.ChainRunnerBytes},
		{"grok", benchGrokChain, accessEvent, conf.ChainRunnerBytes + conf.GrokRunBytes},
		{"decode_json_fields", benchDecodeJSONChain, jsonEvent, conf.ChainRunnerBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events [][]byte
			for i := range 100 {
				events = append(events, tc.event(i, 1024+i*(runnerKeepEventBytes-1024)/99))
			}
			if n := len(events[len(events)-1]); n > runnerKeepEventBytes || n < runnerKeepEventBytes*9/10 {
				t.Fatalf("the largest event is %d bytes, want just under %d", n, runnerKeepEventBytes)
			}
			outsized := tc.event(7, 1<<20)
			c := mustChain(t, tc.chain)
			before := liveHeap()
			r := c.NewRunner()
			run := func(ev []byte) {
				if _, keep, err := r.Run(ev); err != nil || !keep {
					t.Fatalf("keep %v, err %v", keep, err)
				}
			}
			check := func(after string) {
				t.Helper()
				now := liveHeap()
				dfas := 0
				for _, d := range r.ev.grok.dfas {
					if d != nil {
						dfas += d.bytes
					}
				}
				held := now - before - int64(dfas)
				t.Logf("after %s: the runner holds %d KiB beside %d KiB of grok DFAs (formula: %d KiB)", after, held>>10, dfas>>10, tc.formula>>10)
				if held > tc.formula {
					t.Errorf("after %s a runner holds %d bytes; the memory formula counts %d", after, held, tc.formula)
				}
			}
			for range 2 {
				for _, ev := range events {
					run(ev)
				}
			}
			check("events of 1 to 32 KiB")
			run(outsized)
			run(events[0])
			check("a 1 MiB event and a small one")
			runtime.KeepAlive(r)
			runtime.KeepAlive(events)
			runtime.KeepAlive(outsized)
		})
	}
}

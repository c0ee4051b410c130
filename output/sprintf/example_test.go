package sprintf_test

import (
	"fmt"
	"time"

	"github.com/logpond/logpond/output/sprintf"
)

func Example() {
	index := sprintf.MustCompile("%{[@metadata][beat]}-%{[@metadata][version]}-%{+yyyy.MM.dd}")
	event := []byte(`{"@timestamp":"2026-12-02T10:57:41.210Z","@metadata":{"beat":"filebeat","type":"_doc","version":"9.3.0"},"message":"hello"}`)

	buf := make([]byte, 0, 64)
	buf, ok := index.Append(buf[:0], event, time.Now())
	fmt.Println(string(buf), ok)

	// A missing field fails, so the caller can pick a fallback index.
	buf, ok = index.Append(buf[:0], []byte(`{"message":"no metadata"}`), time.Now())
	fmt.Printf("%q %v\n", buf, ok)
	// Output:
	// filebeat-9.3.0-2026.12.02 true
	// "" false
}

func ExampleFormat_Fields() {
	f := sprintf.MustCompile("%{[@metadata][beat]}-%{host.name}-%{+xxxx.ww}")
	fmt.Println(f.Fields())
	fmt.Println(f.GJSONPaths())
	// Output:
	// [[@metadata][beat] [host.name]]
	// [\@metadata.beat host\.name]
}

package record

import (
	"bytes"
	"testing"
)

// benchEvents is a batch shaped like Filebeat's: 50 events of ~1 KiB.
func benchEvents() [][]byte {
	events := make([][]byte, 50)
	for i := range events {
		events[i] = bytes.Repeat([]byte("a"), 1024)
	}
	return events
}

// BenchmarkBuilder builds a record of a Filebeat-sized batch, as the input
// does for every batch it reads. tools/benchreport runs it with -benchmem.
func BenchmarkBuilder(b *testing.B) {
	events := benchEvents()
	var bl Builder
	b.SetBytes(int64(len(events) * 1024))
	b.ReportAllocs()
	for b.Loop() {
		bl.Reset(t0)
		for _, ev := range events {
			_ = bl.Add(ev)
		}
		bl.Finish()
	}
	// The benchmark report states allocations per event.
	b.ReportMetric(float64(len(events)), "events/op")
}

// BenchmarkDecode verifies a record and walks its events, as every
// output does for every record it reads. tools/benchreport runs it with
// -benchmem.
func BenchmarkDecode(b *testing.B) {
	enc, _ := Encode(nil, t0, benchEvents())
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		rec, err := Decode(enc)
		if err != nil {
			b.Fatal(err)
		}
		for ev := range rec.Events() {
			n += len(ev)
		}
	}
	b.ReportMetric(50, "events/op")
}

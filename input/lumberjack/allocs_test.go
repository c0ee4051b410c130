package lumberjack

import (
	"bytes"
	"testing"
)

// TestReadBatchAllocatesNothingPerEvent: reading a plain window allocates
// nothing per event once the Reader has its buffers, so that the input's
// cost per event does not grow with the garbage collector's. A frame
// header read through io.ReadFull into a local array once cost an
// allocation for every event.
func TestReadBatchAllocatesNothingPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
	const events = 256
	var stream frames
	stream.window(events)
	for i := range events {
		stream.json(uint32(i+1), `{"message":"an event of a few words"}`)
	}
	var src bytes.Reader
	r := NewReader(&src, DefaultLimits())
	defer r.Release()
	read := func() {
		src.Reset(stream.Bytes())
		n, _, err := r.ReadBatch(func([]byte) error { return nil })
		if err != nil || n != events {
			t.Fatalf("read %d events: %v", n, err)
		}
	}
	read() // the Reader takes its buffers
	if allocs := testing.AllocsPerRun(20, read); allocs > 2 {
		t.Errorf("a window of %d events costs %.0f allocations, want at most 2 (none per event)", events, allocs)
	}
}

package record

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic or read out
// of bounds; an accepted record must re-encode to exactly the same bytes; a
// rejected one must carry a *CorruptError with an offset inside the buffer.
// Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(sample(f))
	empty, _ := Encode(nil, t0, nil)
	f.Add(empty)
	f.Add(AppendAbort(nil, 3, t0))
	var b Builder
	b.Reset(t0)
	b.Add([]byte(`{"message":"part"}`))
	part, _ := b.FinishBatch(More|Cont, 513)
	f.Add(part)
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CorruptError", err)
			}
			if ce.Offset < 0 || ce.Offset > len(b) {
				t.Fatalf("offset %d outside the %d-byte input", ce.Offset, len(b))
			}
			return
		}
		var events [][]byte
		for ev := range rec.Events() {
			events = append(events, ev)
		}
		if len(events) != rec.Count() {
			t.Fatalf("iterated %d events, count says %d", len(events), rec.Count())
		}
		again, err := encode(nil, header{flags: rec.Flags(), slot: rec.Slot(), received: unixNanos(rec.Received())}, events)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding an accepted record changed it")
		}
	})
}

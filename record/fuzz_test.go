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
		if errors.Is(err, ErrCompressed) {
			return // an intact version 2 record: FuzzDecompress covers it
		}
		if err != nil {
			checkCorrupt(t, err, b)
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

// FuzzDecompress feeds arbitrary bytes to Decompressor.Decode, with a limit
// of 1 MiB. It must never panic, nor hold a buffer beyond the limit; a
// rejected record must carry a *CorruptError with an offset inside the
// buffer; an accepted one must hold its count events, and as a version 1
// record must re-encode to the same events. Seeds (version 1 and 2 records,
// whole and damaged) live in testdata/fuzz/FuzzDecompress.
func FuzzDecompress(f *testing.F) {
	const limit = 1 << 20
	v1 := sample(f)
	f.Add(v1)
	events, _ := Encode(nil, t0, filebeatish(20))
	for _, cm := range []Compression{Zstd(LevelDefault), S2(LevelFastest)} {
		c, err := NewCompressor(cm)
		if err != nil {
			f.Fatal(err)
		}
		v2, err := c.Compress(nil, events)
		c.Close()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v2)
	}
	d, err := NewDecompressor()
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := d.Decode(b, limit)
		if cap(d.buf) > limit {
			t.Fatalf("buffer of %d bytes beyond the %d-byte limit", cap(d.buf), limit)
		}
		h, verr := Verify(b)
		if verr != nil {
			checkCorrupt(t, verr, b)
		}
		if err != nil {
			checkCorrupt(t, err, b)
			return
		}
		// What decodes must verify, and say the same of itself.
		if verr != nil {
			t.Fatalf("Decode accepted a record Verify refuses: %v", verr)
		}
		if h.Count != rec.Count() || h.Stored != len(b) || h.Flags != rec.Flags() || h.Slot != rec.Slot() || !h.Received().Equal(rec.Received()) {
			t.Fatalf("Verify says %+v, Decode %d events of %d bytes", h, rec.Count(), rec.Size())
		}
		var events [][]byte
		for ev := range rec.Events() {
			events = append(events, ev)
		}
		if len(events) != rec.Count() || rec.Size() != len(b) {
			t.Fatalf("iterated %d events of %d bytes, record says %d of %d", len(events), len(b), rec.Count(), rec.Size())
		}
		again, err := encode(nil, header{flags: rec.Flags(), slot: rec.Slot(), received: unixNanos(rec.Received())}, events)
		if err != nil {
			t.Fatal(err)
		}
		if b[offVersion] == Version && !bytes.Equal(again, b) {
			t.Fatalf("re-encoding an accepted version 1 record changed it")
		}
		if h.Raw != len(again) {
			t.Fatalf("Verify says the record is %d bytes uncompressed, its events re-encode to %d", h.Raw, len(again))
		}
		if b[offVersion] == VersionCompressed && int(le.Uint32(b[offRawSize:])) != len(again)-MinSize {
			t.Fatalf("accepted a version 2 record whose events area is %d bytes, declared %d", len(again)-MinSize, le.Uint32(b[offRawSize:]))
		}
	})
}

// checkCorrupt fails the test unless err, a refusal of the input b, is a
// *CorruptError whose offset lies inside b.
func checkCorrupt(t *testing.T, err error, b []byte) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptError", err)
	}
	if ce.Offset < 0 || ce.Offset > len(b) {
		t.Fatalf("offset %d outside the %d-byte input", ce.Offset, len(b))
	}
}

package record

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 10, 57, 41, 210_000_000, time.UTC)

func collect(r Record) [][]byte {
	var out [][]byte
	for ev := range r.Events() {
		out = append(out, ev)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 16<<20) // a 16 MiB event: real users have 10 MiB lines
	many := make([][]byte, 1000)
	for i := range many {
		many[i] = []byte(fmt.Sprintf(`{"message":"event %d","n":%d}`, i, i))
	}
	cases := []struct {
		name   string
		events [][]byte
	}{
		{"zero events", nil},
		{"one event", [][]byte{[]byte(`{"message":"hello"}`)}},
		{"empty event", [][]byte{{}}},
		{"many events", many},
		{"16 MiB event", [][]byte{[]byte(`{}`), big, []byte(`{"after":true}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"Encode", "Builder"} {
				var enc []byte
				if via == "Encode" {
					var err error
					enc, err = Encode([]byte("prefix"), t0, tc.events)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(enc, []byte("prefix")) {
						t.Fatal("Encode did not append to dst")
					}
					enc = enc[len("prefix"):]
				} else {
					var b Builder
					b.Reset(t0)
					for _, ev := range tc.events {
						before := b.Size()
						if err := b.Add(ev); err != nil {
							t.Fatal(err)
						}
						if got, want := b.Size(), before+EventOverhead+len(ev); got != want {
							t.Fatalf("Size grew to %d, want %d", got, want)
						}
					}
					want := b.Size()
					enc = b.Finish()
					if len(enc) != want {
						t.Fatalf("Finish gave %d bytes, Size promised %d", len(enc), want)
					}
				}
				rec, err := Decode(enc)
				if err != nil {
					t.Fatalf("%s: %v", via, err)
				}
				if rec.Count() != len(tc.events) || rec.Size() != len(enc) {
					t.Fatalf("%s: count %d size %d, want %d %d", via, rec.Count(), rec.Size(), len(tc.events), len(enc))
				}
				if !rec.Received().Equal(t0) {
					t.Fatalf("%s: received %v, want %v", via, rec.Received(), t0)
				}
				got := collect(rec)
				if !slices.EqualFunc(got, tc.events, bytes.Equal) {
					t.Fatalf("%s: events differ after round trip", via)
				}
			}
		})
	}
}

func TestZeroReceivedTime(t *testing.T) {
	enc, err := Encode(nil, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Received().IsZero() {
		t.Fatalf("received %v, want zero time", rec.Received())
	}
}

func TestDecodeDoesNotCopy(t *testing.T) {
	enc, _ := Encode(nil, t0, [][]byte{[]byte("abc")})
	rec, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	ev := collect(rec)[0]
	enc[HeaderSize+EventOverhead] = 'X' // the first byte of the event
	if ev[0] != 'X' {
		t.Fatal("event bytes were copied out of the buffer")
	}
	if cap(ev) != len(ev) {
		t.Fatalf("event slice has cap %d > len %d: an append would overwrite the next event", cap(ev), len(ev))
	}
}

func TestNoAllocations(t *testing.T) {
	events := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`), bytes.Repeat([]byte("y"), 3000)}
	var b Builder
	dst := make([]byte, 0, 1<<16)
	// Warm up the builder's buffer once; after that nothing may allocate.
	b.Reset(t0)
	for _, ev := range events {
		_ = b.Add(ev)
	}
	b.Finish()
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset(t0)
		for _, ev := range events {
			if err := b.Add(ev); err != nil {
				t.Fatal(err)
			}
		}
		b.Finish()
		var err error
		if _, err = Encode(dst[:0], t0, events); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("encoding allocates %.1f times per record, want 0", allocs)
	}
	enc := b.Finish()
	total := 0
	allocs = testing.AllocsPerRun(100, func() {
		rec, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		for ev := range rec.Events() {
			total += len(ev)
		}
	})
	if allocs != 0 {
		t.Errorf("decoding and iterating allocate %.1f times per record, want 0", allocs)
	}
}

func TestBuilderMisuse(t *testing.T) {
	var b Builder
	if err := b.Add([]byte("x")); err == nil {
		t.Fatal("Add before Reset succeeded")
	}
	b.Reset(t0)
	_ = b.Add([]byte("x"))
	first := slices.Clone(b.Finish())
	if err := b.Add([]byte("y")); err == nil {
		t.Fatal("Add after Finish succeeded")
	}
	if !bytes.Equal(b.Finish(), first) {
		t.Fatal("a second Finish changed the record")
	}
}

// sample is a small record with a few events of different sizes.
func sample(t testing.TB) []byte {
	enc, err := Encode(nil, t0, [][]byte{[]byte(`{"message":"one"}`), {}, []byte(`{"message":"three","n":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

func TestEveryBitFlipIsDetected(t *testing.T) {
	enc := sample(t)
	for i := range enc {
		for bit := range 8 {
			damaged := slices.Clone(enc)
			damaged[i] ^= 1 << bit
			_, err := Decode(damaged)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("flip of byte %d bit %d: got %v, want a *CorruptError", i, bit, err)
			}
		}
	}
}

func TestEveryTruncationIsDetected(t *testing.T) {
	enc := sample(t)
	for n := range len(enc) {
		_, err := Decode(enc[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("truncated to %d of %d bytes: got %v, want ErrTruncated", n, len(enc), err)
		}
	}
}

// reseal recomputes the CRC, to build damage that only a faulty writer makes.
func reseal(b []byte) []byte {
	le.PutUint32(b[len(b)-TrailerSize:], checksum(b[:len(b)-TrailerSize]))
	return b
}

func TestCorruptionTable(t *testing.T) {
	cases := []struct {
		name   string
		damage func([]byte) []byte
		want   error
		offset int
	}{
		{"empty buffer", func(b []byte) []byte { return b[:0] }, ErrTruncated, 0},
		{"torn header", func(b []byte) []byte { return b[:HeaderSize-1] }, ErrTruncated, HeaderSize - 1},
		{"torn body", func(b []byte) []byte { return b[:len(b)-1] }, ErrTruncated, -1},
		{"zero-filled", func(b []byte) []byte { clear(b); return b }, ErrVersion, offVersion},
		{"future version", func(b []byte) []byte { b[offVersion] = 3; return reseal(b) }, ErrVersion, offVersion},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, ErrLength, offLength},
		{"length below minimum", func(b []byte) []byte { le.PutUint32(b[offLength:], MinSize-1); return b }, ErrLength, offLength},
		{"flipped event byte", func(b []byte) []byte { b[HeaderSize+EventOverhead] ^= 0x20; return b }, ErrChecksum, -1},
		{"flipped crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrChecksum, -1},
		{"unknown flag", func(b []byte) []byte { b[offFlags] = 0x10; return reseal(b) }, ErrFlags, offFlags},
		{"top flag bit", func(b []byte) []byte { b[offFlags] = 0x80 | byte(More); return reseal(b) }, ErrFlags, offFlags},
		{"abort with events", func(b []byte) []byte { b[offFlags] = byte(Abort); return reseal(b) }, ErrFlags, offFlags},
		{"void with events", func(b []byte) []byte { b[offFlags] = byte(Void); return reseal(b) }, ErrFlags, offFlags},
		{"count too high", func(b []byte) []byte { le.PutUint32(b[offCount:], 4); return reseal(b) }, ErrLayout, -1},
		{"count too low", func(b []byte) []byte { le.PutUint32(b[offCount:], 2); return reseal(b) }, ErrLayout, -1},
		{"event length past end", func(b []byte) []byte { le.PutUint32(b[HeaderSize:], 1000); return reseal(b) }, ErrLayout, HeaderSize},
		{"huge count", func(b []byte) []byte { le.PutUint32(b[offCount:], 1<<32-1); return reseal(b) }, ErrLayout, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(sample(t))
			_, err := Decode(b)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want a *CorruptError wrapping %v", err, tc.want)
			}
			if tc.offset >= 0 && ce.Offset != tc.offset {
				t.Fatalf("offset %d, want %d (%v)", ce.Offset, tc.offset, err)
			}
			if ce.Offset < 0 || ce.Offset > len(b) {
				t.Fatalf("offset %d outside the %d-byte buffer", ce.Offset, len(b))
			}
		})
	}
}

func TestSizeOf(t *testing.T) {
	enc := sample(t)
	n, err := SizeOf(enc[:HeaderSize])
	if err != nil || n != len(enc) {
		t.Fatalf("SizeOf = %d, %v; want %d", n, err, len(enc))
	}
	if _, err := SizeOf(make([]byte, HeaderSize)); !errors.Is(err, ErrVersion) {
		t.Fatalf("SizeOf(zeros) = %v, want ErrVersion", err)
	}
}

// TestRandomRoundTrip encodes random batches; the seed is logged so a
// failure can be replayed.
func TestRandomRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	var b Builder
	for range 200 {
		events := make([][]byte, rng.IntN(50))
		for i := range events {
			events[i] = make([]byte, rng.IntN(2000))
			for j := range events[i] {
				events[i][j] = byte(rng.Uint32())
			}
		}
		b.Reset(t0)
		for _, ev := range events {
			if err := b.Add(ev); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := Decode(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(collect(rec), events, bytes.Equal) {
			t.Fatal("events differ after round trip")
		}
	}
}

func TestBatchFlags(t *testing.T) {
	events := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}
	for _, tc := range []struct {
		flags Flags
		slot  uint16
	}{{0, 0}, {More, 7}, {More | Cont, 65535}, {Cont, 1}} {
		var b Builder
		b.Reset(t0)
		for _, ev := range events {
			if err := b.Add(ev); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := b.FinishBatch(tc.flags, tc.slot)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s slot %d: %v", tc.flags, tc.slot, err)
		}
		if rec.Flags() != tc.flags || rec.Slot() != tc.slot || rec.Count() != 2 {
			t.Fatalf("decoded flags %s slot %d count %d, want %s %d 2", rec.Flags(), rec.Slot(), rec.Count(), tc.flags, tc.slot)
		}
		f, slot, err := Peek(enc[:HeaderSize])
		if err != nil || f != tc.flags || slot != tc.slot {
			t.Fatalf("Peek = %s %d %v, want %s %d", f, slot, err, tc.flags, tc.slot)
		}
		// The void record that replaces it: no event, same time and slot.
		void, err := AppendVoid([]byte("x"), enc)
		if err != nil {
			t.Fatal(err)
		}
		vr, err := Decode(void[1:])
		if err != nil {
			t.Fatal(err)
		}
		if vr.Flags() != Void || vr.Slot() != tc.slot || vr.Count() != 0 || !vr.Received().Equal(t0) || vr.Size() != MinSize {
			t.Fatalf("void record: flags %s slot %d count %d received %v size %d", vr.Flags(), vr.Slot(), vr.Count(), vr.Received(), vr.Size())
		}
	}
	// A record written before flags existed (flags 0, slot 0) is a whole
	// batch.
	old := sample(t)
	if rec, err := Decode(old); err != nil || rec.Flags() != 0 || rec.Slot() != 0 {
		t.Fatalf("a record without flags: %v, flags %s, slot %d", err, rec.Flags(), rec.Slot())
	}
	abort := AppendAbort(nil, 300, t0)
	rec, err := Decode(abort)
	if err != nil || rec.Flags() != Abort || rec.Slot() != 300 || rec.Count() != 0 {
		t.Fatalf("abort record: %v, flags %s, slot %d, count %d", err, rec.Flags(), rec.Slot(), rec.Count())
	}
	var b Builder
	b.Reset(t0)
	for _, f := range []Flags{Abort, Void, More | Abort, 0x10} {
		if _, err := b.FinishBatch(f, 1); err == nil {
			t.Fatalf("FinishBatch accepted flags %s", f)
		}
	}
	for _, bad := range []Flags{Abort | Void, Abort | Cont, Void | More} {
		enc := AppendAbort(nil, 1, t0)
		enc[offFlags] = byte(bad)
		if _, err := Decode(reseal(enc)); !errors.Is(err, ErrFlags) {
			t.Fatalf("flags %s: got %v, want ErrFlags", bad, err)
		}
		if _, _, err := Peek(enc); !errors.Is(err, ErrFlags) {
			t.Fatalf("Peek, flags %s: got %v, want ErrFlags", bad, err)
		}
	}
	if got := (More | Cont).String(); got != "more|cont" {
		t.Fatalf("String = %q", got)
	}
}

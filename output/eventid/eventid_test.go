package eventid

import (
	"regexp"
	"strconv"
	"testing"
)

// TestAppend: the id of an event is its stream's prefix, its record's LSN
// and its position, and the prefix is the UUID's bytes in base64.
func TestAppend(t *testing.T) {
	p, err := Prefix("0b4e7a2c-6f0e-4d59-9d55-3f1b7c3a9e10")
	if err != nil {
		t.Fatal(err)
	}
	if p != "C056LG8OTVmdVT8bfDqeEA" || len(p) != PrefixLen {
		t.Fatalf("prefix %q", p)
	}
	if got := string(Append([]byte("x"), p, 12345, 7)); got != "x"+p+"-12345-7" {
		t.Fatalf("id %q", got)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]+-[0-9]+-[0-9]+$`).MatchString(string(Append(nil, p, 1<<63, 1<<20))) {
		t.Fatal("the id holds characters that JSON would escape")
	}
}

// TestPrefixRefusesNonUUID: a stream id that is not a UUID is an error,
// not an id that could collide with another stream's.
func TestPrefixRefusesNonUUID(t *testing.T) {
	if _, err := Prefix("not-a-uuid"); err == nil {
		t.Fatal("no error")
	}
}

// TestAppendDecimalIsStrconv: ids are written with strconv's digits, at
// every length and at the edges of uint64.
func TestAppendDecimalIsStrconv(t *testing.T) {
	vals := []uint64{0, 1, 9, 10, 11, 99, 100, 101, 2047, 2048, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	for v := uint64(1); v < 1<<63; v *= 10 {
		vals = append(vals, v-1, v, v+1)
	}
	for _, v := range vals {
		prefix := []byte("id-")
		if got, want := appendDecimal(prefix, v), strconv.AppendUint([]byte("id-"), v, 10); string(got) != string(want) {
			t.Errorf("appendDecimal(%d) = %q, want %q", v, got, want)
		}
	}
	if got := Append(nil, "p", 12, -3); string(got) != "p-12--3" {
		t.Errorf("a negative position: %q", got)
	}
}

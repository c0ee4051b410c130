package record

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

func TestCloneSurvivesTheOriginalBuffer(t *testing.T) {
	evs := [][]byte{[]byte(`{"a":1}`), {}, []byte(`{"b":"two"}`)}
	buf, err := Encode(nil, time.Unix(0, 12345), evs)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	dst, c := rec.Clone([]byte("prefix"))
	if !bytes.HasPrefix(dst, []byte("prefix")) {
		t.Fatalf("Clone lost what dst held: %q", dst)
	}
	for i := range buf {
		buf[i] = 0xff // the reader's buffer is reused
	}
	if c.Count() != 3 || c.Received() != time.Unix(0, 12345) || c.Size() != rec.Size() {
		t.Fatalf("clone: count %d received %v size %d", c.Count(), c.Received(), c.Size())
	}
	if got := slices.Collect(c.Events()); len(got) != 3 || string(got[0]) != `{"a":1}` || len(got[1]) != 0 || string(got[2]) != `{"b":"two"}` {
		t.Fatalf("clone events %q", got)
	}
}

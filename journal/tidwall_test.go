package journal

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidwall/wal"
)

// TestTidwallLayout guards the reflective workarounds of tidwall.go: if a
// tidwall upgrade renames or retypes the fields, this fails.
func TestTidwallLayout(t *testing.T) {
	w, err := wal.Open(filepath.Join(t.TempDir(), "w"), &wal.Options{NoSync: true, SegmentSize: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := tidwallFile(w); !ok {
		t.Fatal("tidwall's segment file field is gone: Close cannot close it after a failure")
	}
	if !presize(w, 1<<20, nil) {
		t.Fatal("tidwall's segment buffer field is gone: presize cannot work")
	}
	ebuf := reflect.ValueOf(w).Elem().FieldByName("segments").Index(0).Elem().FieldByName("ebuf")
	if ebuf.Cap() != 1<<20 {
		t.Fatalf("presize set capacity %d, want %d", ebuf.Cap(), 1<<20)
	}
	// tidwall still works on the presized buffer.
	if err := w.Write(1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got, err := w.Read(1); err != nil || string(got) != "hello" {
		t.Fatalf("read back %q, %v", got, err)
	}
	// The buffer can be taken over by the next log, which then writes into
	// it from the start.
	buf := takeTailBuffer(w)
	if cap(buf) != 1<<20 || len(buf) == 0 {
		t.Fatalf("takeTailBuffer: len %d cap %d", len(buf), cap(buf))
	}
	w2, err := wal.Open(filepath.Join(t.TempDir(), "w2"), &wal.Options{NoSync: true, SegmentSize: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if !presize(w2, 1<<20, buf) {
		t.Fatal("presize with a reused buffer failed")
	}
	if err := w2.Write(1, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if got, err := w2.Read(1); err != nil || string(got) != "again" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if &takeTailBuffer(w2)[0] != &buf[:1][0] {
		t.Fatal("the second log does not write into the reused buffer")
	}
}

// TestTidwallWritesIntoReplacedFile guards recycling: an empty log handed
// another file writes its entries there, from that file's offset 0, and
// nowhere else; a log holding entries refuses.
func TestTidwallWritesIntoReplacedFile(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(filepath.Join(dir, "w"), &wal.Options{NoSync: true, SegmentSize: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	recycled := filepath.Join(dir, "recycled")
	if err := os.WriteFile(recycled, bytes.Repeat([]byte{0xee}, 4096), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(recycled, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	created, ok := replaceEmptySegmentFile(w, f)
	if !ok {
		t.Fatal("tidwall's segment file field is gone: recycling cannot work")
	}
	created.Close()
	if err := w.Write(1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(recycled)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{5}, "hello"...); !bytes.Equal(got[:6], want) || got[6] != 0xee || len(got) != 4096 {
		t.Fatalf("recycled file starts %q, want %q then the old bytes", got[:8], want)
	}
	if st, _ := os.Stat(filepath.Join(dir, "w", segmentFile)); st.Size() != 0 {
		t.Fatalf("tidwall's own file got %d bytes", st.Size())
	}
	if _, ok := replaceEmptySegmentFile(w, f); ok {
		t.Fatal("replaced the file of a log that holds an entry")
	}
}

// takeTailBuffer is what tidwallSegment.Close hands the next generation.
func takeTailBuffer(l *wal.Log) []byte {
	ebuf, ok := tailBuffer(l)
	if !ok {
		return nil
	}
	return ebuf.Bytes()
}

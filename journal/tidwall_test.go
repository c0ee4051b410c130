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

// TestTidwallContinuesAdoptedFile guards openUnread: an empty log handed a
// segment file of another log, holding three entries and positioned at
// its end, numbers its next entry 4 and writes it after them, so that the
// file reads back as one log of four entries; a log holding entries
// refuses.
func TestTidwallContinuesAdoptedFile(t *testing.T) {
	dir := t.TempDir()
	orig, err := wal.Open(filepath.Join(dir, "orig"), tidwallOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range []string{"one", "two", "three"} {
		if err := orig.Write(uint64(i+1), []byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := orig.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := wal.Open(filepath.Join(dir, "scratch"), tidwallOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f, err := os.OpenFile(filepath.Join(dir, "orig", segmentFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 2); err != nil {
		t.Fatal(err)
	}
	created, ok := adoptSegmentFile(w, f, 3)
	if !ok {
		t.Fatal("tidwall's segment file or last index field is gone: openUnread cannot work")
	}
	created.Close()
	if last, err := w.LastIndex(); err != nil || last != 3 {
		t.Fatalf("adopted log's last index %d, %v; want 3", last, err)
	}
	if err := w.Write(4, []byte("four")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "scratch", segmentFile)); st.Size() != 0 {
		t.Fatalf("tidwall's own file got %d bytes", st.Size())
	}
	if _, ok := adoptSegmentFile(w, f, 4); ok {
		t.Fatal("a log that holds an entry adopted a file")
	}
	back, err := wal.Open(filepath.Join(dir, "orig"), tidwallOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	for i, want := range []string{"one", "two", "three", "four"} {
		if got, err := back.Read(uint64(i + 1)); err != nil || string(got) != want {
			t.Fatalf("entry %d reads %q, %v; want %q", i+1, got, err, want)
		}
	}
}

// TestOpenRemovesScratchLeftovers: a scratch directory a crash left in the
// journal directory while a generation was opened is removed by the next
// Open, which continues the generation.
func TestOpenRemovesScratchLeftovers(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, smallOpts())
	mustAppend(t, j, rec(t, 1, 1, 10))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, openingDir)
	if err := os.MkdirAll(scratch, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scratch, segmentFile), []byte("left by a crash"), 0o640); err != nil {
		t.Fatal(err)
	}
	j = mustOpen(t, dir, smallOpts())
	defer j.Close()
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Fatalf("the scratch directory is still there: %v", err)
	}
	if lsn := mustAppend(t, j, rec(t, 1, 2, 10)); lsn != 2 {
		t.Fatalf("appended at LSN %d, want 2", lsn)
	}
	if got := readAll(t, j); len(got) != 2 {
		t.Fatalf("read %d records, want 2", len(got))
	}
	if gens := j.gensSnapshot(); len(gens) != 1 {
		t.Fatalf("%d generations, want the one reopened", len(gens))
	}
}

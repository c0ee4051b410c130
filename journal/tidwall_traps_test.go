package journal

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidwall/wal"
)

// TestTidwallLayout guards the two reflective workarounds: if a tidwall
// upgrade renames or retypes the fields, this fails.
func TestTidwallLayout(t *testing.T) {
	w, err := wal.Open(filepath.Join(t.TempDir(), "w"), &wal.Options{NoSync: true, SegmentSize: math.MaxInt})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := tidwallFile(w); !ok {
		t.Fatal("tidwall's segment file field is gone: forceClose cannot work")
	}
	if !presize(w, 1<<20) {
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
}

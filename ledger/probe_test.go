package ledger

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirectIOProbe mounts a ramfs (which refuses O_DIRECT): with
// direct_io = true Open fails naming the directory and the setting to
// change; with direct_io = false the same directory works.
func TestDirectIOProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a ramfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ramfs", "ramfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount ramfs: %v: %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	dir := filepath.Join(mnt, "ledger")
	_, err := Open(dir, Options{SegmentBytes: 1 << 20, DirectIO: true})
	if err == nil || !strings.Contains(err.Error(), dir+" does not support O_DIRECT") || !strings.Contains(err.Error(), "direct_io = false") {
		t.Fatalf("got %v, want a message naming %s and direct_io = false", err, dir)
	}
	l, err := Open(dir, Options{SegmentBytes: 1 << 20, DirectIO: false})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, 1, 10, 100, true)
	l.Close()
}

package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/testkit/powerloss"
)

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir("/nonexistent/dir"); err == nil || !strings.Contains(err.Error(), "/nonexistent/dir") {
		t.Fatalf("got %v, want an error naming the directory", err)
	}
}

// TestConfirm checks the confirmation on every kind of descriptor the
// stores sync (written, read-only, O_DIRECT, a directory): it passes on a
// live file system, changes nothing, and fails once the file system has
// shut down, which is what makes a sync that overlapped the shutdown
// count for nothing.
func TestConfirm(t *testing.T) {
	disk := powerloss.New(t, 32<<20)
	path := filepath.Join(disk.Dir, "seg")
	if err := os.WriteFile(path, []byte("twelve bytes"), 0o640); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		name string
		open func() (*os.File, error)
	}{
		{"written", func() (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }},
		{"read-only", func() (*os.File, error) { return os.Open(path) }},
		{"O_DIRECT", func() (*os.File, error) { return os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0) }},
		{"directory", func() (*os.File, error) { return os.Open(disk.Dir) }},
	}
	files := make([]*os.File, len(kinds))
	for i, k := range kinds {
		f, err := k.open()
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		defer f.Close()
		files[i] = f
		if err := Fdatasync(f); err != nil {
			t.Errorf("%s: Fdatasync on a live file system: %v", k.name, err)
		}
		if err := Fsync(f); err != nil {
			t.Errorf("%s: Fsync on a live file system: %v", k.name, err)
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("confirming changed the file: size %d → %d, mtime %v → %v", before.Size(), after.Size(), before.ModTime(), after.ModTime())
	}
	if err := disk.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for i, k := range kinds {
		if err := Confirm(files[i]); err == nil || !strings.Contains(err.Error(), files[i].Name()) {
			t.Errorf("%s: Confirm after the file system shut down: %v, want an error naming the file", k.name, err)
		}
	}
}

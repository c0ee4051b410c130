package lumberload

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTrash(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "naive-1")
	store := filepath.Join(dir, "journal")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(store, "gen-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	var tr Trash
	for _, p := range []string{file, store, filepath.Join(dir, "missing")} {
		if err := tr.Move(p); err != nil {
			t.Fatalf("Move(%s): %v", p, err)
		}
	}
	for _, p := range []string{file, store} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still there after Move (err %v)", p, err)
		}
	}
	moved, _ := os.ReadDir(filepath.Join(dir, ".lumberload-trash"))
	if len(moved) != 2 {
		t.Fatalf("trash holds %d entries, want 2", len(moved))
	}
	if err := tr.Empty(0); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("after Empty the directory holds %v", left)
	}
}

package fsutil

import (
	"strings"
	"testing"
)

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir("/nonexistent/dir"); err == nil || !strings.Contains(err.Error(), "/nonexistent/dir") {
		t.Fatalf("got %v, want an error naming the directory", err)
	}
}

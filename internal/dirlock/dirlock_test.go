package dirlock

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestSecondAcquireFailsUntilRelease(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A second open file description conflicts even within one process,
	// which is what lets this test stand in for a second process.
	_, err = Acquire(dir)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second Acquire: got %v, want *LockedError", err)
	}
	if le.PID != os.Getpid() || !strings.Contains(err.Error(), first.Path()) {
		t.Fatalf("error %q should name the lock file and pid %d", err, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	again.Release()
}

func TestMissingDir(t *testing.T) {
	if _, err := Acquire(t.TempDir() + "/nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("got %v, want an error naming the directory", err)
	}
}

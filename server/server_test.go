package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/dirlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testConfig(t *testing.T, journal, ledger string) *conf.Config {
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = journal, ledger
	cfg.Input.Beats.Listen = "127.0.0.1:0"   // tests bind only to loopback, port 0
	cfg.Output.Elasticsearch.Enabled = false // these tests look at the stores only
	cfg.Admin.Listen = ""
	return &cfg
}

func TestOpenLocksBothDirs(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t, filepath.Join(root, "journal"), filepath.Join(root, "ledger"))
	s, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{cfg.Journal.Dir, cfg.Ledger.Dir} {
		if _, err := os.Stat(filepath.Join(dir, dirlock.FileName)); err != nil {
			t.Fatalf("%s was not locked: %v", dir, err)
		}
	}
	_, err = Open(cfg, slog.New(slog.DiscardHandler))
	var le *dirlock.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "journal.dir") {
		t.Fatalf("second Open: got %v, want a lock error naming journal.dir", err)
	}
	// A second server sharing only the ledger directory is refused too.
	cfg2 := testConfig(t, filepath.Join(root, "journal2"), cfg.Ledger.Dir)
	if _, err := Open(cfg2, slog.New(slog.DiscardHandler)); !errors.As(err, &le) || !strings.Contains(err.Error(), "ledger.dir") {
		t.Fatalf("Open sharing the ledger: got %v, want a lock error naming ledger.dir", err)
	}
	// The refused Open created journal2: it removed it again, so nothing
	// stays locked or behind.
	if _, err := os.Stat(cfg2.Journal.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed Open left journal2 behind: %v", err)
	}
	// An existing journal2 is not removed, and not left locked.
	if err := os.Mkdir(cfg2.Journal.Dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg2, slog.New(slog.DiscardHandler)); !errors.As(err, &le) {
		t.Fatalf("Open sharing the ledger: got %v, want a lock error", err)
	}
	if l, err := dirlock.Acquire(cfg2.Journal.Dir); err != nil {
		t.Fatalf("failed Open left journal2 locked: %v", err)
	} else {
		l.Release()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

func TestOpenDirErrors(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		name, journal, want string
	}{
		{"missing parent", filepath.Join(root, "no/such/journal"), "parent directory " + filepath.Join(root, "no/such") + " does not exist"},
		{"not a directory", file, "is not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(testConfig(t, tc.journal, filepath.Join(root, "ledger")), slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "journal.dir") {
				t.Fatalf("got %v, want an error naming journal.dir and saying %q", err, tc.want)
			}
		})
	}
}

func TestSameDeviceWarning(t *testing.T) {
	root := t.TempDir()
	var logbuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logbuf, nil))
	s, err := Open(testConfig(t, filepath.Join(root, "j"), filepath.Join(root, "l")), log)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(logbuf.String(), "level=WARN") || !strings.Contains(logbuf.String(), "SHARE A DEVICE") {
		t.Fatalf("no same-device warning in log:\n%s", logbuf.String())
	}

	// /dev/shm is a tmpfs: a different device from the test's temp dir.
	shm, err := os.MkdirTemp("/dev/shm", "logpond-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put the ledger on another device: %v", err)
	}
	defer os.RemoveAll(shm)
	logbuf.Reset()
	s, err = Open(testConfig(t, filepath.Join(root, "j2"), filepath.Join(shm, "l")), log)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if strings.Contains(logbuf.String(), "SHARE A DEVICE") {
		t.Fatalf("warned about a shared device for %s and %s:\n%s", root, shm, logbuf.String())
	}
}

func TestRunStopsWithContext(t *testing.T) {
	root := t.TempDir()
	s, err := Open(testConfig(t, filepath.Join(root, "j"), filepath.Join(root, "l")), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}

package server

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/dirlock"
)

// heldPort returns a loopback address a listener of the test holds.
func heldPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestFailedStartLeavesNoDirectories: when start fails after the store
// directories were created (a port in use, a TLS file missing), the
// directories it created are gone again; directories that existed stay,
// with what they held.
func TestFailedStartLeavesNoDirectories(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"admin port in use", "admin.listen"},
		{"beats port in use", "listen"},
		{"TLS certificate missing", "input.beats.tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := lagConfig(t, "http://"+closedAddr(t))
			cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
			switch tc.name {
			case "admin port in use":
				cfg.Admin.Listen = heldPort(t)
			case "beats port in use":
				cfg.Input.Beats.Listen = heldPort(t)
			case "TLS certificate missing":
				cfg.Input.Beats.TLS.Cert, cfg.Input.Beats.TLS.Key = filepath.Join(root, "no.crt"), filepath.Join(root, "no.key")
			}
			_, err := Open(cfg, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want an error naming %s", err, tc.want)
			}
			for _, d := range []string{cfg.Journal.Dir, cfg.Ledger.Dir} {
				if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is left behind (%v)", d, err)
				}
			}
		})
	}
	t.Run("existing directories stay", func(t *testing.T) {
		root := t.TempDir()
		cfg := lagConfig(t, "http://"+closedAddr(t))
		cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
		s, err := Open(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		stream := s.ledger().StreamID()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cfg.Admin.Listen = heldPort(t)
		if _, err := Open(cfg, slog.New(slog.DiscardHandler)); err == nil {
			t.Fatal("Open succeeded on a port in use")
		}
		s, err = Open(lagConfigDirs(t, cfg.Journal.Dir, cfg.Ledger.Dir), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := s.ledger().StreamID(); got != stream {
			t.Errorf("the ledger's stream id changed from %s to %s: the existing ledger was removed", stream, got)
		}
	})
}

func lagConfigDirs(t *testing.T, journal, ledger string) *conf.Config {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	cfg.Journal.Dir, cfg.Ledger.Dir = journal, ledger
	return cfg
}

// TestStoresOpenBeforePortsBind: with the stores locked by another
// logpond and both ports in use, start fails on the lock: logpond opens
// its stores before it binds its ports, so a second instance never takes
// (or fights over) the ports of the one that runs.
func TestStoresOpenBeforePortsBind(t *testing.T) {
	cfg := lagConfig(t, "http://"+closedAddr(t))
	first, err := Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second := *cfg
	second.Admin.Listen, second.Input.Beats.Listen = heldPort(t), heldPort(t)
	_, err = Open(&second, slog.New(slog.DiscardHandler))
	var le *dirlock.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Open: %v; want the lock error, before any port is tried", err)
	}
}

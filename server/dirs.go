package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/fsutil"
)

// lockDirs prepares and locks the journal and ledger directories, and
// warns when they share a device.
func (s *Server) lockDirs() error {
	dirs := []struct{ key, dir string }{
		{"journal.dir", s.cfg.Journal.Dir},
		{"ledger.dir", s.cfg.Ledger.Dir},
	}
	var devs []uint64
	for _, d := range dirs {
		abs, err := s.prepareDir(d.key, d.dir)
		if err != nil {
			return err
		}
		l, err := dirlock.Acquire(abs)
		if err != nil {
			return fmt.Errorf("server: %s: %w", d.key, err)
		}
		s.locks = append(s.locks, l)
		var st unix.Stat_t
		if err := unix.Stat(abs, &st); err != nil {
			return fmt.Errorf("server: stat %s %s: %w", d.key, abs, err)
		}
		devs = append(devs, st.Dev)
	}
	if devs[0] == devs[1] {
		// Loud on purpose: with one device, ledger catch-up I/O and page
		// cache pressure land on the disk every acknowledgement fsyncs to.
		s.log.Warn("JOURNAL AND LEDGER SHARE A DEVICE: ledger I/O will slow acknowledgements; put journal.dir and ledger.dir on different devices for production",
			"journal.dir", s.cfg.Journal.Dir, "ledger.dir", s.cfg.Ledger.Dir,
			"device", fmt.Sprintf("%d:%d", unix.Major(devs[0]), unix.Minor(devs[0])))
	}
	return nil
}

// prepareDir is the package's prepareDir, remembering the directories it
// creates for removeCreated.
func (s *Server) prepareDir(key, dir string) (string, error) {
	abs, created, err := prepareDir(key, dir)
	if created {
		s.created = append(s.created, abs)
	}
	return abs, err
}

// removeCreated closes what a failed Open opened and removes the
// directories it created, newest first, so that a failed start leaves
// nothing behind (they hold only what this Open wrote: nothing was
// acknowledged into them).
func (s *Server) removeCreated() {
	s.Close()
	for i := len(s.created) - 1; i >= 0; i-- {
		if err := os.RemoveAll(s.created[i]); err != nil {
			s.log.Warn("removing a directory the failed start created", "dir", s.created[i], "err", err)
		}
	}
	s.created = nil
}

// prepareDir returns the absolute form of dir, creating dir when its parent
// exists (created says so). A missing parent is an error rather than a
// MkdirAll, so a typo in the configuration does not silently create a tree
// somewhere else.
func prepareDir(key, dir string) (abs string, created bool, err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("server: %s %q: %w", key, dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err == nil && !st.IsDir():
		return "", false, fmt.Errorf("server: %s %s is not a directory: point %s at a directory", key, abs, key)
	case err == nil:
		return abs, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("server: %s %s: %w", key, abs, err)
	}
	parent := filepath.Dir(abs)
	if _, err := os.Stat(parent); err != nil {
		return "", false, fmt.Errorf("server: %s %s: parent directory %s does not exist: create it, or fix %s", key, abs, parent, key)
	}
	if err := os.Mkdir(abs, 0o750); err != nil {
		return "", false, fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	// fsync the parent so the new directory's entry survives a power cut
	// before anything inside it is relied on.
	if err := fsutil.SyncDir(parent); err != nil {
		return abs, true, fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	return abs, true, nil
}

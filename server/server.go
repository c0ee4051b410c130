// Package server assembles logpond: it owns the data directories and, as the
// pipeline grows, the journal, the flusher, the ledger, the inputs and the
// outputs, and it stops them in order.
//
// Today it prepares and locks the two data directories (so a second logpond
// on the same directories refuses to start), checks that they sit on
// different devices, logs the pipeline it is configured to run, and waits
// for its context to end.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/fsutil"
)

// Server is an opened logpond instance. Open, then Run, then Close.
type Server struct {
	cfg   *conf.Config
	log   *slog.Logger
	locks []*dirlock.Lock // journal, ledger; released by Close
}

// Open prepares the journal and ledger directories (creating each if its
// parent exists), locks both, and warns when they share a device. On error
// nothing stays locked.
func Open(cfg *conf.Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log}
	dirs := []struct{ key, dir string }{
		{"journal.dir", cfg.Journal.Dir},
		{"ledger.dir", cfg.Ledger.Dir},
	}
	var devs []uint64
	for _, d := range dirs {
		abs, err := prepareDir(d.key, d.dir)
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := dirlock.Acquire(abs)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("server: %s: %w", d.key, err)
		}
		s.locks = append(s.locks, l)
		var st unix.Stat_t
		if err := unix.Stat(abs, &st); err != nil {
			s.Close()
			return nil, fmt.Errorf("server: stat %s %s: %w", d.key, abs, err)
		}
		devs = append(devs, st.Dev)
	}
	if devs[0] == devs[1] {
		// Loud on purpose: with one device, ledger catch-up I/O and page
		// cache pressure land on the disk every acknowledgement fsyncs to.
		log.Warn("JOURNAL AND LEDGER SHARE A DEVICE: ledger I/O will slow acknowledgements; put journal.dir and ledger.dir on different devices for production",
			"journal.dir", cfg.Journal.Dir, "ledger.dir", cfg.Ledger.Dir,
			"device", fmt.Sprintf("%d:%d", unix.Major(devs[0]), unix.Minor(devs[0])))
	}
	return s, nil
}

// prepareDir returns the absolute form of dir, creating dir when its parent
// exists. A missing parent is an error rather than a MkdirAll, so a typo in
// the configuration does not silently create a tree somewhere else.
func prepareDir(key, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("server: %s %q: %w", key, dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err == nil && !st.IsDir():
		return "", fmt.Errorf("server: %s %s is not a directory: point %s at a directory", key, abs, key)
	case err == nil:
		return abs, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("server: %s %s: %w", key, abs, err)
	}
	parent := filepath.Dir(abs)
	if _, err := os.Stat(parent); err != nil {
		return "", fmt.Errorf("server: %s %s: parent directory %s does not exist: create it, or fix %s", key, abs, parent, key)
	}
	if err := os.Mkdir(abs, 0o750); err != nil {
		return "", fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	// fsync the parent so the new directory's entry survives a power cut
	// before anything inside it is relied on.
	if err := fsutil.SyncDir(parent); err != nil {
		return "", fmt.Errorf("server: create %s %s: %w", key, abs, err)
	}
	return abs, nil
}

// Run logs the configured pipeline and blocks until ctx is done. It returns
// nil on a requested stop.
func (s *Server) Run(ctx context.Context) error {
	c := s.cfg
	s.log.Info("journal configured", "dir", c.Journal.Dir, "segment_bytes", c.Journal.SegmentBytes.String(),
		"max_bytes", c.Journal.MaxBytes.String(), "max_group_wait", c.Journal.MaxGroupWait.String(), "max_group_bytes", c.Journal.MaxGroupBytes.String())
	s.log.Info("ledger configured", "dir", c.Ledger.Dir, "segment_bytes", c.Ledger.SegmentBytes.String(),
		"max_bytes", c.Ledger.MaxBytes.String(), "flush_interval", c.Ledger.FlushInterval.String(),
		"retention", c.Ledger.Retention.String(), "direct_io", c.Ledger.DirectIO)
	s.log.Info("would run", "input", "beats", "listen", c.Input.Beats.Listen)
	s.log.Info("would run", "output", "elasticsearch", "hosts", c.Output.Elasticsearch.Hosts)
	if c.Admin.Listen != "" {
		s.log.Info("would run", "admin", c.Admin.Listen)
	}
	s.log.Info("pipeline not assembled yet: holding the directory locks until stopped")
	<-ctx.Done()
	return nil
}

// Close releases the directory locks. It is safe to call more than once.
func (s *Server) Close() error {
	var errs []error
	for _, l := range s.locks {
		errs = append(errs, l.Release())
	}
	s.locks = nil
	return errors.Join(errs...)
}

package dlq

import (
	"errors"
	"time"
)

// retain applies Options.MaxAge at once and then every retainEvery until
// Close. Its failures are logged; one that poisoned the store also fails
// the next Append, which the output reports.
func (s *Store) retain() {
	defer close(s.retained)
	tick := time.NewTicker(s.opts.hooks.retainEvery)
	defer tick.Stop()
	for {
		if _, err := s.expire(); err != nil && !errors.Is(err, ErrClosed) {
			s.log.Error("dlq: deleting dead letters older than the maximum age failed; trying again later", "dir", s.dir, "max_age", s.opts.MaxAge.String(), "err", err)
		}
		select {
		case <-tick.C:
		case <-s.closing:
			return
		}
	}
}

// expire deletes the files whose entries all failed more than MaxAge ago,
// and logs what it deleted.
func (s *Store) expire() (Purged, error) {
	now := s.opts.hooks.now()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	p, err := s.purgeFailedBeforeLocked(now.Add(-s.opts.MaxAge))
	if p.Files > 0 {
		s.mu.Lock()
		kept := len(s.files)
		s.mu.Unlock()
		s.log.Info("dlq: deleted dead letters older than the maximum age", "dir", s.dir, "max_age", s.opts.MaxAge.String(),
			"files", p.Files, "entries", p.Entries, "bytes", p.Bytes, "files_kept", kept)
	}
	return p, err
}

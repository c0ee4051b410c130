package server

import (
	"github.com/logpond/logpond/conf"
)

// Reload applies what of cfg, the configuration file read again (on
// SIGHUP), can change while logpond runs: every TLS certificate, key and
// CA file of the input and of the outputs is read again, and connections
// opened from then on use them (a certificate rotated in place, as
// cert-manager does, is picked up without a restart; connections already
// open keep theirs). Files that cannot be read, or do not fit together,
// leave the configuration in use as it was, logged at ERROR. Every other
// key that differs from the running configuration is logged, by name
// only, as needing a restart: the running configuration does not change.
// Safe to call while Run runs.
func (s *Server) Reload(cfg *conf.Config) {
	s.log.Info("reload: reading the TLS files again and comparing the configuration file with the running configuration")
	for _, t := range s.tlsSources {
		if err := t.src.Reload(); err != nil {
			s.log.Error("reload: kept the TLS configuration in use: its files could not be read again", "key", t.key, "err", err)
			continue
		}
		s.log.Info("reload: TLS files read again; new connections use them", "key", t.key)
	}
	if keys := conf.Changed(s.cfg, cfg); len(keys) > 0 {
		s.log.Warn("reload: these keys differ from the running configuration and take effect only after a restart", "keys", keys)
	}
}

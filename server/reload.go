package server

import (
	"context"
	"slices"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/output/elasticsearch"
)

// Reload applies what of cfg, the configuration file read again (on
// SIGHUP), can change while logpond runs:
//   - every TLS certificate, key and CA file of the input and of the
//     outputs is read again, and connections opened from then on use them
//     (a certificate rotated in place, as cert-manager does, is picked up
//     without a restart; connections already open keep theirs); files
//     that cannot be read, or do not fit together, leave the
//     configuration in use as it was, logged at ERROR;
//   - an Elasticsearch output's credentials (username, password,
//     api_key, cloud_auth, with what ${VAR} gives them now) replace the
//     ones in use, for every request from then on.
//
// Every other key that differs from the running configuration is logged,
// by name only, as needing a restart. Safe to call while Run runs.
func (s *Server) Reload(cfg *conf.Config) {
	s.log.Info("reload: reading the TLS files again and comparing the configuration file with the running configuration")
	for _, t := range s.tlsSources {
		if err := t.src.Reload(); err != nil {
			s.log.Error("reload: kept the TLS configuration in use: its files could not be read again", "key", t.key, "err", err)
			continue
		}
		s.log.Info("reload: TLS files read again; new connections use them", "key", t.key)
	}
	changed := conf.Changed(s.cfg, cfg)
	reloaded := map[string]bool{}
	for _, o := range cfg.Outputs() {
		out := s.outputs.byName(o.Name)
		if o.Elasticsearch == nil || out == nil || out.creds == nil {
			continue
		}
		es := o.Elasticsearch // cloud_auth is in Username and Password once loaded
		out.creds.Set(es.Username, elasticsearch.NewSecret(es.Password), elasticsearch.NewSecret(es.APIKey))
		var keys []string
		for _, k := range []string{"username", "password", "api_key", "cloud_auth"} {
			reloaded[o.Key+"."+k] = true
			if slices.Contains(changed, o.Key+"."+k) {
				keys = append(keys, o.Key+"."+k)
			}
		}
		if len(keys) > 0 {
			s.log.Info("reload: the output's credentials changed; its requests use the new ones from now on", "output", o.Name, "keys", keys)
		}
	}
	if keys := slices.DeleteFunc(changed, func(k string) bool { return reloaded[k] }); len(keys) > 0 {
		s.log.Warn("reload: these keys differ from the running configuration and take effect only after a restart", "keys", keys)
	}
}

// tlsFilesCheckInterval is how often the TLS files are looked at for a
// change: a certificate that cert-manager renews, or a Kubernetes secret
// volume swaps, is in use for new connections within it, with no signal
// (a renewal leaves weeks before the old one expires).
const tlsFilesCheckInterval = 30 * time.Second

// watchTLSFiles reloads, every interval until ctx ends, each TLS
// configuration whose files changed on disk, logging what it did.
func (s *Server) watchTLSFiles(ctx context.Context, every time.Duration) {
	if len(s.tlsSources) == 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := map[string]string{} // key → the last error logged
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, ts := range s.tlsSources {
			changed, err := ts.src.ReloadIfChanged()
			switch {
			case err != nil:
				// Logged once per distinct error: a file half written is
				// caught again at the next check.
				if failing[ts.key] != err.Error() {
					failing[ts.key] = err.Error()
					s.log.Error("TLS files changed on disk but do not load; the configuration in use stays", "key", ts.key, "err", err)
				}
			case changed:
				delete(failing, ts.key)
				s.log.Info("TLS files changed on disk and were read again; new connections use them", "key", ts.key)
			}
		}
	}
}

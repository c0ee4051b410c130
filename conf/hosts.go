package conf

import (
	"fmt"

	"github.com/logpond/logpond/internal/hosturl"
)

// liftHostCredentials moves credentials written into the hosts
// ("https://user:password@es1:9200") into username and password, in every
// Elasticsearch output, so that the hosts logpond logs, prints and
// connects to carry none. Within one output, every host that carries
// credentials must carry the same ones, and they must not contradict
// username, password or api_key: such a file is refused, as logpond could
// only guess which credentials were meant. A host that does not parse is
// left to validHost. lifted holds the keys of the outputs whose username
// or password changed.
func (c *Config) liftHostCredentials() (ps []*KeyError, lifted map[string]bool) {
	lifted = map[string]bool{}
	for _, o := range c.elasticsearchOutputs() {
		es := o.Elasticsearch
		user, pass := es.Username, es.Password
		ps = append(ps, liftHostCredentials(o.Key+".hosts", es)...)
		if es.Username != user || es.Password != pass {
			lifted[o.Key] = true
		}
	}
	return ps, lifted
}

// liftHostCredentials lifts the credentials of one output, whose hosts
// are key.
func liftHostCredentials(key string, es *Elasticsearch) []*KeyError {
	var (
		ps         []*KeyError
		user, pass string
		from       int // 1-based entry the credentials were taken from; 0: none yet
	)
	bad := func(format string, args ...any) {
		ps = append(ps, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for i, h := range es.Hosts {
		bare, ui, err := hosturl.Split(h)
		if err != nil || ui == nil {
			continue
		}
		es.Hosts[i] = bare
		p, ok := ui.Password()
		switch {
		case !ok || p == "":
			// The user is not quoted: it may be a token written in its place.
			bad("entry %d (%q) has user info but no password: write \"https://user:password@host\", or set username and password (or api_key) instead", i+1, bare)
		case from == 0:
			user, pass, from = ui.Username(), p, i+1
		case ui.Username() != user || p != pass:
			bad("entry %d (%q) carries other credentials than entry %d: logpond uses one username and password for every host; set them once, in username and password", i+1, bare, from)
		}
	}
	if from == 0 {
		return ps
	}
	switch {
	case es.APIKey != "":
		bad("entry %d carries a username and password, and api_key is set too: use one of them (remove the user info from the URL, or api_key)", from)
	case (es.Username != "" || es.Password != "") && (es.Username != user || es.Password != pass):
		bad("entry %d carries other credentials than username and password: set them in one place (prefer username and password, and hosts without user info)", from)
	default:
		es.Username, es.Password = user, pass
	}
	return ps
}

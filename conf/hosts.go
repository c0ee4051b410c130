package conf

import (
	"fmt"

	"github.com/logpond/logpond/internal/hosturl"
)

// liftHostCredentials moves credentials written into the hosts
// ("https://user:password@es1:9200") into username and password, so that
// the hosts logpond logs, prints and connects to carry none. Every host
// that carries credentials must carry the same ones, and they must not
// contradict username, password or api_key: such a file is refused, as
// logpond could only guess which credentials were meant. A host that does
// not parse is left to validHost.
func (c *Config) liftHostCredentials() []*KeyError {
	const key = "output.elasticsearch.hosts"
	es := &c.Output.Elasticsearch
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

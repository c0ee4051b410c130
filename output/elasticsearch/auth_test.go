package elasticsearch

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// TestRefusedCredentialsAreNamed: a cluster that refuses the output's
// credentials (401) is said to refuse them, at ERROR, naming the settings
// to check; not to be silent, nor to hide which cluster it is. With the
// right credentials the same cluster takes every event.
func TestRefusedCredentialsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		name, user, password, apiKey, settings string
		works                                  bool
	}{
		{name: "wrong password", user: "logpond", password: "nope", settings: "output.elasticsearch.username and output.elasticsearch.password"},
		{name: "no credentials", settings: "none is set, and the cluster asks for credentials"},
		{name: "unknown API key", apiKey: "bm9wZQ==", settings: "output.elasticsearch.api_key"},
		{name: "right password", user: "logpond", password: "s3cret", works: true},
		{name: "right API key", apiKey: "a2V5OnZhbHVl", works: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, estest.Options{Users: map[string]string{"logpond": "s3cret"}, APIKeys: []string{"a2V5OnZhbHVl"}})
			for i := range 5 {
				r.store(time.Now(), filebeatEvent(i, ""))
			}
			log := &syncbuf.Buffer{}
			run := r.start(r.options(func(o *Options) {
				o.Username, o.Password, o.APIKey = tc.user, NewSecret(tc.password), NewSecret(tc.apiKey)
				o.Logger = slog.New(slog.NewTextHandler(log, nil))
			}))
			if tc.works {
				waitFor(t, "every event", func() bool { return r.es.Count() == 5 })
				run.Stop(t)
				return
			}
			waitFor(t, "the refusal in the log", func() bool { return strings.Contains(log.String(), "refused logpond's credentials") })
			run.Stop(t)
			text := log.String()
			if !strings.Contains(text, "level=ERROR") || !strings.Contains(text, tc.settings) || !strings.Contains(text, "401") {
				t.Errorf("the log does not say at ERROR that the cluster refused the credentials (401), naming %q:\n%s", tc.settings, text)
			}
			for _, not := range []string{"cannot tell which cluster", "did not answer"} {
				if strings.Contains(text, not) {
					t.Errorf("the log says %q for refused credentials:\n%s", not, text)
				}
			}
			if n := r.es.Count(); n != 0 {
				t.Errorf("%d documents stored with refused credentials", n)
			}
		})
	}
}

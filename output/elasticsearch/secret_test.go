package elasticsearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
)

// TestOptionsNeverPrintSecrets: however Options is printed or logged, and
// in New's errors and Run's logs, the password and the API key do not
// show. Hosts cannot hold them: New refuses user info there, without
// showing the password.
func TestOptionsNeverPrintSecrets(t *testing.T) {
	const pw, key = "hunter2pw", "a2V5aWQ6aHVudGVyMmtleQ"
	r := newRig(t, estest.Options{})
	opts := r.options(func(o *Options) {
		o.Username, o.Password, o.APIKey = "elastic", NewSecret(pw), NewSecret(key)
	})
	var shown []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%20s"} {
		shown = append(shown, fmt.Sprintf(verb, opts), fmt.Sprintf(verb, &opts), fmt.Sprintf(verb, opts.Password))
	}
	// fmt does not call methods through unexported fields.
	shown = append(shown, fmt.Sprintf("%+v", struct{ o Options }{opts}), fmt.Sprintf("%#v", struct{ o Options }{opts}))
	j, err := json.Marshal(opts.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	shown = append(shown, string(j))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("options", "opts", opts, "password", opts.Password)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("options", "password", opts.Password, "key", opts.APIKey)
	shown = append(shown, logged.String())

	bad := opts
	bad.Workers = 0
	if _, err := New(r.ledger, bad); err == nil || !strings.Contains(err.Error(), "Workers") {
		t.Fatalf("New with Workers 0: %v", err)
	} else {
		shown = append(shown, err.Error())
	}
	for _, h := range []string{"http://elastic:" + pw + "@127.0.0.1:9", "http://elastic:" + pw + "/x@127.0.0.1:9"} {
		bad = opts
		bad.Hosts = []string{"http://127.0.0.1:9", h}
		if _, err := New(r.ledger, bad); err == nil {
			t.Fatalf("New accepted user info in a host")
		} else {
			shown = append(shown, err.Error())
		}
	}

	// Run logs the hosts it drains into.
	var runLog syncbuf.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&runLog, nil))
	r.store(time.Now(), filebeatEvent(1, ""))
	run := r.start(opts)
	waitFor(t, "the event", func() bool { return r.es.Count() == 1 })
	run.Stop(t)
	if !strings.Contains(runLog.String(), "draining the ledger") {
		t.Fatalf("no drain start in the log:\n%s", runLog.String())
	}
	shown = append(shown, runLog.String())

	for _, s := range shown {
		if strings.Contains(s, pw) || strings.Contains(s, key) {
			t.Errorf("a secret shows in: %s", s)
		}
	}
	if got := fmt.Sprint(NewSecret("")); got != "" {
		t.Errorf("an empty secret prints %q, want \"\"", got)
	}
	if opts.Password.Reveal() != pw {
		t.Error("Reveal does not return the secret")
	}
}

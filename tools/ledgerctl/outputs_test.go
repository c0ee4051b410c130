package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
)

// esConfig writes a configuration whose legacy Elasticsearch output
// (named "elasticsearch") is enabled, or disabled.
func esConfig(t *testing.T, s stores, enabled bool, admin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logpond.toml")
	text := fmt.Sprintf("[journal]\ndir = %q\n[ledger]\ndir = %q\n[admin]\nlisten = %q\n[output.elasticsearch]\nenabled = %t\nhosts = [\"http://127.0.0.1:9\"]\n",
		s.journal, s.ledger, admin, enabled)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDLQOutputSelection: whose dead letters the dlq commands work on.
// --output NAME names the output; without it, the only configured
// Elasticsearch output, else the only dead-letter directory; else a usage
// error listing the names; nothing anywhere means no dead letters.
func TestDLQOutputSelection(t *testing.T) {
	es := outputRef{name: "elasticsearch", typ: "elasticsearch"}
	es2 := outputRef{name: "es-b", typ: "elasticsearch"}
	lj := outputRef{name: "archive", typ: "lumberjack"}
	for _, tc := range []struct {
		name    string
		outputs []outputRef // configured (config given when non-nil)
		dirs    []string    // dead-letter directories
		flag    string
		want    string // the output chosen
		none    bool   // no dead letters anywhere
		wantErr string // a usage error containing this
	}{
		{name: "the only configured output", outputs: []outputRef{es}, dirs: []string{"old"}, want: "elasticsearch"},
		{name: "an Elasticsearch and a Lumberjack output: say which", outputs: []outputRef{es, lj}, wantErr: "outputs of logpond.toml: elasticsearch, archive"},
		{name: "the only configured one, before any dead letter", outputs: []outputRef{es}, want: "elasticsearch"},
		{name: "two configured: say which", outputs: []outputRef{es, es2}, wantErr: "outputs of logpond.toml: elasticsearch, es-b"},
		{name: "no -config: the only directory", dirs: []string{"es-b"}, want: "es-b"},
		{name: "a Lumberjack output", outputs: []outputRef{lj}, dirs: []string{"old"}, want: "archive"},
		{name: "none configured: the only directory", outputs: []outputRef{}, dirs: []string{"old"}, want: "old"},
		{name: "no -config, two directories: say which", dirs: []string{"a", "b"}, wantErr: "dead-letter directories in LEDGER/dlq: a, b"},
		{name: "nothing anywhere: no dead letters", none: true},
		{name: "--output a configured one", outputs: []outputRef{es, es2}, flag: "es-b", want: "es-b"},
		{name: "--output a removed output's directory", outputs: []outputRef{es}, dirs: []string{"old"}, flag: "old", want: "old"},
		{name: "--output a directory without -config", dirs: []string{"a", "b"}, flag: "b", want: "b"},
		{name: "--output a Lumberjack output", outputs: []outputRef{es, lj}, flag: "archive", want: "archive"},
		{name: "--output a typo", outputs: []outputRef{es}, dirs: []string{"old"}, flag: "elastcsearch", wantErr: "--output elastcsearch: no such output holds dead letters"},
		{name: "--output a path", dirs: []string{"a"}, flag: "../../etc", wantErr: "is not an output name"},
	} {
		ledgerDir := t.TempDir()
		for _, d := range tc.dirs {
			if err := os.MkdirAll(dlq.Dir(ledgerDir, d), 0o750); err != nil {
				t.Fatal(err)
			}
		}
		e, _, _ := testEnv(stores{ledger: ledgerDir}, t0)
		if tc.outputs != nil {
			e.config, e.outputs = "logpond.toml", tc.outputs
		}
		err := e.selectDLQOutput(tc.flag)
		var u *usageError
		switch {
		case tc.wantErr != "":
			want := strings.ReplaceAll(tc.wantErr, "LEDGER", ledgerDir)
			if !errors.As(err, &u) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want a usage error with %q", tc.name, err, want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case e.dlqNone != tc.none || e.dlqOut.name != tc.want:
			t.Errorf("%s: chose %q (none %t), want %q (none %t)", tc.name, e.dlqOut.name, e.dlqNone, tc.want, tc.none)
		}
	}
}

// TestDLQListPerOutput runs the dlq commands on a ledger with two
// outputs' dead letters: each --output reads its own, and without it the
// choice is refused with both names.
func TestDLQListPerOutput(t *testing.T) {
	s := buildStores(t)
	writeDeadLettersOf(t, s.ledger, "es-a", []dlq.Entry{deadLetter(1, `{"a":1}`)})
	writeDeadLettersOf(t, s.ledger, "es-b", []dlq.Entry{deadLetter(2, `{"b":2}`), deadLetter(3, `{"b":3}`)})

	_, errOut, code := ctl(t, "-ledger", s.ledger, "dlq", "list")
	if code != exitUsage || !strings.Contains(errOut, "--output NAME") || !strings.Contains(errOut, "es-a, es-b") {
		t.Fatalf("dlq list without --output: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		output string
		docs   []string
	}{{"es-a", []string{"doc-1"}}, {"es-b", []string{"doc-2", "doc-3"}}} {
		out, _, code := ctl(t, "-ledger", s.ledger, "dlq", "list", "--output", tc.output, "--json")
		var doc struct {
			Output  string    `json:"output"`
			Dir     string    `json:"dir"`
			Entries []dlqLine `json:"entries"`
		}
		if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil {
			t.Fatalf("dlq list --output %s: exit %d, %v", tc.output, code, err)
		}
		var got []string
		for _, en := range doc.Entries {
			got = append(got, en.DocID)
		}
		if doc.Output != tc.output || doc.Dir != dlq.Dir(s.ledger, tc.output) || strings.Join(got, ",") != strings.Join(tc.docs, ",") {
			t.Errorf("dlq list --output %s: %s in %s holds %v, want %v", tc.output, doc.Output, doc.Dir, got, tc.docs)
		}
	}
	// A purge names the output and touches only its store.
	out, _, code := ctl(t, "-ledger", s.ledger, "dlq", "purge", "--output", "es-b", "--through", "2030-01-01T00:00:00Z")
	if code != exitOK || !strings.Contains(out, "purged 2 dead letters of output es-b") {
		t.Fatalf("purge: exit %d: %s", code, out)
	}
	if out, _, _ := ctl(t, "-ledger", s.ledger, "dlq", "list", "--output", "es-a"); !strings.Contains(out, "1 dead letters") {
		t.Fatalf("es-a's dead letters were touched:\n%s", out)
	}
	// stat and verify read every output's.
	out, _, code = ctl(t, "-ledger", s.ledger, "verify")
	if code != exitOK || !strings.Contains(out, "1 dead letters read (output es-a)") || !strings.Contains(out, "0 dead letters read (output es-b)") {
		t.Fatalf("verify: exit %d:\n%s", code, out)
	}
}

// TestCursorsListMarksUnconfigured: with -config, a cursor no configured
// output owns is marked with what it holds back.
func TestCursorsListMarksUnconfigured(t *testing.T) {
	s := buildStores(t) // cursor "elasticsearch" at 100 of 300
	if err := ledger.WriteCursorFile(s.ledger, "old-es", 250); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		enabled bool
		marked  []string // the cursors marked
	}{
		{"the Elasticsearch output configured", true, []string{"old-es"}},
		{"no output configured", false, []string{"elasticsearch", "old-es"}},
	} {
		config := esConfig(t, s, tc.enabled, "127.0.0.1:9600")
		out, _, code := ctl(t, "-config", config, "cursors")
		if code != exitOK {
			t.Fatalf("%s: exit %d", tc.name, code)
		}
		for _, c := range []struct {
			name string
			held string
		}{{"elasticsearch", "(200 records, "}, {"old-es", "(50 records, "}} {
			var line string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, c.name+" ") {
					line = l
				}
			}
			marked := strings.Contains(line, "not configured: holds the ledger "+c.held)
			if want := strings.Contains(strings.Join(tc.marked, " "), c.name); marked != want {
				t.Errorf("%s: cursor %s marked %t, want %t:\n%s", tc.name, c.name, marked, want, out)
			}
		}
		if !strings.Contains(out, "cursors delete NAME") {
			t.Errorf("%s: no word on how to release them:\n%s", tc.name, out)
		}
		out, _, _ = ctl(t, "-config", config, "cursors", "--json")
		var doc struct{ Cursors []cursorRow }
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		for _, r := range doc.Cursors {
			if r.Configured == nil || *r.Configured == strings.Contains(strings.Join(tc.marked, " "), r.Name) {
				t.Errorf("%s: --json: cursor %s configured %v", tc.name, r.Name, r.Configured)
			}
		}
	}
	// Without -config nothing is known of the configuration: no marks.
	out, _, _ := ctl(t, "-ledger", s.ledger, "cursors")
	if strings.Contains(out, "not configured") {
		t.Errorf("marks without -config:\n%s", out)
	}
}

// fakeAdmin stands for a running logpond's admin listener: it records the
// cursor deletions asked of it and answers with status and body.
type fakeAdmin struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newFakeAdmin(t *testing.T, status int, body string) *fakeAdmin {
	f := &fakeAdmin{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/api/cursors/delete" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAdmin) asked() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// TestCursorDelete deletes cursors with logpond stopped (ledgerctl removes
// the file) and running (refused for a configured output; asked of
// logpond for another), and keeps the output's dead letters.
func TestCursorDelete(t *testing.T) {
	exists := func(ledgerDir, name string) bool {
		cs, err := ledger.ReadCursors(ledgerDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	ok := newFakeAdmin(t, http.StatusOK, `{"name":"old-es","cursor_lsn":250,"held_bytes":5120}`)
	old := newFakeAdmin(t, http.StatusNotFound, "404 page not found\n") // as a logpond without the endpoint answers
	for _, tc := range []struct {
		name    string
		running bool
		config  bool   // -config with output "elasticsearch" enabled
		admin   string // --admin
		cursor  string
		code    int
		gone    bool     // the file is gone afterwards
		want    []string // in stdout+stderr
		asked   *fakeAdmin
	}{
		{name: "stopped, not configured", config: true, cursor: "old-es", code: exitOK, gone: true,
			want: []string{"cursor old-es deleted by ledgerctl: it no longer holds the ledger (it held 50 records", "its dead letters remain in", "dlq list --output old-es"}},
		{name: "stopped, configured: deleted, with a warning", config: true, cursor: "elasticsearch", code: exitOK, gone: true,
			want: []string{"cursor elasticsearch deleted by ledgerctl", "sends again from the oldest record"}},
		{name: "stopped, no such cursor", cursor: "nosuch", code: exitFailed, want: []string{`no cursor "nosuch"`, "elasticsearch, old-es"}},
		{name: "not a name", cursor: "../LOCK", code: exitUsage, want: []string{"is not an output name"}},
		{name: "running, configured: refused", running: true, config: true, cursor: "elasticsearch", code: exitFailed,
			want: []string{"belongs to output elasticsearch", "stop logpond first, or remove the output from the configuration and restart: logpond reports it then"}},
		{name: "running, not configured: logpond is asked", running: true, config: true, admin: ok.URL, cursor: "old-es", code: exitOK,
			want: []string{"cursor old-es deleted by logpond", "(it held 5.0 KiB)"}, asked: ok},
		{name: "running, without -config: logpond is asked", running: true, admin: ok.URL, cursor: "elasticsearch", code: exitOK,
			want: []string{"cursor elasticsearch deleted by logpond"}, asked: ok},
		{name: "running, a logpond without the endpoint", running: true, admin: old.URL, cursor: "old-es", code: exitFailed,
			want: []string{"cannot delete cursors", "stop it"}, asked: old},
		{name: "running, no admin listener known", running: true, cursor: "old-es", code: exitFailed,
			want: []string{"--admin HOST:PORT", "or stop logpond first"}},
	} {
		s := buildStores(t)
		if err := ledger.WriteCursorFile(s.ledger, "old-es", 250); err != nil {
			t.Fatal(err)
		}
		letters := writeDeadLettersOf(t, s.ledger, "old-es", []dlq.Entry{deadLetter(1, `{"a":1}`)})
		args := []string{"-ledger", s.ledger}
		if tc.config {
			args = []string{"-config", esConfig(t, s, true, "")}
		}
		args = append(args, "cursors", "delete", tc.cursor)
		if tc.admin != "" {
			args = append(args, "--admin", strings.TrimPrefix(tc.admin, "http://"))
		}
		var lock *dirlock.Lock
		if tc.running {
			var err error
			if lock, err = dirlock.Acquire(s.ledger); err != nil {
				t.Fatal(err)
			}
		}
		before := 0
		if tc.asked != nil {
			before = len(tc.asked.asked())
		}
		out, errOut, code := ctl(t, args...)
		if lock != nil {
			lock.Release()
		}
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d:\n%s%s", tc.name, code, tc.code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("%s: no %q in:\n%s%s", tc.name, w, out, errOut)
			}
		}
		if tc.cursor != "nosuch" && tc.cursor != "../LOCK" && exists(s.ledger, tc.cursor) == tc.gone {
			t.Errorf("%s: cursor %s still there: %t, want %t", tc.name, tc.cursor, !tc.gone, !tc.gone)
		}
		if n := countEntries(t, letters); n != 1 {
			t.Errorf("%s: %d dead letters of old-es left, want 1", tc.name, n)
		}
		if tc.asked != nil {
			reqs := tc.asked.asked()
			if len(reqs) != before+1 {
				t.Fatalf("%s: logpond was asked %d times", tc.name, len(reqs)-before)
			}
			r := reqs[len(reqs)-1]
			if r.Method != http.MethodPost || r.URL.Query().Get("name") != tc.cursor || r.Header.Get(purgeHeader) == "" {
				t.Errorf("%s: asked %s %s with %s %q", tc.name, r.Method, r.URL, purgeHeader, r.Header.Get(purgeHeader))
			}
		}
	}
}

// countEntries counts the dead letters in dir.
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	r, err := dlq.NewReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return n
}

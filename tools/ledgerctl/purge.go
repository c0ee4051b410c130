package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/output/dlq"
)

// purgeHeader is the header logpond's purge endpoint requires (server.PurgeRequestHeader).
const purgeHeader = "X-Requested-By"

// purgeTimeout bounds a purge request to a running logpond.
const purgeTimeout = 60 * time.Second

// purged is what a purge deleted, and who deleted it.
type purged struct {
	Output  string `json:"output"` // whose dead letters
	Dir     string `json:"dir"`
	Files   int    `json:"files"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
	// By is "logpond" when the running logpond purged on request, or
	// "ledgerctl" when ledgerctl did, holding the store's lock.
	By string `json:"by"`
}

// errNoEntry marks a purge whose id names no dead letter.
var errNoEntry = errors.New("no such dead letter")

// dlqPurge deletes dead letters: the whole files of entries up to and
// including an id, or that all failed at or before a time.
func dlqPurge(e *env, args []string) int {
	fs, asJSON := newFlags(e, "dlq purge", "dlq purge [--output NAME] --through ID|TIME [--admin HOST:PORT] [--json]")
	output := fs.String("output", "", outputFlagHelp)
	through := fs.String("through", "", "purge the entries up to and including this id (FILE:OFFSET, as dlq list prints it), or that failed at or before this time (RFC 3339, e.g. 2026-12-02T15:04:05Z); whole files only")
	admin := fs.String("admin", "", "logpond's admin listener, asked to purge when logpond runs (default: [admin] listen of -config)")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if *through == "" {
		e.errorf("dlq purge: say what to purge: --through ID (FILE:OFFSET, as dlq list prints it) or --through TIME (RFC 3339); see ledgerctl dlq purge -h")
		return exitUsage
	}
	if _, err := dlq.ParsePos(*through); err != nil {
		if _, terr := time.Parse(time.RFC3339Nano, *through); terr != nil {
			e.errorf("dlq purge: --through %q: want a dead letter's id (FILE:OFFSET, as dlq list prints it) or a time (RFC 3339, e.g. 2026-12-02T15:04:05Z)", *through)
			return exitUsage
		}
	}
	if status, ok := e.dlqSelect("dlq purge", *output); !ok {
		return status
	}
	if e.dlqNone {
		if _, err := dlq.ParsePos(*through); err == nil {
			e.errorf("dlq purge: %v %s: %s holds no dead letters (no output has stored any)", errNoEntry, *through, e.dlqParent())
			return exitFailed
		}
		fmt.Fprintf(e.stdout, "purged nothing: %s holds no dead letters (no output has stored any)\n", e.dlqParent())
		return exitOK
	}
	if *admin != "" {
		e.admin = *admin
	}
	p, err := purgeThrough(e, *through)
	if err != nil {
		e.errorf("dlq purge: %v", err)
		return exitFailed
	}
	if *asJSON {
		writeJSON(e.stdout, p)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "purged %d dead letters of output %s in %d files (%s) from %s, by %s\n", p.Entries, p.Output, p.Files, humanBytes(p.Bytes), p.Dir, p.By)
	return exitOK
}

// purgeThrough purges the dead letters through an id or a time. A store
// that a running logpond holds (its lock) is never written here: that
// logpond is asked, on its admin listener, to purge under its own lock.
// Otherwise ledgerctl takes the store's lock itself, so that a logpond
// starting meanwhile waits for nothing and finds the store locked.
func purgeThrough(e *env, through string) (purged, error) {
	dir := e.dlqDir()
	p := purged{Output: e.dlqOut.name, Dir: dir}
	pos, idErr := dlq.ParsePos(through)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if idErr == nil {
			return p, fmt.Errorf("%w %s: %s holds no dead letters", errNoEntry, through, dir)
		}
		return p, nil
	}
	if err := checkOwner(e.commandLine("dlq", "purge", "--output", e.dlqOut.name, "--through", through), dir); err != nil {
		var notOwner *notOwnerError
		if !errors.As(err, &notOwner) {
			return p, err
		}
		// Another user's store: ledgerctl writes nothing in it (its
		// lock file included), but a running logpond may purge it.
		if e.admin == "" {
			return p, fmt.Errorf("ledgerctl knows no admin listener on which to ask a running logpond to purge (-config FILE with [admin] listen, or --admin HOST:PORT), and %w", err)
		}
		p, perr := purgeByLogpond(e, dir, through, "owned by "+notOwner.owner.String())
		if errors.Is(perr, errNotReached) {
			return p, fmt.Errorf("%v, so ledgerctl would purge the store itself, but %w", perr, err)
		}
		return p, perr
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := dlq.Open(dir, dlq.Options{Logger: log})
	var locked *dirlock.LockedError
	if errors.As(err, &locked) {
		return purgeByLogpond(e, dir, through, "in use by a running logpond ("+holder(locked)+")")
	}
	if err != nil {
		return p, err
	}
	var r dlq.Purged
	if idErr == nil {
		r, err = store.Purge(pos)
	} else {
		t, _ := time.Parse(time.RFC3339Nano, through) // checked by the caller
		r, err = store.PurgeFailedBefore(t)
	}
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	p.Files, p.Entries, p.Bytes, p.By = r.Files, r.Entries, r.Bytes, "ledgerctl"
	if errors.Is(err, dlq.ErrNoEntry) {
		return p, fmt.Errorf("%w %s in %s (dlq list prints the ids): %v", errNoEntry, through, dir, err)
	}
	return p, err
}

// errNotReached marks a purge request that reached no logpond.
var errNotReached = errors.New("no logpond answered")

// purgeByLogpond asks the running logpond that holds the store to purge;
// why says why ledgerctl does not purge itself (the store is in use, or
// another user's). An error that says no logpond answered wraps
// errNotReached.
func purgeByLogpond(e *env, dir, through, why string) (purged, error) {
	p := purged{Output: e.dlqOut.name, Dir: dir}
	if e.admin == "" {
		return p, fmt.Errorf("the dead-letter store %s is %s, and ledgerctl can only ask a running logpond to purge it on its admin listener, and it knows none: give -config with logpond's configuration, whose [admin] listen must be set (then restart logpond), or --admin HOST:PORT; or stop logpond and run this again", dir, why)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return p, err
	}
	// output names the store for a logpond that runs several outputs; dir
	// still guards against a ledgerctl pointed at another ledger.
	q := url.Values{"through": {through}, "dir": {abs}, "output": {e.dlqOut.name}}
	res, body, addr, err := postAdmin(e.admin, "/api/dlq/purge", q, purgeTimeout)
	if err != nil {
		return p, fmt.Errorf("the dead-letter store %s is %s; asking logpond to purge it: %w", dir, why, err)
	}
	msg := strings.TrimSpace(string(body))
	switch {
	case res == http.StatusNotFound && strings.Contains(msg, "dlq purge"):
		return p, fmt.Errorf("%w %s (dlq list prints the ids); logpond says: %s", errNoEntry, through, msg)
	case res != http.StatusOK:
		return p, fmt.Errorf("logpond on %s answered %d %s: %s", addr, res, http.StatusText(res), oneLine(msg, 500))
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("logpond's answer on %s: %w", addr, err)
	}
	p.Output, p.By = e.dlqOut.name, "logpond"
	return p, nil
}

// postAdmin sends a POST to path on a running logpond's admin listener
// (listen as configured), with the header the admin endpoint requires of
// requests that change something, and returns the answer's status, its
// body (up to 1 MiB) and the address asked. An error that says no logpond
// answered wraps errNotReached.
func postAdmin(listen, path string, q url.Values, timeout time.Duration) (status int, body []byte, addr string, err error) {
	addr, err = dialAddr(listen)
	if err != nil {
		return 0, nil, listen, fmt.Errorf("admin listener %q: %w", listen, err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path+"?"+q.Encode(), nil)
	if err != nil {
		return 0, nil, addr, err
	}
	req.Header.Set(purgeHeader, "ledgerctl")
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, addr, fmt.Errorf("on its admin listener %s: %w: %w", addr, errNotReached, err)
	}
	defer res.Body.Close()
	body, err = io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return 0, nil, addr, fmt.Errorf("logpond's answer on %s: %w", addr, err)
	}
	return res.StatusCode, body, addr, nil
}

// dialAddr turns a listen address into one to connect to: a listener on
// every address ("", 0.0.0.0, ::) is reached on the loopback.
func dialAddr(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}

func holder(l *dirlock.LockedError) string {
	if l.PID > 0 {
		return fmt.Sprintf("pid %d holds %s", l.PID, l.Path)
	}
	return "another process holds " + l.Path
}

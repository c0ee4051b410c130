// Package dirowner says which user owns a data directory, and turns a
// command line into the one that runs it as that user. logpond's stores
// must stay owned by the user logpond runs as: a file another user creates
// in them (a cursor, a rewritten journal generation, a lock file) may be
// one logpond cannot open, and then it cannot start. So the commands that
// write a store run as its owner, and the messages that suggest them say
// so.
package dirowner

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// Owner is the user that owns a directory.
type Owner struct {
	UID int
	// Name is the user's name, "" when the uid has no entry on this host
	// (a store copied from elsewhere, a container's user).
	Name string
}

// Of returns the owner of path, following a symbolic link: a data
// directory may be a link to another device, and what matters is who owns
// what it points to.
func Of(path string) (Owner, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Owner{}, fmt.Errorf("dirowner: %w", err)
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return Owner{}, fmt.Errorf("dirowner: %s: no owner in its file information", path)
	}
	return ByUID(int(s.Uid)), nil
}

// ByUID returns the owner with that uid, its name looked up in the host's
// user database.
func ByUID(uid int) Owner {
	o := Owner{UID: uid}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		o.Name = u.Username
	}
	return o
}

// String names the owner for messages: "logpond (uid 990)", or "uid 990"
// when the uid has no name.
func (o Owner) String() string {
	if o.Name == "" {
		return "uid " + strconv.Itoa(o.UID)
	}
	return fmt.Sprintf("%s (uid %d)", o.Name, o.UID)
}

// Command is cmd (a shell command line) run as the owner: prefixed with
// `sudo -u NAME` (sudo's `#UID` form when the uid has no name). A store
// that root owns is written by root, whoever types the command, so for
// uid 0 cmd comes back as it is.
func (o Owner) Command(cmd string) string {
	if o.UID == 0 {
		return cmd
	}
	who := o.Name
	if who == "" {
		who = "#" + strconv.Itoa(o.UID)
	}
	return "sudo -u " + Quote(who) + " " + cmd
}

// Quote quotes s for a POSIX shell when it needs it: single quotes around
// anything but letters, digits and a few harmless punctuation marks.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=,+@%", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

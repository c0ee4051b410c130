package main

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
)

// otherUID owns the stores in these tests: nobody, as on most hosts.
const otherUID = 65534

// chownTree gives dir and everything in it to uid, as a store logpond
// created running as that user.
func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fileState is what a write would change about a file.
type fileState struct {
	uid     uint32
	size    int64
	mode    fs.FileMode
	modTime int64 // ns
}

// treeState maps every path under the dirs to its state.
func treeState(t *testing.T, dirs ...string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out[path] = fileState{info.Sys().(*syscall.Stat_t).Uid, info.Size(), info.Mode(), info.ModTime().UnixNano()}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sudoAs is the sudo prefix that runs a command as uid.
func sudoAs(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return "sudo -u " + u.Username + " "
	}
	return "sudo -u '#" + strconv.Itoa(uid) + "' "
}

// TestWritingCommandsRefuseAnotherUsersStore: run as root on stores that
// another user owns (the user logpond runs as), every command that writes
// a store refuses before it writes anything (not even a lock file) and
// prints the exact command line that runs it as the owner; the read-only
// commands run.
func TestWritingCommandsRefuseAnotherUsersStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the stores to another user needs root")
	}
	s := buildStores(t)
	ids := agedLetters(t, s.ledger, 3)
	config := writeConfig(t, s)
	chownTree(t, s.journal, otherUID)
	chownTree(t, s.ledger, otherUID)
	before := treeState(t, s.journal, s.ledger)
	es := startES(t)
	sudo := sudoAs(otherUID)
	stores := "-journal " + s.journal + " -ledger " + s.ledger
	t.Chdir(filepath.Dir(config)) // a relative -config is printed absolute

	for _, tc := range []struct {
		args []string
		want string // the command line printed
	}{
		{[]string{"-journal", s.journal, "-ledger", s.ledger, "accept-loss"}, stores + " accept-loss"},
		{[]string{"-config", filepath.Base(config), "accept-loss"}, "-config " + config + " accept-loss"},
		{[]string{"-ledger", s.ledger, "cursors", "set", "elasticsearch", "50"}, "-ledger " + s.ledger + " cursors set elasticsearch 50"},
		{[]string{"cursors", "rewind", "elasticsearch", "--from-lsn", "10", "-ledger", s.ledger, "--json"}, "-ledger " + s.ledger + " --json cursors rewind elasticsearch --from-lsn 10"},
		{[]string{"-ledger", s.ledger, "dlq", "purge", "--through", ids[1]}, "-ledger " + s.ledger + " dlq purge --output elasticsearch --through " + ids[1]},
		{[]string{"-ledger", s.ledger, "cursors", "delete", "elasticsearch"}, "-ledger " + s.ledger + " cursors delete elasticsearch"},
		{[]string{"-ledger", s.ledger, "dlq", "redrive", "-es", es.URL(), "-purge"}, "-ledger " + s.ledger + " dlq purge --output elasticsearch --through " + ids[2]},
	} {
		_, errOut, code := ctl(t, tc.args...)
		want := "\n  " + sudo + "ledgerctl " + tc.want + "\n"
		if code != exitFailed || !strings.Contains(errOut, want) || !strings.Contains(errOut, "Nothing was changed") {
			t.Errorf("ledgerctl %s: exit %d, want %d and the command line %q in:\n%s", strings.Join(tc.args, " "), code, exitFailed, want, errOut)
		}
		if after := treeState(t, s.journal, s.ledger); !equalStates(before, after) {
			t.Fatalf("ledgerctl %s changed the stores:\n%s", strings.Join(tc.args, " "), diffStates(before, after))
		}
	}
	if n := countLetters(t, s.ledger); n != 3 {
		t.Fatalf("%d dead letters left, want 3", n)
	}

	// What only reads runs as any user that can read.
	for _, args := range [][]string{
		{"-config", config, "verify"},
		{"-config", config, "stat"},
		{"-config", config, "accept-loss", "--dry-run"},
		{"-config", config, "dlq", "list"},
	} {
		if _, _, code := ctl(t, args...); code != exitOK {
			t.Errorf("ledgerctl %s: exit %d", strings.Join(args, " "), code)
		}
	}
	if after := treeState(t, s.journal, s.ledger); !equalStates(before, after) {
		t.Fatalf("the read-only commands changed the stores:\n%s", diffStates(before, after))
	}

	// Stores of two different users: no user can write both.
	chownTree(t, s.journal, otherUID-1)
	_, errOut, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "accept-loss")
	if code != exitFailed || !strings.Contains(errOut, "chown -R USER "+s.journal+" "+s.ledger) {
		t.Errorf("accept-loss on stores of two users: exit %d:\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(s.journal, "LOCK")); err == nil {
		t.Error("accept-loss on stores of two users created the journal's lock file")
	}
}

func equalStates(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffStates(a, b map[string]fileState) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "removed "+k)
		} else if w != v {
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	return strings.Join(out, "\n")
}

// TestVerifyNamesTheOwnerInAcceptLoss: verify's hint to accept a loss is
// the command line that runs accept-loss as the stores' owner.
func TestVerifyNamesTheOwnerInAcceptLoss(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving the stores to another user needs root")
	}
	s := buildStores(t)
	at := journalOffsets(t, s.journal)[350]
	storetest.Flip(t, at.file, at.off+40)
	chownTree(t, s.journal, otherUID)
	chownTree(t, s.ledger, otherUID)
	out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
	want := "`" + sudoAs(otherUID) + "ledgerctl -journal " + s.journal + " -ledger " + s.ledger + " accept-loss`"
	if code != exitFailed || !strings.Contains(out, want) {
		t.Fatalf("verify: exit %d, want 1 and %s in:\n%s", code, want, out)
	}
}

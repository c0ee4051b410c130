package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// stageInstall runs the Makefile's install target in a copy of the files
// it reads, with stand-ins for the binaries (build is not remade), staging
// into DESTDIR root. It returns make's output.
func stageInstall(t *testing.T, root string, vars ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	src := t.TempDir()
	for _, f := range []string{"Makefile", "conf/logpond.example.toml", "deploy/logpond.service", "deploy/logpond.sysusers"} {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(src, f), data, 0o644)
	}
	for _, b := range []string{"bin/logpond", "bin/ledgerctl"} {
		writeFile(t, filepath.Join(src, b), []byte("#!/bin/sh\n"), 0o755)
	}
	args := append([]string{"-C", src, "-o", "build", "install", "DESTDIR=" + root, "PREFIX=/usr"}, vars...)
	out, err := exec.Command("make", args...).CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// installGroup is a group this process may give files to, other than its
// own primary group when it can: root may use any group.
func installGroup(t *testing.T) (name string, gid int) {
	t.Helper()
	if os.Geteuid() == 0 {
		for _, n := range []string{"nogroup", "daemon", "users", "adm"} {
			if g, err := user.LookupGroup(n); err == nil {
				gid, _ := strconv.Atoi(g.Gid)
				return g.Name, gid
			}
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := u.GroupIds()
	pick := u.Gid
	for _, id := range ids {
		if id != u.Gid {
			pick = id
			break
		}
	}
	g, err := user.LookupGroupId(pick)
	if err != nil {
		t.Skipf("no group to install with: %v", err)
	}
	gid, _ = strconv.Atoi(g.Gid)
	return g.Name, gid
}

// TestInstallConfigNotWorldReadable: make install puts the configuration,
// which holds password and api_key, in place as 0640 with the service's
// group; an existing world-readable one is left alone, with a warning.
func TestInstallConfigNotWorldReadable(t *testing.T) {
	group, gid := installGroup(t)
	root := t.TempDir()
	out, err := stageInstall(t, root, "CONFIG_GROUP="+group)
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	conf := filepath.Join(root, "etc/logpond/logpond.toml")
	st, err := os.Stat(conf)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if mode := st.Mode().Perm(); mode != 0o640 {
		t.Errorf("%s is %#o, want 0640", conf, mode)
	}
	if got := int(st.Sys().(*syscall.Stat_t).Gid); got != gid {
		t.Errorf("%s has group %d, want %d (%s)", conf, got, gid, group)
	}
	for _, f := range []string{"usr/bin/logpond", "usr/bin/ledgerctl", "etc/sysusers.d/logpond.conf", "etc/systemd/system/logpond.service"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s not installed: %v", f, err)
		}
	}

	// The default group, logpond, when this machine has none: the staged
	// file is still 0640, and make says the package must set the group.
	if _, err := user.LookupGroup("logpond"); err != nil {
		root := t.TempDir()
		out, err := stageInstall(t, root)
		if err != nil {
			t.Fatalf("make install: %v\n%s", err, out)
		}
		st, err := os.Stat(filepath.Join(root, "etc/logpond/logpond.toml"))
		if err != nil || st.Mode().Perm() != 0o640 || !strings.Contains(out, "the package must give it that group") {
			t.Errorf("without the group: %v, %v:\n%s", err, st.Mode(), out)
		}
	}

	// An existing configuration is the user's: left as it is, with a
	// warning when every user can read it.
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = stageInstall(t, root, "CONFIG_GROUP="+group)
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	if st, err := os.Stat(conf); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the existing configuration was changed: %v %v", st.Mode(), err)
	}
	if !strings.Contains(out, "readable by every user") {
		t.Errorf("no warning about the world-readable configuration:\n%s", out)
	}
}

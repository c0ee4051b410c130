package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// installSource copies the files the Makefile's install target reads into
// a fresh directory, with stand-ins for the binaries (build is not remade:
// make runs with -o build), and returns it.
func installSource(t *testing.T) string {
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
	return src
}

// stageInstall runs the Makefile's install target, staging into DESTDIR
// root. It returns make's output.
func stageInstall(t *testing.T, root string, vars ...string) (string, error) {
	t.Helper()
	src := installSource(t)
	args := append([]string{"-s", "-C", src, "-o", "build", "install", "DESTDIR=" + root, "PREFIX=/usr"}, vars...)
	out, err := exec.Command("make", args...).CombinedOutput()
	return string(out), err
}

// linesAbout returns the lines of out that mention path.
func linesAbout(out, path string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, path) {
			ls = append(ls, l)
		}
	}
	return ls
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
// group, and says so in one line; staged (DESTDIR) where this machine has
// no such group, it creates none, and the one line says what the file is
// and that the package must give it the group. An existing
// world-readable configuration is left alone, with a warning.
func TestInstallConfigNotWorldReadable(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
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
	if want := []string{"installed " + conf + " (0640 " + me.Username + ":" + group + ")"}; !slices.Equal(linesAbout(out, conf), want) {
		t.Errorf("make install says of the configuration:\n%s\nwant only:\n%s", strings.Join(linesAbout(out, conf), "\n"), want[0])
	}
	for _, f := range []string{"usr/bin/logpond", "usr/bin/ledgerctl", "etc/sysusers.d/logpond.conf", "etc/systemd/system/logpond.service"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s not installed: %v", f, err)
		}
	}

	// The default group, logpond, when this machine has none: the staged
	// file is 0640 in the installing user's group, make says so and that
	// the package must give it the group, and creates no group here.
	if _, err := user.LookupGroup("logpond"); err != nil {
		root := t.TempDir()
		out, err := stageInstall(t, root)
		if err != nil {
			t.Fatalf("make install: %v\n%s", err, out)
		}
		conf := filepath.Join(root, "etc/logpond/logpond.toml")
		st, err := os.Stat(conf)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o640 {
			t.Errorf("%s is %#o, want 0640", conf, st.Mode().Perm())
		}
		primary, err := user.LookupGroupId(strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Gid)))
		if err != nil {
			t.Fatal(err)
		}
		said := linesAbout(out, conf)
		want := "installed " + conf + " (0640 " + me.Username + ":" + primary.Name + "); the package must give it the group logpond"
		if len(said) != 1 || !strings.HasPrefix(said[0], want) {
			t.Errorf("without the group, make install says of the configuration:\n%s\nwant one line starting %q", strings.Join(said, "\n"), want)
		}
		if _, err := user.LookupGroup("logpond"); err == nil {
			t.Errorf("a staged install created the group logpond on this machine")
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

// accountFiles are the files of /etc that hold users and groups.
var accountFiles = []string{"passwd", "group", "shadow", "gshadow"}

// TestInstallCreatesServiceAccount: make install into / creates the user
// and group logpond when missing — with systemd-sysusers, or groupadd and
// useradd without it — gives the configuration that group and says so in
// one line. It runs as root in a private mount namespace whose /etc is a
// copy of this machine's without logpond, so this machine's /etc is not
// touched.
func TestInstallCreatesServiceAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a mount namespace, and the account tools)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare is not installed")
	}
	if err := exec.Command("unshare", "--mount", "true").Run(); err != nil {
		t.Skipf("no mount namespace here: %v", err)
	}
	for _, tc := range []struct {
		name, sysusers string
		tools          []string
		says           string // the command make says it runs
	}{
		{"systemd-sysusers", "systemd-sysusers", []string{"systemd-sysusers"}, "systemd-sysusers /etc/sysusers.d/logpond.conf\n"},
		{"groupadd and useradd", "", []string{"groupadd", "useradd"}, "groupadd --system logpond && useradd --system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, tool := range tc.tools {
				if _, err := exec.LookPath(tool); err != nil {
					t.Skipf("%s is not installed", tool)
				}
			}
			src := installSource(t)
			tmp := t.TempDir()
			etc := filepath.Join(tmp, "etc")
			if out, err := exec.Command("cp", "-a", "/etc/.", etc).CombinedOutput(); err != nil {
				t.Fatalf("copying /etc: %v\n%s", err, out)
			}
			before := map[string][]byte{}
			for _, f := range accountFiles {
				data, err := os.ReadFile(filepath.Join("/etc", f))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				before[f] = data
				// The copy without logpond, should this machine have it.
				var kept []string
				for _, l := range strings.SplitAfter(string(data), "\n") {
					if !strings.HasPrefix(l, "logpond:") {
						kept = append(kept, l)
					}
				}
				if err == nil {
					writeFile(t, filepath.Join(etc, f), []byte(strings.Join(kept, "")), 0o600)
				}
			}
			install := func() string {
				t.Helper()
				out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
					`mount --bind "$1" /etc && exec make -s -C "$2" -o build install PREFIX="$3" SYSUSERS="$4"`,
					"sh", etc, src, filepath.Join(tmp, "usr"), tc.sysusers).CombinedOutput()
				if err != nil {
					t.Fatalf("make install: %v\n%s", err, out)
				}
				return string(out)
			}
			out := install()
			for _, f := range accountFiles {
				if data, _ := os.ReadFile(filepath.Join("/etc", f)); string(data) != string(before[f]) {
					t.Fatalf("make install changed this machine's /etc/%s", f)
				}
			}

			if !strings.Contains(out, tc.says) {
				t.Errorf("make install does not say it runs %q:\n%s", tc.says, out)
			}
			gid := -1
			groups, err := os.ReadFile(filepath.Join(etc, "group"))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(groups), "\n") {
				if f := strings.Split(l, ":"); len(f) >= 3 && f[0] == "logpond" {
					gid, _ = strconv.Atoi(f[2])
				}
			}
			if gid < 0 {
				t.Fatalf("no group logpond was created:\n%s", out)
			}
			passwd, err := os.ReadFile(filepath.Join(etc, "passwd"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(passwd), "\nlogpond:") || !strings.Contains(string(passwd), ":/var/lib/logpond:/usr/sbin/nologin\n") {
				t.Errorf("no user logpond with home /var/lib/logpond and no login shell:\n%s", passwd)
			}
			conf := filepath.Join(etc, "logpond/logpond.toml")
			st, err := os.Stat(conf)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o640 || int(st.Sys().(*syscall.Stat_t).Gid) != gid {
				t.Errorf("%s is %#o, group %d; want 0640, group logpond (%d)", conf, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid, gid)
			}
			said := linesAbout(out, "/etc/logpond/logpond.toml")
			if want := "installed /etc/logpond/logpond.toml (0640 root:logpond)"; len(said) != 1 || said[0] != want {
				t.Errorf("make install says of the configuration:\n%s\nwant only:\n%s", strings.Join(said, "\n"), want)
			}

			// An existing configuration the service cannot read: left as
			// it is, with a warning.
			if err := os.Chown(conf, 0, 0); err != nil {
				t.Fatal(err)
			}
			out = install()
			if !strings.Contains(out, "WARNING: /etc/logpond/logpond.toml is not in group logpond") {
				t.Errorf("no warning about the configuration's group:\n%s", out)
			}
			if st, err := os.Stat(conf); err != nil || st.Sys().(*syscall.Stat_t).Gid != 0 {
				t.Errorf("the existing configuration was changed: %v", err)
			}
		})
	}
}

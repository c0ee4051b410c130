package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/logpond/logpond/conf"
)

// TestMemoryLimit checks that the soft memory limit is 90% of the
// configuration's memory formula unless GOMEMLIMIT is set, that the log says which one
// applies, and that restore puts the previous limit back.
func TestMemoryLimit(t *testing.T) {
	cfg := conf.Default()
	before := debug.SetMemoryLimit(-1)
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))

	root := t.TempDir() // no cgroup files: the formula alone
	restore := applyMemoryLimit(&cfg, "", root, log)
	if got, want := debug.SetMemoryLimit(-1), cfg.Memory().Total()/10*9; got != want {
		t.Errorf("limit %d, want the formula's %d", got, want)
	}
	if !strings.Contains(out.String(), "memory limit from the configuration") {
		t.Errorf("log does not say the limit comes from the configuration: %s", out.String())
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after restore: limit %d, want %d", got, before)
	}

	out.Reset()
	restore = applyMemoryLimit(&cfg, "300MiB", root, log)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set: limit changed to %d", got)
	}
	if !strings.Contains(out.String(), "memory limit from GOMEMLIMIT") || !strings.Contains(out.String(), "300MiB") {
		t.Errorf("log does not say GOMEMLIMIT applies: %s", out.String())
	}
	restore()
}

// TestMemoryLimitFollowsCgroup runs applyMemoryLimit over fake file-system
// roots holding the cgroup files a container sees: the soft limit is the
// smaller of 90% of the formula and 90% of the cgroup's limit (its own or
// an ancestor's, v2, or v1's), with a warning when the cgroup limit is
// below the formula; no limit ("max", v1's huge number) or no cgroup
// files leave the formula's; a file that cannot be parsed is warned about
// and leaves the formula's.
func TestMemoryLimitFollowsCgroup(t *testing.T) {
	cfg := conf.Default()
	formula := cfg.Memory().Total()
	small := formula / 2 // below the formula: the cgroup's limit applies
	big := formula * 4   // above it: the formula's applies
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) + "\n" }
	for _, c := range []struct {
		name  string
		files map[string]string // path under the root: content
		want  int64
		warn  string // in the log at WARN, "" for no warning
	}{
		{"no cgroup files", nil, formula / 10 * 9, ""},
		{"v2 below the formula", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": itoa(small),
		}, small / 10 * 9, "cgroup memory limit is below"},
		{"v2 above the formula", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": itoa(big),
		}, formula / 10 * 9, ""},
		{"v2 max", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
		}, formula / 10 * 9, ""},
		{"v2 ancestor's limit", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":    itoa(small),
		}, small / 10 * 9, "cgroup memory limit is below"},
		{"v2 namespaced: the cgroup is the mount's root", map[string]string{
			"proc/self/cgroup":         "0::/system.slice/docker-1.scope\n",
			"sys/fs/cgroup/memory.max": itoa(small),
		}, small / 10 * 9, "cgroup memory limit is below"},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup": "5:devices:/docker/1\n4:memory:/docker/1\n0::/\n",
			"sys/fs/cgroup/memory/docker/1/memory.limit_in_bytes": "9223372036854771712\n",
		}, formula / 10 * 9, ""},
		{"v1 below the formula", map[string]string{
			"proc/self/cgroup": "4:cpu,memory:/docker/1\n",
			"sys/fs/cgroup/memory/docker/1/memory.limit_in_bytes": itoa(small),
		}, small / 10 * 9, "cgroup memory limit is below"},
		{"unparsable", map[string]string{
			"proc/self/cgroup":           "0::/c\n",
			"sys/fs/cgroup/c/memory.max": "lots\n",
		}, formula / 10 * 9, "cannot read the cgroup memory limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range c.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := debug.SetMemoryLimit(-1)
			var out bytes.Buffer
			restore := applyMemoryLimit(&cfg, "", root, slog.New(slog.NewTextHandler(&out, nil)))
			defer restore()
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("limit %d, want %d (formula %d):\n%s", got, c.want, formula, out.String())
			}
			warned := strings.Contains(out.String(), "level=WARN")
			if c.warn == "" && warned || c.warn != "" && !strings.Contains(out.String(), c.warn) {
				t.Errorf("log, want a warning %q:\n%s", c.warn, out.String())
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Errorf("after restore: limit %d, want %d", got, before)
			}
		})
	}
}

// TestCgroupUnreadable: a memory.max that exists but cannot be read is
// an error (the limit then follows the formula alone), never a panic.
func TestCgroupUnreadable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/fs/cgroup/c")
	if err := os.MkdirAll(filepath.Join(root, "proc/self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/self/cgroup"), []byte("0::/c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be: unreadable as a file, for
	// root too.
	if err := os.MkdirAll(filepath.Join(dir, "memory.max"), 0o755); err != nil {
		t.Fatal(err)
	}
	if limit, _, err := cgroupMemoryLimit(root); err == nil {
		t.Errorf("limit %d and no error for an unreadable memory.max", limit)
	}
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/logpond/logpond/conf"
)

// applyMemoryLimit gives the Go collector a soft memory limit
// (runtime/debug.SetMemoryLimit) of 90% of the configuration's memory
// formula (conf.Memory, docs/operations.md), so that garbage is collected
// before the process grows past what its bounded buffers need, rather than
// when the heap has doubled. The 10% are for what the limit does not
// count (the program's code) and what the collector frees late: with
// them, the process stays within the formula. In a container whose cgroup
// limits memory (read under root, "/" but for tests: cgroupMemoryLimit),
// the soft limit is 90% of that limit when that is smaller, so that the
// collector works harder before the kernel's OOM killer would stop the
// process; it warns when the cgroup limit is below the formula, which
// the bounded buffers may then exceed. GOMEMLIMIT in the environment
// (gomemlimit, its value or "") wins: the runtime has applied it already.
// It logs which limit applies and returns a function that restores the
// previous limit.
func applyMemoryLimit(cfg *conf.Config, gomemlimit, root string, log *slog.Logger) (restore func()) {
	m := cfg.Memory()
	cgroup, cgroupFile, err := cgroupMemoryLimit(root)
	switch {
	case err != nil:
		log.Warn("cannot read the cgroup memory limit: the soft memory limit follows the configuration only", "err", err)
	case cgroup > 0 && cgroup < m.Total():
		log.Warn("the container's cgroup memory limit is below what the configuration may use (docs/operations.md, Memory): the kernel may kill logpond under load; raise the limit or lower the buffers",
			"cgroup_limit_bytes", cgroup, "cgroup_file", cgroupFile, "formula_bytes", m.Total())
	}
	if gomemlimit != "" {
		log.Info("memory limit from GOMEMLIMIT", "gomemlimit", gomemlimit,
			"limit_bytes", debug.SetMemoryLimit(-1), "formula_bytes", m.Total(), "cgroup_limit_bytes", cgroup)
		return func() {}
	}
	limit := m.Total() / 10 * 9
	from := "memory limit from the configuration (docs/operations.md, Memory; GOMEMLIMIT overrides it)"
	if c := cgroup / 10 * 9; cgroup > 0 && c < limit {
		limit = c
		from = "memory limit from the container's cgroup limit, below the configuration's (docs/operations.md, Memory; GOMEMLIMIT overrides it)"
	}
	prev := debug.SetMemoryLimit(limit)
	log.Info(from,
		"limit_bytes", limit, "formula_bytes", m.Total(), "cgroup_limit_bytes", cgroup, "input", m.Input, "connections", m.Connections, "input_compression", m.InputCompression, "journal_tail", m.JournalTail,
		"journal_write", m.JournalWrite, "journal_read", m.JournalRead, "ledger", m.Ledger, "output", m.Output, "overhead", m.Overhead)
	return func() { debug.SetMemoryLimit(prev) }
}

// cgroupUnlimited: a cgroup v1 memory.limit_in_bytes at or above it means
// no limit (the kernel reports "unlimited" as the largest page-aligned
// 64-bit count, 9223372036854771712; no machine has 4 EiB).
const cgroupUnlimited = 1 << 62

// cgroupMemoryLimit returns the memory limit of the cgroup the process
// runs in, with the file it was read from, reading the files under root
// (a file-system root: "/" but in tests): 0 when there is none. With
// cgroup v2 (a "0::PATH" line in /proc/self/cgroup) it is the smallest
// memory.max of the process's cgroup and its ancestors under
// /sys/fs/cgroup ("max" means none); with v1 the memory controller's
// memory.limit_in_bytes under /sys/fs/cgroup/memory. A cgroup path that
// is not there (a container whose cgroup is mounted as the root of
// /sys/fs/cgroup) is read at that root. No /proc/self/cgroup, or no
// memory file, is no limit; a file that exists and cannot be read or
// parsed is an error.
func cgroupMemoryLimit(root string) (limit int64, file string, err error) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil // not Linux, or no /proc: nothing to follow
	}
	if err != nil {
		return 0, "", fmt.Errorf("cgroup: %w", err)
	}
	var v1, v2 string
	var hasV1, hasV2 bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, hasV2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1, hasV1 = parts[2], true
		}
	}
	if hasV2 {
		limit, file, err := cgroupV2Limit(filepath.Join(root, "sys/fs/cgroup"), v2)
		if err != nil || limit > 0 || !hasV1 {
			return limit, file, err
		}
	}
	if hasV1 {
		return cgroupFileLimit(filepath.Join(root, "sys/fs/cgroup/memory"), v1, "memory.limit_in_bytes")
	}
	return 0, "", nil
}

// cgroupV2Limit is the smallest memory.max of the cgroup at cgPath under
// mount and of its ancestors, 0 when none sets one.
func cgroupV2Limit(mount, cgPath string) (limit int64, file string, err error) {
	dir := path.Clean("/" + cgPath)
	if _, err := os.Stat(filepath.Join(mount, dir)); err != nil {
		dir = "/" // the container's own cgroup is the mount's root
	}
	for {
		l, f, err := readCgroupLimit(filepath.Join(mount, dir, "memory.max"))
		if err != nil {
			return 0, "", err
		}
		if l > 0 && (limit == 0 || l < limit) {
			limit, file = l, f
		}
		if dir == "/" {
			return limit, file, nil
		}
		dir = path.Dir(dir)
	}
}

// cgroupFileLimit reads name in the cgroup at cgPath under mount, or at
// the mount's root when that cgroup is not there.
func cgroupFileLimit(mount, cgPath, name string) (int64, string, error) {
	dir := filepath.Join(mount, path.Clean("/"+cgPath))
	if _, err := os.Stat(dir); err != nil {
		dir = mount
	}
	return readCgroupLimit(filepath.Join(dir, name))
}

// readCgroupLimit parses a cgroup memory limit file: a byte count, "max"
// (v2) or a count of cgroupUnlimited or more (v1) for none; a missing file
// is none too.
func readCgroupLimit(file string) (int64, string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("cgroup: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, "", nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("cgroup: %s: %q is not a byte count", file, s)
	}
	if n >= cgroupUnlimited {
		return 0, "", nil
	}
	return int64(n), file, nil
}

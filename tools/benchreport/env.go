package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// loopFS is an ext4 file system on a loop device whose image lives in
// /dev/shm: logpond's ledger gets a block device of its own, which the
// isolation run can throttle without touching the journal's device.
type loopFS struct {
	img, dev, dir string
	major, minor  uint32
}

// mountLoop creates a sparse image of size bytes, attaches it to a free
// loop device and mounts it on dir. It is mounted with discard so that
// files deleted between runs give their memory back to /dev/shm.
func mountLoop(img, dir string, size int64) (*loopFS, error) {
	f, err := os.Create(img)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("size %s: %w", img, err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		os.Remove(img)
		return nil, fmt.Errorf("mkfs.ext4 %s: %w: %s", img, err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		os.Remove(img)
		return nil, fmt.Errorf("losetup %s: %w", img, err)
	}
	l := &loopFS{img: img, dev: strings.TrimSpace(string(out)), dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.unmount()
		return nil, err
	}
	if out, err := exec.Command("mount", "-o", "discard", l.dev, dir).CombinedOutput(); err != nil {
		l.unmount()
		return nil, fmt.Errorf("mount %s on %s: %w: %s", l.dev, dir, err, out)
	}
	var st unix.Stat_t
	if err := unix.Stat(l.dev, &st); err != nil {
		l.unmount()
		return nil, err
	}
	l.major, l.minor = unix.Major(st.Rdev), unix.Minor(st.Rdev)
	return l, nil
}

// unmount undoes mountLoop, as far as it got.
func (l *loopFS) unmount() {
	exec.Command("umount", l.dir).Run()
	exec.Command("losetup", "-d", l.dev).Run()
	os.Remove(l.img)
}

// blkioThrottle is a cgroup (v1 blkio, or v2 io) that caps the read and
// write bandwidth of one block device for the processes put in it.
type blkioThrottle struct {
	dir string
	v2  bool
}

// newThrottle creates a cgroup limiting major:minor to bps bytes/s each
// way. Direct I/O is submitted by the writing process itself, so the cap
// applies to logpond's ledger (buffered writes would escape cgroup v1's
// throttle; the ledger uses none).
func newThrottle(major, minor uint32, bps int64) (*blkioThrottle, error) {
	if err := throttleSupported(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("logpond-benchreport-%d", os.Getpid())
	dev := fmt.Sprintf("%d:%d", major, minor)
	if _, err := os.Stat("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device"); err == nil {
		t := &blkioThrottle{dir: filepath.Join("/sys/fs/cgroup/blkio", name)}
		if err := os.Mkdir(t.dir, 0o755); err != nil {
			return nil, err
		}
		for _, f := range []string{"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"} {
			if err := os.WriteFile(filepath.Join(t.dir, f), fmt.Appendf(nil, "%s %d", dev, bps), 0); err != nil {
				t.remove()
				return nil, fmt.Errorf("cgroup v1 %s: %w", f, err)
			}
		}
		return t, nil
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t := &blkioThrottle{dir: filepath.Join("/sys/fs/cgroup", name), v2: true}
		if err := os.Mkdir(t.dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(t.dir, "io.max"), fmt.Appendf(nil, "%s rbps=%d wbps=%d", dev, bps, bps), 0); err != nil {
			t.remove()
			return nil, fmt.Errorf("cgroup v2 io.max (is the io controller enabled in the parent's cgroup.subtree_control?): %w", err)
		}
		return t, nil
	}
	return nil, errors.New("no cgroup throttles block devices here") // throttleSupported said otherwise
}

// throttleSupported says why newThrottle cannot work here, or nil.
func throttleSupported() error {
	if _, err := os.Stat("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device"); err == nil {
		return nil
	}
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
	if err != nil {
		return fmt.Errorf("neither cgroup v1 blkio nor cgroup v2 is mounted under /sys/fs/cgroup")
	}
	if !strings.Contains(string(b), "io") {
		return fmt.Errorf("cgroup v2 without the io controller in /sys/fs/cgroup/cgroup.subtree_control")
	}
	return nil
}

// add moves a process into the cgroup.
func (t *blkioThrottle) add(pid int) error {
	return os.WriteFile(filepath.Join(t.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// remove deletes the cgroup; its processes must have exited.
func (t *blkioThrottle) remove() {
	for range 50 {
		if err := os.Remove(t.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// machine describes where the report was measured.
func machine() string {
	var b strings.Builder
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var si unix.Sysinfo_t
	unix.Sysinfo(&si)
	var un unix.Utsname
	unix.Uname(&un)
	fmt.Fprintf(&b, "%s, %d logical CPUs, %.0f GiB RAM, Linux %s, %s",
		cpu, runtime.NumCPU(), float64(si.Totalram)*float64(si.Unit)/(1<<30), unix.ByteSliceToString(un.Release[:]), runtime.Version())
	return b.String()
}

// deviceOf names the block device and file system a directory is on, as
// df sees it.
func deviceOf(dir string) string {
	out, err := exec.Command("df", "--output=source,fstype", dir).Output()
	if err != nil {
		return "unknown device"
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	f := strings.Fields(string(lines[len(lines)-1]))
	if len(f) < 2 {
		return "unknown device"
	}
	return f[0] + " (" + f[1] + ")"
}

// revision is the checkout's commit, with "+changes" when it has any.
func revision() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown revision"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "+changes"
	}
	return rev
}

// Package powerloss gives tests a real ext4 file system on a loop device
// that can lose power: the ext4 shutdown ioctl with NOLOGFLUSH makes the
// file system drop everything that was not fsynced, as a power cut would
// (docs/design.md, §8). A SIGKILL test alone passes even with zero fsyncs;
// this one does not.
//
// It needs root, losetup, mkfs.ext4 and mount; where any is missing, New
// skips the test and says why.
package powerloss

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// ext4IOCShutdown is EXT4_IOC_SHUTDOWN, _IOR('X', 125, __u32).
const ext4IOCShutdown = 0x8004587D

// ext4GoingFlagsNoLogFlush shuts down without flushing the ext4 journal:
// metadata and data not yet committed are lost.
const ext4GoingFlagsNoLogFlush = 0x2

// Disk is a loop-mounted ext4 file system owned by one test.
type Disk struct {
	t       testing.TB
	image   string
	dev     string
	Dir     string // the mount point
	mounted bool
}

// New makes a file system of size bytes and mounts it; the test's cleanup
// unmounts it and detaches the loop device.
func New(t testing.TB, size int64) *Disk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("power-loss test skipped: needs root to attach a loop device and mount ext4")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("power-loss test skipped: %s not found (install util-linux, e2fsprogs, mount)", tool)
		}
	}
	tmp := t.TempDir()
	d := &Disk{t: t, image: filepath.Join(tmp, "disk.img"), Dir: filepath.Join(tmp, "mnt")}
	if err := os.Mkdir(d.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(d.image)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", d.image).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "--find", "--show", d.image).CombinedOutput()
	if err != nil {
		t.Skipf("power-loss test skipped: losetup cannot attach a loop device here: %v: %s", err, out)
	}
	d.dev = strings.TrimSpace(string(out))
	t.Cleanup(d.cleanup)
	d.mount()
	return d
}

func (d *Disk) mount() {
	d.t.Helper()
	if out, err := exec.Command("mount", "-t", "ext4", d.dev, d.Dir).CombinedOutput(); err != nil {
		d.t.Fatalf("mount %s: %v: %s", d.dev, err, out)
	}
	d.mounted = true
}

func (d *Disk) umount() error {
	if !d.mounted {
		return nil
	}
	out, err := exec.Command("umount", d.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount %s: %v: %s", d.Dir, err, out)
	}
	d.mounted = false
	return nil
}

// Shutdown cuts the power: from now on every operation on the file system
// fails, and whatever was not fsynced is gone.
func (d *Disk) Shutdown() error {
	fd, err := unix.Open(d.Dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("powerloss: open %s: %w", d.Dir, err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, ext4IOCShutdown, ext4GoingFlagsNoLogFlush); err != nil {
		return fmt.Errorf("powerloss: EXT4_IOC_SHUTDOWN on %s: %w", d.Dir, err)
	}
	return nil
}

// ShutdownAll cuts the power of every disk at once, as one machine loses
// it for all its devices: the shutdowns run concurrently (each waits in
// the kernel before it aborts its file system's journal), and it returns
// once all are done, with the first error.
func ShutdownAll(disks ...*Disk) error {
	errs := make([]error, len(disks))
	var wg sync.WaitGroup
	for i, d := range disks {
		wg.Go(func() { errs[i] = d.Shutdown() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Remount unmounts the shut-down file system and mounts it again, as a
// machine coming back from a power cut would (ext4 replays its journal).
// Every file on it must have been closed first.
func (d *Disk) Remount() {
	d.t.Helper()
	if err := d.umount(); err != nil {
		d.t.Fatal(err)
	}
	d.mount()
}

func (d *Disk) cleanup() {
	if err := d.umount(); err != nil {
		// A test that failed with files still open: detach lazily.
		exec.Command("umount", "-l", d.Dir).Run()
	}
	if d.dev != "" {
		exec.Command("losetup", "-d", d.dev).Run()
	}
}

// Fill writes the file name under d.Dir until the file system is full,
// then frees leave bytes of it (0: none) and syncs it, so that the free
// space left is known. It returns the file's path: removing it gives the
// space back.
func (d *Disk) Fill(name string, leave int64) string {
	d.t.Helper()
	path := filepath.Join(d.Dir, name)
	f, err := os.Create(path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			d.t.Fatal(err)
		}
	}
	if leave > 0 {
		if err := f.Truncate(max(size-leave, 0)); err != nil {
			d.t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, unix.ENOSPC) {
		d.t.Fatal(err)
	}
	return path
}

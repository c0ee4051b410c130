// Package faultfs gives tests a directory whose file operations fail on
// demand, as a failing device's do: a FUSE loopback of a directory of the
// test's, whose reads, writes, opens or fsyncs answer EIO while a fault is
// set, for every file or for one file, or for a byte range of one file.
// Everything else passes through to the backing directory unchanged.
//
// Nothing over the mount is cached by the kernel (every open file is in
// FUSE direct-I/O mode and no kernel passthrough is offered), so a fault
// takes effect at the next call, as it would on a device, and a program
// opening its files with O_DIRECT works over it as over a disk. The
// backing files are opened without O_DIRECT.
//
// It needs root and /dev/fuse (the mount is made with mount(2) itself, so
// no fusermount is needed); where either is missing, or the kernel
// refuses the mount, Mount skips the test and says why. Only tests import
// it.
package faultfs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Op is a set of file operations a Fault fails.
type Op uint32

const (
	// Read fails read(2) and pread(2) of a file's bytes.
	Read Op = 1 << iota
	// Write fails write(2) and pwrite(2).
	Write
	// Open fails open(2) and creat(2) of a file (directories open).
	Open
	// Fsync fails fsync(2) and fdatasync(2) of a file.
	Fsync
)

// Fault says which operations fail with EIO, and on what.
type Fault struct {
	Ops Op
	// Path limits the fault to one file, by its path under the mount
	// point (slash-separated, e.g. "ledger/STREAM"); "" is every file.
	Path string
	// Off and Len limit Read and Write faults to calls that touch the
	// bytes [Off, Off+Len) of the file; Len 0 is the whole file. A read
	// touches only bytes the file has: one at or past its end succeeds.
	Off, Len int64
}

// matches reports whether f fails op on path over [off, off+n).
func (f Fault) matches(op Op, path string, off, n int64) bool {
	if f.Ops&op == 0 || (f.Path != "" && f.Path != path) {
		return false
	}
	if f.Len == 0 || op&(Read|Write) == 0 {
		return true
	}
	return off < f.Off+f.Len && f.Off < off+max(n, 1)
}

// FS is a mounted fault-injecting loopback. Its methods are safe for
// concurrent use.
type FS struct {
	// Dir is the mount point: the directory to give the code under test.
	Dir string
	// Backing is the directory the mount shows, to inspect or change
	// files behind the faults' back.
	Backing string

	server *fuse.Server
	dev    uint64 // the mount's device: its minor number names its FUSE connection
	mu     sync.RWMutex
	faults []Fault // guarded by mu
	failed atomic.Int64
}

// Mount mounts a new, empty directory through a fault-injecting loopback.
// The test's cleanup heals every fault and unmounts it (lazily when a
// file is still open there).
func Mount(t testing.TB) *FS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("faultfs: skipped: mounting a FUSE file system without fusermount needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("faultfs: skipped: /dev/fuse is missing (%v): load the fuse module or give the container the device", err)
	}
	tmp := t.TempDir()
	f := &FS{Dir: filepath.Join(tmp, "mnt"), Backing: filepath.Join(tmp, "backing")}
	for _, d := range []string{f.Dir, f.Backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := fs.NewLoopbackRoot(f.Backing)
	if err != nil {
		t.Fatal(err)
	}
	lb := root.(*fs.LoopbackNode)
	wrapped := &node{LoopbackNode: lb, fs: f}
	lb.RootData.RootNode = wrapped
	f.server, err = fs.Mount(f.Dir, wrapped, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "faultfs", Name: "faultfs",
			// mount(2) as root, no fusermount binary; no fallback, so
			// that a refusal is reported rather than hidden.
			DirectMountStrict: true,
		},
	})
	if err != nil {
		t.Skipf("faultfs: skipped: the kernel refused the FUSE mount: %v", err)
	}
	t.Cleanup(f.unmount)
	var st unix.Stat_t
	if err := unix.Stat(f.Dir, &st); err != nil {
		t.Fatal(err)
	}
	f.dev = st.Dev
	return f
}

func (f *FS) unmount() {
	f.Heal()
	if err := f.server.Unmount(); err != nil {
		// A file is still open there (a test that failed half-way).
		// Abort the connection first: a lazily detached mount is served
		// until its last file closes, and a process exiting with a file
		// open on a mount it serves itself would wait for ever for the
		// answer to its own close.
		f.abort()
		syscall.Unmount(f.Dir, syscall.MNT_DETACH)
	}
	f.server.Wait()
}

// fuseControl is where the kernel's FUSE control file system is mounted.
const fuseControl = "/sys/fs/fuse/connections"

// abort aborts the mount's FUSE connection (named by the minor number of
// its device), mounting the control file system when it is not: every
// request waiting for an answer, and every later one, fails.
func (f *FS) abort() {
	abort := filepath.Join(fuseControl, strconv.FormatUint(uint64(unix.Minor(f.dev)), 10), "abort")
	if _, err := os.Stat(abort); err != nil {
		syscall.Mount("fusectl", fuseControl, "fusectl", 0, "")
	}
	os.WriteFile(abort, []byte("1"), 0)
}

// Fail sets the faults in effect, replacing those set before.
func (f *FS) Fail(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append([]Fault(nil), faults...)
}

// Heal clears every fault: operations pass through again.
func (f *FS) Heal() { f.Fail() }

// Failures is how many operations failed with EIO since the mount.
func (f *FS) Failures() int64 { return f.failed.Load() }

// fails reports whether op on path over [off, off+n) is to fail now, and
// counts it when it is.
func (f *FS) fails(op Op, path string, off, n int64) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, ft := range f.faults {
		if ft.matches(op, path, off, n) {
			f.failed.Add(1)
			return true
		}
	}
	return false
}

// node is a loopback node whose opens can fail and whose files are
// wrapped in faulty handles.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
)

// WrapChild makes every node of the tree a node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

func (n *node) path() string { return n.Path(nil) }

// Open fails with EIO under an Open fault, else opens the backing file
// (without O_DIRECT, which FUSE direct-I/O mode stands in for).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.fs.fails(Open, n.path(), 0, 0) {
		return nil, 0, syscall.EIO
	}
	fh, ff, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_DIRECT)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{lf: fh.(*fs.LoopbackFile), n: n}, ff | fuse.FOPEN_DIRECT_IO, 0
}

// Create is Open for a new file.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.fs.fails(Open, filepath.Join(n.path(), name), 0, 0) {
		return nil, nil, 0, syscall.EIO
	}
	in, fh, ff, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_DIRECT, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{lf: fh.(*fs.LoopbackFile), n: n.childNode(in)}, ff | fuse.FOPEN_DIRECT_IO, 0
}

// childNode is the node of a created inode (for its path).
func (n *node) childNode(in *fs.Inode) *node {
	if c, ok := in.Operations().(*node); ok {
		return c
	}
	return n
}

// file is a loopback file handle whose reads, writes and fsyncs can
// fail. It forwards only what it names: in particular it offers no
// kernel passthrough, which would take reads and writes past the faults.
type file struct {
	lf *fs.LoopbackFile
	n  *node
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
)

func (h *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	// Only the bytes that exist are read from a device: a read at or
	// past the end of the file touches none.
	n := int64(len(buf))
	if fd, ok := h.lf.PassthroughFd(); ok {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil {
			n = max(0, min(n, st.Size-off))
		}
	}
	if n > 0 && h.n.fs.fails(Read, h.n.path(), off, n) {
		return nil, syscall.EIO
	}
	// Read into buf here rather than splice from the descriptor: the
	// result is complete when the fault was checked.
	res, errno := h.lf.Read(ctx, buf, off)
	if errno != 0 {
		return nil, errno
	}
	b, status := res.Bytes(buf)
	res.Done()
	if !status.Ok() {
		return nil, syscall.Errno(status)
	}
	return fuse.ReadResultData(b), 0
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.n.fs.fails(Write, h.n.path(), off, int64(len(data))) {
		return 0, syscall.EIO
	}
	return h.lf.Write(ctx, data, off)
}

func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if h.n.fs.fails(Fsync, h.n.path(), 0, 0) {
		return syscall.EIO
	}
	return h.lf.Fsync(ctx, flags)
}

func (h *file) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *file) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }
func (h *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}
func (h *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Setattr(ctx, in, out)
}
func (h *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}
func (h *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return h.lf.Allocate(ctx, off, size, mode)
}

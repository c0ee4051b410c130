// Package fsutil holds the small file-system durability steps that every
// store of logpond needs, so each is written (and reasoned about) once.
//
// # A sync is confirmed before it counts
//
// Every sync here is followed by a confirmation that the file system is
// still up: a step that begins after the sync returned and that a file
// system which was shut down, or whose journal aborted, refuses (EIO).
// The kernel can report success for an fsync that overlapped such a
// failure without the metadata it needed (a file's new size, its block
// map) reaching the disk: on ext4 the fsync waits for its journal
// transaction, and once a shutdown or an I/O error has aborted the
// journal, that transaction is discarded, yet a waiter that looks after
// the aborted commit finished is told it is done. An acknowledgement
// given on such a sync names bytes that are gone after the restart. The
// shutdown flag is set before the journal is aborted, so a step that
// starts after the sync returned sees it whenever the sync could have
// been misreported. docs/design.md (§3, "A successful fsync is confirmed")
// says how the power-cut soak (§8) found it.
//
// The confirmation is a write of zero bytes through the descriptor when it
// is open for writing (ext4 and XFS check for shutdown first, and a write
// of nothing changes nothing, not even the modification time), and a
// second sync otherwise (a descriptor opened read-only, a directory): a
// sync, too, checks for shutdown before anything else.
package fsutil

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncDir fsyncs a directory, making the creation, rename or removal of
// entries in it durable, and confirms the sync (package doc). A file's own
// fsync does not cover its directory entry: without this a new file can
// vanish after a power cut.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	err = Fsync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Fsync fsyncs f (data and metadata) and confirms the sync (package doc).
// Only a nil error means f's contents survive a power cut.
func Fsync(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	return confirm(f, unix.Fsync)
}

// Fdatasync fdatasyncs f (its data and the metadata needed to read it back,
// such as its size) and confirms the sync (package doc). Only a nil error
// means f's data survives a power cut.
func Fdatasync(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return confirm(f, unix.Fdatasync)
}

// Confirm checks, after a sync of f returned success, that f's file system
// is still up (package doc): call it after a sync made some other way.
func Confirm(f *os.File) error { return confirm(f, unix.Fdatasync) }

// confirm is Confirm with the sync to repeat when f is not writable.
func confirm(f *os.File, sync func(fd int) error) error {
	fd := int(f.Fd())
	_, err := unix.Pwrite(fd, nil, 0)
	if errors.Is(err, unix.EBADF) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
		// Not open for writing (or a directory, or a file that takes no
		// writes): a second sync, which starts with the same check.
		err = sync(fd)
	}
	if err != nil {
		return fmt.Errorf("confirm the sync of %s: its file system failed during the sync, which therefore proves nothing: %w", f.Name(), err)
	}
	return nil
}

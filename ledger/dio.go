package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/ncw/directio"
	"golang.org/x/sys/unix"

	"github.com/logpond/logpond/internal/fsutil"
)

// errMisaligned is returned, before any system call, for a direct-IO
// request whose buffer address, file offset or length is not a multiple of
// BlockSize. ext4 silently falls back to buffered I/O for some misaligned
// O_DIRECT requests, so the kernel cannot be trusted to refuse them.
var errMisaligned = errors.New("ledger: misaligned direct I/O")

// alignedBuffer returns a zeroed buffer of n bytes (n rounded up to
// BlockSize) whose address is BlockSize-aligned.
func alignedBuffer(n int) []byte {
	return directio.AlignedBlock(int(alignUp(int64(max(n, 1)))))
}

func checkAligned(buf []byte, off int64) error {
	if len(buf) == 0 || len(buf)%BlockSize != 0 || off%BlockSize != 0 ||
		uintptr(unsafe.Pointer(&buf[0]))%BlockSize != 0 {
		return fmt.Errorf("%w: address %p, offset %d, length %d (all must be multiples of %d)",
			errMisaligned, unsafe.Pointer(unsafe.SliceData(buf)), off, len(buf), BlockSize)
	}
	return nil
}

// openSegmentFile opens a segment with O_DIRECT when direct is set.
func openSegmentFile(path string, flag int, direct bool) (*os.File, error) {
	if direct {
		return directio.OpenFile(path, flag, 0o640)
	}
	return os.OpenFile(path, flag, 0o640)
}

// writeAt writes buf at off, checking alignment first: the ledger writes
// whole blocks only, in both modes, so that the format is the same.
func writeAt(f *os.File, buf []byte, off int64) error {
	if err := checkAligned(buf, off); err != nil {
		return err
	}
	_, err := f.WriteAt(buf, off)
	return err
}

// readAt reads up to len(buf) bytes at off (a short read only at the end
// of the file), checking alignment first.
func readAt(f *os.File, buf []byte, off int64) (int, error) {
	if err := checkAligned(buf, off); err != nil {
		return 0, err
	}
	n, err := f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		err = nil // a short (or empty) read at the end of the file
	}
	return n, err
}

// fdatasync makes a segment's written data durable (and the metadata needed
// to read it, such as its size). O_DIRECT alone is not durability: the
// device may still hold the data in its cache. It is the raw system call
// (tests replace it, hooks.fdatasync): Ledger.datasync confirms it.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// datasync fdatasyncs f and confirms that its file system stayed up
// through the sync (internal/fsutil): a sync that overlapped a shutdown or
// a journal abort can report success for metadata that never reached the
// disk, and the flusher releases journal records on the strength of it.
func (l *Ledger) datasync(f *os.File) error {
	if err := l.fdatasync(f); err != nil {
		return err
	}
	return fsutil.Confirm(f)
}

// probeDirectIO checks that dir's file system accepts O_DIRECT with
// BlockSize alignment, by writing and reading one block of a temporary file.
func probeDirectIO(dir string) error {
	path := filepath.Join(dir, ".direct-io-probe")
	defer os.Remove(path)
	f, err := openSegmentFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, true)
	if err != nil {
		return fmt.Errorf("ledger: %s does not support O_DIRECT (direct_io = true): %w; set [ledger] direct_io = false, or put the ledger on ext4 or xfs", dir, err)
	}
	defer f.Close()
	buf := alignedBuffer(BlockSize)
	copy(buf, "logpond direct-io probe")
	if err := writeAt(f, buf, 0); errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("ledger: %s: no space left for the O_DIRECT probe (one block): free space on its device: %w", dir, err)
	} else if err != nil {
		return fmt.Errorf("ledger: %s does not support O_DIRECT writes (direct_io = true): %w; set [ledger] direct_io = false", dir, err)
	}
	if _, err := readAt(f, buf, 0); err != nil {
		return fmt.Errorf("ledger: %s does not support O_DIRECT reads (direct_io = true): %w; set [ledger] direct_io = false", dir, err)
	}
	return nil
}

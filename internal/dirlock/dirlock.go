// Package dirlock gives one process at a time the right to write a data
// directory. It holds an exclusive flock(2) on DIR/LOCK for as long as the
// Lock is held; the kernel drops it when the process dies, so a crash never
// leaves a stale lock. The holder's pid is written into the file only to name
// it in the message a second process gets.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FileName is the name of the lock file inside a locked directory.
const FileName = "LOCK"

// Lock is a held directory lock.
type Lock struct {
	f    *os.File
	path string
}

// LockedError says that another process holds the lock.
type LockedError struct {
	Path string // the lock file
	PID  int    // the holder as it recorded itself, 0 if unknown
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("dirlock: %s is locked by %s: another logpond is using this directory; stop it, or point this one at other directories", e.Path, holder)
}

// Acquire takes the exclusive lock on dir, which must exist. It does not
// wait: if another process holds the lock it returns a *LockedError at once.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dirlock: open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid := readPID(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: pid}
		}
		return nil, fmt.Errorf("dirlock: flock %s: %w", path, err)
	}
	// The pid is informational (for LockedError); the flock is the lock, so
	// there is nothing to fsync here.
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dirlock: write %s: %w", path, err)
		}
	}
	return &Lock{f: f, path: path}, nil
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// Release drops the lock. The lock file stays: removing it would race with a
// process that has just opened it and is about to lock it.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	if err != nil {
		return fmt.Errorf("dirlock: release %s: %w", l.path, err)
	}
	return nil
}

func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}

// Package storetest holds test helpers shared by the journal's and the
// ledger's tests: damaging files, proving a directory untouched, and
// reading a store while its writer runs. Only tests import it.
package storetest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// SnapshotDir records every file's name, size, mode and modification time
// under dir, to show that an inspection wrote nothing.
func SnapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = fmt.Sprint(info.Mode(), info.ModTime(), info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Seq is from, from+1, …, to.
func Seq(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// Flip changes one bit of the byte at off in the file at path.
func Flip(t testing.TB, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// AppendBytes appends p to the file at path.
func AppendBytes(t testing.TB, path string, p []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(p); err != nil {
		t.Fatal(err)
	}
}

// ReadWhileWriting reads a store again and again while its writer runs
// (done receives the writer's result) and once more after: every pass
// must succeed and return LSNs 1, 2, … without a gap, and the last pass
// all total of them.
func ReadWhileWriting(t testing.TB, done <-chan error, total int, read func() ([]uint64, error)) {
	t.Helper()
	writerDone := false
	for passes := 0; ; passes++ {
		lsns, err := read()
		if err != nil {
			t.Fatalf("pass %d: %v", passes, err)
		}
		if !slices.Equal(lsns, Seq(1, uint64(len(lsns)))) {
			t.Fatalf("pass %d: records are not a prefix: %v", passes, lsns)
		}
		if writerDone && len(lsns) == total {
			t.Logf("%d passes", passes)
			return
		}
		if !writerDone {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				writerDone = true
			default:
			}
		}
	}
}

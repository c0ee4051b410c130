package faultfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ncw/directio"
)

// TestFaultsComeAndGo: reads, writes, opens and fsyncs pass through until
// a fault is set, fail with EIO while it is (only on its file and byte
// range when it names them), and pass again once healed; O_DIRECT files
// work over the mount.
func TestFaultsComeAndGo(t *testing.T) {
	m := Mount(t)
	path := filepath.Join(m.Dir, "a")
	block := directio.AlignedBlock(2 * directio.BlockSize)
	for i := range block {
		block[i] = byte(i)
	}
	f, err := directio.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(block, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(m.Backing, "a")); err != nil || !bytes.Equal(b, block) {
		t.Fatalf("backing file: %v, equal %v", err, bytes.Equal(b, block))
	}
	read := func(off int64) error {
		buf := directio.AlignedBlock(directio.BlockSize)
		_, err := f.ReadAt(buf, off)
		if err == nil && !bytes.Equal(buf, block[off:off+directio.BlockSize]) {
			t.Fatalf("read at %d returned other bytes", off)
		}
		return err
	}
	if err := read(0); err != nil {
		t.Fatal(err)
	}

	m.Fail(Fault{Ops: Read, Path: "a", Off: directio.BlockSize, Len: 1})
	if err := read(0); err != nil {
		t.Errorf("read outside the faulty range: %v", err)
	}
	if err := read(directio.BlockSize); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the faulty range: %v, want EIO", err)
	}
	m.Fail(Fault{Ops: Read | Write | Fsync | Open})
	if _, err := f.WriteAt(block, 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("write: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("fsync: %v, want EIO", err)
	}
	if _, err := os.ReadFile(path); !errors.Is(err, syscall.EIO) {
		t.Errorf("open: %v, want EIO", err)
	}
	if _, err := os.ReadDir(m.Dir); err != nil {
		t.Errorf("directories still list: %v", err)
	}
	if m.Failures() < 4 {
		t.Errorf("%d failures counted, want at least 4", m.Failures())
	}
	m.Heal()
	if err := read(directio.BlockSize); err != nil {
		t.Errorf("read after healing: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, block) {
		t.Errorf("buffered read after healing: %v", err)
	}
}

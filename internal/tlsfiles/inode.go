package tlsfiles

import (
	"io/fs"
	"syscall"
)

// inode is the file's inode number (0 where the platform gives none): a
// file replaced by a rename keeps no inode, even with the same time and
// size.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Package fsutil holds the small file-system durability steps that every
// store of logpond needs, so each is written (and reasoned about) once.
package fsutil

import (
	"fmt"
	"os"
)

// SyncDir fsyncs a directory, making the creation, rename or removal of
// entries in it durable. A file's own fsync does not cover its directory
// entry: without this a new file can vanish after a power cut.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

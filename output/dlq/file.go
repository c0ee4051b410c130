package dlq

import (
	"io"
	"os"

	"github.com/logpond/logpond/internal/fsutil"
)

// file is what the Store needs of an open dead-letter file. *os.File
// provides it through osFile; tests wrap it to inject failures per Store
// (Options.hooks), never through package globals.
type file interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	// Datasync makes the file's written data durable, with the metadata
	// needed to read it back (its size), as fdatasync(2) does.
	Datasync() error
	Close() error
}

type osFile struct{ *os.File }

func (f osFile) Datasync() error { return fsutil.Fdatasync(f.File) }

func openOSFile(path string, flag int) (file, error) {
	f, err := os.OpenFile(path, flag, 0o640)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logpond/logpond/internal/dirlock"
	"github.com/logpond/logpond/internal/dirowner"
	"github.com/logpond/logpond/journal"
)

// checkStoreDir says why dir cannot be read as logpond's store of the given
// kind ("journal" or "ledger"): a directory that holds files but none of
// the store's own (the repository root, the journal given as the ledger)
// is refused, so that no command reports "OK" about something it did not
// check; and a file or directory ledgerctl may not read is named, with who
// owns it, instead of being reported as damage later. An empty directory
// is an empty store, and so is one that holds only the lock file (logpond
// or accept-loss locked it while it was empty).
func checkStoreDir(kind, dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return permissionOr(dir, err)
	}
	des = slices.DeleteFunc(des, func(de os.DirEntry) bool { return de.Name() == dirlock.FileName })
	if len(des) > 0 && !slicesContainsStoreFile(kind, des) {
		what := "a STREAM file or <20-digit LSN>.seg segments"
		if kind == "journal" {
			what = "gen-<20-digit LSN> generation directories"
		}
		return fmt.Errorf("%s is not a logpond %s directory: it holds no %s (check -%s, or the configuration's %s.dir)", dir, kind, what, kind, kind)
	}
	// Everything under dir must be readable: a permission error met
	// halfway through a scan is not damage.
	var denied error
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				denied = permissionOr(path, err)
				return fs.SkipAll
			}
			return nil // vanished while walking (retention, release): fine
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				denied = permissionOr(path, err)
				return fs.SkipAll
			}
			return nil
		}
		f.Close()
		return nil
	})
	return denied
}

func slicesContainsStoreFile(kind string, des []os.DirEntry) bool {
	for _, de := range des {
		name := de.Name()
		switch {
		case kind == "ledger" && (name == "STREAM" || strings.HasSuffix(name, ".seg")):
			return true
		case kind == "journal" && de.IsDir() && journal.IsGenerationDir(name):
			return true
		}
	}
	return false
}

// permissionOr turns a permission error on path into a message that says
// what to do; other errors are returned as they are.
func permissionOr(path string, err error) error {
	if !errors.Is(err, os.ErrPermission) {
		return err
	}
	owner, example := "", "sudo -u logpond ledgerctl …"
	if o, oerr := dirowner.Of(path); oerr == nil {
		owner, example = fmt.Sprintf(" (owned by %s)", o), o.Command("ledgerctl …")
	} else if o, oerr := dirowner.Of(filepath.Dir(path)); oerr == nil {
		owner, example = fmt.Sprintf(" (its directory is owned by %s)", o), o.Command("ledgerctl …")
	}
	return fmt.Errorf("%s: permission denied — run as the user that owns the store%s, e.g. %s", path, owner, example)
}

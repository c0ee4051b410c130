package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files kept aside for inspection live in the ledger directory and take
// space on its device, so they count toward Options.MaxBytes like the
// segments: the quarantine (DIR/quarantine: each damaged range a reader
// passed, its bytes and description) and damaged cursor files set aside at
// Open (DIR/cursors/<name>.cursor.damaged). Nothing deletes them but an
// operator, once inspected; the ledger measures them again to notice that.

// damagedSuffix ends the name of a file set aside because it is damaged.
const damagedSuffix = ".damaged"

// asideRecheck is how often, at most, the ledger measures the files kept
// aside again while there are some, to notice those an operator deleted:
// each measure lists two directories, so not at every flush.
const asideRecheck = time.Second

// measureAside measures the files kept aside and records their bytes
// (AsideBytes, and so UsedBytes). Measures run one at a time, so that an
// older one never overwrites a newer.
func (l *Ledger) measureAside() error {
	l.asideMu.Lock()
	defer l.asideMu.Unlock()
	n, err := asideBytes(l.dir)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asideAt = l.now()
	if err != nil {
		return err
	}
	l.aside = n
	return nil
}

// remeasureAside measures the files kept aside again when there are some
// and the last measure is asideRecheck old: an operator may have deleted
// them. A failure keeps the last measure (it is logged by the caller).
func (l *Ledger) remeasureAside() error {
	l.mu.Lock()
	due := l.aside > 0 && l.now().Sub(l.asideAt) >= asideRecheck
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.measureAside()
}

// asideBytes is the size of the files kept aside in the ledger directory
// dir: every file in the quarantine directory (a .tmp of a quarantine
// being written included: it takes space too) and every damaged cursor
// file. Missing directories hold none.
func asideBytes(dir string) (int64, error) {
	var n int64
	for _, d := range []struct {
		dir  string
		keep func(name string) bool
	}{
		{filepath.Join(dir, QuarantineDir), func(string) bool { return true }},
		{filepath.Join(dir, cursorDir), func(name string) bool { return strings.HasSuffix(name, damagedSuffix) }},
	} {
		des, err := os.ReadDir(d.dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("ledger: measure the files kept aside: %w", err)
		}
		for _, de := range des {
			if !de.Type().IsRegular() || !d.keep(de.Name()) {
				continue
			}
			info, err := de.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted since the listing
			}
			if err != nil {
				return 0, fmt.Errorf("ledger: measure the files kept aside: %w", err)
			}
			n += info.Size()
		}
	}
	return n, nil
}

// AsideBytes is the bytes of the files kept aside for inspection in the
// ledger directory (the quarantine and damaged cursor files), as last
// measured: part of UsedBytes, and so of what MaxBytes bounds. Safe for
// concurrent use.
func (l *Ledger) AsideBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aside
}

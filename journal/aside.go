package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Generations set aside for damage (damaged-<base>, by Open when the ledger
// already held their records, or by AcceptLoss) stay in the journal
// directory until an operator deletes them, once inspected. They are on
// the journal's device, so they count toward max_bytes: the journal takes
// their bytes off what its records may use, logs at Open what they take,
// and measures them again, at most every asideRecheck, while appends wait
// for space, to notice the operator deleted them.

// asideRecheck is how often, at most, a full journal measures the
// directories kept aside again.
const asideRecheck = time.Second

// measureAside measures the damaged-<base> directories and records their
// bytes (space.aside), waking appends that wait when they shrank. A
// directory that cannot be measured is logged and counted as before.
func (j *Journal) measureAside() {
	n, err := asideBytes(j.dir)
	j.mu.Lock()
	first := j.space.asideAt.IsZero()
	j.space.asideAt = time.Now()
	if err != nil {
		j.mu.Unlock()
		j.log.Warn("journal: cannot measure the damaged generations kept aside; counting what was measured before", "dir", j.dir, "err", err)
		return
	}
	old := j.space.aside
	j.space.aside = n
	j.mu.Unlock()
	if first && n > 0 {
		j.log.Warn("journal: damaged generations are kept aside for inspection in the journal directory and take their bytes from journal.max_bytes; delete the damaged-* directories once inspected",
			"dir", j.dir, "aside_bytes", n, "max_bytes", j.opts.MaxBytes)
	}
	if n < old {
		j.freed(0) // wakes appends that wait: the room changed
	}
}

// asideBytes is the size of the files in the damaged-<base> directories of
// the journal directory dir (none when it holds none).
func asideBytes(dir string) (int64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("journal: measure the damaged generations kept aside: %w", err)
	}
	var n int64
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), damagedPrefix) {
			continue
		}
		err := filepath.WalkDir(filepath.Join(dir, de.Name()), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				info, err := d.Info()
				if err != nil {
					return err
				}
				n += info.Size()
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("journal: measure the damaged generations kept aside: %w", err)
		}
	}
	return n, nil
}

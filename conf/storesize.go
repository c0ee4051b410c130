package conf

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// StoreSizeWarnings compares the stores' bounds with the file systems
// that hold them on this host: the journal (journal.max_bytes in
// journal.dir), the ledger (ledger.max_bytes in ledger.dir) and each
// output's dead letters (dead_letter_max_bytes, in the ledger's
// directory). Stores that share a file system are added up; when their
// sum is larger than the file system, a warning names them and the
// sizes. The bounds then never apply: the device fills first, and ingest
// stops at the full device (journal_full or ledger_full) with less room
// than configured. A directory that does not exist yet is looked up
// through its nearest existing parent; one that cannot be looked up is
// left out (CheckHost reports it).
func (c *Config) StoreSizeWarnings() []Warning {
	type store struct {
		key   string
		bytes int64
	}
	type fsys struct {
		dir    string // the first store directory found on it
		total  int64
		stores []store
	}
	var order []string
	byID := map[string]*fsys{}
	add := func(dir, key string, bytes int64) {
		id, total, ok := fileSystemOf(dir)
		if !ok || bytes <= 0 {
			return
		}
		f := byID[id]
		if f == nil {
			f = &fsys{dir: dir, total: total}
			byID[id] = f
			order = append(order, id)
		}
		f.stores = append(f.stores, store{key, bytes})
	}
	add(c.Journal.Dir, "journal.max_bytes", int64(c.Journal.MaxBytes))
	add(c.Ledger.Dir, "ledger.max_bytes", int64(c.Ledger.MaxBytes))
	for _, o := range c.Outputs() {
		switch {
		case o.Elasticsearch != nil:
			add(c.Ledger.Dir, o.Key+".dead_letter_max_bytes", int64(o.Elasticsearch.DeadLetterMaxBytes))
		case o.Lumberjack != nil:
			add(c.Ledger.Dir, o.Key+".dead_letter_max_bytes", int64(o.Lumberjack.DeadLetterMaxBytes))
		case o.Kafka != nil:
			add(c.Ledger.Dir, o.Key+".dead_letter_max_bytes", int64(o.Kafka.DeadLetterMaxBytes))
		}
	}
	var ws []Warning
	for _, id := range order {
		f := byID[id]
		var sum int64
		parts := make([]string, len(f.stores))
		for i, s := range f.stores {
			sum += s.bytes
			parts[i] = fmt.Sprintf("%s %s", s.key, Size(s.bytes))
		}
		if sum <= f.total {
			continue
		}
		// Named by the largest store: the one to size down first.
		largest := slices.MaxFunc(f.stores, func(a, b store) int { return cmp.Compare(a.bytes, b.bytes) })
		ws = append(ws, Warning{largest.key, fmt.Sprintf(
			"%s add up to %s, more than the %s file system that holds %s: the device fills before these bounds, and ingest stops there (journal_full or ledger_full) with less backlog than configured; size them to fit with about 10%% free, or give the stores larger devices",
			strings.Join(parts, " + "), Size(sum), Size(f.total), f.dir)})
	}
	return ws
}

// fileSystemOf identifies the file system that holds dir, or would hold
// it once created (its nearest existing parent), and gives its size.
func fileSystemOf(dir string) (id string, total int64, ok bool) {
	if dir == "" {
		return "", 0, false
	}
	p, err := filepath.Abs(dir)
	if err != nil {
		return "", 0, false
	}
	for {
		if _, err := os.Stat(p); err == nil {
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", 0, false
		}
		p = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return "", 0, false
	}
	var fi unix.Stat_t
	if err := unix.Stat(p, &fi); err != nil {
		return "", 0, false
	}
	// The device number tells file systems apart; two bind mounts of one
	// file system share it, as they share its space.
	return fmt.Sprint(fi.Dev), int64(st.Blocks) * st.Bsize, true
}

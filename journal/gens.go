package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const genPrefix = "gen-"

// generation is one segment file of the journal, in a directory of its
// own (tidwall.go). Records base+1 … base+n.
type generation struct {
	base uint64 // LSN before the first record
	dir  string
	size int64 // bytes of its segment file (closed generations only)
}

// IsGenerationDir reports whether name, an entry of a directory, names a
// journal generation (doc.go): what a journal directory holds, and no
// other store does.
func IsGenerationDir(name string) bool {
	_, ok := parseGenName(name)
	return ok
}

// parseGenName returns the base of the generation named name
// (gen-<20 digits>), and false for any other name.
func parseGenName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, genPrefix) || len(name) != len(genPrefix)+20 {
		return 0, false
	}
	base, err := strconv.ParseUint(name[len(genPrefix):], 10, 64)
	return base, err == nil
}

func genName(base uint64) string { return fmt.Sprintf("%s%020d", genPrefix, base) }

func (g generation) segment() string { return segmentPath(g.dir) }

// releasing is where Release puts the segment of a released generation
// until the releaser has cut it down (release.go).
func (g generation) releasing() string { return filepath.Join(g.dir, releasingFile) }

// scanGenerations returns the journal's generations, oldest first; with a
// syncDir it also completes releases a crash interrupted, syncing
// directories with it (a read-only caller passes nil).
func scanGenerations(dir string, syncDir func(string) error) ([]generation, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var gens []generation
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() || !strings.HasPrefix(name, genPrefix) {
			continue
		}
		base, ok := parseGenName(name)
		if !ok {
			return nil, fmt.Errorf("journal: %s: unexpected directory %q: a journal directory holds only gen-<20 digits> directories", dir, name)
		}
		g := generation{base: base, dir: filepath.Join(dir, name), size: -1}
		st, err := os.Stat(g.segment())
		switch {
		case err == nil:
			g.size = st.Size()
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("journal: %w", err)
		}
		gens = append(gens, g)
	}
	slices.SortFunc(gens, func(a, b generation) int {
		switch {
		case a.base < b.base:
			return -1
		case a.base > b.base:
			return 1
		}
		return 0
	})
	// A generation without a segment file, other than the newest, is a
	// Release that a crash interrupted (it renames the segment aside,
	// cuts it down, removes it, then the directory): finish it. The newest
	// may lack its file only because it was not created yet; Open creates it.
	kept := gens[:0]
	for i, g := range gens {
		if g.size < 0 && i < len(gens)-1 {
			if syncDir == nil {
				continue
			}
			if err := finishRelease(g, syncDir); err != nil {
				return nil, err
			}
			continue
		}
		g.size = max(g.size, 0)
		kept = append(kept, g)
	}
	return kept, nil
}

// createGeneration makes the directory of a new generation durable: the
// directory is created and the journal directory fsynced, so that the
// generation (and with it the LSN high-water mark in its name) survives a
// power cut. Opening the segment creates the file inside it; the caller
// fsyncs the generation directory after that.
func createGeneration(dir string, base uint64, syncDir func(string) error) (generation, error) {
	g := generation{base: base, dir: filepath.Join(dir, genName(base))}
	if err := os.Mkdir(g.dir, 0o750); err != nil {
		return g, fmt.Errorf("journal: create generation: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return g, fmt.Errorf("journal: create generation %s: %w", g.dir, err)
	}
	return g, nil
}

// lastLSNOf is the last LSN generation gens[i] can hold: the next
// generation's base, or 0 (unknown) for the newest.
func lastLSNOf(gens []generation, i int) uint64 {
	if i+1 < len(gens) {
		return gens[i+1].base
	}
	return 0
}

// journalDirOf returns the journal directory of a segment path, for
// messages.
func journalDirOf(segment string) string { return filepath.Dir(filepath.Dir(segment)) }

// FirstLSNOnDisk reports, without opening the journal in dir (it changes
// nothing), the LSN of the oldest record it holds (or the LSN it would
// continue at, when it holds none) and whether a journal exists there. The
// server uses it to tell the ledger which LSNs the journal can still replay.
func FirstLSNOnDisk(dir string) (uint64, bool, error) {
	gens, err := scanGenerations(dir, nil)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(gens) == 0) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for _, g := range gens {
		if g.size > 0 {
			return g.base + 1, true, nil
		}
	}
	return gens[len(gens)-1].base + 1, true, nil
}

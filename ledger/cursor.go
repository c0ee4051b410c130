package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/logpond/logpond/internal/fsutil"
)

// Cursor files: DIR/cursors/<name>.cursor, 12 bytes: the last LSN fully
// done (u64 little-endian) and a CRC-32C of those 8 bytes. They are
// replaced atomically (temp file, fsync, rename, directory fsync), so after
// a crash at any moment a cursor holds its old or its new value.
const (
	cursorDir    = "cursors"
	cursorSuffix = ".cursor"
	cursorSize   = 12
)

// errCursorDamaged: a cursor file whose checksum fails.
var errCursorDamaged = errors.New("ledger")

var cursorName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

func (l *Ledger) cursorPath(name string) string {
	return filepath.Join(l.dir, cursorDir, name+cursorSuffix)
}

// loadCursors reads every cursor file; a damaged one is an error naming it.
func (l *Ledger) loadCursors() (map[string]uint64, error) {
	dir := filepath.Join(l.dir, cursorDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	cursors := map[string]uint64{}
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), cursorSuffix)
		if !ok {
			if strings.HasSuffix(de.Name(), ".tmp") {
				os.Remove(filepath.Join(dir, de.Name())) // an update a crash interrupted
			}
			continue
		}
		path := filepath.Join(dir, de.Name())
		lsn, err := readCursor(path)
		if errors.Is(err, errCursorDamaged) {
			// Its position is unknown: the output starts again from the
			// oldest record the ledger holds (Cursor), which sends again
			// what it had delivered but loses nothing. The file is kept
			// aside for inspection.
			aside := path + damagedSuffix
			if rerr := os.Rename(path, aside); rerr != nil {
				return nil, fmt.Errorf("ledger: set the damaged cursor file %s aside: %w", path, rerr)
			}
			if serr := l.syncDir(dir); serr != nil {
				return nil, fmt.Errorf("ledger: %w", serr)
			}
			l.log.Error("ledger: damaged cursor file set aside; its output starts again from the oldest record the ledger holds (events it had delivered are sent again: with document_id \"auto\" Elasticsearch keeps one copy)",
				"cursor", name, "file", path, "moved_to", aside, "err", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		cursors[name] = lsn
	}
	return cursors, nil
}

func readCursor(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	if len(b) != cursorSize || crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: cursor file %s is damaged (%d bytes, checksum mismatch): restore it or delete it to restart that output from the oldest record", errCursorDamaged, path, len(b))
	}
	return binary.LittleEndian.Uint64(b), nil
}

// Cursor returns the position of the named cursor: the last LSN its output
// has fully done. A new cursor starts just before the oldest retained
// record, and is persisted at once, so that retention honours it.
func (l *Ledger) Cursor(name string) (uint64, error) {
	if !cursorName.MatchString(name) {
		return 0, fmt.Errorf("ledger: cursor name %q: use 1–100 letters, digits, '_', '.' or '-'", name)
	}
	l.mu.Lock()
	lsn, ok := l.cursors[name]
	l.mu.Unlock()
	if ok {
		return lsn, nil
	}
	start := l.FirstLSN() - 1
	if err := l.SetCursor(name, start); err != nil {
		return 0, err
	}
	return start, nil
}

// SetCursor persists the named cursor at lsn (atomically, see above). A
// cursor never moves backwards and never past LastLSN.
func (l *Ledger) SetCursor(name string, lsn uint64) error {
	if !cursorName.MatchString(name) {
		return fmt.Errorf("ledger: cursor name %q: use 1–100 letters, digits, '_', '.' or '-'", name)
	}
	l.cursorMu.Lock() // one update of the cursor files at a time
	defer l.cursorMu.Unlock()
	l.mu.Lock()
	old, ok := l.cursors[name]
	durable := l.durable
	l.mu.Unlock()
	switch {
	case ok && lsn < old:
		return fmt.Errorf("ledger: cursor %s would move back from %d to %d", name, old, lsn)
	case lsn > durable:
		return fmt.Errorf("ledger: cursor %s at %d is past the last stored LSN %d", name, lsn, durable)
	}
	var b [cursorSize]byte
	binary.LittleEndian.PutUint64(b[:], lsn)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
	if err := writeFileAtomic(l.cursorPath(name), b[:], l.syncDir); err != nil {
		return err
	}
	l.mu.Lock()
	l.cursors[name] = lsn
	l.mu.Unlock()
	return nil
}

// Cursors returns every cursor's position.
func (l *Ledger) Cursors() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]uint64, len(l.cursors))
	for k, v := range l.cursors {
		out[k] = v
	}
	return out
}

// CursorSetAside reports whether the named cursor's file was found
// damaged and set aside (at this Open or an earlier one) and is still kept
// for inspection: its output existed, and has no known position. Such a
// name is not a new output: it starts again from the oldest record
// (Cursor), whatever a new output's starting point would be.
func (l *Ledger) CursorSetAside(name string) bool {
	_, err := os.Lstat(l.cursorPath(name) + damagedSuffix)
	return err == nil
}

// DeleteCursor removes a cursor (an output that was removed from the
// configuration), so that it no longer holds segments back.
func (l *Ledger) DeleteCursor(name string) error {
	l.cursorMu.Lock()
	defer l.cursorMu.Unlock()
	if err := os.Remove(l.cursorPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := l.syncDir(filepath.Join(l.dir, cursorDir)); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	l.mu.Lock()
	delete(l.cursors, name)
	l.mu.Unlock()
	return nil
}

// WriteCursorFile sets the named cursor of the ledger in dir to lsn,
// forward or back, without opening the ledger: for operators re-driving a
// range with logpond stopped. The cursor file is replaced atomically and
// durably. The caller must hold the directory's lock (internal/dirlock)
// so that no running logpond holds the cursor in memory, and must check
// that lsn is within the ledger.
func WriteCursorFile(dir, name string, lsn uint64) error {
	if !cursorName.MatchString(name) {
		return fmt.Errorf("ledger: cursor name %q: use 1–100 letters, digits, '_', '.' or '-'", name)
	}
	cdir := filepath.Join(dir, cursorDir)
	if err := os.MkdirAll(cdir, 0o750); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	var b [cursorSize]byte
	binary.LittleEndian.PutUint64(b[:], lsn)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
	return writeFileAtomic(filepath.Join(cdir, name+cursorSuffix), b[:], fsutil.SyncDir)
}

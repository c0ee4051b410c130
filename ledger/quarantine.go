package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/fsutil"
)

// QuarantineDir is the directory, inside the ledger directory, where
// damaged ranges passed by readers are kept: for each range a .bin file
// with its raw bytes and a .json file describing it (QuarantineEntry).
// Retention never deletes them; an operator does, once inspected. They
// count toward Options.MaxBytes (aside.go).
const QuarantineDir = "quarantine"

// QuarantineEntry is the description of one quarantined range, the .json
// file next to its bytes.
type QuarantineEntry struct {
	Segment  string    `json:"segment"`
	Start    int64     `json:"start_offset"`
	End      int64     `json:"end_offset"`
	FirstLSN uint64    `json:"first_lsn"`
	LastLSN  uint64    `json:"last_lsn"`
	Records  uint64    `json:"records"`
	Reason   string    `json:"reason"`
	Found    time.Time `json:"found"`
	// Bytes is the name of the file holding the raw bytes, in the same
	// directory.
	Bytes string `json:"bytes_file"`
	// Path is the .json file's path (not stored).
	Path string `json:"-"`
}

// quarantineName is the base name of a range's files: the segment and the
// start offset, so that the same range found again replaces its files.
func quarantineName(d Damage) string {
	return fmt.Sprintf("%s-%012d", strings.TrimSuffix(filepath.Base(d.Segment), segmentSuffix), d.Start)
}

// Quarantine keeps the raw bytes of damaged range d and its description in
// the ledger's quarantine directory, durably (fsynced files and
// directory), and returns the description's path. Finding the same range
// again replaces its files. They count toward Options.MaxBytes
// (AsideBytes) until an operator deletes them.
func (l *Ledger) Quarantine(d Damage) (string, error) {
	dir := filepath.Join(l.dir, QuarantineDir)
	if err := os.Mkdir(dir, 0o750); err == nil {
		if err := l.syncDir(l.dir); err != nil {
			return "", fmt.Errorf("ledger: quarantine: %w", err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("ledger: quarantine: %w", err)
	}
	name := quarantineName(d)
	if err := copyRange(filepath.Join(dir, name+".bin"), d.Segment, d.Start, d.End); err != nil {
		return "", fmt.Errorf("ledger: quarantine: %w", err)
	}
	e := QuarantineEntry{Segment: d.Segment, Start: d.Start, End: d.End, FirstLSN: d.FirstLSN, LastLSN: d.LastLSN,
		Records: d.Records(), Reason: d.Reason, Found: time.Now().UTC(), Bytes: name + ".bin"}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", fmt.Errorf("ledger: quarantine: %w", err)
	}
	path := filepath.Join(dir, name+".json")
	if err := writeFileAtomic(path, append(b, '\n'), l.syncDir); err != nil {
		return "", fmt.Errorf("ledger: quarantine: %w", err)
	}
	if err := l.measureAside(); err != nil {
		// Kept all the same; Retain measures again.
		l.log.Warn("ledger: cannot measure the files kept aside for inspection after a quarantine; ledger.max_bytes counts their last measure", "err", err)
	}
	return path, nil
}

// copyRange copies bytes [start, end) of the file src to dst (written
// aside, fsynced and renamed over dst), without holding them in memory: a
// damaged range can run to the end of a large segment.
func copyRange(dst, src string, start, end int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.NewSectionReader(in, start, max(end-start, 0)))
	if err == nil {
		err = fsutil.Fsync(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy %s bytes %d-%d to %s: %w", src, start, end, dst, err)
	}
	return nil
}

// ReadQuarantine lists the quarantined ranges of the ledger in dir, in
// segment and offset order. Read-only; a missing directory is none.
func ReadQuarantine(dir string) ([]QuarantineEntry, error) {
	qdir := filepath.Join(dir, QuarantineDir)
	des, err := os.ReadDir(qdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var out []QuarantineEntry
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		path := filepath.Join(qdir, de.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		var e QuarantineEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("ledger: quarantine entry %s: %w", path, err)
		}
		e.Path = path
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Dir is the ledger's directory.
func (l *Ledger) Dir() string { return l.dir }

package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/logpond/logpond/internal/fsutil"
)

// Records the journal no longer holds, lost at the end of the ledger.
//
// Open refuses when the open segment ends in damage whose LSN the journal
// no longer holds (nothing follows it, so it is not sealed as damage in
// the middle), and the server refuses when the journal starts after the
// ledger's last LSN + 1: in both cases synced records are in neither
// store. [SealOpenSegment], run by `ledgerctl accept-loss` with logpond
// stopped, is the operator's explicit acceptance: the open segment is
// sealed as it is and a new, empty open segment starts at the journal's
// first LSN, so that the lost LSNs become a damaged range at the end of a
// sealed segment, which readers that pass damage report, quarantine and
// count like any other.

// OpenSegmentScan is what [ScanOpenSegment] found in a ledger's open
// (newest) segment.
type OpenSegmentScan struct {
	Segment  string
	FirstLSN uint64 // the LSN its name carries
	// LastLSN is its last valid record, past any damage in the middle
	// (FirstLSN-1 when it holds none).
	LastLSN uint64
	// Damage is where its first damage begins, nil when it reads whole:
	// Open checks Damage.LSN against Options.Covered.
	Damage *CorruptionError
	// Lost are the damaged ranges a valid record follows, in LSN order:
	// their records are gone unless the journal still holds them.
	Lost []Damage
	// End is the damage that ends the segment, which no valid record
	// follows (nil when it ends cleanly after LastLSN): how many records
	// it held cannot be read from it.
	End *Damage
}

// ScanOpenSegment reads the open segment of the ledger in dir, passing
// damage, and reports its last valid record and its damage. It changes
// nothing. It returns nil and no error when dir holds no segment.
func ScanOpenSegment(dir string, opts InspectOptions) (*OpenSegmentScan, error) {
	segs, err := listSegments(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, nil
	}
	s := segs[len(segs)-1]
	f, err := openForInspect(s.path, opts.DirectIO)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close() // read-only
	out := &OpenSegmentScan{Segment: s.path, FirstLSN: s.first, LastLSN: s.first - 1}
	sc := newSegScanner(f, s.path, s.first, 0)
	for sc.nextFrame() {
		out.LastLSN = sc.lsn
	}
	if sc.ioErr != nil {
		return nil, sc.ioErr
	}
	if sc.damage == nil {
		return out, nil
	}
	out.Damage = sc.damage
	sc = newSegScanner(f, s.path, sc.damage.LSN, sc.damage.Offset).withResync(0)
	var passed *Damage // the last range passed, until a valid record follows it
	for {
		for sc.nextFrame() {
			out.LastLSN = sc.lsn
			if passed != nil && passed.Records() > 0 { // else garbage where padding was
				out.Lost = append(out.Lost, *passed)
			}
			passed = nil
		}
		d := sc.takeSkipped()
		if d == nil {
			break
		}
		passed = d
	}
	if sc.ioErr != nil {
		return nil, sc.ioErr
	}
	out.End = passed
	return out, nil
}

// SealOpenSegment seals the open segment of the ledger in dir as it is
// (not one of its bytes changes) and starts a new, empty open segment
// whose first LSN is next, so that the LSNs from the sealed segment's last
// valid record + 1 to next - 1 are a damaged range at its end: readers
// that pass damage report it and go on at next. The ledger must not be
// open (logpond stopped: the caller holds the directory's lock). next must
// be above the open segment's first LSN and last valid record.
//
// It is crash-safe: the sealed segment is fdatasynced and its stale
// sparse index, if any, removed before the new segment is created; the new
// file and then the directory are fsynced before it returns, and a crash
// at any point leaves either the old open segment or the new, empty one
// as the newest, both valid ledgers.
func SealOpenSegment(dir string, next uint64) error {
	scan, err := ScanOpenSegment(dir, InspectOptions{})
	if err != nil {
		return err
	}
	if scan == nil {
		return fmt.Errorf("ledger: %s holds no segment: nothing to seal", dir)
	}
	if next <= scan.LastLSN || next <= scan.FirstLSN {
		return fmt.Errorf("ledger: cannot start a segment at LSN %d: the open segment %s starts at LSN %d and holds records up to LSN %d",
			next, scan.Segment, scan.FirstLSN, scan.LastLSN)
	}
	f, err := os.Open(scan.Segment)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	err = fsutil.Fdatasync(f)
	f.Close() // read only
	if err != nil {
		return fmt.Errorf("ledger: fdatasync %s: %w", scan.Segment, err)
	}
	// An index beside the open segment was never written at a seal, so it
	// is no hint to trust: a reader rebuilds the sealed segment's index.
	if err := os.Remove(indexPath(scan.Segment)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ledger: remove the index of the open segment: %w", err)
	}
	path := filepath.Join(dir, segmentName(next))
	nf, err := openSegmentFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
	if err != nil {
		return fmt.Errorf("ledger: create segment: %w", err)
	}
	err = fsutil.Fsync(nf)
	if cerr := nf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsutil.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("ledger: create segment %s: %w", path, err)
	}
	return nil
}

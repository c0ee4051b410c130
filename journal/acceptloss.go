package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/framelog"
	"github.com/logpond/logpond/internal/fsutil"
	"github.com/logpond/logpond/record"
)

// Damage past the ledger: acknowledged records that are gone.
//
// A journal entry after the ledger's last LSN that does not verify is an
// acknowledged record in neither store. Open refuses to start over it (a
// *CorruptionError), since going on would skip LSNs the ledger needs in
// order. [AcceptLoss], run by `ledgerctl accept-loss` with logpond
// stopped, is the operator's explicit acceptance: every generation holding
// such damage is rewritten with its intact entries kept and each lost LSN
// replaced by an entry holding an empty void record (no event; record
// package), so the LSNs stay contiguous and the flusher moves them like
// any record, and the output sends nothing for them. The damaged file is
// kept, hard-linked, in damaged-<base> for inspection.
//
// Intact entries after damage are found again by their own checks: every
// entry carries its LSN and a CRC over its header and its record's CRC,
// so the search for the next entry with a later LSN cannot take damaged
// or stale bytes for one. In the newest generation, damage that no later
// write group follows is a torn tail by the recovery rule (doc.go): it
// was never acknowledged and is cut, as every start cuts one; how many
// records it held cannot be known.

// LossSpan is a run of consecutive LSNs after the ledger's last whose
// journal entries do not verify: acknowledged records in neither store.
type LossSpan struct {
	File   string // the segment file
	Offset int64  // the offset of the first damaged entry's length prefix
	// FirstLSN and LastLSN bound the lost LSNs (both included).
	FirstLSN, LastLSN uint64
	// Events is how many events the lost records held, or -1 when that
	// cannot be known (their bytes do not verify).
	Events int
	Reason string // what was wrong at Offset
}

// Records is the number of lost records.
func (s LossSpan) Records() uint64 { return s.LastLSN - s.FirstLSN + 1 }

// String describes the span in one line: LSNs, records, events, file,
// offset and reason.
func (s LossSpan) String() string {
	events := "events unknown"
	if s.Events >= 0 {
		events = fmt.Sprintf("%d events", s.Events)
	}
	records := "1 record"
	if n := s.Records(); n != 1 {
		records = fmt.Sprintf("%d records", n)
	}
	return fmt.Sprintf("LSNs %d–%d (%s, %s) in %s at offset %d: %s",
		s.FirstLSN, s.LastLSN, records, events, s.File, s.Offset, s.Reason)
}

// LossReport is what [FindLoss] found, or what [AcceptLoss] did.
type LossReport struct {
	// Settled is the ledger's last LSN: damage at or below it loses
	// nothing.
	Settled uint64
	// Lost are the damaged LSNs after Settled, in LSN order.
	Lost []LossSpan
	// Held counts damaged entries at or below Settled: their records are
	// in the ledger, nothing is lost (AcceptLoss replaces them too).
	Held uint64
	// Tail is a torn write that ends the newest generation after the
	// damage (cut, as Open cuts one: never acknowledged by the recovery
	// rule; how many records it held is unknown), or nil.
	Tail *Repair
	// Rewritten are the segment files rewritten (AcceptLoss only), and
	// SetAside the directories that keep their damaged originals.
	Rewritten, SetAside []string
}

// LostRecords is the number of lost records, over every span.
func (r *LossReport) LostRecords() uint64 {
	var n uint64
	for _, s := range r.Lost {
		n += s.Records()
	}
	return n
}

// LostEvents is the number of lost events, or -1 when some span's count
// is unknown.
func (r *LossReport) LostEvents() int {
	n := 0
	for _, s := range r.Lost {
		if s.Events < 0 {
			return -1
		}
		n += s.Events
	}
	return n
}

// Summary describes the loss in one line (empty when nothing is lost).
func (r *LossReport) Summary() string {
	if len(r.Lost) == 0 {
		return ""
	}
	parts := make([]string, len(r.Lost))
	for i, s := range r.Lost {
		parts[i] = s.String()
	}
	return strings.Join(parts, "; ")
}

// FindLoss reads the journal in dir, read-only, and reports the damage
// after LSN settled (the ledger's last) that AcceptLoss would accept. It
// reads every generation that holds LSNs after settled (at most about
// max_bytes, one segment in memory at a time); it changes nothing.
func FindLoss(dir string, settled uint64) (*LossReport, error) {
	return scanLoss(dir, settled, nil)
}

// AcceptLoss rewrites the journal in dir so that it opens over the damage
// FindLoss reports, losing only the damaged records: in each damaged
// generation, intact entries are kept and every damaged LSN gets an entry
// holding an empty void record; the newest generation's torn tail, if
// any, is cut. Each rewritten segment is written beside the journal,
// fsynced, and renamed over the original, whose bytes stay hard-linked in
// a damaged-<base> directory. The caller must hold the journal
// directory's lock (logpond stopped). settled is the ledger's last LSN.
//
// A crash leaves each generation either as it was or rewritten whole; a
// leftover temporary file is removed by the next AcceptLoss or Open.
func AcceptLoss(dir string, settled uint64) (*LossReport, error) {
	left, err := filepath.Glob(filepath.Join(dir, salvagePrefix+"*"+acceptSuffix))
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("journal: remove an interrupted rewrite: %w", err)
		}
	}
	return scanLoss(dir, settled, fsutil.SyncDir)
}

// acceptSuffix ends the name of a segment AcceptLoss is writing, in the
// journal directory: salvage-<base>.accept. Open removes what a crash
// left (setAsideSettled removes salvage-*).
const acceptSuffix = ".accept"

// scanLoss is FindLoss, and with a syncDir AcceptLoss.
func scanLoss(dir string, settled uint64, syncDir func(string) error) (*LossReport, error) {
	gens, err := scanGenerations(dir, syncDir)
	if errors.Is(err, os.ErrNotExist) {
		return &LossReport{Settled: settled}, nil
	}
	if err != nil {
		return nil, err
	}
	rep := &LossReport{Settled: settled}
	for i, g := range gens {
		last := lastLSNOf(gens, i)
		if last != 0 && last <= settled {
			continue // Open releases it unread
		}
		path := g.segment()
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && last == 0 {
			continue // a newest generation tidwall has not created yet
		}
		if err != nil {
			return rep, fmt.Errorf("journal: read %s: %w", path, err)
		}
		rb := rebuildSegment(path, data, g.base, last)
		if len(rb.spans) == 0 {
			// Intact, or a torn tail alone, which Open cuts as usual.
			continue
		}
		for _, s := range rb.spans {
			if s.LastLSN <= settled {
				rep.Held += s.Records()
				continue
			}
			if s.FirstLSN <= settled {
				rep.Held += settled - s.FirstLSN + 1
				s.FirstLSN, s.Events = settled+1, -1
			}
			rep.Lost = append(rep.Lost, s)
		}
		rep.Tail = rb.tail
		if syncDir == nil {
			continue
		}
		aside, err := replaceSegment(dir, g, rb.out, syncDir)
		if err != nil {
			return rep, err
		}
		rep.Rewritten = append(rep.Rewritten, path)
		rep.SetAside = append(rep.SetAside, aside)
	}
	return rep, nil
}

// rebuilt is a segment rebuilt around its damage.
type rebuilt struct {
	out   []byte     // the new segment: intact entries and fillers
	spans []LossSpan // damaged LSNs, in order
	tail  *Repair    // the newest generation's torn tail, cut
}

// rebuildSegment rebuilds the segment data of the generation after base
// (last: its last LSN, 0 for the newest) without its damage. It does no
// I/O.
func rebuildSegment(path string, data []byte, base, last uint64) *rebuilt {
	rb := &rebuilt{}
	scan := framelog.Scan{File: path, Want: base + 1, Last: last}
	received := time.Time{}
	for {
		s := framelog.NewScanner(framelog.Bytes(data), entries{}, scan)
		for s.Next() {
			if h, err := record.Verify(s.Frame().Payload); err == nil {
				received = h.Received()
			}
		}
		off := int(s.Offset())
		rb.out = append(rb.out, data[scan.Start:off]...)
		var ce *framelog.CorruptionError
		if !errors.As(s.Err(), &ce) {
			return rb // a clean end: memory has no read error
		}
		want, group := s.Want(), s.Frame().Write
		if last == 0 {
			if _, _, later := laterGroupAfter(data, off, want); !later {
				// The recovery rule: a torn tail, never acknowledged.
				rb.tail = &Repair{File: path, Offset: int64(off), Bytes: int64(len(data) - off), FirstLSN: want, Reason: ce.Err.Error()}
				return rb
			}
		}
		q, next, found := nextEntry(data, off, want, last)
		span := LossSpan{File: path, Offset: int64(off), FirstLSN: want, Events: -1, Reason: ce.Err.Error()}
		switch {
		case found:
			span.LastLSN = next - 1
			if next == want+1 {
				span.Events = damagedEvents(data[off:q])
			}
		default:
			// A closed generation holds every LSN up to last; nothing
			// after the damage verifies.
			span.LastLSN = last
		}
		rb.spans = append(rb.spans, span)
		if received.IsZero() {
			received = time.Now()
		}
		for lsn := span.FirstLSN; lsn <= span.LastLSN; lsn++ {
			rb.out = appendFiller(rb.out, lsn, min(group, lsn), received)
		}
		if !found {
			return rb
		}
		scan.Start, scan.Want = int64(q), next
		scan.Prev = framelog.Frame{Write: group}
	}
}

// nextEntry finds the first valid entry after offset off (where LSN want
// should have been) whose LSN is after want: its offset and LSN. In a
// closed generation (last ≠ 0) only LSNs up to last count.
func nextEntry(data []byte, off int, want, last uint64) (int, uint64, bool) {
	f, found, _ := framelog.Resume(framelog.Bytes(data), entries{}, int64(off)+1, want, last) // memory: no read error
	return int(f.Off), f.Pos, found
}

// damagedEvents is the number of events of the one damaged entry b, when
// its record still verifies by its own checks (the damage is in the length
// prefix or the frame header only), else -1.
func damagedEvents(b []byte) int {
	// The frame follows a uvarint length prefix of 1 to 5 bytes.
	for at := 1; at <= binary.MaxVarintLen32; at++ {
		if len(b) < at+frameHeader+record.MinSize {
			break
		}
		body := b[at+frameHeader:]
		if size, err := record.SizeOf(body); err != nil || size != len(body) {
			continue
		}
		if h, err := record.Verify(body); err == nil {
			return h.Count
		}
	}
	return -1
}

// appendFiller appends to dst the entry that stands in for lost LSN lsn:
// a frame around an empty void record.
func appendFiller(dst []byte, lsn, group uint64, received time.Time) []byte {
	empty, _ := record.Encode(nil, received, nil) // no event: always valid
	void, _ := record.AppendVoid(nil, empty)
	f := newFrame(void)
	sealFrame(f, lsn, group)
	dst = binary.AppendUvarint(dst, uint64(len(f))) // tidwall's length prefix
	return append(dst, f...)
}

// replaceSegment replaces generation g's segment by data: data is written
// to salvage-<base>.accept in dir and fsynced, the original is hard-linked
// into a new damaged-<base> directory (made durable), then data is renamed
// over it and g's directory fsynced. It returns the damaged-<base>
// directory.
func replaceSegment(dir string, g generation, data []byte, syncDir func(string) error) (string, error) {
	wrap := func(err error) error { return fmt.Errorf("journal: rewrite %s: %w", g.segment(), err) }
	// The rewrite must verify as Open verifies it.
	if s := newScanner(g.segment(), data, g.base+1, 0, false); !scanAll(s, len(data)) {
		return "", wrap(fmt.Errorf("the rebuilt segment does not verify at offset %d: %v", s.Offset(), s.Err()))
	}
	tmp := filepath.Join(dir, fmt.Sprintf("%s%020d%s", salvagePrefix, g.base, acceptSuffix))
	if err := writeSynced(tmp, data); err != nil {
		return "", wrap(err)
	}
	aside := filepath.Join(dir, damagedPrefix+fmt.Sprintf("%020d", g.base))
	for n := 1; ; n++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = filepath.Join(dir, fmt.Sprintf("%s%020d.%d", damagedPrefix, g.base, n))
	}
	if err := os.Mkdir(aside, 0o750); err != nil {
		return "", wrap(err)
	}
	if err := os.Link(g.segment(), filepath.Join(aside, segmentFile)); err != nil {
		return "", wrap(err)
	}
	if err := syncDir(aside); err != nil {
		return "", wrap(err)
	}
	if err := syncDir(dir); err != nil {
		return "", wrap(err)
	}
	if err := os.Rename(tmp, g.segment()); err != nil {
		return "", wrap(err)
	}
	if err := syncDir(g.dir); err != nil {
		return "", wrap(err)
	}
	if err := syncDir(dir); err != nil {
		return "", wrap(err)
	}
	return aside, nil
}

// scanAll scans s to its end and reports whether it ended cleanly.
func scanAll(s *framelog.Scanner, size int) bool {
	for s.Next() {
	}
	return s.Err() == nil && s.Offset() == int64(size)
}

// checkBacklog verifies, at Open, every closed generation holding LSNs
// after settled (the newest is verified by repairTail): the flusher
// replays those records, so damage there is refused before anything
// starts, as a *CorruptionError, rather than met by the flusher later.
// Damage at or below settled in the generation holding it was set aside
// before (setAsideSettled).
func checkBacklog(gens []generation, settled uint64) error {
	for i, g := range gens[:max(len(gens)-1, 0)] {
		if lastLSNOf(gens, i) <= settled {
			continue
		}
		if err := checkGeneration(g, lastLSNOf(gens, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkGeneration verifies every entry of closed generation g, whose last
// LSN is last. It reads the file a chunk at a time (framelog.File): a
// generation is up to segment_bytes, and Open must stay within the
// journal's share of memory.
func checkGeneration(g generation, last uint64) error {
	f, err := os.Open(g.segment())
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	s := framelog.NewScanner(framelog.File(f, st.Size()), entries{}, framelog.Scan{File: g.segment(), Want: g.base + 1, Last: last})
	for s.Next() {
	}
	_, err = stopped(g.segment(), s, int(st.Size()))
	return err
}

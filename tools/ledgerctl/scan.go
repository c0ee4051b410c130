package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
	"github.com/logpond/logpond/record"
)

// storeScan is what reading a whole store found.
type storeScan struct {
	Files       int       // generations or segments listed
	FileBytes   int64     // their size when listed
	Records     uint64    // records read and verified
	Events      uint64    // events in them
	RecordBytes int64     // stored size of the records (compressed or not)
	RawBytes    int64     // their uncompressed (version 1) size
	Compressed  uint64    // records stored compressed (version 2)
	FirstLSN    uint64    // 0 when no record
	LastLSN     uint64    // 0 when no record
	Oldest      time.Time // earliest receive time of a record; zero when none known
	Tail        *tailInfo // torn or partial write that ended the newest file
	Err         error     // damage (a *CorruptionError) or a read error
	// GenEnd, for journal damage, is the last LSN the damaged generation
	// can hold (journal.DirReader.GenerationEnd): 0 for the newest.
	GenEnd uint64
	// Damaged are the damaged ranges of the ledger's sealed segments the
	// scan passed (it reads on after each); DamagedRecords the records
	// they held, which are lost (and the BadBlocks, one record each).
	Damaged        []ledger.Damage
	DamagedRecords uint64
	// OpenSegment is the ledger's open segment (its damaged ranges are
	// judged against the journal).
	OpenSegment string
	// BadBlocks are the compressed records whose bytes check (CRC) but
	// whose block does not decompress to their events, found only by a
	// scan that decompresses (verify), which reads on after each. Each is
	// one record lost; they are counted in DamagedRecords, not in Records.
	BadBlocks []*location
}

// ratio is stored over raw bytes, the compression ratio of records (1 for
// uncompressed ones), rounded to 3 decimals for reports; 0 when there is
// no record to measure.
func ratio(stored, raw int64) float64 {
	if raw <= 0 {
		return 0
	}
	return math.Round(float64(stored)/float64(raw)*1000) / 1000
}

// formatRatio is a ratio for tables: "-" when there was nothing to
// measure.
func formatRatio(stored, raw int64) string {
	if raw <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", ratio(stored, raw))
}

// decodeLimit bounds what one record may decompress to. ledgerctl has no
// configuration limit of its own (it reads stores whatever limits the
// server was given), so it accepts what the format allows: a writer never
// stores a larger block, and the bound still keeps a damaged header from
// making it allocate more.
const decodeLimit = record.MaxBlockBytes

// ledgerPlaced and journalPlaced are the readers that say where their
// current record is: the ledger's DirReader (by segment) and the
// journal's (by generation file).
type ledgerPlaced interface {
	Segment() string
	Offset() int64
}

type journalPlaced interface {
	File() string
	Offset() int64
}

// blockDamage is a compressed record of store whose CRC matches but whose
// block does not decode, as a location.
func blockDamage(store, file string, off int64, lsn uint64, err error) *location {
	one := uint64(1)
	return &location{Store: store, File: file, Offset: &off, LSN: lsn, Records: &one, Error: err.Error(),
		Hint: "the record's checksum matches but its compressed events do not decode (a writer fault, or damage made before the checksum was computed): its events cannot be read"}
}

// badBlock is the current record of r, which does not decode, as a
// location.
func badBlock(r recordReader, err error) *location {
	switch at := r.(type) {
	case ledgerPlaced:
		return blockDamage("ledger", at.Segment(), at.Offset(), r.LSN(), err)
	case journalPlaced:
		return blockDamage("journal", at.File(), at.Offset(), r.LSN(), err)
	}
	return &location{LSN: r.LSN(), Error: err.Error()}
}

// damageReader is a reader that passes damage (the ledger's DirReader).
type damageReader interface {
	Damage() *ledger.Damage
}

// recordReader is what the journal's and the ledger's DirReaders share.
type recordReader interface {
	Next() bool
	LSN() uint64
	Record() []byte
	BytesRead() int64
	Err() error
}

// scanRecords reads r to its end, counting and verifying every record
// (both readers verify every record's checksums before returning it).
// Records of either format version are measured from their header
// (record.Verify); with dec, compressed records are decompressed too, and
// one whose block does not decode is a bad block (s.BadBlocks) passed like
// damage.
func scanRecords(r recordReader, s *storeScan, p *progress, dec *record.Decompressor) {
	dr, _ := r.(damageReader)
	for r.Next() {
		if dr != nil {
			if d := dr.Damage(); d != nil {
				s.Damaged = append(s.Damaged, *d)
				s.DamagedRecords += d.Records()
				if d.Records() > 0 {
					if s.FirstLSN == 0 {
						s.FirstLSN = d.FirstLSN
					}
					s.LastLSN = max(s.LastLSN, d.LastLSN)
				}
				continue
			}
		}
		h, err := record.Verify(r.Record())
		if err != nil { // cannot happen: the readers verified it already
			s.Err = fmt.Errorf("LSN %d: %w", r.LSN(), err)
			return
		}
		if s.FirstLSN == 0 {
			s.FirstLSN = r.LSN()
		}
		s.LastLSN = r.LSN()
		if dec != nil && h.Compressed() {
			if _, err := dec.Decode(r.Record(), decodeLimit); err != nil {
				s.BadBlocks = append(s.BadBlocks, badBlock(r, err))
				s.DamagedRecords++
				p.update(r.BytesRead())
				continue
			}
		}
		s.Records++
		s.Events += uint64(h.Count)
		s.RecordBytes += int64(h.Stored)
		s.RawBytes += int64(h.Raw)
		if h.Compressed() {
			s.Compressed++
		}
		if t := h.Received(); !t.IsZero() && (s.Oldest.IsZero() || t.Before(s.Oldest)) {
			s.Oldest = t
		}
		p.update(r.BytesRead())
	}
	if s.Err == nil {
		s.Err = r.Err()
	}
}

// scanJournal reads and verifies the whole journal; with dec it also
// decompresses every compressed record (see scanRecords).
func scanJournal(e *env, p *progress, dec *record.Decompressor) storeScan {
	var s storeScan
	r, err := journal.NewDirReader(e.journalDir, 1)
	if err != nil {
		s.Err = err
		return s
	}
	s.Files, s.FileBytes = r.Generations(), r.Size()
	p.start("journal", s.FileBytes)
	scanRecords(r, &s, p, dec)
	p.finish()
	s.Tail = journalTail(r.Tail())
	if s.Err != nil {
		s.GenEnd = r.GenerationEnd()
	}
	return s
}

// scanLedger reads and verifies the whole ledger; with dec it also
// decompresses every compressed record (see scanRecords).
func scanLedger(e *env, p *progress, dec *record.Decompressor) storeScan {
	var s storeScan
	r, err := ledger.NewDirReader(e.ledgerDir, 1, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil {
		s.Err = err
		return s
	}
	defer r.Close()
	r.SkipDamage()
	s.Files, s.FileBytes, s.OpenSegment = r.Segments(), r.Size(), r.OpenSegment()
	p.start("ledger", s.FileBytes)
	scanRecords(r, &s, p, dec)
	p.finish()
	s.Tail = ledgerTail(r.Tail())
	return s
}

// dlqScan is what reading one output's dead-letter store found.
type dlqScan struct {
	Output  string // whose dead letters
	Dir     string
	Exists  bool
	Entries int
	Bytes   int64 // event bytes
	Err     error
}

// scanDLQs reads the dead letters of every output that has a directory
// under <ledger>/dlq, configured or not, in name order. The error is for
// a <ledger>/dlq that cannot be listed.
func scanDLQs(e *env) ([]dlqScan, error) {
	names, err := deadLetterOutputs(e.ledgerDir)
	if err != nil {
		return nil, err
	}
	var out []dlqScan
	for _, name := range names {
		if s := scanDLQ(name, dlq.Dir(e.ledgerDir, name)); s.Exists {
			out = append(out, s)
		}
	}
	return out, nil
}

// scanDLQ reads one output's dead-letter store, read-only.
func scanDLQ(output, dir string) dlqScan {
	s := dlqScan{Output: output, Dir: dir}
	r, err := dlq.NewReader(dir)
	if errors.Is(err, os.ErrNotExist) {
		return s
	}
	s.Exists = true
	if err != nil {
		s.Err = err
		return s
	}
	defer r.Close()
	for r.Next() {
		s.Entries++
		s.Bytes += int64(len(r.Entry().Event))
	}
	s.Err = r.Err()
	return s
}

// location is where damage was found.
type location struct {
	Store  string `json:"store"`                // journal, ledger, cursor, dead letters
	File   string `json:"file,omitempty"`       // the damaged file
	Offset *int64 `json:"offset,omitempty"`     // byte offset in File, when the damage has one
	End    *int64 `json:"end_offset,omitempty"` // end of a damaged range in File (exclusive)
	LSN    uint64 `json:"lsn,omitempty"`        // the LSN expected there (the first one lost)
	// LastLSN and Records, for a damaged range of the ledger: the last LSN
	// lost and the number of records lost (0: garbage where padding
	// belonged, nothing lost).
	LastLSN uint64  `json:"last_lsn,omitempty"`
	Records *uint64 `json:"records_lost,omitempty"`
	Error   string  `json:"error"`          // what is wrong
	Hint    string  `json:"hint,omitempty"` // what it means
}

// locate extracts the location of a store's corruption error.
func locate(store string, err error) *location {
	loc := &location{Store: store, Error: err.Error()}
	var je *journal.CorruptionError
	var le *ledger.CorruptionError
	var de *dlq.CorruptionError
	switch {
	case errors.As(err, &je):
		loc.File, loc.Offset, loc.LSN, loc.Error = je.File, &je.Offset, je.LSN, je.Err.Error()
	case errors.As(err, &le):
		loc.File, loc.Offset, loc.LSN, loc.Error = le.Segment, &le.Offset, le.LSN, le.Err.Error()
	case errors.As(err, &de):
		loc.File, loc.Offset, loc.Error = de.File, &de.Offset, de.Err.Error()
	}
	return loc
}

// damageLocation is a damaged range of the ledger as a location.
func damageLocation(d ledger.Damage) *location {
	start, end, n := d.Start, d.End, d.Records()
	loc := &location{Store: "ledger", File: d.Segment, Offset: &start, End: &end, Records: &n, Error: d.Reason}
	if n > 0 {
		loc.LSN, loc.LastLSN = d.FirstLSN, d.LastLSN
		loc.Hint = fmt.Sprintf("records %d–%d are lost: their bytes do not check, so none of their events can be trusted; logpond's output quarantines the range (in %s) and delivers every other record", d.FirstLSN, d.LastLSN, ledger.QuarantineDir)
	} else {
		loc.Hint = "no record lost: garbage where padding belonged"
	}
	return loc
}

// String formats a location for humans: store, file, offset, LSN, error.
func (l *location) String() string {
	var b strings.Builder
	b.WriteString(l.Store)
	sep := ": "
	if l.File != "" {
		fmt.Fprintf(&b, "%sfile %s", sep, l.File)
		sep = ", "
	}
	switch {
	case l.Offset != nil && l.End != nil:
		fmt.Fprintf(&b, "%sbytes %d–%d", sep, *l.Offset, *l.End)
		sep = ", "
	case l.Offset != nil:
		fmt.Fprintf(&b, "%soffset %d", sep, *l.Offset)
		sep = ", "
	}
	switch {
	case l.LastLSN != 0:
		fmt.Fprintf(&b, "%sLSN %d–%d", sep, l.LSN, l.LastLSN)
	case l.LSN != 0:
		fmt.Fprintf(&b, "%sLSN %d", sep, l.LSN)
	}
	if l.Records != nil {
		fmt.Fprintf(&b, " (%d records lost)", *l.Records)
	}
	fmt.Fprintf(&b, ": %s", l.Error)
	if l.Hint != "" {
		fmt.Fprintf(&b, " (%s)", l.Hint)
	}
	return b.String()
}

// progress draws a progress bar on stderr while a store is read, when
// stderr is a terminal; otherwise it does nothing.
type progress struct {
	w     io.Writer
	on    bool
	label string
	total int64
	last  time.Time
}

func newProgress(e *env) *progress { return &progress{w: e.stderr, on: e.progress} }

func (p *progress) start(label string, total int64) {
	p.label, p.total, p.last = label, total, time.Time{}
	p.update(0)
}

// update redraws the bar at most ten times a second.
func (p *progress) update(done int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(done)/float64(p.total), 1)
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(p.w, "\rverifying %-8s [%s%s] %3d%%  %s of %s",
		p.label, strings.Repeat("#", n), strings.Repeat(".", width-n), int(frac*100), humanBytes(done), humanBytes(p.total))
}

// finish erases the bar.
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

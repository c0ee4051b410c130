package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/logpond/logpond/record"
)

// Reader reads records in LSN order from a starting LSN, following the
// ledger as it grows; it never returns a record beyond LastLSN. Reads are
// large and aligned (O_DIRECT when the ledger uses it). Use it in a
// Next/Record/Err loop; Next returning false with a nil Err means "caught
// up": call Wait, then Next again. Not safe for concurrent use.
type Reader struct {
	l    *Ledger
	next uint64 // LSN of the next record to return

	segFirst uint64 // first LSN of the segment sc reads
	f        *os.File
	sc       *segScanner

	lsn uint64
	rec []byte
	dec record.Record // rec decoded (decompressed when it is version 2)
	// dz decompresses version 2 records; made at the first one, so a
	// Reader of an uncompressed ledger holds no decoder.
	dz *record.Decompressor
	// to is where the next version 2 record Next decodes goes, when its
	// events fit (DecodeTo); decodedTo says the current record's did.
	to        []byte
	decodedTo bool
	damage    *Damage // the damaged range Next stopped at, or nil
	skip      *Skip   // the deleted range Next stopped at, or nil
	err       error
	read      int64 // bytes read from the segments closed so far

	skipDamage bool
	// wide is the scanner's large buffer while it reads in small reads
	// up to bytes PassUnreadable is to pass (nil otherwise).
	wide []byte
}

// Skip is a range of records deleted before this reader read them (max_lag retention).
type Skip struct {
	FirstLSN, LastLSN uint64
	// Events is the number of events those records held; -1 when unknown
	// (the ledger counts the events of the segments it deletes, in memory
	// only: after a restart, or for a range that begins inside a deleted
	// segment or was not deleted by this instance, it does not know).
	Events int64
}

// Reader returns a Reader positioned at from. When from is older than the
// oldest retained record (FirstLSN), the records before FirstLSN are gone:
// the first Next stops at a [Skip] of [from, FirstLSN-1] (none when from is
// FirstLSN, as for a new cursor, which starts at FirstLSN-1). A Reader
// whose next segment is deleted while it reads reports the deleted range
// the same way and goes on after it.
func (l *Ledger) Reader(from uint64) *Reader {
	return &Reader{l: l, next: max(from, 1)}
}

// SkipDamage makes the Reader pass damage instead of stopping at it: Next
// then also stops at each damaged range, with Damage set (LSN is the
// range's last LSN, Record is nil), and goes on from the next valid
// record. Records of the range the Reader had already passed (a start
// after its first LSN) are not reported again.
//
// It passes damage in the open segment too: synced bytes that changed on
// disk while the ledger runs (a media error) are lost records as in a
// sealed segment, and the writer goes on after them. There the search for
// the next valid record stays within the records up to LastLSN (where the
// last Sync left the segment), so a write in progress after them is never
// taken for damage; damage that runs to their end loses the records up to
// LastLSN, and the Reader goes on with the next write. A damaged range
// may reach past LastLSN only in a segment that was sealed (its records
// fdatasynced) while its last records wait for the next Sync to be
// announced; no record past LastLSN is returned.
func (r *Reader) SkipDamage() { r.skipDamage = true }

// Damage is the damaged range Next stopped at, or nil when it stopped at a
// record.
func (r *Reader) Damage() *Damage { return r.damage }

// Skipped is the range of records retention deleted before the Reader read
// them (a cursor beyond its max_lag, Options.MaxLag) that Next stopped at,
// or nil. Like for Damage, Record is nil and LSN is the range's last LSN,
// so that the caller can count the range as passed; Next goes on with the
// oldest record retained. Skips are reported with or without SkipDamage.
func (r *Reader) Skipped() *Skip { return r.skip }

// stopAtSkip makes Next stop at the deleted range [first, last].
func (r *Reader) stopAtSkip(first, last uint64) bool {
	r.closeSegment()
	r.skip = &Skip{FirstLSN: first, LastLSN: last, Events: r.l.skippedEvents(first, last)}
	r.damage, r.rec, r.dec = nil, nil, record.Record{}
	r.lsn, r.next = last, last+1
	return true
}

// Next advances to the next record (or, with SkipDamage, damaged range).
// After it stopped at a [*ReadError] (Err), the next call retries the
// read that failed; any other error stops the Reader for good.
func (r *Reader) Next() bool {
	r.damage, r.skip, r.decodedTo = nil, nil, false
	// DecodeTo's buffer serves this call only, whatever it returns.
	defer func() { r.to = nil }()
	var re *ReadError
	if errors.As(r.err, &re) {
		r.err = nil
		if r.sc != nil {
			// Read again from where the scan stood: the bytes read
			// before the failure were used already.
			r.sc.ioErr = nil
			r.sc.refresh()
		}
	}
	for r.err == nil {
		durable, segs := r.l.snapshot()
		if r.next > durable {
			if r.sc != nil {
				// The last record returned is no longer valid: a window
				// grown for it need not wait for the next one to shrink.
				r.rec, r.dec = nil, record.Record{}
				r.sc.shrink(0)
			}
			return false // caught up
		}
		if r.sc == nil {
			i := segmentFor(segs, r.next)
			if i < 0 {
				if len(segs) == 0 || r.next > durable {
					return false
				}
				// Older records were deleted by retention.
				return r.stopAtSkip(r.next, segs[0].first-1)
			}
			switch r.open(segs, i) {
			case openFailed:
				return false
			case openGone:
				continue // deleted since the snapshot: a skip now
			}
		}
		if r.sc.limit != durable {
			// Bytes read ahead of the previous limit may predate writes
			// that are durable now: read them again.
			r.sc.refresh()
			r.sc.limit = durable
		}
		if r.skipDamage {
			r.sc.within(damageBounds(segs, durable, r.segFirst))
		}
		if r.sc.nextFrame() {
			if r.sc.lsn < r.next {
				continue
			}
			r.lsn, r.next = r.sc.lsn, r.sc.lsn+1
			dec, err := r.decode(r.sc.rec, r.sc.hdr)
			if err == nil {
				r.rec, r.dec = r.sc.rec, dec
				return true
			}
			return r.undecodable(err)
		}
		if d := r.sc.takeSkipped(); d != nil {
			if d.Records() > 0 && d.LastLSN < r.next {
				continue // passed before
			}
			d.FirstLSN = max(d.FirstLSN, r.next)
			r.damage, r.rec, r.dec = d, nil, record.Record{}
			if d.Records() > 0 {
				r.lsn, r.next = d.LastLSN, d.LastLSN+1
			}
			return true
		}
		switch {
		case r.sc.ioErr != nil:
			r.err = r.sc.ioErr
			// What is read again of this segment, retried or passed
			// (PassUnreadable), comes from the device: a read that
			// fails takes a cached window's place, and the search for
			// what reads is a question to the device.
			r.sc.deviceUntil = max(r.sc.deviceUntil, r.sc.pos()+2*cacheWindow)
			var re *ReadError
			if errors.As(r.err, &re) && re.Offset >= 0 {
				r.sc.deviceUntil = max(r.sc.deviceUntil, re.Offset+2*cacheWindow)
			}
		case r.sc.damage != nil:
			r.err = r.sc.damage
		case r.sc.next <= durable:
			// This segment is exhausted (sealed): go to the next one,
			// which must start exactly where this one ended.
			if slices.ContainsFunc(segs, func(s segment) bool { return s.first == r.sc.next }) {
				r.closeSegment()
				continue
			}
			if len(segs) > 0 && segs[0].first > r.sc.next {
				// Retention deleted the segments after this one before
				// the Reader came to them (max_lag).
				return r.stopAtSkip(max(r.sc.next, r.next), segs[0].first-1)
			}
			r.err = &CorruptionError{Segment: r.sc.path, Offset: r.sc.pos(), LSN: r.sc.next,
				Err: errors.New("segment ends before the next segment begins: records are missing")}
		default:
			return false // caught up inside the open segment
		}
	}
	return false
}

// decode returns rec, which the scan verified (h), decoded: a version 2
// record's block is decompressed into the Reader's buffer.
func (r *Reader) decode(rec []byte, h record.Header) (record.Record, error) {
	if !h.Compressed() {
		return record.Decode(rec)
	}
	if r.dz == nil {
		dz, err := record.NewDecompressor()
		if err != nil {
			return record.Record{}, fmt.Errorf("ledger: %w", err)
		}
		r.dz = dz
	}
	// The format's own bound: the records logpond writes are far
	// smaller (two journal groups), and a lower bound here would make
	// records written under a larger journal.max_group_bytes look
	// damaged. The buffer grows only to the largest record decoded.
	dec, into, err := r.dz.DecodeTo(r.to, rec, record.MaxBlockBytes)
	r.decodedTo = into && err == nil
	return dec, err
}

// undecodable handles the current record, whose stored bytes verify but
// whose compressed block does not decode to its declared events (a
// faulty writer; the CRC rules out damage on the way): it is damage of
// that one record, passed (SkipDamage: quarantined by the output, the
// next record follows) or stopping the Reader like other damage.
func (r *Reader) undecodable(err error) bool {
	var ce *record.CorruptError
	if !errors.As(err, &ce) {
		r.err, r.rec, r.dec = err, nil, record.Record{}
		return false
	}
	if !r.skipDamage {
		r.err = &CorruptionError{Segment: r.sc.path, Offset: r.sc.recOff, LSN: r.lsn, Err: err}
		r.rec, r.dec = nil, record.Record{}
		return false
	}
	r.damage = &Damage{Segment: r.sc.path, Start: r.sc.recOff, End: r.sc.recOff + frameSize(len(r.sc.rec)),
		FirstLSN: r.lsn, LastLSN: r.lsn, Reason: err.Error()}
	r.rec, r.dec = nil, record.Record{}
	return true
}

// What open did.
const (
	opened     = iota
	openFailed // r.err says why
	openGone   // retention deleted the segment since the snapshot
)

func (r *Reader) open(segs []segment, i int) int {
	s, isLast := segs[i], i == len(segs)-1
	f, err := openSegmentFile(s.path, os.O_RDONLY, r.l.opts.DirectIO)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, now := r.l.snapshot(); !slices.ContainsFunc(now, func(x segment) bool { return x.first == s.first }) {
				return openGone
			}
			r.err = fmt.Errorf("ledger: segment %s is missing: it was deleted outside retention (LSN %d)", s.path, r.next)
		} else {
			r.err = &ReadError{Segment: s.path, Offset: -1, Err: err}
		}
		return openFailed
	}
	r.f, r.segFirst = f, s.first
	from, fromLSN := int64(0), s.first
	if r.next > s.first {
		// Seek with the segment's sparse index: the open segment's is in
		// memory, a sealed one's in its .idx file.
		entries := s.index
		if !isLast {
			var err error
			if entries, err = r.l.loadIndex(s); err != nil {
				f.Close()
				// Every failure of loadIndex is the device's: a damaged
				// index is rebuilt, not an error.
				var re *ReadError
				if !errors.As(err, &re) {
					err = &ReadError{Segment: indexPath(s.path), Offset: -1, Err: err}
				}
				r.f, r.err = nil, err
				return openFailed
			}
		}
		if e, ok := seekPoint(entries, r.next); ok {
			from, fromLSN = e.off, e.lsn
		}
	}
	r.sc = newSegScanner(f, s.path, fromLSN, from)
	r.sc.reads = &segReads{l: r.l, seg: s.first}
	if r.skipDamage {
		r.sc.withResync(0) // bounded by Next (damageBounds)
	}
	return opened
}

// damageBounds returns, for the segment whose first LSN is first, the last
// LSN a reader passing damage may look for in it and where its records
// end: for a sealed segment the next one's first LSN - 1 and its size;
// for a segment retention deleted since (no longer listed) 0 and 0: its
// file's own end is its last record, and what the listed segments lack
// after it is a Skip; for the open segment LastLSN (durable) and where the last Sync
// left it, since bytes after that may be a write in progress.
func damageBounds(segs []segment, durable, first uint64) (maxLSN uint64, size int64) {
	for i, s := range segs {
		switch {
		case s.first < first:
		case s.first > first:
			// The segment being read was deleted (max_lag retention):
			// its own end is its last record, and the records from there
			// to the next listed segment are a Skip, not damage.
			return 0, 0
		case i < len(segs)-1:
			return segs[i+1].first - 1, s.size
		default:
			return durable, s.size
		}
	}
	return durable, 0
}

func (r *Reader) closeSegment() {
	if r.f != nil {
		r.f.Close()
	}
	if r.sc != nil {
		r.read += r.sc.read
	}
	r.f, r.sc, r.wide = nil, nil, nil
}

// BytesRead is the bytes the Reader has consumed from segment files: read
// into its window, from the device or from the ledger's shared read cache
// ([Ledger.DeviceBytesRead] counts what the device served). A Reader seeks with the sparse index of the
// segment holding its start, the open one included, so that reading a
// record costs about the index interval (256 KiB) and one read (1 MiB) at
// most, however large the segment.
func (r *Reader) BytesRead() int64 {
	if r.sc == nil {
		return r.read
	}
	return r.read + r.sc.read
}

// LSN is the current record's LSN.
func (r *Reader) LSN() uint64 { return r.lsn }

// Record is the current record as stored (version 2, compressed, when the
// ledger compresses), valid until the next call to Next.
func (r *Reader) Record() []byte { return r.rec }

// DecodeTo asks the next call of Next to decompress the events of the
// version 2 record it returns into dst's spare capacity, when they fit,
// rather than into the Reader's own buffer (record.Decompressor.DecodeTo):
// a caller that keeps events beyond the next Next (an output's chunk)
// then has them where it keeps them, without a copy. DecodedTo says
// whether they went there. dst's first len(dst) bytes are never touched;
// its spare capacity may be written by that call of Next whatever it
// returns. It applies to that one call.
func (r *Reader) DecodeTo(dst []byte) { r.to = dst }

// DecodedTo reports whether the current record's events were decompressed
// into the buffer DecodeTo gave: they are then dst[len(dst):len(dst)+n],
// n its EventBytes.
func (r *Reader) DecodedTo() bool { return r.decodedTo }

// Decoded is the current record decoded: the Reader verified it (checksum
// and layout) and decompressed a version 2 record's events when it read
// it, so callers need not decode it again. Its events alias the Reader's
// buffers and are valid until the next call to Next (Record.Clone keeps
// them longer).
func (r *Reader) Decoded() record.Record { return r.dec }

// Err is the error that stopped the Reader, or nil. A [*ReadError] stops
// it only until the next call to Next.
func (r *Reader) Err() error { return r.err }

// Wait blocks until the ledger holds a record at the Reader's position or
// ctx ends.
func (r *Reader) Wait(ctx context.Context) error {
	for {
		r.l.mu.Lock()
		durable, ch := r.l.durable, r.l.advanced
		r.l.mu.Unlock()
		if r.next <= durable {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close releases the Reader's open segment and its decompressor.
func (r *Reader) Close() error {
	r.closeSegment()
	if r.dz != nil {
		r.dz.Close()
		r.dz = nil
	}
	return nil
}

// snapshot returns the durable LSN and a copy of the segment list.
func (l *Ledger) snapshot() (uint64, []segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable, append([]segment(nil), l.segs...)
}

// segmentFor returns the index of the segment holding lsn, or -1 when lsn
// precedes every segment.
func segmentFor(segs []segment, lsn uint64) int {
	i := -1
	for j, s := range segs {
		if s.first <= lsn {
			i = j
		}
	}
	return i
}

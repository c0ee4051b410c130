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

	lsn    uint64
	rec    []byte
	dec    record.Record // rec decoded
	damage *Damage       // the damaged range Next stopped at, or nil
	err    error

	skipDamage bool
}

// Reader returns a Reader positioned at from (at the oldest retained record
// if from is older).
func (l *Ledger) Reader(from uint64) *Reader {
	return &Reader{l: l, next: max(from, 1)}
}

// SkipDamage makes the Reader pass damage in sealed segments instead of
// stopping at it: Next then also stops at each damaged range, with Damage
// set (LSN is the range's last LSN, Record is nil), and goes on from the
// next valid record. Records of the range the Reader had already passed
// (a start after its first LSN) are not reported again. Damage in the open
// segment still stops the Reader ([Ledger.Open] repairs the open segment).
func (r *Reader) SkipDamage() { r.skipDamage = true }

// Damage is the damaged range Next stopped at, or nil when it stopped at a
// record.
func (r *Reader) Damage() *Damage { return r.damage }

// Next advances to the next record (or, with SkipDamage, damaged range).
func (r *Reader) Next() bool {
	r.damage = nil
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
				r.next = segs[0].first // older records were deleted by retention
				continue
			}
			if !r.open(segs, i) {
				return false
			}
		}
		if r.sc.limit != durable {
			// Bytes read ahead of the previous limit may predate writes
			// that are durable now: read them again.
			r.sc.refresh()
			r.sc.limit = durable
		}
		if r.sc.nextFrame() {
			if r.sc.lsn < r.next {
				continue
			}
			r.lsn, r.rec, r.dec = r.sc.lsn, r.sc.rec, r.sc.dec
			r.next = r.sc.lsn + 1
			return true
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
				r.err = fmt.Errorf("ledger: the segment holding LSN %d was deleted by retention before it was read", r.sc.next)
				return false
			}
			r.err = &CorruptionError{Segment: r.sc.path, Offset: r.sc.pos(), LSN: r.sc.next,
				Err: errors.New("segment ends before the next segment begins: records are missing")}
		default:
			return false // caught up inside the open segment
		}
	}
	return false
}

func (r *Reader) open(segs []segment, i int) bool {
	s, isLast := segs[i], i == len(segs)-1
	f, err := openSegmentFile(s.path, os.O_RDONLY, r.l.opts.DirectIO)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.err = fmt.Errorf("ledger: segment %s was deleted before it was read (LSN %d)", s.path, r.next)
		} else {
			r.err = fmt.Errorf("ledger: %w", err)
		}
		return false
	}
	r.f, r.segFirst = f, s.first
	from, fromLSN := int64(0), s.first
	if r.next > s.first && !isLast {
		// Seek with the sealed segment's sparse index.
		entries, err := r.l.loadIndex(s)
		if err != nil {
			f.Close()
			r.f, r.err = nil, err
			return false
		}
		if e, ok := seekPoint(entries, r.next); ok {
			from, fromLSN = e.off, e.lsn
		}
	}
	r.sc = newSegScanner(f, s.path, fromLSN, from)
	if r.skipDamage && !isLast {
		r.sc.withResync(segs[i+1].first - 1)
	}
	return true
}

func (r *Reader) closeSegment() {
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.sc = nil, nil
}

// LSN is the current record's LSN.
func (r *Reader) LSN() uint64 { return r.lsn }

// Record is the current record, valid until the next call to Next.
func (r *Reader) Record() []byte { return r.rec }

// Decoded is the current record decoded: the Reader verified it (checksum
// and layout) when it read it, so callers need not decode it again. It
// aliases the same buffer as Record and is valid as long.
func (r *Reader) Decoded() record.Record { return r.dec }

// Err is the error that stopped the Reader, or nil.
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

// Close releases the Reader's open segment.
func (r *Reader) Close() error {
	r.closeSegment()
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

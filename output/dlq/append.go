package dlq

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// maxKeptBuffer bounds the write buffer a Store keeps between groups.
const maxKeptBuffer = 1 << 20

// Append stores entries durably: when it returns nil, every entry has been
// written and fdatasynced (and the directory fsynced when a file was
// created for them), so the output may move its cursor past their events.
// Entries from concurrent Appends are written together (group commit): one
// write and one fdatasync for all that are queued, and a slice is written
// whole in one write, unless it does not fit in what is left of the open
// file (a file is then fdatasynced before the next one is created), or
// it is larger than SegmentBytes (it is then stored in parts, each durable
// before the next is admitted; an error may leave a prefix stored, which a
// retry stores again: dead-lettering is at least once).
//
// While the store is full, Append waits until Purge frees space, until ctx
// ends (it then returns ctx's error, wrapped) or until Close (ErrClosed). It
// never drops an entry. The wait is logged when it begins and when it ends,
// and Waiting says why. ctx bounds only that wait: once its entries are
// queued for writing, Append waits for the write and its sync, which nothing
// can take back.
//
// Append fails before writing anything when an entry can never fit in a
// file (ErrTooLarge) or has a time outside the years 1 to 9999. After a
// failed write or sync it returns ErrPoisoned (wrapping the failure), now
// and ever after; after Close, ErrClosed. Safe for concurrent use.
func (s *Store) Append(ctx context.Context, entries []Entry) error {
	s.mu.Lock()
	err := s.usableLocked()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for i := range entries {
		if err := checkEntry(&entries[i], s.opts.SegmentBytes); err != nil {
			return err
		}
	}
	p := &pending{}
	for i := range entries {
		n := frameSize(&entries[i])
		// Each frame may start a new file, with its header: reserving a
		// header per frame keeps the store within MaxBytes at any moment.
		cost := n + fileHeaderSize
		if len(p.sizes) > 0 && p.need+cost > s.opts.SegmentBytes {
			if err := s.store(ctx, p); err != nil {
				return err
			}
			p = &pending{}
		}
		p.frames = appendFrame(p.frames, &entries[i])
		p.sizes = append(p.sizes, int(n))
		p.failed = append(p.failed, entries[i].Failed)
		p.need += cost
	}
	if len(p.sizes) == 0 {
		return nil
	}
	return s.store(ctx, p)
}

// store admits p (waiting for space) and commits it.
func (s *Store) store(ctx context.Context, p *pending) error {
	if err := s.reserve(ctx, p.need); err != nil {
		return err
	}
	return s.commit(p)
}

// reserve waits until need bytes fit within MaxBytes, then reserves them.
// need is at most SegmentBytes, and SegmentBytes ≤ MaxBytes/2, so purging
// every sealed file always makes room.
func (s *Store) reserve(ctx context.Context, need int64) (err error) {
	s.mu.Lock()
	s.waiters++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiters--
		if s.waiters == 0 && s.full.Active() && s.full.Leave(s.log, "dlq: Append no longer waits for space", "dir", s.dir, "used_bytes", s.disk+s.reserved, "max_bytes", s.opts.MaxBytes, "err", err) {
			// Every Append that waited has given up.
			s.waiting = ""
		}
		s.mu.Unlock()
	}()

	select {
	case s.admit <- struct{}{}:
	default:
		select {
		case s.admit <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("dlq: waiting for space: %w", ctx.Err())
		case <-s.closing:
			return ErrClosed
		}
	}
	defer func() { <-s.admit }()

	for {
		s.mu.Lock()
		if err := s.usableLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
		used := s.disk + s.reserved
		if used+need <= s.opts.MaxBytes {
			s.reserved += need
			if s.full.Active() && s.full.Leave(s.log, "dlq: space again: Append continues", "dir", s.dir, "used_bytes", used, "max_bytes", s.opts.MaxBytes) {
				s.waiting = ""
			}
			s.mu.Unlock()
			return nil
		}
		if s.full.Enter(s.log, slog.LevelWarn, "dlq: store full: Append waits until entries are purged; the output's cursor stops", "dir", s.dir, "used_bytes", used, "max_bytes", s.opts.MaxBytes) {
			s.waiting = fmt.Sprintf("dead-letter store %s full: %d of max_bytes %d used; waiting for re-driven entries to be purged", s.dir, used, s.opts.MaxBytes)
		}
		freed := s.freed
		s.mu.Unlock()
		if s.opts.hooks.onWait != nil {
			s.opts.hooks.onWait()
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return fmt.Errorf("dlq: waiting for space: %w", ctx.Err())
		case <-s.closing:
			return ErrClosed
		}
	}
}

// commit queues p and returns once p has been written and synced, or has
// failed. Group commit: whoever holds writeMu is the committer; it takes
// every queued batch and writes them with one write and one fdatasync per
// file touched. Batches queued meanwhile wait for writeMu; the next holder
// finds its own batch done (written by the previous group) or commits the
// queue. No batch is marked done before the fdatasync covering it returned,
// and a failure is given to every batch of the group.
func (s *Store) commit(p *pending) error {
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.reserved -= p.need
		s.wakeLocked()
		s.mu.Unlock()
		return err
	}
	s.queue = append(s.queue, p)
	s.mu.Unlock()

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if p.done {
		s.mu.Unlock()
		return p.err
	}
	group := s.queue
	s.queue = nil
	err := s.usableLocked()
	s.mu.Unlock()
	if err == nil {
		err = s.writeGroup(group)
	}
	s.mu.Lock()
	for _, q := range group {
		s.reserved -= q.need
		q.done, q.err = true, err
	}
	s.wakeLocked() // reservations above the bytes written are free again
	s.mu.Unlock()
	return p.err
}

// writeGroup writes the frames of group, filling the open file and starting
// a new one when the next frame does not fit. writeMu must be held. Any
// failure poisons the store.
func (s *Store) writeGroup(group []*pending) error {
	buf := s.wbuf[:0]
	var start, last int64 // file offset of buf, and of its last frame
	var in bufInfo        // the entries in buf
	for _, p := range group {
		frames := p.frames
		for j, n := range p.sizes {
			if s.f == nil || s.off+int64(len(buf))+int64(n) > s.opts.SegmentBytes {
				if len(buf) > 0 {
					if err := s.flush(buf, last, in); err != nil {
						return s.poison(err)
					}
					buf, in = buf[:0], bufInfo{}
				}
				if err := s.rotate(); err != nil {
					return s.poison(err)
				}
			}
			if len(buf) == 0 {
				start = s.off
			}
			last = start + int64(len(buf))
			buf = append(buf, frames[:n]...)
			sealFrame(buf[last-start:], s.files[len(s.files)-1].seq, start)
			frames = frames[n:]
			in.entries++
			if p.failed[j].After(in.newest) {
				in.newest = p.failed[j]
			}
		}
	}
	if len(buf) > 0 {
		if err := s.flush(buf, last, in); err != nil {
			return s.poison(err)
		}
	}
	if cap(buf) <= maxKeptBuffer {
		s.wbuf = buf[:0]
	} else {
		s.wbuf = nil
	}
	return nil
}

// bufInfo counts the entries of a write.
type bufInfo struct {
	entries int
	newest  time.Time // their latest Failed
}

// flush writes buf at the end of the open file and fdatasyncs it. last is
// the file offset of buf's last frame, in what it holds. writeMu must be
// held.
func (s *Store) flush(buf []byte, last int64, in bufInfo) error {
	path := s.files[len(s.files)-1].path
	if _, err := s.f.WriteAt(buf, s.off); err != nil {
		return fmt.Errorf("dlq: write %s at %d: %w", path, s.off, err)
	}
	// The frames are durable only once fdatasync returns, and only then may
	// their Appends return: the output moves its cursor past their events
	// on that word (docs/design.md, §3, step 4).
	if err := s.f.Datasync(); err != nil {
		return fmt.Errorf("dlq: fdatasync %s: %w", path, err)
	}
	s.off += int64(len(buf))
	s.mu.Lock()
	fi := &s.files[len(s.files)-1]
	fi.size, fi.lastFrame = s.off, last
	fi.entries += in.entries
	if in.newest.After(fi.newest) {
		fi.newest = in.newest
	}
	s.disk += int64(len(buf))
	s.mu.Unlock()
	return nil
}

// rotate seals the open file, if any, and creates the next one. writeMu
// must be held.
func (s *Store) rotate() error {
	if s.f != nil {
		// Its last write was fdatasynced by flush: sealing needs no sync.
		if err := s.f.Close(); err != nil {
			return fmt.Errorf("dlq: close %s: %w", s.files[len(s.files)-1].path, err)
		}
		s.f = nil
	}
	seq := s.nextSeq
	path := filepath.Join(s.dir, fileName(seq))
	f, err := s.opts.hooks.openFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR)
	if err != nil {
		return fmt.Errorf("dlq: create %s: %w", path, err)
	}
	h := make([]byte, fileHeaderSize)
	putFileHeader(h, seq)
	if _, err = f.WriteAt(h, 0); err != nil {
		err = fmt.Errorf("dlq: write the header of %s: %w", path, err)
	} else if err = f.Datasync(); err != nil {
		// The header is durable before any frame is written behind it, so
		// that a file whose header is bad but which holds more than zeros
		// is damage, never a creation cut short (doc.go).
		err = fmt.Errorf("dlq: fdatasync %s: %w", path, err)
	} else if err = s.opts.hooks.syncDir(s.dir); err != nil {
		// The file's directory entry: without it a power cut can drop the
		// whole file, with entries Append has reported durable.
		err = fmt.Errorf("dlq: %w", err)
	}
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.off = f, fileHeaderSize
	s.nextSeq++
	s.mu.Lock()
	s.files = append(s.files, fileInfo{seq: seq, path: path, size: fileHeaderSize})
	s.disk += fileHeaderSize
	s.mu.Unlock()
	return nil
}
